// The controller's gRPC server: one listening port for twinscale's gRPC services (KEDA's
// external scaler, the admission API), its transport security, the standard gRPC health service
// (grpc.health.v1.Health) and a shutdown that never hangs.
//
// Transport security, as KEDA's external trigger expects it (`enableTLS`, `caCert`, and
// `tlsClientCert` / `tlsClientKey` in a TriggerAuthentication):
//   - TLS: tls_cert_file + tls_key_file (PEM). KEDA verifies the certificate against its `caCert`
//     and the host name of `scalerAddress`, so the certificate needs that name as a SAN.
//   - mutual TLS: also client_ca_file (PEM); every client must present a certificate signed by it
//     (KEDA's tlsClientCert), or the handshake fails.
//   - plaintext: only when `plaintext` is set; setting it together with certificate files, or
//     neither, is an InvalidArgument.
// The certificate, key and client CA are re-read every cert_refresh_interval
// (grpc::experimental::FileWatcherCertificateProvider): a rotated Secret (cert-manager) takes
// effect for new connections without a restart. At Start the files must exist, parse as PEM, and
// the key must match the certificate.
//
// Health: the empty service name reports SERVING while the server runs; each added service's
// name reports SERVING or NOT_SERVING after SetServing (leadership), so a probe or a client can
// tell the leader from a follower.
//
// Thread-safety: AddService and Start from one thread, before anything else; SetServing and
// Shutdown from any thread. The destructor shuts down.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_GRPC_SERVER_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_GRPC_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace twinscale::outputs {

struct GrpcServerOptions {
  // ["0.0.0.0:9443"] host:port to listen on; port 0 picks a free port (see GrpcServer::port()).
  std::string address = "0.0.0.0:9443";
  bool plaintext = false;      // [false] serve without TLS (only when asked for)
  std::string tls_cert_file;   // PEM certificate chain (TLS)
  std::string tls_key_file;    // PEM private key of the certificate (TLS)
  std::string client_ca_file;  // PEM CA bundle; set: mutual TLS (clients need a certificate)
  absl::Duration cert_refresh_interval = absl::Minutes(1);  // [1m] >= 1s: files re-read this often
  // [5s] Shutdown lets calls in flight finish for this long, then cancels the rest (open streams
  // end with CANCELLED).
  absl::Duration shutdown_grace = absl::Seconds(5);
};

class GrpcServer {
 public:
  // `clock` (for the shutdown deadline) must outlive the server.
  GrpcServer(GrpcServerOptions options, const Clock* clock);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Before Start. `service` must outlive the server; `name` is its full gRPC name
  // ("externalscaler.ExternalScaler"), reported by the health service.
  void AddService(grpc::Service* service, std::string name);

  // Builds the credentials and starts listening. InvalidArgument for inconsistent options or
  // certificate files that are missing, unreadable, not PEM, or whose key doesn't match;
  // Unavailable when the address can't be bound; FailedPrecondition when already started.
  absl::Status Start();

  // The leadership hook for the health service: each added service's status becomes SERVING
  // (true) or NOT_SERVING (false). The services themselves answer from DecisionBoard::serving().
  void SetServing(bool serving);

  // Stops accepting calls, lets those in flight run for up to shutdown_grace, cancels the rest,
  // and returns when all have ended. Idempotent.
  void Shutdown();

  // The port bound by Start (useful with port 0); 0 before Start.
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_GRPC_SERVER_H_
