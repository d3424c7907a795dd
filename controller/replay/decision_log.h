// decisions.jsonl: every decision twinscale's policy took in a replay, one JSON object per line,
// with its reasons and their numbers, the forecasts it saw and the twin's calibration at the time.
// The timeline says what the fleet did each interval; this says why, in the words the controller
// would have written into the InferenceAutoscaler's status.
//
// A line (keys in this order; durations in seconds; "time_s" since the trace's first arrival):
//   {"policy": "twinscale:llama-3-1-8b", "time_s": 870, "current": 23, "recommendation": 24,
//    "previous_recommendation": 23, "replicas": 24, "arrival_rate": 232.1,
//    "arrival_rate_cv": 0.04, "ready": 23, "pending": 0, "forecasts": 3, "aim": 95,
//    "aim_lowered_by": 0, "budget": {"requests": 412345, "requests_in_time_percent": 96.21,
//    "minutes": 74, "minutes_met": 73}, "scale_in_evidence": 12,
//    "forecast_at_current": {"attainment": 0.948, "ttft_p90_ms": 402.5, "attainment_se": 0.004,
//                            "meets_slo": false, "verdict_clear": true},
//    "forecast_at_decision": {...}, "slo_at_risk": false, "speed": 0.81,
//    "prediction_error_ms": 12.5,
//    "twin_check": {"replicas": 24, "judge_from_s": 60, "horizon_s": 120, "counted": true,
//                   "cut": false,
//                   "predicted": {"attainment": 0.962, "ttft_p90_ms": 388.1, "waiting": 3.2},
//                   "observed": {"requests": 27810, "attainment": 0.957, "ttft_p90_ms": 401.7,
//                                "waiting": 5}},
//    "reasons": [{"code": "ForecastMissesSlo", "message": "at 23 replicas the twin ..."}]}
// "aim" is the attainment (percent) the forecasts had to show, "aim_lowered_by" the points a
// surplus on record took off it (SurplusSpent; negative: the points a shortfall on record added,
// ShortfallOnRecord), "forecast_margin" (only when one applied) the factor ForecastMargin scaled
// the rate forecast by, "budget" the SLO budget's ledger over the target's window as the decision
// read it (absent before any request was served), "scale_in_evidence" the earlier decisions'
// scale-in draws this one pooled with its own. "prediction_error_ms" is the twin's p90 TTFT
// forecast for the interval just ended minus the observed p90 (null when either is unknown);
// "speed" the calibrated decode speed factor after the decision, "prefill_speed" the prefill one
// and "router_random_share" the share of requests the twin routes at random behind a balancing
// router, "prompt_cached_share" (only when above 0) the share of prompt tokens the pods found in
// their prefix caches, which the twin's requests skip (forecaster.h), "extra_front_end_ms" the time
// the twin adds to every request's front end (calibration.h, "The front end") (each absent when not
// given). "twin_check" (twin_error.h) is the twin's forecast for the fleet the decision left, over
// the span [time_s + judge_from_s, time_s + horizon_s), beside what the truth served over it
// ("counted": in the run's bias and MAE; an unknown observed value is null); absent for a decision
// replay did not check (the pre-roll's).
//
// Pure: DecisionLogJsonl builds the text; replay's command writes it with WriteReportFile.
#ifndef TWINSCALE_CONTROLLER_REPLAY_DECISION_LOG_H_
#define TWINSCALE_CONTROLLER_REPLAY_DECISION_LOG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "controller/replay/twin_error.h"
#include "controller/replay/twinscale_autoscaler.h"

namespace twinscale::replay {

// One line per decision of `decisions`, in order, as `policy` took them; speed[i] and
// prediction_error_ms[i] (NaN: unknown), prefill_speed[i], router_random_share[i] and
// extra_front_end_seconds[i] go with decisions[i] (missing entries are null).
// `origin` is the absl::Time of the trace's first arrival (ReplayConfig::start). `checks`
// (ReplayResult::twin_checks; may be null) go with the decisions at their times.
std::string DecisionLogJsonl(std::string_view policy,
                             const std::vector<policy::Decision>& decisions,
                             const std::vector<double>& speed,
                             const std::vector<double>& prediction_error_ms,
                             absl::Time origin = absl::UnixEpoch(),
                             const std::vector<CheckedPrediction>* checks = nullptr,
                             const std::vector<double>& prefill_speed = {},
                             const std::vector<double>& router_random_share = {},
                             const std::vector<double>& extra_front_end_seconds = {});
// The same for every decision `autoscaler` took.
std::string DecisionLogJsonl(const TwinscaleAutoscaler& autoscaler,
                             absl::Time origin = absl::UnixEpoch(),
                             const std::vector<CheckedPrediction>* checks = nullptr);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_DECISION_LOG_H_
