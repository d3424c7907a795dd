// The decision's fifth stage: the HPA's stabilization windows over the recommendations. A
// scale-down takes the largest recommendation within spec.scaleDown's window, a scale-up the
// smallest within spec.scaleUp's, so the fleet shrinks only once the whole window agreed. More
// conservative than the HPA: a scale-down window not yet observed in full (a fresh start, a
// restart) counts as recommending the current size, so a scale-in waits it out.
//
// Where the traffic's changes of level last through the warm-up, the window holds each earlier
// recommendation scaled to the rate now (ScaledToTheRateNow): one made for a load that has since
// fallen counts as what that load's fall leaves of it. On the ServeGen days compressed 8x the
// window held 36 replicas for five minutes after a peak while the rate fell from 291 to 172 req/s
// and the twin asked for 19-22; with the scaling the fleet follows within a minute or two (the
// days' GPU-hours and the figures in docs/results.md, "The window scaled to the rate now").
//
// Clear evidence shortens the wait (ScaleInClear): down to `clearly_safe` (Sizing::clearly_safe:
// the smallest size whose scale-in answer, this decision's draw pooled with the window's earlier
// ones, meets the SLO at the safety margin by more than its noise), the scale-down waits only
// PolicyConfig::clear_scale_in_window, taking the largest recommendation within it; below that
// size the whole window still holds. The window is there because one draw near the edge says
// little; a pool that stands clear of the target says more. The twin's verdict is about its own
// noise, not about what the traffic does next, so the caller passes a clearly safe size only
// where the traffic's record says a change of level lasts and the SLO's record has minutes to
// spare (MayScaleInEarly). On the ServeGen days compressed 8x (docs/results.md) the fleet then
// follows a fall within three minutes instead of five: -2.7% to +1.1% GPU-hours a run (-0.9% on
// average over 20), every run meeting the target as before.
// Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_
#define TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/reason.h"
#include "controller/policy/slo_budget.h"

namespace twinscale::policy {

struct Stabilized {
  int32_t replicas = 0;  // between the recommendation and base
  // ScaleDownStabilized when the window held a scale-down back; ScaleInClear when clear evidence
  // took it below the whole window's hold.
  std::optional<Reason> reason;
};

// Whether a change in the rate's level outlasts a new replica's warm-up on this traffic, by its own
// record: the persistence weight (ForecastQuestion::rate_persistence, state::RatePersistence) at
// the first interval after PolicyConfig::warmup_expected is at least kLastsThroughWarmup, more
// than half a departure still there when a replica ordered now would serve. False without the
// weights (too little history). On the ServeGen days, whose rate moves smoothly, the weights stay
// near 1; on the Azure code trace, whose bursts are gone within a minute, they are 0 by then, and
// a lull there is a pause between bursts that a fleet scaled in would meet a warm-up late.
inline constexpr double kLastsThroughWarmup = 0.5;
bool LastsThroughWarmup(const ForecastQuestion& question, const PolicyConfig& config);

// Whether clear evidence may shorten the scale-down window now (Stabilize's clearly_safe): the
// change of level lasts through the warm-up (LastsThroughWarmup), and the record has minutes to
// spare: the share of minutes meeting the SLO at or above spec.slo.target.minutes both over the
// target's window (`window`) and over the recent record (`recent`; no minutes yet counts as
// 100%). The whole window's hold keeps capacity a rise may need a warm-up before it is Ready;
// scaling in sooner spends that, and so the budget of minutes allowed to miss, which is spent
// only while none of it is overspent. On the Azure conversation trace at x40, whose token mix
// shifts within minutes where the twin sees only the current one, the clearly safe sizes after
// the peak came back as misses three minutes later; there the ramp's missed minutes keep the
// record short, and the early path shut.
bool MayScaleInEarly(const ForecastQuestion& question, const PolicyConfig& config,
                     const BudgetLedger& window, const BudgetLedger& recent);

// The recommendations the windows hold: all of `recommendations`, except, where the traffic's
// changes of level last through the warm-up (`lasts`: LastsThroughWarmup), those made at a time
// in `raised_at` (decisions whose aim the twin's optimism about a missed or at-risk minute raised:
// MinuteMissed, MinuteAtRisk, minute_check.h) once PolicyConfig::minute_check_window has passed
// since: the raise answers that minute, and a later one raises it again. Where bursts fade within
// the warm-up they come back within the window as often as not (the Azure code hour), and the
// window holds the raise as it holds any recommendation. `raised_at` is ascending.
std::deque<std::pair<absl::Time, int32_t>> HeldRecommendations(
    const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
    const std::deque<absl::Time>& raised_at, bool lasts, const PolicyConfig& config,
    absl::Time now);

// The recommendations the windows hold, each scaled to the load now: where the traffic's changes
// of level last through the warm-up (`lasts`), a recommendation made for a higher arrival rate
// than `rate_now` counts as ceil(recommendation * rate_now / its rate); a higher or equal rate now,
// or no rate on record for it (`rates`: (time, the rate its question asked about), ascending, 0
// for none), leaves it as it was. The window is there for the twin's noise at one load: a
// recommendation held at the same load is held in full, and a fall in the load the fleet
// serves is followed within a decision or two instead of the whole window. Where bursts fade
// within the warm-up, a lull is a pause before the next one, and the window holds as the HPA's.
std::deque<std::pair<absl::Time, int32_t>> ScaledToTheRateNow(
    const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
    const std::deque<std::pair<absl::Time, double>>& rates, double rate_now, bool lasts);

// `recommendations`: (time, recommendation) of earlier decisions, oldest first, as
// PolicyHistory keeps them; `base` the current size (BaseSize); `clearly_safe`: 0 for none.
Stabilized Stabilize(int32_t recommendation, int32_t base,
                     const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
                     const PolicyConfig& config, absl::Time now, int32_t clearly_safe = 0);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_STABILIZE_H_
