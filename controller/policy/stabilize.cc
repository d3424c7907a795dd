// The stabilization windows: see stabilize.h.
#include "controller/policy/stabilize.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace twinscale::policy {

Stabilized Stabilize(int32_t recommendation, int32_t base,
                     const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
                     const PolicyConfig& c, absl::Time now, int32_t clearly_safe) {
  Stabilized out;
  int32_t desired = recommendation;
  if (recommendation < base) {
    const absl::Duration window = c.scale_down.stabilization_window;
    // The largest recommendation within `w` of now, and the recommendation itself.
    auto largest_within = [&](absl::Duration w) {
      int32_t largest = recommendation;
      for (const auto& [t, r] : recommendations) {
        if (now - t <= w) largest = std::max(largest, r);
      }
      return largest;
    };
    desired = largest_within(window);
    const bool covered =
        window <= absl::ZeroDuration() ||
        (!recommendations.empty() && now - recommendations.front().first >= window);
    if (!covered) desired = base;
    const absl::Duration short_window = c.clear_scale_in_window;
    int32_t early = 0;  // where clear evidence takes the fleet, when below the whole window's hold
    if (covered && clearly_safe > 0 && short_window > absl::ZeroDuration() &&
        short_window < window) {
      const int32_t held = std::max(clearly_safe, largest_within(short_window));
      if (held < std::min(desired, base)) early = held;
    }
    if (early > 0) {
      out.reason = MakeReason(
          ReasonCode::kScaleInClear,
          absl::StrFormat("%d replicas clearly meet the SLO at the safety margin: scaling in to %d "
                          "after a %s window instead of %s (recommended: %d)",
                          clearly_safe, early, absl::FormatDuration(short_window),
                          absl::FormatDuration(window), recommendation));
      desired = early;
    } else if (desired > recommendation) {
      out.reason =
          MakeReason(ReasonCode::kScaleDownStabilized,
                     absl::StrFormat("waiting out the %s scale-down window (holding %d)",
                                     absl::FormatDuration(window), std::min(desired, base)));
    }
    desired = std::min(desired, base);
  } else if (recommendation > base) {
    for (const auto& [t, r] : recommendations) {
      if (now - t <= c.scale_up.stabilization_window) desired = std::min(desired, r);
    }
    desired = std::max(desired, base);
  }
  out.replicas = desired;
  return out;
}

bool LastsThroughWarmup(const ForecastQuestion& q, const PolicyConfig& c) {
  if (q.rate_persistence.empty() || q.rate_interval <= absl::ZeroDuration()) return false;
  const double ahead = std::ceil(absl::FDivDuration(c.warmup_expected, q.rate_interval));
  return PathAt(q.rate_persistence, static_cast<int64_t>(std::max(1.0, ahead))) >=
         kLastsThroughWarmup;
}

std::deque<std::pair<absl::Time, int32_t>> HeldRecommendations(
    const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
    const std::deque<absl::Time>& raised_at, bool lasts, const PolicyConfig& c, absl::Time now) {
  if (raised_at.empty() || !lasts) return recommendations;
  std::deque<std::pair<absl::Time, int32_t>> held;
  for (const auto& r : recommendations) {
    const bool raised = std::binary_search(raised_at.begin(), raised_at.end(), r.first);
    if (raised && now - r.first > c.minute_check_window) continue;
    held.push_back(r);
  }
  return held;
}

std::deque<std::pair<absl::Time, int32_t>> ScaledToTheRateNow(
    const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
    const std::deque<std::pair<absl::Time, double>>& rates, double rate_now, bool lasts) {
  if (!lasts || !(rate_now > 0)) return recommendations;
  std::deque<std::pair<absl::Time, int32_t>> scaled = recommendations;
  for (auto& [t, r] : scaled) {
    const auto it = std::lower_bound(rates.begin(), rates.end(), t,
                                     [](const auto& a, absl::Time b) { return a.first < b; });
    if (it == rates.end() || it->first != t || !(it->second > rate_now)) continue;
    // The small epsilon keeps an exact product (30 * 0.5) from rounding up past itself.
    r = static_cast<int32_t>(std::ceil(r * (rate_now / it->second) - 1e-9));
  }
  return scaled;
}

bool MayScaleInEarly(const ForecastQuestion& q, const PolicyConfig& c, const BudgetLedger& window,
                     const BudgetLedger& recent) {
  return LastsThroughWarmup(q, c) && MinutesToSpare(window, recent, c.target_minutes);
}

}  // namespace twinscale::policy
