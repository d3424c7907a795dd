// The metric twinscale publishes to KEDA for a replica count (docs/usage.md, "KEDA mode: the
// arithmetic"). Pure functions; no gRPC.
//
// KEDA turns an external scaler's metric into an HPA External metric with an AverageValue target
// (KEDA's default metricType). Each sync the HPA computes, in milli-units,
//     ratio    = value / (target x statusReplicas)
//     proposal = statusReplicas            if 1 - tolerance <= ratio <= 1 + tolerance
//                ceil(value / target)      otherwise
// with tolerance 0.1 unless configured. twinscale publishes target 1 and a value v with
// ceil(v) == the published count n, so the proposal is n whenever the ratio leaves the tolerance
// band. Among the values with ceil(v) == n (n - 1 < v <= n) it picks the one farthest from the
// current count c, so the band swallows as little as possible:
//   n >= c (scale up or hold): v = n. A hold has ratio exactly 1; a scale-up lands when
//          n / c > 1.1 (10 -> 12, 1 -> 48), and is swallowed below that (20 -> 21: ratio 1.05).
//   n <  c (scale down):       v = n - 1 + kScaleDownMargin. 10 -> 9 publishes 8.002: ratio 0.8002
//          lands on 9, where v = 9 (ratio 0.9, on the band's edge) would hold at 10. Lands when
//          (n - 1 + margin) / c < 0.9, so every one-step scale-down from 19 or fewer replicas;
//          20 -> 19 (ratio 0.9001) is still swallowed.
// The swallowed cases go away with a per-HPA tolerance of 0 (spec.behavior.scaleUp/scaleDown
// .tolerance, Kubernetes 1.33+ with HPAConfigurableTolerance): a hold still has ratio exactly 1.
//
// The integer fields (read by KEDA versions that predate the float ones) carry n and 1: the same
// proposal, with the plain tolerance trap on scale-downs too.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_KEDA_METRIC_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_KEDA_METRIC_H_

#include <cstdint>

namespace twinscale::outputs {

// How far above n - 1 a scale-down's value sits. KEDA converts the value to milli-units by
// truncation (int64(v * 1000)); 2 milli-units keep the truncated value above n - 1 despite the
// binary rounding of v * 1000, so ceil stays n.
inline constexpr double kScaleDownMargin = 0.002;

struct KedaMetric {
  int64_t target_size = 1;         // MetricSpec.targetSize
  double target_size_float = 1.0;  // MetricSpec.targetSizeFloat
  int64_t metric_value = 0;        // MetricValue.metricValue: n
  double metric_value_float = 0;   // MetricValue.metricValueFloat: v (see above)
};

// The target and the value that make the HPA's proposal `published_replicas` (n) for a target at
// `current_replicas` (c). n <= 0 (not published in v1alpha1, where minReplicas >= 1) gives value 0;
// c <= 0 (the HPA does not scale a target at zero) gives v = n.
KedaMetric KedaMetricFor(int32_t published_replicas, int32_t current_replicas);

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_KEDA_METRIC_H_
