// Recommend(snapshot, config, forecaster, now, history) -> Decision: twinscale's scaling decision,
// a chain of small pure stages, each in its own file with its own tests and typed reasons
// (reason.h), in this order:
//   1. observed_question.h: the observed fleet as the twin's question (starting pods counted
//      with their remaining warm-up until they are stuck: PendingNotCounted). With no usable
//      arrival rate the decision holds there, and never scales in (InputsStale).
//   2. forecast_stage.h: the rate over the span judged (the level with its persistence and,
//      where it has shown skill, the season), checked against what came; a run of shortfalls
//      scales it up (SeasonalForecast, ForecastMargin).
//   3. aim.h: the target's share of requests, moved by the record (SurplusSpent,
//      ShortfallOnRecord) and by a minute just missed that the twin forecast met (MinuteMissed,
//      minute_check.h) or met by less than the twin's optimism about it (MinuteAtRisk).
//   4. size_on_twin.h: the smallest fleet the twin shows meeting the aim after the warm-up, or a
//      smaller one meeting it from now at the safety margin, on fresh inputs under the limits
//      (ForecastMissesSlo, ScaleInSafe, MissWithinNoise, MissUnconfirmed, Steady, ...).
//   5. stabilize.h: the HPA's stabilization windows (ScaleDownStabilized).
//   6. rate_limit.h: the HPA's rate limits (ScaleUpLimit, ScaleDownLimit); stale inputs never
//      scale in.
//   7. admission_advice.h: while the SLO is at risk, what the serving fleet holds
//      (AdmissionAdvised).
// The twin's random numbers: one seed per decision, shared by every candidate size
// (observed_question.h's DecisionSeed). Pure: no I/O, no clock; the history is a value the caller
// owns and updates with RecordDecision and RecordScaleEvent. docs/architecture.md "The policy's
// rules" has the overview.
#ifndef TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_
#define TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/aim.h"
#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/observed_question.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/policy_history.h"
#include "controller/policy/rate_forecast_error.h"
#include "controller/policy/slo_budget.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

Decision Recommend(const state::FleetSnapshot& snapshot, const PolicyConfig& config,
                   const Forecaster& forecaster, absl::Time now, const PolicyHistory& history);

// Remembers the decision's recommendation (and its scale-in draws); forgets what no window needs.
// A decision is not a scale event: whether it changes the fleet is the actuator's business
// (RecordScaleEvent).
void RecordDecision(const Decision& decision, const PolicyConfig& config, PolicyHistory& history);

// Remembers the twin's forecast `f`, made at `at`, of the coming interval with the fleet as it
// stands: the next RecordDecision checks it against what the fleet served (minute_check.h).
void RecordIntervalForecast(absl::Time at, const Forecast& forecast, PolicyHistory& history);

// Remembers that the target's replica count changed from `from` to `to` at `at`, for the rate
// limits: twinscale's own write of /scale, or a change it observed (KEDA's HPA, the HPA, a user).
// Only changes that happened count: the HPA's rate limits are over the fleet's actual changes, so
// a decision nobody carried out (Recommend mode, KEDA and HPA modes, a failed write) would
// otherwise hold the next decision back from a change that never began. The scale-in draws go
// with the old size. No change (from == to) records nothing.
void RecordScaleEvent(absl::Time at, int32_t from, int32_t to, PolicyHistory& history);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_
