// The controller's own operational HTTP endpoints, on a plain-HTTP port apart from the TLS
// endpoints, which may demand client certificates that kubelet's probes and Prometheus don't
// present:
//   GET /metrics  200, the MetricsRegistry's page, Content-Type "text/plain; version=0.0.4;
//                 charset=utf-8" (what Prometheus expects of the 0.0.4 text format);
//   GET /healthz  200 "ok" while the process serves at all (the liveness probe);
//   GET /readyz   200 "ok" when the readiness check returns OK, else 503 "not ready: <reason>"
//                 (the readiness probe; `twinscale controller` is not ready until it has
//                 listed its objects, nor while its leader election can't write its Lease).
// Any other path is 404; a method other than GET or HEAD on a known path is 405.
//
// The HTTP machinery (cpprestsdk's http_listener) lives in the .cc: this header carries no cpprest
// include. Thread-safety: Start and Stop from one thread; the handlers run on cpprestsdk's pool
// and call the readiness check and MetricsRegistry::Render from there, so both must be
// thread-safe. Nothing throws out of this class (an exception from the readiness check is a 503).
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_OPS_SERVER_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_OPS_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "controller/common/metrics_registry.h"

namespace twinscale::outputs {

struct OpsServerOptions {
  std::string address = "0.0.0.0";  // ["0.0.0.0"] the address to listen on ("127.0.0.1" in tests)
  int32_t port = 8080;              // [8080] 1..65535 (0 is refused: the port must be known)
};

class OpsServer {
 public:
  // OK when ready to serve; otherwise why not (the text of the 503 answer).
  using ReadinessCheck = std::function<absl::Status()>;

  // `registry` must outlive the server. A null `readiness` means always ready.
  OpsServer(const MetricsRegistry& registry, ReadinessCheck readiness,
            OpsServerOptions options = {});
  ~OpsServer();  // stops the server
  OpsServer(const OpsServer&) = delete;
  OpsServer& operator=(const OpsServer&) = delete;

  // Opens the listener. InvalidArgument for a bad address or port; Unavailable when it can't bind
  // (the port is taken); FailedPrecondition when already started.
  absl::Status Start();
  // Closes the listener, waiting for requests in progress (idempotent).
  void Stop();

  // "http://<address>:<port>".
  std::string url() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_OPS_SERVER_H_
