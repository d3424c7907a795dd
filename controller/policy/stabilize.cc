// The stabilization windows: see stabilize.h.
#include "controller/policy/stabilize.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace twinscale::policy {

Stabilized Stabilize(int32_t recommendation, int32_t base,
                     const std::deque<std::pair<absl::Time, int32_t>>& recommendations,
                     const PolicyConfig& c, absl::Time now) {
  Stabilized out;
  int32_t desired = recommendation;
  if (recommendation < base) {
    const absl::Duration window = c.scale_down.stabilization_window;
    for (const auto& [t, r] : recommendations) {
      if (now - t <= window) desired = std::max(desired, r);
    }
    const bool covered =
        window <= absl::ZeroDuration() ||
        (!recommendations.empty() && now - recommendations.front().first >= window);
    if (!covered) desired = base;
    if (desired > recommendation) {
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

}  // namespace twinscale::policy
