// The HTTPS server of twinscale's external metrics API (external.metrics.k8s.io/v1beta1; answers
// in external_metrics_api.h). In a cluster it sits behind an APIService
// (deploy/external-metrics/): the kube-apiserver authenticates and authorizes the caller (the
// HPA controller), then proxies the request over TLS, presenting its front-proxy client
// certificate (the one signed by --requestheader-client-ca-file).
//
// Transport security:
//   - Always TLS: tls_cert_file and tls_key_file (PEM) are required. The aggregator checks the
//     certificate against the APIService's caBundle and the Service's DNS name
//     (<service>.<namespace>.svc), unless the APIService sets insecureSkipTLSVerify.
//   - Client certificates: with client_ca_file (the requestheader CA in a real cluster) every
//     client must present a certificate that chains to it, and, when allowed_client_names is not
//     empty, whose subject CN is one of them (the cluster's --requestheader-allowed-names,
//     usually "front-proxy-client"). Or the CA and the names come from client_trust (the
//     controller reads them from the cluster: kube/request_header_trust.h). A missing, untrusted
//     or unlisted certificate fails the TLS handshake: there is no HTTP answer (no 401/403
//     either), because cpprestsdk's handlers can't see the peer's certificate, so it is checked
//     where it can be — in the handshake.
//   - insecure_skip_client_verify: no client certificate is asked for (for trying it out; anyone
//     who reaches the port reads the metrics). Exactly one of client_ca_file, client_trust and
//     insecure_skip_client_verify must be given: none is an InvalidArgument that says so.
// The certificate, key and client CA are read at Start (present, PEM, the key matching the
// certificate, or InvalidArgument naming the file) and again at the first new connection after
// each cert_refresh_interval (client_trust is asked again then too); a rotated Secret
// (cert-manager) takes effect for new connections without a restart. Files that fail to load
// later keep the previous ones in use (last_reload_error() says why).
//
// Every answer carries `Connection: close`: the server holds no idle connections (see the .cc for
// the cpprestsdk race this avoids); the aggregator opens one per query.
//
// Leadership is the API's business (a follower's values are 503); probes and /metrics are on
// the ops port (ops_server.h), not here.
//
// cpprestsdk and boost stay in the .cc. Thread-safety: Start and Stop from one thread; port(),
// url() and last_reload_error() from any. The destructor stops.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_SERVER_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/outputs/external_metrics_api.h"

namespace twinscale::outputs {

// Whom to accept as a client: a PEM CA bundle and, optionally, the subject common names allowed.
struct ClientTrust {
  std::string ca_pem;
  std::vector<std::string> allowed_names;  // empty: any certificate the CA signed
};

struct ExternalMetricsServerOptions {
  // ["0.0.0.0:6443"] host:port to listen on ("127.0.0.1:0" in tests: port 0 picks a free port,
  // see port()).
  std::string address = "0.0.0.0:6443";
  std::string tls_cert_file;   // required: PEM certificate chain the server presents
  std::string tls_key_file;    // required: PEM private key of the certificate
  std::string client_ca_file;  // PEM CA bundle the clients' certificates must chain to
  // [] subject common names accepted from clients; empty: any certificate client_ca_file signed.
  std::vector<std::string> allowed_client_names;
  // Instead of client_ca_file and allowed_client_names: asked at Start and at each refresh (on
  // the thread accepting a connection: it must answer quickly, e.g. from memory).
  std::function<absl::StatusOr<ClientTrust>()> client_trust;
  // [false] ask for no client certificate (only without client_ca_file).
  bool insecure_skip_client_verify = false;
  absl::Duration cert_refresh_interval = absl::Minutes(1);  // [1m] files re-read this often
};

class ExternalMetricsServer {
 public:
  // `api` and `clock` (for the refresh interval) must outlive the server.
  ExternalMetricsServer(const ExternalMetricsApi* api, ExternalMetricsServerOptions options,
                        const Clock* clock);
  ~ExternalMetricsServer();
  ExternalMetricsServer(const ExternalMetricsServer&) = delete;
  ExternalMetricsServer& operator=(const ExternalMetricsServer&) = delete;

  // Loads the certificates and opens the listener. InvalidArgument for inconsistent options, a
  // bad address, or certificate files that are missing, unreadable, not PEM, or whose key does
  // not match; Unavailable when the address can't be bound; FailedPrecondition when started.
  absl::Status Start();
  // Waits (up to 5 s) for answers still being written, then closes the listener. Idempotent.
  void Stop();

  int port() const;         // the bound port (after Start)
  std::string url() const;  // "https://<host>:<port>"
  // OK, or why the last re-read of the certificate files failed (the previous ones stay).
  absl::Status last_reload_error() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_SERVER_H_
