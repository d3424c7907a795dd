// HttpKubeClient: KubeClient over the API server's REST interface (cpprestsdk, HTTPS with CA
// verification, bearer token or client certificate; http_transport.h). One client serves the
// whole controller: it is thread-safe and reuses connections for ordinary requests; each watch
// gets its own connection.
//
// Requests: JSON in and out (Accept: application/json); MergePatch sends
// application/merge-patch+json. Each request has `request_timeout` (an inactivity timeout: no byte
// for that long). A watch's inactivity timeout is its timeoutSeconds plus `watch_idle_margin`, so
// the server's own end of the stream comes first; silence past it ends the watch normally.
// `shutdown`, when cancelled, interrupts every request in flight (Cancelled) and fails later ones.
#ifndef TWINSCALE_CONTROLLER_KUBE_REST_CLIENT_H_
#define TWINSCALE_CONTROLLER_KUBE_REST_CLIENT_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/cluster_config.h"
#include "controller/kube/kube_client.h"

namespace twinscale::kube {

class HttpTransport;

struct HttpKubeClientOptions {
  absl::Duration request_timeout = absl::Seconds(30);
  absl::Duration watch_idle_margin = absl::Seconds(30);
  Cancellation* shutdown = nullptr;  // not owned; may be null
  std::string user_agent = "twinscale";
  absl::Duration token_refresh = absl::Minutes(1);  // re-read period of a token file
};

class HttpKubeClient final : public KubeClient {
 public:
  // Reads and checks the TLS material (InvalidArgument / NotFound naming the bad file or field).
  // `clock` (for the token's re-reads) must outlive the client.
  static absl::StatusOr<std::unique_ptr<HttpKubeClient>> FromConfig(
      const ClusterConfig& config, const Clock* clock, HttpKubeClientOptions options = {});
  ~HttpKubeClient() override;

  const std::string& server() const;

 private:
  HttpKubeClient(std::unique_ptr<HttpTransport> transport, HttpKubeClientOptions options);

  absl::StatusOr<nlohmann::json> GetImpl(const ResourceRef& ref, std::string_view ns,
                                         std::string_view name,
                                         std::string_view subresource) override;
  absl::StatusOr<ObjectList> ListImpl(const ResourceRef& ref, std::string_view ns,
                                      const ListOptions& options) override;
  absl::StatusOr<nlohmann::json> CreateImpl(const ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> UpdateImpl(const ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object,
                                            std::string_view subresource) override;
  absl::StatusOr<nlohmann::json> MergePatchImpl(const ResourceRef& ref, std::string_view ns,
                                                std::string_view name, const nlohmann::json& patch,
                                                std::string_view subresource) override;
  absl::Status DeleteImpl(const ResourceRef& ref, std::string_view ns,
                          std::string_view name) override;
  absl::StatusOr<WatchEnd> WatchImpl(const ResourceRef& ref, std::string_view ns,
                                     const WatchOptions& options, const WatchEventHandler& on_event,
                                     Cancellation* cancel) override;

  // Sends one request and parses a 2xx JSON answer; maps anything else (api_errors.h).
  absl::StatusOr<nlohmann::json> Call(std::string_view method, const std::string& path,
                                      const nlohmann::json* body, std::string_view content_type);

  std::unique_ptr<HttpTransport> transport_;
  HttpKubeClientOptions options_;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_REST_CLIENT_H_
