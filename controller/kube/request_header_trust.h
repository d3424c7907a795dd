// RequestHeaderTrust: whom an aggregated API server (twinscale's external metrics API) should
// accept as the API aggregator, as the cluster itself publishes it. The kube-apiserver writes the
// ConfigMap kube-system/extension-apiserver-authentication with
//   requestheader-client-ca-file   PEM: the CA that signed the client certificate the aggregator
//                                  presents when it proxies (--requestheader-client-ca-file);
//   requestheader-allowed-names    a JSON list of the common names that certificate may have
//                                  (--requestheader-allowed-names; empty: any the CA signed).
// Reading it needs the Role extension-apiserver-authentication-reader in kube-system
// (deploy/external-metrics/rbac.yaml). The cluster may rotate the CA, so it is re-read every
// refresh_interval; a read that fails keeps the last good answer.
//
// Thread-safety: Current() from any thread; Start and Stop from one.
#ifndef TWINSCALE_CONTROLLER_KUBE_REQUEST_HEADER_TRUST_H_
#define TWINSCALE_CONTROLLER_KUBE_REQUEST_HEADER_TRUST_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace twinscale::kube {

inline constexpr char kAuthenticationConfigMapNamespace[] = "kube-system";
inline constexpr char kAuthenticationConfigMapName[] = "extension-apiserver-authentication";

struct AggregatorClientTrust {
  std::string ca_pem;                      // requestheader-client-ca-file
  std::vector<std::string> allowed_names;  // requestheader-allowed-names ([] = any)
};

// The trust in a ConfigMap object as the API serves it. FailedPrecondition when it has no
// requestheader-client-ca-file (the cluster runs no aggregation layer); InvalidArgument naming
// the key for a value that is not PEM text or not a JSON list of strings.
absl::StatusOr<AggregatorClientTrust> AggregatorClientTrustFromConfigMap(
    const nlohmann::json& configmap);

class RequestHeaderTrust {
 public:
  struct Options {
    absl::Duration refresh_interval = absl::Minutes(1);  // [1m] how often it is re-read
    // Told about every failed re-read (from the refresher thread); optional.
    std::function<void(const absl::Status&)> on_error;
  };

  // `client` must outlive this object.
  RequestHeaderTrust(KubeClient* client, Options options);
  ~RequestHeaderTrust();  // Stop()
  RequestHeaderTrust(const RequestHeaderTrust&) = delete;
  RequestHeaderTrust& operator=(const RequestHeaderTrust&) = delete;

  // Reads the ConfigMap once (its error, prefixed with what was read, if that fails: NotFound,
  // PermissionDenied for missing RBAC, ...), then re-reads it every refresh_interval on a thread.
  absl::Status Start();
  void Stop();  // idempotent

  // The last good answer (empty before Start succeeded).
  AggregatorClientTrust Current() const;

 private:
  absl::StatusOr<AggregatorClientTrust> Read();

  KubeClient* const client_;
  const Options options_;
  Cancellation stop_;
  std::thread refresher_;
  mutable absl::Mutex mu_;
  AggregatorClientTrust current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_REQUEST_HEADER_TRUST_H_
