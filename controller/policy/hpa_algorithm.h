// The Kubernetes HorizontalPodAutoscaler's replica arithmetic for one metric, as a pure function
// whose memory (recent recommendations, recent scale events) is a value the caller owns and passes
// back in. It drives the replay baselines (KEDA on the queue, an HPA on KV use), the KEDA and HPA
// modes' replay, and it documents the HPA tolerance trap (docs/architecture.md "Outputs and their
// contracts") with numbers.
//
// Source: kubernetes/kubernetes pkg/controller/podautoscaler (horizontal.go, replica_calculator.go,
// metrics/utilization.go) and pkg/apis/autoscaling/v2/defaults.go, as of the releases with
// per-direction tolerances (1.33+). Every rule below names the Go function it follows. Where the
// real controller reads time.Now() we take `now`; where it keeps maps keyed by HPA we take
// HpaHistory. Nothing here does I/O or reads a clock; all functions are thread-compatible.
//
// One sync, HpaStep(), in the controller's order (reconcileAutoscaler):
//  1. recordInitialRecommendation: on the first sync (empty history) the current replica count is
//     stored as a recommendation stamped `now`. It takes part in stabilization like any other, so
//     a fresh HPA cannot scale down during its first scale-down window.
//  2. currentReplicas == 0 (and minReplicas != 0): scaling is disabled, hold at 0
//     ("ScalingDisabled"). Above maxReplicas: go to maxReplicas; below minReplicas: go to
//     minReplicas. These two clamps come before the metric is read, so they apply even when the
//     metric is missing, and they skip stabilization (nothing is recorded).
//  3. The metric. Missing (scrape failed, an external metric with no items, no pod reported) means
//     computeReplicasForMetrics fails for every metric and reconcileAutoscaler returns before
//     normalization: the HPA holds the current count, records no recommendation, and so never
//     scales down (or up) on a missing metric ("FailedGetExternalMetric" / "FailedGetPodsMetric").
//  4. The proposal (replica_calculator.go), in milli-units as the controller sees quantities:
//     - External AverageValue (GetExternalPerPodMetricReplicas): usage = the SUM of the metric over
//       the target, ratio = usage / (target x current); if the ratio is within tolerance the
//       proposal is the current count, else ceil(usage / target). KEDA's default metric type.
//     - Pods metric, AverageValue (calcPlainMetricReplicas + groupPods + GetMetricUsageRatio):
//       ratio = (integer mean of the pods that reported) / target. With no pods lacking a metric:
//       within tolerance -> current, else ceil(ratio x pods that reported). Otherwise the mean is
//       recomputed with pods that are Running but have no metric valued at the target on a
//       scale-down and at 0 on a scale-up, and Pending pods valued at 0 on a scale-up; if the new
//       ratio is within tolerance or points the other way the HPA holds, else ceil(new ratio x all
//       counted pods) unless that too points the other way.
//     - Tolerance (Tolerances.isWithin): within when 1 - down <= ratio <= 1 + up, both bounds
//       inclusive. With the default 0.1 this swallows 20 -> 21 (ratio 1.05), 10 -> 9 (ratio 0.9,
//       exactly on the bound) and even 20 -> 22 (ratio 1.1, exactly on the bound; releases before
//       1.33 tested |1 - ratio| > 0.1 instead, which in floating point lets 1.1 through).
//  5. Normalization. Which one runs depends on whether the HPA object has spec.behavior:
//     a. Behavior set (normalizeDesiredReplicasWithBehaviors):
//        - stabilizeRecommendationWithBehaviors: over the recorded recommendations strictly
//          newer than now - window, up = min(those, proposal) with the scale-up window, down =
//          max(those, proposal) with the scale-down window; the stabilized count is the current
//          count brought into [up, down]. The proposal is then recorded (replacing the last entry
//          older than both windows, else appended).
//        - convertDesiredReplicasWithBehaviorRate: scaling up, the count is capped at
//          min(maxReplicas, calculateScaleUpLimitWithScalingRules) ("ScaleUpLimit" /
//          "TooManyReplicas"); scaling down it is floored at max(minReplicas,
//          calculateScaleDownLimitWithBehaviors) ("ScaleDownLimit" / "TooFewReplicas"). A limit
//          never moves the count the other way.
//        - Rate limits, per policy: periodStart = current - (replicas added in the period) +
//          (replicas removed in the period), counting events strictly newer than now -
//          periodSeconds, in BOTH directions (getReplicasChangePerPeriod over scaleUpEvents and
//          scaleDownEvents). Pods: start + value up, start - value down. Percent: ceil(start x
//          (1 + value/100)) up (rounded up so a small fleet can always grow), truncate(start x
//          (1 - value/100)) down. selectPolicy Max takes the policy allowing the larger change,
//          Min the smaller, Disabled allows none.
//        - storeScaleEvent records each change (replacing the last event of the same direction
//          older than that direction's longest policy period, else appending).
//     b. No behavior (normalizeDesiredReplicas), which is what KEDA creates unless the ScaledObject
//        sets advanced.horizontalPodAutoscalerConfig.behavior, and what a plain HPA without a
//        behavior block gets (the API server leaves a nil behavior nil): stabilizeRecommendation
//        takes the max of the proposal and the recommendations not older than now - the
//        controller's --horizontal-pod-autoscaler-downscale-stabilization (5 min; this window
//        includes its boundary) and records the proposal; convertDesiredReplicasWithRules then
//        clamps to [minReplicas, min(maxReplicas, calculateScaleUpLimit = max(2 x current, 4))].
//        There is no scale-up stabilization, no scale-down rate limit, and no scale-event memory.
//        The documented "defaults" (4 pods or 100% per 15 s up) match this only from 4 replicas
//        up: from 2 the behavior path allows 6, this path 4. And since the max is taken whatever
//        the direction, a recent high proposal keeps pulling the count UP after the load has
//        dropped: from 4, proposals 30, 6, 6 give 8, 16, 30 (the behavior path gives 8, 8, 8).
//  6. If the count changed, the event is recorded (behavior path only) and the caller scales.
//
// Not modelled: several metrics on one HPA (the HPA takes the max proposal and refuses to scale
// down while any metric fails), CPU's initialization-period rules for unready pods, object and
// external Value targets, scale from zero (HPAScaleToZero), spec vs status replica counts differing
// (both are `current_replicas` here), and the milli-rounding of each pod's own value (we round the
// mean or sum once, to the nearest milli-unit; KEDA truncates each value and Quantity.MilliValue
// rounds up, a difference below one milli-unit).
#ifndef TWINSCALE_CONTROLLER_POLICY_HPA_ALGORITHM_H_
#define TWINSCALE_CONTROLLER_POLICY_HPA_ALGORITHM_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"

