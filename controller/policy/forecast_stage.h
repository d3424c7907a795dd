// The decision's second stage: the forecast of the span a decision judges (from the warm-up to the
// horizon), checked. The question's rate path (the level with its persistence,
// state::RatePersistence, times the seasonal ratios where they are used) is summarised as the mean
// rate over that span, which later decisions check against the arrivals that came
// (rate_forecast_error.h); when the checks that matured over the last forecast_error_window all saw
// more arrivals than forecast (a ramp), the rate is scaled up by the least of those shortfalls
// (ForecastMargin). Where the season moves the span's mean by 1% or more, SeasonalForecast says
// by how much. Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_FORECAST_STAGE_H_
#define TWINSCALE_CONTROLLER_POLICY_FORECAST_STAGE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/policy_history.h"
#include "controller/policy/rate_forecast_error.h"
#include "controller/policy/reason.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

// How the season moves the judged span's mean rate.
struct SeasonalMove {
  double with_season = 0;  // req/s over the judged span, the path times the seasonal ratios
  double without = 0;      // the path alone
  state::SeasonSkill::Score skill;
};

struct ForecastAhead {
  ForecastQuestion question;  // the observed question, its rate scaled by `margin`
  // This decision's forecast for its judged span (before the margin), for later checks; absent
  // when the path forecasts no arrivals there.
  std::optional<RateCheck> rate_check;
  std::optional<ArrivalWindow> arrivals_seen;  // the snapshot's last interval, to check against
  std::optional<SeasonalMove> season;          // where it moves the span by 1% or more
  double margin = 1;                           // ForecastMargin's factor (1: none)
  int32_t margin_checks = 0;                   // the checks it rests on
  std::vector<Reason> reasons;                 // SeasonalForecast, ForecastMargin
};
ForecastAhead ForecastTheSpan(ForecastQuestion question, const state::FleetSnapshot& snapshot,
                              const PolicyConfig& config, const PolicyHistory& history,
                              absl::Time now);

// The mean rate the question's path forecasts over [from, horizon), second by second (0 when the
// span is empty): the persistence weights apply only with a baseline, as the twin applies them;
// the seasonal ratios always.
double MeanForecastRate(const ForecastQuestion& question, absl::Duration from);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_FORECAST_STAGE_H_
