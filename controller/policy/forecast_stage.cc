// The forecast of the judged span, checked: see forecast_stage.h.
#include "controller/policy/forecast_stage.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinscale::policy {

double MeanForecastRate(const ForecastQuestion& q, absl::Duration from) {
  const absl::Duration step = std::max(absl::Seconds(1), q.rate_interval);
  const bool path = !q.rate_persistence.empty() && q.arrival_rate_baseline > 0;
  const std::vector<double> no_weights;
  double sum = 0;
  int32_t n = 0;
  for (absl::Duration t = from; t < q.horizon; t += absl::Seconds(1)) {
    absl::Duration within;  // IDivDuration needs somewhere to put the remainder
    const int64_t k = 1 + absl::IDivDuration(t, step, &within);
    sum += std::max(0.0,
                    path ? RateAhead(q.arrival_rate, q.arrival_rate_baseline, q.rate_persistence,
                                     q.rate_season, k)
                         : RateAhead(q.arrival_rate, q.arrival_rate, no_weights, q.rate_season, k));
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

ForecastAhead ForecastTheSpan(ForecastQuestion q, const state::FleetSnapshot& snap,
                              const PolicyConfig& c, const PolicyHistory& history, absl::Time now) {
  ForecastAhead out;
  if (const double mean = MeanForecastRate(q, c.warmup_expected); mean > 0) {
    out.rate_check = RateCheck{now + c.warmup_expected, now + q.horizon, mean};
  }
  const double seconds = absl::ToDoubleSeconds(snap.workload.rate_interval);
  if (seconds > 0) {
    out.arrivals_seen =
        ArrivalWindow{snap.at, seconds, snap.workload.arrival_rate.value() * seconds};
  }
  if (!q.rate_season.empty()) {
    ForecastQuestion level_only = q;
    level_only.rate_season.clear();
    const double with = MeanForecastRate(q, c.warmup_expected);
    const double without = MeanForecastRate(level_only, c.warmup_expected);
    if (without > 0 && std::abs(with / without - 1) >= 0.01) {
      const state::SeasonSkill::Score& skill = snap.workload.season_skill;
      out.season = SeasonalMove{with, without, skill};
      out.reasons.push_back(MakeReason(
          ReasonCode::kSeasonalForecast,
          absl::StrFormat("on the days before, the rate moved by %+.1f%% from the level's "
                          "window to the span judged (%s to %s ahead): forecasting %.1f req/s "
                          "there (over the last %d checks the season's forecasts erred by "
                          "%.1f%%, the level's alone by %.1f%%)",
                          100 * (with / without - 1), absl::FormatDuration(c.warmup_expected),
                          absl::FormatDuration(q.horizon), with, skill.checks,
                          100 * skill.seasonal_error, 100 * skill.level_error)));
    }
  }
  if (c.forecast_error_window > absl::ZeroDuration()) {
    const std::vector<double> ratios =
        ForecastRatios(history.rate_checks, history.arrivals, now - c.forecast_error_window);
    const double m = ShortfallMargin(ratios, c.forecast_error_min_checks, c.forecast_error_cap);
    if (m > 1) {
      out.margin = m;
      out.margin_checks = static_cast<int32_t>(ratios.size());
      q.arrival_rate *= m;
      q.arrival_rate_baseline *= m;
      out.reasons.push_back(MakeReason(
          ReasonCode::kForecastMargin,
          absl::StrFormat("the last %zu checks of the rate forecast all saw more arrivals than "
                          "forecast, the least by %.1f%%: asking the twin about %.1f req/s",
                          ratios.size(), 100 * (m - 1), q.arrival_rate)));
    }
  }
  out.question = std::move(q);
  return out;
}

}  // namespace twinscale::policy
