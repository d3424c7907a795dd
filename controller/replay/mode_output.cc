// The mode a decision goes through in replay: see mode_output.h.
#include "controller/replay/mode_output.h"

#include "controller/outputs/keda_metric.h"

namespace twinscale::replay {

ModeOutput::ModeOutput(api::Mode mode, int32_t min_replicas, int32_t max_replicas, double tolerance)
    : mode_(mode) {
  hpa_.min_replicas = min_replicas;
  hpa_.max_replicas = max_replicas;
  hpa_.tolerance = tolerance;
  hpa_.has_behavior = true;
  // deploy/keda's ScaledObjects: no stabilization either way and policies that allow the whole
  // change in one sync (1000% or 100 pods up, 100% down per 15 s), so twinscale's own rate limits
  // and conservative scale-in are the only ones; what remains is the tolerance.
  hpa_.scale_up.stabilization_window = absl::ZeroDuration();
  hpa_.scale_up.policies = {{api::ScalingPolicy::Type::kPercent, 1000, absl::Seconds(15)},
                            {api::ScalingPolicy::Type::kPods, 100, absl::Seconds(15)}};
  hpa_.scale_up.select = api::SelectPolicy::kMax;
  hpa_.scale_down.stabilization_window = absl::ZeroDuration();
  hpa_.scale_down.policies = {{api::ScalingPolicy::Type::kPercent, 100, absl::Seconds(15)}};
  hpa_.scale_down.select = api::SelectPolicy::kMax;
}

int32_t ModeOutput::Apply(int32_t decided, int32_t current, absl::Time now) {
  if (mode_ != api::Mode::kKeda && mode_ != api::Mode::kHpa) {
    last_reason_.clear();
    return decided;
  }
  const outputs::KedaMetric m = outputs::KedaMetricFor(decided, current);
  policy::HpaMetricSample sample;
  sample.kind = policy::HpaMetricSample::Kind::kAverageValuePerPod;
  sample.value = m.metric_value_float;
  sample.target = m.target_size_float;
  const policy::HpaDecision d = policy::HpaStep(hpa_, current, sample, now, history_);
  last_reason_ = d.reason;
  return d.desired;
}

}  // namespace twinscale::replay
