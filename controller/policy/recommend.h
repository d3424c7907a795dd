// Recommend(snapshot, config, forecaster, now, history) -> Decision: twinscale's scaling decision.
// Pure: no I/O, no clock; the stabilization and rate-limit history is a value the caller owns and
// updates with RecordDecision.
//
// The rules (docs/architecture.md "The policy's rules" has the overview):
// - Capacity: Ready replicas serve now; starting pods count as future capacity with their remaining
//   warm-up (E[T - age | T > age], approximated as max(expected - age, interval / 2)) until they
//   are Unschedulable or older than the p99 warm-up, when they stop counting (SloAtRisk says so).
// - Scale up: if the twin forecasts the SLO missed at the current size over the horizon (the
//   expected warm-up + max(4 intervals, 60 s)), the smallest N that meets it (monotone search:
//   doubling, then bisection). Limits (queue per replica, KV use) trigger scale-up only with
//   enforceOnScaleUp. A miss the twin itself calls within its noise (Forecast::verdict_clear) holds
//   instead (MissWithinNoise); so does a clear miss above the SLO's own percentile until the next
//   decision's independent draw confirms it (MissUnconfirmed); fleet_sizing.h says why.
// - The twin's random numbers: one seed per decision (from the configured seed and the decision's
//   time), shared by every candidate size, so the sizes are compared on the same traffic and
//   successive decisions on independent draws.
// - Scale in, conservatively: only if no input is Stale, the fleet is under both limits, and the
//   twin shows the SLO held with fewer replicas, each request using at most safety_margin of its
//   slack (ForecastQuestion::slack_margin), pooled with the same question's draws by the earlier
//   decisions of the stabilization window at this size (SizingBounds::scale_in_evidence); the
//   recommendation then waits out that window (the max of recent recommendations, as the HPA does)
//   and the scale-down rate limits.
// - The forecast: the rate's level with its persistence (state::RatePersistence); when the
//   forecasts have fallen short check after check for the last few minutes (a ramp), scaled up by
//   the least of those shortfalls (ForecastMargin, rate_forecast_error.h).
// - The aim: the forecasts must show target_requests percent of requests in time (the share
//   spec.slo.target asks for); the record over the last surplus_window lowers it by a surplus
//   (SurplusSpent) or raises it by a shortfall (ShortfallOnRecord): slo_budget.h.
// - Stale inputs freeze scale-in; with no usable arrival rate at all the decision holds.
// - When even max_replicas can't meet the SLO, or capacity is still warming, advisory admission
//   limits say what the serving fleet can hold (admission_search.h: searched from the previous
//   decision's).
#ifndef TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_
#define TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"
#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/rate_forecast_error.h"
#include "controller/policy/slo_budget.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

// The resolved parameters the policy reads: the InferenceAutoscaler spec with its defaults applied,
// plus what comes from the deployment profile or is measured (warm-up).
struct PolicyConfig {
  int32_t min_replicas = 1;                                     // spec.minReplicas [1]
  int32_t max_replicas = 16;                                    // spec.maxReplicas
  absl::Duration ttft_threshold = absl::Milliseconds(500);      // spec.slo.ttft.threshold [500ms]
  absl::Duration ttft_per_prompt_token = absl::ZeroDuration();  // [0ms]
  double percentile = 90;                                       // spec.slo.ttft.percentile [90]
  // spec.slo.target: what the fleet is held to over a window: at least target_requests percent
  // of requests within the TTFT objective, and target_minutes percent of the minutes with
  // traffic meeting it at `percentile`, over target_window (the SLO budget's ledger, kept and
  // reported with every decision: slo_budget.h). Each decision aims its forecasts at
  // target_requests (at least percentile + min_forecast_headroom, at most 99.5%): a twin that
  // forecasts right and aims at the share the target asks for serves it.
  double target_requests = 95;                     // spec.slo.target.requests [95]
  double target_minutes = 95;                      // spec.slo.target.minutes [95]
  absl::Duration target_window = absl::Hours(24);  // spec.slo.target.window [24h]
  // The record over the last surplus_window moves the aim around a set point above the share
  // (slo_budget.h): down by a surplus (SurplusSpent), to no lower than percentile +
  // min_forecast_headroom, so that each horizon still aims above the percentile every minute is
  // held to; up by a shortfall (ShortfallOnRecord), by at most budget.max_raise. 0: no moves.
  absl::Duration surplus_window = absl::Minutes(30);  // spec.slo.ttft.surplusWindow [30m]
  double min_forecast_headroom = 1;
  // The set point's cushion, the raise's bound and the record needed; BudgetAt sets the rules'
  // target_requests from target_requests above, and max_lower from the aim's floor.
  BudgetRules budget;
  api::ScalingRules scale_up = api::HpaDefaultScaleUp();            // spec.scaleUp
  api::ScalingRules scale_down = api::TwinscaleDefaultScaleDown();  // spec.scaleDown
  double safety_margin = 0.8;                          // spec.scaleDown.safetyMargin [0.8]
  double queue_depth_per_replica = 4;                  // spec.limits.queueDepthPerReplica [4]
  double kv_cache_utilization = 0.85;                  // spec.limits.kvCacheUtilization [0.85]
  bool enforce_limits_on_scale_up = false;             // spec.limits.enforceOnScaleUp [false]
  absl::Duration warmup_expected = absl::Seconds(60);  // spec.warmup.expected or the profile
  absl::Duration warmup_p99 = absl::Seconds(180);      // past this a starting pod stops counting
  absl::Duration interval = absl::Seconds(15);         // spec.metrics.interval [15s]
  // spec.slo.itl: output-token gaps; 0 threshold: no ITL objective. Unlike the TTFT objective it
  // is aimed at its own percentile, not at the target share: token counts are large, so the
  // twin's ITL share is not noisy.
  absl::Duration itl_threshold = absl::ZeroDuration();
  double itl_percentile = 90;
  bool admission_enabled = false;  // spec.admission.enabled [false]
  // spec.admission.maxQueuePerReplica: caps the published per-replica queue limit (which is
  // queue_depth_per_replica rounded up); unset: no cap.
  std::optional<int32_t> admission_max_queue_per_replica;
  // The forecast margin (rate_forecast_error.h): when every check of the rate forecast that
  // matured over the last forecast_error_window (at least forecast_error_min_checks of them) saw
  // more arrivals than forecast, the twin is asked about the forecast times the least of those
  // shortfalls, at most forecast_error_cap. Three minutes: with checks maturing one per interval,
  // about a dozen, which is a run a Poisson stream's noise around a steady level does not make
  // (its ratios sit on both sides of 1), and short enough to answer a ramp while it lasts.
  // 0 window: no margin.
  absl::Duration forecast_error_window = absl::Minutes(3);
  int32_t forecast_error_min_checks = 4;
  double forecast_error_cap = 2.0;
  // The seasonal forecast's period (state::SeasonOptions::period): a day. Replay of a compressed
  // day (--time-scale f) compresses it to f x 24 h.
  absl::Duration season_period = absl::Hours(24);
  double default_prompt_tokens = 512;  // until lengths are observed
  double default_output_tokens = 256;
  uint64_t seed = 1;  // the twin's seed: each decision's is derived from it and the time
};

