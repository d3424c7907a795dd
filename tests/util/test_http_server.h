// TestHttpServer: a small HTTP or HTTPS server on 127.0.0.1 (cpprestsdk's http_listener) for the
// Kubernetes client's tests. It records each request, answers through a handler the test
// supplies, can stream a chunked answer line by line from its own thread (a watch), and over TLS
// can demand a client certificate and remember the subject it presented (certificates from
// test_pki.h).
#ifndef TWINSCALE_TESTS_UTIL_TEST_HTTP_SERVER_H_
#define TWINSCALE_TESTS_UTIL_TEST_HTTP_SERVER_H_

#include <cpprest/http_listener.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace twinscale::testutil {

struct RecordedRequest {
  std::string method;
  std::string path;                          // decoded
  std::map<std::string, std::string> query;  // decoded
  std::map<std::string, std::string> headers;
  std::string body;
};

struct ServerTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // when set, a client certificate signed by it is required
};

// Writes one watch stream's lines; Wait() lets a producer pause, ending early when the server
// shuts down.
class LineWriter {
 public:
  virtual ~LineWriter() = default;
  virtual void Send(const std::string& line) = 0;  // writes line + "\n" and flushes it
  // Waits `d`, or until `done` returns true, or until the server stops; returns false if stopping.
  virtual bool Wait(absl::Duration d, const std::function<bool()>& done = nullptr) = 0;
};

class TestHttpServer {
 public:
  // The handler answers with request.reply(...), or with StreamLines(...).
  using Handler = std::function<void(web::http::http_request request, const RecordedRequest&)>;

  // Starts on a free port; nullptr (with a gtest failure) if the listener can't open.
  static std::unique_ptr<TestHttpServer> Start(Handler handler,
                                               std::optional<ServerTls> tls = std::nullopt);
  ~TestHttpServer();

  std::string url() const;  // "http(s)://127.0.0.1:<port>"
  std::vector<RecordedRequest> requests() const;
  // The subject (e.g. "CN=twinscale-test-client") of the last client certificate verified.
  std::string client_subject() const;

  // Replies 200 with a chunked body fed by `producer` on a thread of its own; the stream ends
  // when the producer returns.
  void StreamLines(web::http::http_request request,
                   std::function<void(LineWriter& writer)> producer);

  // Replies with `status` and a JSON body (and any extra headers).
  static void ReplyJson(web::http::http_request request, int status, const std::string& body,
                        const std::map<std::string, std::string>& headers = {});

 private:
  TestHttpServer() = default;

  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::string url_;
  mutable absl::Mutex mu_;
  std::vector<RecordedRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::string client_subject_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> producers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_TEST_HTTP_SERVER_H_
