// The arrival-rate estimators: see rate_estimators.h.
#include "controller/state/rate_estimators.h"

#include <algorithm>
#include <cmath>

namespace twinscale::state {

RateLevel LevelOf(const std::deque<double>& counts, const std::deque<double>& window_s,
                  int32_t level_intervals, int32_t short_intervals, int32_t max_intervals,
                  double dispersion, double shift_z) {
  RateLevel level;
  const int32_t size = static_cast<int32_t>(std::min(counts.size(), window_s.size()));
  if (size == 0) return level;
  int32_t span = std::clamp(level_intervals, 1, std::max(1, std::min(max_intervals, size)));
  const int32_t recent = std::clamp(short_intervals, 1, span);
  // Sums over the newest `from_newest` .. `from_newest + n - 1` intervals (0 = the newest).
  auto sum = [&](int32_t from_newest, int32_t n, double& requests, double& seconds) {
    requests = seconds = 0;
    for (int32_t i = 0; i < n; ++i) {
      requests += counts[static_cast<size_t>(size - 1 - from_newest - i)];
      seconds += window_s[static_cast<size_t>(size - 1 - from_newest - i)];
    }
  };
  if (span > recent) {
    double recent_n, recent_s, before_n, before_s;
    sum(0, recent, recent_n, recent_s);
    sum(recent, span - recent, before_n, before_s);
    const double pooled = (recent_n + before_n) / (recent_s + before_s);
    // Each interval's count has variance dispersion x its mean, so a rate taken over t seconds of
    // such intervals has variance dispersion x rate / t; the two rates are independent.
    const double se = std::sqrt(std::max(0.0, dispersion) * pooled * (1 / recent_s + 1 / before_s));
    if (recent_s > 0 && before_s > 0 &&
        std::abs(recent_n / recent_s - before_n / before_s) > shift_z * se && pooled > 0) {
      span = recent;
      level.shifted = true;
    }
  }
  double requests, seconds;
  sum(0, span, requests, seconds);
  level.rate = seconds > 0 ? requests / seconds : 0;
  level.intervals = span;
  return level;
}

std::vector<double> RatePersistence(const std::deque<double>& counts,
                                    const std::deque<double>& window_s, int32_t short_intervals,
                                    int32_t baseline_intervals, int32_t max_lag,
                                    int32_t min_pairs) {
  const int32_t size = static_cast<int32_t>(std::min(counts.size(), window_s.size()));
  const int32_t recent_n = std::max(1, short_intervals);
  const int32_t base_n = std::max(recent_n, baseline_intervals);
  std::vector<double> rate(static_cast<size_t>(size));
  for (int32_t i = 0; i < size; ++i) {
    rate[i] = window_s[i] > 0 ? counts[i] / window_s[i] : 0.0;
  }
  // Departure at each t that has a full baseline behind it: recent(t) - baseline(t).
  auto mean = [&](int32_t end, int32_t n) {  // the mean rate of the n intervals ending at `end`
    double requests = 0, seconds = 0;
    for (int32_t i = end - n + 1; i <= end; ++i) {
      requests += counts[i];
      seconds += window_s[i];
    }
    return seconds > 0 ? requests / seconds : 0.0;
  };
  std::vector<double> departure(static_cast<size_t>(size), 0.0), baseline(departure);
  for (int32_t t = base_n - 1; t < size; ++t) {
    baseline[t] = mean(t, base_n);
    departure[t] = mean(t, recent_n) - baseline[t];
  }
  std::vector<double> weights;
  for (int32_t k = 1; k <= max_lag; ++k) {
    double xy = 0, xx = 0;
    int32_t pairs = 0;
    for (int32_t t = base_n - 1; t + k < size; ++t) {
      xy += departure[t] * (rate[t + k] - baseline[t]);
      xx += departure[t] * departure[t];
      ++pairs;
    }
    if (pairs < std::max(1, min_pairs) || !(xx > 0)) {
      if (weights.empty()) return weights;
      weights.push_back(weights.back());
      continue;
    }
    weights.push_back(std::clamp(xy / xx, 0.0, 1.0));
  }
  return weights;
}

double AllanDispersion(const std::vector<double>& counts) {
  if (counts.size() < 2) return 1.0;
  double mean = 0, sq = 0;
  for (double c : counts) mean += c;
  mean /= static_cast<double>(counts.size());
  if (!(mean > 0)) return 1.0;
  for (size_t i = 1; i < counts.size(); ++i) {
    const double d = counts[i] - counts[i - 1];
    sq += d * d;
  }
  return sq / (2.0 * static_cast<double>(counts.size() - 1) * mean);
}

}  // namespace twinscale::state
