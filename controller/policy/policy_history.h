// PolicyHistory: what the policy remembers between decisions, a value its caller owns
// (recommend.h's RecordDecision and RecordScaleEvent keep it): recent recommendations and scale
// events for the stabilization windows and rate limits, what the fleet served for the SLO budget,
// the rate forecasts still to be checked, and recent scale-in draws to pool.
#ifndef TWINSCALE_CONTROLLER_POLICY_POLICY_HISTORY_H_
#define TWINSCALE_CONTROLLER_POLICY_POLICY_HISTORY_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/time/time.h"
#include "controller/policy/fleet_sizing.h"
#include "controller/policy/minute_check.h"
#include "controller/policy/rate_forecast_error.h"
#include "controller/policy/slo_budget.h"

namespace twinscale::policy {

struct PolicyHistory {
  std::deque<std::pair<absl::Time, int32_t>> recommendations;  // for stabilization windows
  // When the recommendations of decisions whose aim the twin's optimism raised were made
  // (MinuteMissed, MinuteAtRisk; ascending): the windows hold those only for
  // PolicyConfig::minute_check_window.
  std::deque<absl::Time> raised_at;
  // The arrival rate each recommendation's question asked about (the same times as
  // `recommendations`; 0 where the inputs were stale): the windows hold a recommendation scaled to
  // the rate now (stabilize.h ScaledToTheRateNow).
  std::deque<std::pair<absl::Time, double>> recommendation_rates;
  std::deque<std::pair<absl::Time, int32_t>> scale_events;  // (time, change) that happened
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
  // The twin's forecast for the interval after the last decision (RecordIntervalForecast), and
  // those forecasts checked against what the fleet served, for PolicyConfig::minute_check_window
  // (minute_check.h).
  std::optional<IntervalForecast> interval_forecast;
  std::deque<IntervalCheck> interval_checks;
};

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_POLICY_HISTORY_H_
