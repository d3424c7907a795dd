// HTTP(S) to the API server over cpprestsdk, behind a header free of cpprest: TLS set up from a
// ClusterConfig (CA verification against the configured CA only, or none when insecure; a client
// certificate), the bearer token from a TokenSource, a per-request timeout, and cancellation
// (a shutdown token for the whole client, and one per call). HttpKubeClient builds on it.
//
// cpprestsdk throws; nothing escapes this class: transport failures (refused connection, failed
// TLS handshake, reset) are Unavailable, no answer within the timeout DeadlineExceeded, a cancel
// Cancelled. HTTP answers of any status are returned as they are (the caller maps them).
// Thread-safety: Send and StreamLines may be called from several threads at once.
#ifndef TWINSCALE_CONTROLLER_KUBE_HTTP_TRANSPORT_H_
#define TWINSCALE_CONTROLLER_KUBE_HTTP_TRANSPORT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/cluster_config.h"

namespace twinscale::kube {

struct HttpTransportOptions {
  // cpprestsdk's timeout is an inactivity timeout: no byte for this long fails the request.
  absl::Duration request_timeout = absl::Seconds(30);
  Cancellation* shutdown = nullptr;  // when cancelled, every request in flight and later fails
  std::string user_agent = "twinscale";
  absl::Duration token_refresh = absl::Minutes(1);
};

struct HttpAnswer {
  int status_code = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

class HttpTransport {
 public:
  // Reads the CA and client certificate files now and checks every PEM (InvalidArgument naming
  // the file or field when one is not a certificate / key, or the key does not match), so a bad
  // configuration fails at startup rather than on the first request.
  static absl::StatusOr<std::unique_ptr<HttpTransport>> Create(const ClusterConfig& config,
                                                               const Clock* clock,
                                                               HttpTransportOptions options);
  ~HttpTransport();

  // One request; the whole answer. `body` may be null (no body). A 401 when the token comes from
  // a file re-reads the file and tries once more (the token may just have rotated).
  absl::StatusOr<HttpAnswer> Send(std::string_view method, const std::string& path_and_query,
                                  const std::string* body, std::string_view content_type,
                                  Cancellation* cancel = nullptr);

  // A GET whose 200 body is read line by line as it arrives: `on_line` gets each line (without
  // its end of line); returning false stops reading and closes the connection. A non-200 answer
  // is returned whole without calling on_line. The stream ending, or staying silent for
  // `idle_timeout`, returns {200}: both are a normal end of a watch.
  absl::StatusOr<HttpAnswer> StreamLines(const std::string& path_and_query,
                                         absl::Duration idle_timeout,
                                         const std::function<bool(std::string_view)>& on_line,
                                         Cancellation* cancel);

  const std::string& server() const;

 private:
  struct Impl;
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_HTTP_TRANSPORT_H_
