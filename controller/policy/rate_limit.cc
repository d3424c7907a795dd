// The rate limits: see rate_limit.h.
#include "controller/policy/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_format.h"
#include "controller/policy/hpa_algorithm.h"

namespace twinscale::policy {

RateLimited LimitRate(int32_t desired, int32_t current,
                      const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                      const PolicyConfig& c, std::optional<int32_t> fall_floor, absl::Time now) {
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
    const bool own = c.scale_down.policies.empty();
    api::ScalingRules down = c.scale_down;
    if (own) down.policies = api::TwinscaleScaleDownPolicies();
    int32_t limit = down.select == api::SelectPolicy::kDisabled
                        ? current
                        : HpaScaleDownLimit(current, scale_events, down, now);
    if (own && fall_floor && down.select != api::SelectPolicy::kDisabled) {
      limit = std::min(limit, std::max(0, *fall_floor));
    }
    if (desired < limit) {
      out.limit = limit;
      out.reason = MakeReason(
          ReasonCode::kScaleDownLimit,
          own ? absl::StrFormat("twinscale's scale-down rate allows %d now (want %d): 10%% or 1 "
                                "pod per 60 s%s",
                                limit, desired,
                                fall_floor ? absl::StrFormat(", or at once to %d, as far as the "
                                                             "load has fallen",
                                                             *fall_floor)
                                           : std::string())
              : absl::StrFormat("scale-down policies allow %d now (want %d)", limit, desired));
      out.replicas = std::min(current, limit);
    }
  }
  return out;
}

std::optional<int32_t> FallFloor(
    int32_t current, const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
    const std::deque<std::pair<absl::Time, double>>& recommendation_rates, double rate_now) {
  if (scale_events.empty() || current <= 0 || !(rate_now > 0)) return std::nullopt;
  const absl::Time changed = scale_events.back().first;
  double then = 0;
  for (auto it = recommendation_rates.rbegin(); it != recommendation_rates.rend(); ++it) {
    if (it->first <= changed) {
      then = it->second;
      break;
    }
  }
  if (!(then > 0) || rate_now >= then) return std::nullopt;
  return static_cast<int32_t>(std::ceil(current * rate_now / then - 1e-9));
}

}  // namespace twinscale::policy