namespace twinscale::policy {

// What the HPA read from its metric at this sync.
struct HpaMetricSample {
  enum class Kind {
    // An External metric with an AverageValue target (KEDA's default): `value` is the SUM of the
    // metric's items over the target; desired = ceil(value / target).
    kAverageValuePerPod,
    // A per-pod average compared with a per-pod target (a Pods metric with an AverageValue target,
    // the resource-metric shape): `value` is the mean over the pods that reported; desired =
    // ceil(pods that reported x value / target), adjusted for pods without a metric.
    kUtilizationRatio,
  };
  Kind kind = Kind::kAverageValuePerPod;
  bool available = true;  // false: the scrape failed / the external metric had no items
  double value = 0;       // the sum (kAverageValuePerPod) or the mean (kUtilizationRatio)
  double target = 1;      // the target per pod; must be > 0 (a non-positive target is unavailable)

  // kUtilizationRatio only: how the target's pods split (groupPods). Pods that reported the
  // metric (readyPodCount); nullopt means every current replica reported. 0 is a missing metric.
  std::optional<int32_t> reporting_pods;
  int32_t pending_pods = 0;  // phase Pending (no node yet): "unready", ignored unless scaling up
  int32_t missing_pods = 0;  // Running but no metric yet (still loading): "missing"
};

// One HPA object's configuration. Defaults are the Kubernetes defaults.
struct HpaConfig {
  int32_t min_replicas = 1;  // spec.minReplicas [1]
  int32_t max_replicas = 10;
  // kube-controller-manager --horizontal-pod-autoscaler-tolerance [0.1], both directions.
  double tolerance = 0.1;
  // Whether the HPA object carries spec.behavior. true: normalizeDesiredReplicasWithBehaviors with
  // scale_up / scale_down below. false: the legacy normalizeDesiredReplicas (KEDA without
  // advanced behavior; a plain HPA without a behavior block); scale_up / scale_down are ignored.
  bool has_behavior = true;
  api::ScalingRules scale_up = api::HpaDefaultScaleUp();
  api::ScalingRules scale_down = api::HpaDefaultScaleDown();
  // spec.behavior.scaleUp/scaleDown.tolerance (HPAConfigurableTolerance, beta since 1.35); they
  // override `tolerance` for one direction, and only when has_behavior.
  std::optional<double> scale_up_tolerance;
  std::optional<double> scale_down_tolerance;
  // kube-controller-manager --horizontal-pod-autoscaler-downscale-stabilization [5m]: the window
  // of the legacy path (has_behavior == false).
  absl::Duration downscale_stabilization = absl::Minutes(5);
};

// The HPA's memory for one object, owned by the caller and passed back in at every sync (the real
// controller keeps it in maps keyed by the HPA and loses it on restart; so does a fresh value).
// Both deques stay bounded: entries older than the windows and periods are overwritten in place,
// as the controller does, rather than erased.
struct HpaHistory {
  // Unstabilized proposals (prenormalized desired counts), with the time they were made.
  std::deque<std::pair<absl::Time, int32_t>> recommendations;
  // Replica changes the HPA made: +n for a scale-up, -n for a scale-down.
  std::deque<std::pair<absl::Time, int32_t>> scale_events;
};

// Reason strings. The HPA's own condition reasons where it has one; ours, marked, where it has not.
namespace hpa_reason {
inline constexpr std::string_view kScalingDisabled = "ScalingDisabled";
inline constexpr std::string_view kFailedGetExternalMetric = "FailedGetExternalMetric";
inline constexpr std::string_view kFailedGetPodsMetric = "FailedGetPodsMetric";
inline constexpr std::string_view kTooManyReplicas = "TooManyReplicas";
inline constexpr std::string_view kTooFewReplicas = "TooFewReplicas";
inline constexpr std::string_view kScaleUpLimit = "ScaleUpLimit";
inline constexpr std::string_view kScaleDownLimit = "ScaleDownLimit";
inline constexpr std::string_view kScaleUpStabilized = "ScaleUpStabilized";
inline constexpr std::string_view kScaleDownStabilized = "ScaleDownStabilized";
inline constexpr std::string_view kDesiredWithinRange = "DesiredWithinRange";
// Ours: the usage ratio was within tolerance, so the proposal was the current count.
inline constexpr std::string_view kWithinTolerance = "WithinTolerance";
// Ours: counting pods without a metric (Pending, or Running but not yet reporting) made the ratio
// point the other way or fall within tolerance, so the proposal was the current count.
inline constexpr std::string_view kNotReadyPodsHold = "NotReadyPodsHold";
}  // namespace hpa_reason

struct HpaDecision {
  int32_t desired = 0;  // the replica count the HPA sets (== current when it holds)
  // The metric's proposal before stabilization and rate limits; equals `desired` when the metric
  // was not evaluated (scaling disabled, out-of-range clamp, missing metric).
  int32_t raw_recommendation = 0;
  int32_t stabilized = 0;  // after stabilization, before rate limits and clamps
  // Why `desired` is what it is, most specific first: a limit or clamp that cut the change; else
  // the stabilization that changed the proposal; else the tolerance / not-ready-pods hold; else
  // DesiredWithinRange. One of hpa_reason::*.
  std::string reason;
};

// One HPA sync at `now` for a target currently at `current_replicas` (see the file comment for the
// rules). Updates `history` (records the proposal and any change made). Syncs must come in
// non-decreasing `now`; the HPA's cadence (15 s) is the caller's.
HpaDecision HpaStep(const HpaConfig& config, int32_t current_replicas,
                    const HpaMetricSample& metric, absl::Time now, HpaHistory& history);

// The rate-limit rules on their own, for the behavior path and for twinscale's own scale-down
// policy. `scale_events` as in HpaHistory.

// Net replica change (+ added, - removed) from events strictly newer than now - period
// (getReplicasChangePerPeriod over both directions).
int32_t ReplicasChangedInPeriod(const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                                absl::Duration period, absl::Time now);

// The highest replica count the scale-up rules allow now: calculateScaleUpLimitWithScalingRules,
// then never below `current` (as convertDesiredReplicasWithBehaviorRate does). Disabled -> current.
int32_t HpaScaleUpLimit(int32_t current,
                        const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                        const api::ScalingRules& rules, absl::Time now);

// The lowest replica count the scale-down rules allow now: calculateScaleDownLimitWithBehaviors,
// then never above `current`. Disabled -> current.
int32_t HpaScaleDownLimit(int32_t current,
                          const std::deque<std::pair<absl::Time, int32_t>>& scale_events,
                          const api::ScalingRules& rules, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_HPA_ALGORITHM_H_
