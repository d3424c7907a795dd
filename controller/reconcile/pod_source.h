// PodSource: where a reconcile pass gets its target's pods (the seam beside kube::KubeClient,
// metrics::MetricsSource and Actuator). In the binary, PodInformers (list then watch per selector);
// in replay, the simulated cluster's pods (controller/replay/simulated_api.h).
#ifndef TWINSCALE_CONTROLLER_RECONCILE_POD_SOURCE_H_
#define TWINSCALE_CONTROLLER_RECONCILE_POD_SOURCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {

class PodSource {
 public:
  virtual ~PodSource() = default;
  // The Pod objects of namespace `ns` that `selector` (a Scale's status.selector, non-empty)
  // selects, for the pass of autoscaler `key` ("namespace/name") that started at `pass_start`; its
  // passes are `interval` apart. An error means the pods are unknown, which the caller must never
  // read as "no pods".
  virtual absl::StatusOr<std::vector<nlohmann::json>> Pods(const std::string& key,
                                                           const std::string& ns,
                                                           const std::string& selector,
                                                           absl::Time pass_start,
                                                           absl::Duration interval) = 0;
  // A pass of `key` started at `start` (whether or not it gets as far as Pods()).
  virtual void NotePassStart(const std::string& /*key*/, absl::Time /*start*/) {}
  // `key` needs no pods any more (deleted, or its target has no selector).
  virtual void Forget(const std::string& /*key*/) {}
};

}  // namespace twinscale::reconcile

#endif  // TWINSCALE_CONTROLLER_RECONCILE_POD_SOURCE_H_
