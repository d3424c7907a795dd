// How fast a fleet may change size, in the HPA's own terms (autoscaling/v2 HPAScalingRules), shared
// by the InferenceAutoscaler spec (scaleUp / scaleDown), the HPA algorithm used for the baselines
// and the KEDA/HPA modes' replay, and twinscale's own policy. Part of the spec's API (api/), so
// the decisions in policy/ include it from here and api/ depends on nothing of theirs. Plain
// values; no behaviour.
#ifndef TWINSCALE_CONTROLLER_API_SCALING_RULES_H_
#define TWINSCALE_CONTROLLER_API_SCALING_RULES_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace twinscale::api {

// One rate limit: at most `value` pods (or `value` percent of the fleet at the start of the
// period) per `period`.
struct ScalingPolicy {
  enum class Type { kPods, kPercent };
  Type type = Type::kPods;
  int32_t value = 1;
  absl::Duration period = absl::Seconds(60);
};

enum class SelectPolicy {
  kMax,       // the policy allowing the largest change wins (the HPA's default)
  kMin,       // the policy allowing the smallest change wins
  kDisabled,  // no change in this direction at all
};

struct ScalingRules {
  absl::Duration stabilization_window = absl::ZeroDuration();
  std::vector<ScalingPolicy> policies;
  SelectPolicy select = SelectPolicy::kMax;
};

// The Kubernetes HPA's defaults (autoscaling/v2): scale up by max(4 pods, 100%) per 15 s with no
// stabilization; scale down by 100% per 15 s after a 300 s stabilization window.
inline ScalingRules HpaDefaultScaleUp() {
  return ScalingRules{absl::ZeroDuration(),
                      {{ScalingPolicy::Type::kPods, 4, absl::Seconds(15)},
                       {ScalingPolicy::Type::kPercent, 100, absl::Seconds(15)}},
                      SelectPolicy::kMax};
}
inline ScalingRules HpaDefaultScaleDown() {
  return ScalingRules{absl::Seconds(300),
                      {{ScalingPolicy::Type::kPercent, 100, absl::Seconds(15)}},
                      SelectPolicy::kMax};
}

// twinscale's scale-in default (spec.scaleDown's): a 300 s window and no policies written, which
// means twinscale's own rate (policy/rate_limit.h): 10% or 1 pod per 60 s
// (TwinscaleScaleDownPolicies), or at once as far as the load has fallen where its changes of
// level last.
inline ScalingRules TwinscaleDefaultScaleDown() {
  return ScalingRules{absl::Seconds(300), {}, SelectPolicy::kMax};
}

// The step of twinscale's own scale-down rate: 10% of the fleet or 1 pod per 60 s, whichever
// allows more.
inline std::vector<ScalingPolicy> TwinscaleScaleDownPolicies() {
  return {{ScalingPolicy::Type::kPercent, 10, absl::Seconds(60)},
          {ScalingPolicy::Type::kPods, 1, absl::Seconds(60)}};
}

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_SCALING_RULES_H_
