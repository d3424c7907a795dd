// How a decision reaches the replayed target in each spec.mode, so replay shows what the mode
// itself costs. Direct (and Recommend, replayed as if acted on) set the decided count. KEDA and
// HPA publish a metric (outputs/keda_metric.h: External, AverageValue, target 1) and the cluster's
// HPA turns it into a count with its own arithmetic (policy/hpa_algorithm.h): the 10% tolerance
// swallows 20 -> 21 and 20 -> 19. The HPA is configured as deploy/keda's ScaledObjects configure
// it: spec.behavior set, no stabilization, rate limits wide enough to never bind (twinscale applies
// its own), so the tolerance is what the mode adds.
#ifndef TWINSCALE_CONTROLLER_REPLAY_MODE_OUTPUT_H_
#define TWINSCALE_CONTROLLER_REPLAY_MODE_OUTPUT_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/policy/hpa_algorithm.h"

namespace twinscale::replay {

class ModeOutput {
 public:
  // `tolerance`: the cluster's --horizontal-pod-autoscaler-tolerance (or a per-HPA one).
  ModeOutput(api::Mode mode, int32_t min_replicas, int32_t max_replicas, double tolerance = 0.1);

  // The count the target gets when twinscale decides `decided` for a target at `current`. Every
  // sync of the HPA is one call (KEDA's HPA syncs at the controller's interval in replay).
  int32_t Apply(int32_t decided, int32_t current, absl::Time now);
  // Why the last Apply gave what it gave, for KEDA / HPA: the HPA's reason (hpa_reason::*);
  // empty in Direct.
  const std::string& last_reason() const { return last_reason_; }

 private:
  api::Mode mode_;
  policy::HpaConfig hpa_;
  policy::HpaHistory history_;
  std::string last_reason_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_MODE_OUTPUT_H_