// How far ahead a decision forecasts: the expected warm-up, then long enough to judge the new fleet
// on a minute or more of traffic (four intervals, at least 60 s).
inline absl::Duration ForecastHorizon(const PolicyConfig& c) {
  return c.warmup_expected + std::max(4 * c.interval, absl::Seconds(60));
}

struct PolicyHistory {
  std::deque<std::pair<absl::Time, int32_t>> recommendations;  // for stabilization windows
  std::deque<std::pair<absl::Time, int32_t>> scale_events;     // (time, change) that happened
  int32_t last_missed_at = 0;  // the size the last decision's forecast missed at (0: it did not)
  // The last decision's advisory admission rate, if it advised one: where the next one's search
  // starts (admission_search.h).
  std::optional<double> last_admission_rate;
  // What the fleet served, interval by interval: the SLO budget's record (slo_budget.h), kept
  // for the longer of PolicyConfig::target_window and surplus_window.
  std::deque<ServedInterval> served;
  // The rate forecasts to check and the arrivals to check them on (PolicyConfig::forecast_error_*),
  // for as long as a check may still count.
  std::deque<RateCheck> rate_checks;
  std::deque<ArrivalWindow> arrivals;
  // Scale-in draws of recent decisions, with the fleet size and the question they were asked at:
  // the evidence a later decision at the same size pools (SizingBounds::scale_in_evidence).
  struct MarginDraw {
    absl::Time at;
    int32_t base = 0;
    double safety_margin = 0;
    absl::Duration ttft_threshold, ttft_per_prompt_token;
    MarginForecast forecast;
    // Starting pods that held a slot but no capacity then: a draw asked with more pending
    // capacity counted is not evidence once those pods stop counting.
    int32_t not_counted = 0;
  };
  std::deque<MarginDraw> margin_draws;
};

Decision Recommend(const state::FleetSnapshot& snapshot, const PolicyConfig& config,
                   const Forecaster& forecaster, absl::Time now, const PolicyHistory& history);

// The forecast question for the fleet as observed, without a candidate size: the Ready replicas'
// states, the starting pods that still count (with their remaining warm-up), the arrival rate,
// its burstiness and the lengths, the horizon and the SLO (aimed at the target's share of
// requests, before the record moves it). Every what-if of a decision starts from it; calibration
// replays it.
ForecastQuestion ObservedQuestion(const state::FleetSnapshot& snapshot, const PolicyConfig& config);

// The SLO budget at `now`: the ledger over PolicyConfig::target_window, the record over the last
// surplus_window, and how far that record moves the aim (slo_budget.h), with the aim's floor and
// ceiling applied (the lowering never below percentile + min_forecast_headroom; the raise never
// above 99.5%).
struct BudgetOnRecord {
  BudgetLedger ledger;  // over target_window
  BudgetLedger recent;  // over surplus_window
  AimShift shift;
};
BudgetOnRecord BudgetAt(const PolicyHistory& history, const PolicyConfig& config, absl::Time now);

// Remembers the decision's recommendation (and its scale-in draws); forgets what no window needs.
// A decision is not a scale event: whether it changes the fleet is the actuator's business
// (RecordScaleEvent).
void RecordDecision(const Decision& decision, const PolicyConfig& config, PolicyHistory& history);

// Remembers that the target's replica count changed from `from` to `to` at `at`, for the rate
// limits: twinscale's own write of /scale, or a change it observed (KEDA's HPA, the HPA, a user).
// Only changes that happened count: the HPA's rate limits are over the fleet's actual changes, so
// a decision nobody carried out (Recommend mode, KEDA and HPA modes, a failed write) would
// otherwise hold the next decision back from a change that never began. The scale-in draws go
// with the old size. No change (from == to) records nothing.
void RecordScaleEvent(absl::Time at, int32_t from, int32_t to, PolicyHistory& history);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_
