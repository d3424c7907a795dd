// The decision's sixth stage: the HPA's rate limits (spec.scaleUp and spec.scaleDown policies),
// computed from the fleet's actual changes within each policy's period (hpa_algorithm.h), against
// the target's current size. A direction whose policies select Disabled does not move. Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_RATE_LIMIT_H_
#define TWINSCALE_CONTROLLER_POLICY_RATE_LIMIT_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/reason.h"

namespace twinscale::policy {

struct RateLimited {
  int32_t replicas = 0;
  std::optional<int32_t> limit;  // the policies' bound when it held the change back
  std::optional<Reason> reason;  // ScaleUpLimit or ScaleDownLimit, then
};
// `desired`: after stabilization; `current`: spec.replicas (a target at 0 is not rate-limited
// upwards); `scale_events`: (time, change) as PolicyHistory keeps them.
RateLimited LimitRate(int32_t desired, int32_t current,
                      const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                      const PolicyConfig& config, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_RATE_LIMIT_H_
