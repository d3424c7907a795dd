// The peers' autoscalers (policy/baselines.h: keda-queue-T, hpa-kv-U, static-N) as replay
// Autoscalers. Each sync turns the ClusterView into policy::FleetSignals the way the real system
// computes its input, then runs policy::BaselineStep with the HPA memory this object keeps.
//
// How the view becomes signals (SignalsFromView):
// - keda-queue: KEDA's Prometheus query sum(vllm:num_requests_waiting) over every pod Prometheus
//   has a fresh sample of, terminating pods included (Prometheus keeps scraping a pod until it is
//   deleted; a draining vLLM still reports its queue). Engines of a multi-engine pod are summed.
// - hpa-kv: the Pods metric vllm:kv_cache_usage_perc averaged over the Ready pods that report it
//   (the HPA ignores pods being deleted; a pod's engines are averaged into one value per pod, as
//   an adapter's avg by (pod) would). ready_replicas counts those reporting pods; pending_replicas
//   the pods not yet scheduled on a node (stage kPending); the other non-ready pods are "missing"
//   to the HPA (running, no metric yet).
// - A sample is fresh when its scrape is no older than `stale_after` (Prometheus' lookback delta,
//   5 min by default): older or failed scrapes don't count. When no pod gives a fresh value of the
//   metric the query returns nothing: metrics_available = false, and the HPA holds.
// - current_replicas is the target's spec.replicas.
//
// Not thread-safe: one object per replay run (it keeps the HPA's history).
#ifndef TWINSCALE_CONTROLLER_REPLAY_BASELINE_AUTOSCALER_H_
#define TWINSCALE_CONTROLLER_REPLAY_BASELINE_AUTOSCALER_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "controller/policy/baselines.h"
#include "controller/policy/hpa_algorithm.h"
#include "controller/replay/autoscaler.h"

namespace twinscale::replay {

// Prometheus' default lookback delta: a series with no sample for this long is gone.
inline constexpr absl::Duration kDefaultStaleAfter = absl::Minutes(5);

// The signals the `kind` of baseline would compute from `view` (see the file comment).
policy::FleetSignals SignalsFromView(const ClusterView& view, policy::BaselineKind kind,
                                     absl::Duration stale_after = kDefaultStaleAfter);

class BaselineAutoscaler final : public Autoscaler {
 public:
  explicit BaselineAutoscaler(policy::BaselineSpec spec,
                              absl::Duration stale_after = kDefaultStaleAfter);

  std::string Name() const override { return spec_.Name(); }
  absl::Duration SyncPeriod() const override { return spec_.sync_period; }
  int32_t Decide(const ClusterView& view) override;
  // The HPA's reason with the numbers behind it, e.g.
  // "DesiredWithinRange: waiting 37 over 3 replicas (target 5) -> 8".
  std::string LastReason() const override { return reason_; }

  const policy::BaselineSpec& spec() const { return spec_; }
  const policy::HpaDecision& last_decision() const { return last_; }

 private:
  policy::BaselineSpec spec_;
  absl::Duration stale_after_;
  policy::HpaHistory history_;
  policy::HpaDecision last_;
  std::string reason_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_BASELINE_AUTOSCALER_H_
