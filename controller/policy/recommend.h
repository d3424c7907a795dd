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
// - The aim: the forecasts must show percentile + forecast_headroom; lowered, down to percentile +
//   min_forecast_headroom, by the surplus the fleet served over the target in the last
//   surplus_window (SurplusSpent), or raised by a shortfall there (ShortfallOnRecord).
// - Stale inputs freeze scale-in; with no usable arrival rate at all the decision holds.
// - When even max_replicas can't meet the SLO, or capacity is still warming, advisory admission
//   limits say what the serving fleet can hold (admission_search.h: searched from the previous
//   decision's).
#ifndef TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_
#define TWINSCALE_CONTROLLER_POLICY_RECOMMEND_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/scaling_rules.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

// The resolved parameters the policy reads: the InferenceAutoscaler spec with its defaults applied,
// plus what comes from the deployment profile or is measured (warm-up).
struct PolicyConfig {
  int32_t min_replicas = 1;                                 // spec.minReplicas [1]
  int32_t max_replicas = 16;                                // spec.maxReplicas
  absl::Duration ttft_threshold = absl::Milliseconds(500);  // spec.slo.ttft.threshold [500ms]
  absl::Duration ttft_per_prompt_token = absl::ZeroDuration();  // [0ms]
  double percentile = 90;                                   // spec.slo.ttft.percentile [90]
  // Percentage points of attainment the twin must show beyond `percentile` before the current
  // size counts as enough; the aim is capped at 99.5%. Two reasons. The SLO is judged per minute
  // on real traffic and a forecast over a few minutes has sampling error, so aiming exactly at the
  // percentile misses about half the minutes that sit on the edge. And the quality target a fleet
  // is held to (docs/architecture.md "Quality target": at least 95% of all requests within the
  // threshold, and 95% of minutes at the percentile) asks more than a p90 objective: a twin that
  // forecasts right and aims at 93% lands near 93-94% of requests (94.4% on the Azure
  // conversation trace at x40). 5 points aim a p90 objective at that 95%.
  double forecast_headroom = 5;
  // Spending a surplus, as an error budget is spent. The headroom above is for every horizon
  // alike, but the target is judged over all requests: a fleet that has served more than
  // percentile + forecast_headroom over the last `surplus_window` (observed, from the TTFT
  // histogram) by more than `surplus_cushion` points aims its forecasts that much lower, never
  // below percentile + min_forecast_headroom (so each horizon still aims above the SLO's own
  // percentile, which every minute is held to). Only after `surplus_min_record` of record. Where
  // bursts are shorter than the warm-up (the Azure code trace), meeting the aim in every horizon
  // sizes the fleet for each burst, and over an hour such a fleet serves about 98% where 95% is
  // asked.
  // A shortfall is the same record read the other way: a fleet that served less than
  // percentile + forecast_headroom + surplus_cushion aims that much higher, by at most
  // `max_shortfall_raise` points (ShortfallOnRecord). The twin is checked against a truth it does
  // not model exactly (front-end time, step noise, a slower warm-up); where that makes its
  // forecasts a little optimistic, the served record shows it and the aim takes it up, as the
  // surplus takes up a pessimistic twin. (Even calibrated right, the twin is optimistic enough on
  // the Azure code trace at x20 that three seeds of six serve 94.4-95.0% without the raise.) One
  // set point, the target plus the cushion, both ways; a dead band instead (raising below 95.5%,
  // spending above 96%) leaves four of those six seeds short.
  // The cushion is a point and a half because the hour is judged on its minutes as well as its
  // requests: a fleet held to barely 95% of requests can still have a minute too many over the
  // threshold. On the Azure code trace at x20 (truth `all`), with the twin's forecast of how long
  // a burst lasts (state::RatePersistence), a cushion of 1.5 serves 95.1-95.6% of requests on all
  // six seeds, where 1 or 1.25 leaves two of them at 94.8-95.0%. The cushion costs the flat
  // conversation trace about a replica for its first half hour.
  absl::Duration surplus_window = absl::Minutes(30);  // spec.slo.ttft.surplusWindow [30m]; 0: off
  absl::Duration surplus_min_record = absl::Minutes(10);  // or the whole window, if shorter
  double surplus_cushion = 1.5;
  double min_forecast_headroom = 1;
  double max_shortfall_raise = 2;
  ScalingRules scale_up = HpaDefaultScaleUp();              // spec.scaleUp
  ScalingRules scale_down = TwinscaleDefaultScaleDown();    // spec.scaleDown
  double safety_margin = 0.8;                               // spec.scaleDown.safetyMargin [0.8]
  double queue_depth_per_replica = 4;                       // spec.limits.queueDepthPerReplica [4]
  double kv_cache_utilization = 0.85;                       // spec.limits.kvCacheUtilization [0.85]
  bool enforce_limits_on_scale_up = false;                  // spec.limits.enforceOnScaleUp [false]
  absl::Duration warmup_expected = absl::Seconds(60);       // spec.warmup.expected or the profile
  absl::Duration warmup_p99 = absl::Seconds(180);           // past this a starting pod stops counting
  absl::Duration interval = absl::Seconds(15);              // spec.metrics.interval [15s]
  // spec.slo.itl: output-token gaps; 0 threshold: no ITL objective. Unlike the TTFT percentile
  // it gets no +5-point aim: token counts are large, so the twin's ITL share is not noisy.
  absl::Duration itl_threshold = absl::ZeroDuration();
  double itl_percentile = 90;
  bool admission_enabled = false;                           // spec.admission.enabled [false]
  // spec.admission.maxQueuePerReplica: caps the published per-replica queue limit (which is
  // queue_depth_per_replica rounded up); unset: no cap.
  std::optional<int32_t> admission_max_queue_per_replica;
  double default_prompt_tokens = 512;                       // until lengths are observed
  double default_output_tokens = 256;
  uint64_t seed = 1;  // the twin's seed: each decision's is derived from it and the time
};

struct PolicyHistory {
  std::deque<std::pair<absl::Time, int32_t>> recommendations;  // for stabilization windows
  std::deque<std::pair<absl::Time, int32_t>> scale_events;     // (time, change) that happened
  int32_t last_missed_at = 0;  // the size the last decision's forecast missed at (0: it did not)
  // The last decision's advisory admission rate, if it advised one: where the next one's search
  // starts (admission_search.h).
  std::optional<double> last_admission_rate;
  // What the fleet served, window by window (first tokens observed, and those within the TTFT
  // threshold): the record a surplus is measured on (PolicyConfig::surplus_window).
  struct ServedWindow {
    absl::Time at;
    double requests = 0;
    double met = 0;
  };
  std::deque<ServedWindow> served;
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
// its burstiness and the lengths, the horizon and the SLO (at the percentile plus the forecast
// headroom). Every what-if of a decision starts from it; calibration replays it.
ForecastQuestion ObservedQuestion(const state::FleetSnapshot& snapshot, const PolicyConfig& config);

// The surplus on record at `now` (PolicyConfig::surplus_window): the share of the record's
// requests served within the TTFT threshold, and the points the aim may be lowered by (0 when the
// record is shorter than surplus_min_record or shows no surplus beyond the cushion), or must be
// raised by (a shortfall below the target plus the cushion; at most max_shortfall_raise, and
// never above 99.5%). At most one of the two is positive.
struct SurplusOnRecord {
  double served_percent = 0;
  double requests = 0;
  double lowered_by = 0;
  double raised_by = 0;
};
SurplusOnRecord EarnedSurplus(const PolicyHistory& history, const PolicyConfig& config,
                              absl::Time now);

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
