// The decision's sixth stage: the HPA's rate limits (spec.scaleUp and spec.scaleDown policies),
// computed from the fleet's actual changes within each policy's period (hpa_algorithm.h), against
// the target's current size. A direction whose policies select Disabled does not move. Pure.
//
// twinscale's own scale-down rate, for a spec that writes no scaleDown.policies (the default).
// Every size the policy scales in to is one the twin shows meeting the SLO at the safety margin,
// and the window has held it; the rate decides how much of that is taken at once.
// - A step at a time: 10% of the fleet or 1 pod per 60 s, whichever allows more
//   (api::TwinscaleScaleDownPolicies). A descent a step at a time is still above the edge when the
//   load turns, where the twin is optimistic near it: after the Azure conversation hour's peak the
//   twin's scale-in answers were 21 and 18 replicas at a load 30 served; taken at once, the fleet
//   lost two minutes (docs/results.md, "The scale-down rate").
// - At once, as far as the load has fallen (FallFloor): where the traffic's changes of level last
//   through the warm-up, down to the current fleet scaled by the fall in the arrival rate since
//   the fleet last changed size. That size served the load then, so what the load's fall leaves
//   of it is no bet on the twin's edge. On the ServeGen days compressed 8x the rate falls by three
//   quarters in five minutes, and a step at a time held the fleet at two to three times the
//   replicas the load needed for nine minutes.
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
// upwards); `scale_events`: (time, change) as PolicyHistory keeps them; `fall_floor`: FallFloor's
// size, or nullopt (used only where the spec writes no scaleDown.policies).
RateLimited LimitRate(int32_t desired, int32_t current,
                      const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                      const PolicyConfig& config, std::optional<int32_t> fall_floor,
                      absl::Time now);

// The size the arrival rate's fall leaves of the current fleet: ceil(current x rate now / the rate
// when the fleet last changed size), the latter the rate of the last decision at or before the
// last scale event (`recommendation_rates`: (time, arrival rate) per decision, 0 for one on stale
// inputs). nullopt where there is no such event or rate (PolicyHistory keeps both over the longest
// window or period, so a fleet that has not changed size within it has no floor), or the rate has
// not fallen.
std::optional<int32_t> FallFloor(
    int32_t current, const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
    const std::deque<std::pair<absl::Time, double>>& recommendation_rates, double rate_now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_RATE_LIMIT_H_
