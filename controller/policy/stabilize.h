// The decision's fifth stage: the HPA's stabilization windows over the recommendations. A
// scale-down takes the largest recommendation within spec.scaleDown's window, a scale-up the
// smallest within spec.scaleUp's, so the fleet shrinks only once the whole window agreed. More
// conservative than the HPA: a scale-down window not yet observed in full (a fresh start, a
// restart) counts as recommending the current size, so a scale-in waits it out. Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_
#define TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/reason.h"

namespace twinscale::policy {

struct Stabilized {
  int32_t replicas = 0;          // between the recommendation and base
  std::optional<Reason> reason;  // ScaleDownStabilized when the window held a scale-down back
};
// `recommendations`: (time, recommendation) of earlier decisions, oldest first, as
// PolicyHistory keeps them; `base` the current size (BaseSize).
Stabilized Stabilize(int32_t recommendation, int32_t base,
                     const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
                     const PolicyConfig& config, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_
