// The twin's own error, measured on every decision of a replay: what the twin forecast for the
// fleet each decision left in place, beside what the truth fleet then served over the same span;
// per run, the bias and mean absolute error of the forecast attainment.
//
// The span. A decision asks its what-ifs over its question's horizon (ForecastQuestion::horizon:
// the expected warm-up plus at least a minute) and judges the requests arriving from judge_from
// on: after the warm-up for a fleet that keeps or adds capacity (a scale-up changes nothing
// before its replicas are ready), from the decision on for one that removes some
// (policy::CandidateQuestion). The prediction is that what-if asked for the replica count the
// decision left the fleet at — for a decision that holds, the fleet then in place; for one that
// scales, the fleet the truth then runs, its new replicas warming as the twin assumes. (Asking
// the count before a scale-up would compare a fleet the truth never ran with one it did.) The
// truth is judged on the same span, [t + judge_from, t + horizon) from the decision's time t:
// - observed attainment: the share of the requests arriving in the span that met the TTFT SLO
//   (rejected, aborted and never-served requests miss, as in the summary's attainment);
// - observed p90 TTFT: over those of them that got a first token;
// - observed queue: the truth fleet's waiting requests (engines' queues plus the gateway) at the
//   first decision at or after t + horizon (decisions come every sync period; with the default
//   15 s period and a horizon of whole periods, exactly at the span's end).
// The twin's p90 TTFT is over every request its run served (twin_forecaster.h), from t on, not
// only the span's: a p90 error also holds that difference. Its queue is at t + horizon.
//
// Which decisions count (CheckedPrediction::counted):
// - the span had requests (no share to compare otherwise);
// - the span ends by the end of the record (the trace's last arrival): a span cut short holds
//   only its first part, and its end is after the traffic stopped, which the twin never assumed;
// - calibration had settled: the decision comes after the pre-roll (replay counts nothing before
//   it) and after at least kSettledCalibrationUpdates calibration updates (or calibration is off).
//   Calibration folds each window in with weight 0.3 (calibration.h): after 10 updates, the
//   profile's starting factor keeps 0.7^10 < 3% of its weight.
// bias = mean(predicted - observed attainment) and MAE = mean |predicted - observed|, in
// percentage points, over the counted decisions; the same for the p90 TTFT (ms, over counted
// decisions whose span served a first token). A positive bias is an optimistic twin.
//
// The MAE's sampling floor. A span's observed share is itself a draw: n requests, each in time
// with probability p, give a share with standard deviation sqrt(p (1 - p) / n), so even a forecast
// of exactly p errs by sqrt(2 / pi) of that on average (the mean absolute deviation of a normal).
// attainment_mae_floor_points is that, with the observed share for p, averaged over the counted
// decisions: the MAE a perfect twin would still show on these spans. It is a lower bound (a
// queue's misses come together, so the real spread is wider); where it is near the MAE, the
// error is mostly the spans' own sampling, not the twin. Spans of a hundred requests at 95% in
// time put it near 1.7 points: a long-prompt trace at about 1 request per second is such a case.
//
// The error by what the arrivals did. The twin is asked about a forecast rate (TwinPrediction::
// forecast_rps); when the arrivals then run above it, the twin is optimistic for the rate's sake,
// not its own. Each counted decision falls in one of three parts by the span's request count
// against the count the forecast expected (forecast_rps times the span): as forecast (within the
// larger of 5% and two Poisson standard deviations of the expected count), above it, or below it.
// The part "as forecast" is the twin's own error, the engine and what it is fed about lengths and
// speed; the other two are the rate forecast's. A decision without a forecast rate (0) counts in
// none of them.
//
// Pure: no I/O. Thread-safe (no shared state).
#ifndef TWINSCALE_CONTROLLER_REPLAY_TWIN_ERROR_H_
#define TWINSCALE_CONTROLLER_REPLAY_TWIN_ERROR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"

namespace twinscale::replay {

inline constexpr int64_t kSettledCalibrationUpdates = 10;

// What the twin said at one decision. Times are since the trace's first arrival.
struct TwinPrediction {
  absl::Duration at;          // the decision's time
  absl::Duration judge_from;  // the span: [at + judge_from, at + horizon)
  absl::Duration horizon;
  int32_t replicas = 0;   // the fleet it was asked about
  double attainment = 1;  // share of the span's requests within the SLO
  double ttft_p90_ms = 0;
  double waiting_at_end = 0;  // fleet-wide, at at + horizon
  bool settled = true;        // calibration settled (see above)
  // The policy's plan at the decision, for the report: the mean arrival rate it asked the twin
  // about over the span it judged (its forecast, with any forecast margin), the aim, and the SLO
  // budget's record over the target's window as it read it (percentages).
  double forecast_rps = 0;
  double aim_percent = 0;
  double budget_requests_percent = 100;
  double budget_minutes_percent = 100;
};

// One request as the truth served it.
struct ServedRequest {
  absl::Duration arrival;         // since the first arrival
  std::optional<double> ttft_ms;  // none: no first token (rejected, aborted, unserved)
  bool met = false;               // within the TTFT SLO
};

// The truth fleet's waiting requests at a decision's time.
struct QueueSample {
  absl::Duration at;
  int64_t waiting = 0;
};

struct CheckedPrediction {
  TwinPrediction predicted;
  int64_t requests = 0;            // arriving in the span
  double observed_attainment = 1;  // 1 when none arrived
  std::optional<double> observed_ttft_p90_ms;
  std::optional<int64_t> observed_waiting;  // none when no sample is at or after the span's end
  bool cut = false;                         // the span ends after the record's end
  bool counted = false;                     // in the run's bias and MAE (see above)
};

// Bias and MAE of the attainment over one part of the counted decisions (points).
struct TwinErrorPart {
  int64_t decisions = 0;
  double attainment_bias_points = 0;
  double attainment_mae_points = 0;
};

// Which part a span's arrivals put a decision in (see "The error by what the arrivals did").
enum class ArrivalsAgainstForecast { kNoForecast, kAsForecast, kAbove, kBelow };
ArrivalsAgainstForecast CompareArrivals(int64_t requests, double forecast_rps, absl::Duration span);

struct TwinError {
  int64_t decisions = 0;              // counted
  double attainment_bias_points = 0;  // mean of predicted - observed, x100
  double attainment_mae_points = 0;
  double attainment_mae_floor_points = 0;  // what sampling alone gives (see above)
  int64_t ttft_decisions = 0;              // counted, with an observed p90
  double ttft_p90_bias_ms = 0;
  double ttft_p90_mae_ms = 0;
  TwinErrorPart rate_as_forecast;     // the arrivals came as forecast: the twin's own error
  TwinErrorPart rate_above_forecast;  // more came than forecast
  TwinErrorPart rate_below_forecast;  // fewer came
};

// Pairs each prediction with the truth's record over its span. `served` must be sorted by
// arrival; `queue` by time. `record_end`: the trace's last arrival (spans ending after it are
// cut). Linear in the predictions' spans' requests.
std::vector<CheckedPrediction> CheckPredictions(const std::vector<TwinPrediction>& predictions,
                                                const std::vector<ServedRequest>& served,
                                                const std::vector<QueueSample>& queue,
                                                absl::Duration record_end);

// Bias and MAE over the counted checks; nullopt when none counts.
std::optional<TwinError> SummarizeTwinError(const std::vector<CheckedPrediction>& checks);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_TWIN_ERROR_H_
