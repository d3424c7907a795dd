// The policy's own rate-forecast error: see rate_forecast_error.h.
#include "controller/policy/rate_forecast_error.h"

#include <algorithm>

namespace twinscale::policy {

std::vector<double> ForecastRatios(const std::deque<RateCheck>& checks,
                                   const std::deque<ArrivalWindow>& arrivals,
                                   absl::Time matured_since) {
  std::vector<double> out;
  if (arrivals.empty()) return out;
  const absl::Time seen_until = arrivals.back().end;
  for (const RateCheck& c : checks) {
    if (!(c.forecast > 0) || c.to <= c.from || c.to > seen_until || c.to < matured_since) continue;
    double requests = 0, seconds = 0;
    for (const ArrivalWindow& w : arrivals) {
      if (!(w.seconds > 0)) continue;
      const absl::Time start = w.end - absl::Seconds(w.seconds);
      const absl::Time lo = std::max(start, c.from), hi = std::min(w.end, c.to);
      if (hi <= lo) continue;
      const double inside = absl::ToDoubleSeconds(hi - lo);
      requests += w.requests * inside / w.seconds;
      seconds += inside;
    }
    if (seconds < 0.5 * absl::ToDoubleSeconds(c.to - c.from)) continue;
    out.push_back(requests / seconds / c.forecast);
  }
  return out;
}

double ShortfallMargin(const std::vector<double>& ratios, int32_t min_checks, double cap) {
  if (ratios.empty() || static_cast<int64_t>(ratios.size()) < std::max<int32_t>(1, min_checks)) {
    return 1;
  }
  const double least = *std::min_element(ratios.begin(), ratios.end());
  if (!(least > 1)) return 1;
  return std::min(least, std::max(1.0, cap));
}

}  // namespace twinscale::policy
