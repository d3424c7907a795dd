// The rate limits: see rate_limit.h.
#include "controller/policy/rate_limit.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "controller/policy/hpa_algorithm.h"

namespace twinscale::policy {

RateLimited LimitRate(int32_t desired, int32_t current,
                      const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                      const PolicyConfig& c, absl::Time now) {
  RateLimited out;
  out.replicas = desired;
  if (desired > current && current > 0) {
    const int32_t limit = c.scale_up.select == api::SelectPolicy::kDisabled
                              ? current
                              : HpaScaleUpLimit(current, scale_events, c.scale_up, now);
    if (desired > limit) {
      out.limit = limit;
      out.reason =
          MakeReason(ReasonCode::kScaleUpLimit,
                     absl::StrFormat("scale-up policies allow %d now (want %d)", limit, desired));
      out.replicas = std::max(current, limit);
    }
  } else if (desired < current) {
    const int32_t limit = c.scale_down.select == api::SelectPolicy::kDisabled
                              ? current
                              : HpaScaleDownLimit(current, scale_events, c.scale_down, now);
    if (desired < limit) {
      out.limit = limit;
      out.reason =
          MakeReason(ReasonCode::kScaleDownLimit,
                     absl::StrFormat("scale-down policies allow %d now (want %d)", limit, desired));
      out.replicas = std::min(current, limit);
    }
  }
  return out;
}

}  // namespace twinscale::policy
