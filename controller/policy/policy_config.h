// PolicyConfig: the resolved parameters the policy reads (the InferenceAutoscaler spec with its
// defaults applied, plus what the deployment profile gives or the controller measures), and the
// horizon a decision forecasts over. Every stage of the decision (recommend.h) reads it.
#ifndef TWINSCALE_CONTROLLER_POLICY_POLICY_CONFIG_H_
#define TWINSCALE_CONTROLLER_POLICY_POLICY_CONFIG_H_

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"
#include "controller/policy/slo_budget.h"

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
  // spec.scaleDown.clearlySafeWindow [3m]: a scale-in to a size the pooled draws call clearly
  // safe waits this long instead of the whole scale-down window (stabilize.h): three minutes
  // outlast a dip that comes straight back, which one minute followed down to meet the rise a
  // warm-up late (docs/results.md). 0: never.
  absl::Duration clear_scale_in_window = absl::Seconds(180);
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
  // The last minute checked (minute_check.h): the twin's forecasts of each interval against what
  // the fleet served in it, pooled over this window. A minute because the target counts minutes.
  // 0: no check.
  absl::Duration minute_check_window = absl::Minutes(1);
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

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_POLICY_CONFIG_H_
