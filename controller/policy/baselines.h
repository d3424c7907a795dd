// The peers' scaling rules that `twinscale replay` runs side by side with twinscale's own policy
// (docs/architecture.md "Baselines"), each a pure function of what that autoscaler would observe at
// a sync plus the HPA's memory, built on the one HPA implementation in hpa_algorithm.h:
//
//  - keda-queue-T: a KEDA ScaledObject with a Prometheus trigger on
//    sum(vllm:num_requests_waiting), metricType AverageValue (KEDA's default), threshold T waiting
//    requests per replica, minReplicaCount >= 1 and no `advanced` block. KEDA then creates an HPA
//    with an External metric, AverageValue target T, and NO spec.behavior (controllers/keda/hpa.go
//    newHPAForScaledObject passes a nil behavior through, and the API server does not default a nil
//    behavior), so the HPA runs its legacy normalization: scale-down stabilization 300 s, scale-up
//    at most max(2 x current, 4) per sync, no scale-down rate limit. desired = ceil(sum / T),
//    held while sum / (T x current) is within 10% of 1.
//  - hpa-kv-U: a plain autoscaling/v2 HPA, also without a behavior block, on a Pods metric
//    (vllm:kv_cache_usage_perc through a custom-metrics adapter) with an AverageValue target U:
//    desired = ceil(pods reporting x mean / U), held within 10%, with the HPA's treatment of pods
//    that have no metric yet (warming replicas count as idle on a scale-up, as at the target on a
//    scale-down; see hpa_algorithm.h).
//  - static-N: N replicas, always.
//
// Cadence (BaselineSpec::sync_period): both HPAs sync every 15 s (kube-controller-manager
// --horizontal-pod-autoscaler-sync-period). KEDA's pollingInterval (30 s) does NOT slow the HPA's
// metric: with a trigger's useCachedMetrics left at its default (false), KEDA's metrics server
// queries Prometheus afresh on every HPA request, and the polling loop only decides activation
// (0 <-> 1 replicas), which is out of scope with minReplicaCount >= 1. So keda-queue also refreshes
// every 15 s; the only staleness is Prometheus' own scrape interval, which the metrics the caller
// passes in already carry. KEDA's `fallback` (replicas after failed polls) is off unless configured
// and is not modelled: a failed query makes the HPA hold.
//
// Pure: no I/O, no clock; the caller owns one HpaHistory per baseline and calls BaselineStep every
// sync_period with the signals of that instant.
#ifndef TWINSCALE_CONTROLLER_POLICY_BASELINES_H_
#define TWINSCALE_CONTROLLER_POLICY_BASELINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/policy/hpa_algorithm.h"

namespace twinscale::policy {

// What a baseline autoscaler sees at a sync, already aggregated over the target's pods.
struct FleetSignals {
  absl::Time now;
  int32_t current_replicas = 0;  // the target's spec.replicas
  int32_t ready_replicas = 0;    // pods serving and exporting metrics
  // Of the current_replicas - ready_replicas pods that are not ready, how many are still Pending
  // (no node yet); the rest are Running but not yet exporting metrics (loading, compiling). The
  // HPA treats the two differently on a scale-down (groupPods).
  int32_t pending_replicas = 0;
  bool metrics_available = true;  // false: the query failed or returned no series
  double waiting_sum = 0;         // sum over pods of vllm:num_requests_waiting
  double kv_usage_mean = 0;       // mean over ready pods of vllm:kv_cache_usage_perc (0..1)
};

enum class BaselineKind { kKedaQueue, kHpaKv, kStatic };

struct BaselineSpec {
  BaselineKind kind = BaselineKind::kStatic;
  // keda-queue: waiting requests per replica (> 0); hpa-kv: target mean KV use (0, 1];
  // static: the replica count (a whole number >= 1).
  double parameter = 1;
  int32_t min_replicas = 1;  // the HPA's minReplicas (KEDA's minReplicaCount, >= 1 here)
  int32_t max_replicas = 64;
  absl::Duration sync_period = absl::Seconds(15);  // see the file comment

  // "keda-queue-5", "hpa-kv-0.8", "static-12": the name used in reports.
  std::string Name() const;
};

// The HPA object a keda-queue or hpa-kv baseline amounts to (no behavior, 10% tolerance).
HpaConfig BaselineHpaConfig(const BaselineSpec& spec);

// The default sweep of a family: keda-queue {1, 2, 3, 5, 10}, hpa-kv {0.6, 0.7, 0.8, 0.9}; static
// has no default sweep (empty). min/max are used as given (ParseBaselineFamily validates them).
std::vector<BaselineSpec> BaselineFamily(BaselineKind kind, int32_t min_replicas,
                                         int32_t max_replicas);

// Parses one family as written on the replay command line: "keda-queue" or "hpa-kv" (the default
// sweep), or "<family>:v1,v2,..." with explicit values ("static:4,8,12", "keda-queue:2,4",
// "hpa-kv:0.75"). Spaces around names and values are ignored. InvalidArgument, naming the text and
// the offending value, for: an unknown family, "static" without values, an empty value, a value
// that is not a number, a value out of its family's range, a value listed twice, min_replicas < 1
// or max_replicas < min_replicas.
absl::StatusOr<std::vector<BaselineSpec>> ParseBaselineFamily(std::string_view text,
                                                              int32_t min_replicas,
                                                              int32_t max_replicas);

// One sync of a baseline at signals.now: the replica count it asks for, with the HPA's reason
// (static: desired = parameter, reason "Static", history untouched).
HpaDecision BaselineStep(const BaselineSpec& spec, const FleetSignals& signals,
                         HpaHistory& history);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_BASELINES_H_
