// The seasonal ratios of the rate forecast: see seasonal_forecast.h.
#include "controller/state/seasonal_forecast.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace twinscale::state {

std::vector<double> SeasonalRatios(const ArrivalHistory& history, absl::Time now,
                                   absl::Duration level_span, absl::Duration interval,
                                   int32_t intervals, const SeasonOptions& options) {
  if (intervals < 1 || interval <= absl::ZeroDuration() || options.period <= absl::ZeroDuration()) {
    return {};
  }
  const absl::Duration smoothing = std::max(options.smoothing(), interval);
  const absl::Duration level_width = std::max(level_span, smoothing);
  auto rate_around = [&](absl::Time centre, absl::Duration width) {
    return history.MeanRate(centre - width / 2, centre + width / 2);
  };
  std::vector<double> ahead(static_cast<size_t>(intervals), 0.0);
  double level_sum = 0;
  for (int32_t p = 1; p <= options.periods; ++p) {
    const absl::Time then = now - p * options.period;
    const std::optional<double> level = rate_around(then - level_span / 2, level_width);
    if (!level.has_value() || *level <= 0) continue;
    std::vector<double> rates;
    for (int32_t k = 1; k <= intervals; ++k) {
      const std::optional<double> r = rate_around(then + (k - 0.5) * interval, smoothing);
      if (!r.has_value()) break;
      rates.push_back(*r);
    }
    if (static_cast<int32_t>(rates.size()) < intervals) continue;  // a period seen in part
    level_sum += *level;
    for (size_t k = 0; k < rates.size(); ++k) ahead[k] += rates[k];
  }
  if (level_sum <= 0) return {};
  const double hi = std::max(1.0, options.max_ratio);
  for (double& r : ahead) r = std::clamp(r / level_sum, 1.0 / hi, hi);
  return ahead;
}

void SeasonSkill::Forecast(absl::Time from, absl::Time to, double level, double seasonal) {
  if (!(to > from) || !(level > 0) || !(seasonal > 0)) return;
  if (last_to_.has_value() && from < *last_to_) return;  // overlaps the last span kept
  last_to_ = to;
  pending_.push_back({from, to, level, seasonal});
}

void SeasonSkill::Mature(absl::Time now, const ArrivalHistory& history) {
  while (!pending_.empty() && pending_.front().to <= now) {
    const Pending p = pending_.front();
    pending_.pop_front();
    const std::optional<double> arrived = history.MeanRate(p.from, p.to);
    if (!arrived.has_value() || *arrived <= 0) continue;
    checks_.push_back(
        {p.to, std::abs(std::log(p.level / *arrived)), std::abs(std::log(p.seasonal / *arrived))});
  }
  while (!checks_.empty() && checks_.front().at < now - window_) checks_.pop_front();
}

SeasonSkill::Score SeasonSkill::score() const {
  Score s;
  s.checks = static_cast<int32_t>(checks_.size());
  if (checks_.empty()) return s;
  double mean_difference = 0;
  for (const Check& c : checks_) {
    s.level_error += c.level_error / s.checks;
    s.seasonal_error += c.seasonal_error / s.checks;
    mean_difference += (c.level_error - c.seasonal_error) / s.checks;
  }
  if (s.checks >= 2) {
    double ss = 0;
    for (const Check& c : checks_) {
      const double r = c.level_error - c.seasonal_error - mean_difference;
      ss += r * r;
    }
    s.difference_se = std::sqrt(ss / (s.checks - 1) / s.checks);
  }
  s.use_season = s.checks >= min_checks_ && s.checks >= 2 &&
                 mean_difference > 2 * s.difference_se && mean_difference > 0;
  return s;
}

}  // namespace twinscale::state
