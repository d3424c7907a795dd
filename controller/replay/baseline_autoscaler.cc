// Baselines as replay autoscalers: see baseline_autoscaler.h.
#include "controller/replay/baseline_autoscaler.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace twinscale::replay {
namespace {

bool Fresh(const PodView& pod, absl::Time now, absl::Duration stale_after) {
  return pod.scrape_ok && now - pod.scraped_at <= stale_after;
}

}  // namespace

policy::FleetSignals SignalsFromView(const ClusterView& view, policy::BaselineKind kind,
                                     absl::Duration stale_after) {
  policy::FleetSignals s;
  s.now = view.now;
  s.current_replicas = view.spec_replicas;
  int32_t waiting_pods = 0;
  double kv_sum = 0;
  for (const PodView& pod : view.pods) {
    if (pod.stage == PodView::Stage::kPending) ++s.pending_replicas;
    if (!Fresh(pod, view.now, stale_after)) continue;
    // KEDA's sum: every scraped pod's engines.
    bool has_waiting = false;
    double waiting = 0;
    // The HPA's per-pod value: the mean over the pod's engines.
    int kv_engines = 0;
    double kv = 0;
    for (const metrics::EngineObservation& e : pod.observation.engines) {
      if (e.waiting.has_value()) {
        has_waiting = true;
        waiting += *e.waiting;
      }
      if (e.kv_cache_usage.has_value()) {
        ++kv_engines;
        kv += *e.kv_cache_usage;
      }
    }
    if (has_waiting) {
      ++waiting_pods;
      s.waiting_sum += waiting;
    }
    if (pod.stage == PodView::Stage::kReady && kv_engines > 0) {
      ++s.ready_replicas;
      kv_sum += kv / kv_engines;
    }
  }
  s.kv_usage_mean = s.ready_replicas > 0 ? kv_sum / s.ready_replicas : 0.0;
  switch (kind) {
    case policy::BaselineKind::kKedaQueue:
      s.metrics_available = waiting_pods > 0;
      break;
    case policy::BaselineKind::kHpaKv:
      s.metrics_available = s.ready_replicas > 0;
      break;
    case policy::BaselineKind::kStatic:
      s.metrics_available = true;
      break;
  }
  return s;
}

BaselineAutoscaler::BaselineAutoscaler(policy::BaselineSpec spec, absl::Duration stale_after)
    : spec_(std::move(spec)), stale_after_(stale_after) {}

int32_t BaselineAutoscaler::Decide(const ClusterView& view) {
  const policy::FleetSignals s = SignalsFromView(view, spec_.kind, stale_after_);
  last_ = policy::BaselineStep(spec_, s, history_);
  switch (spec_.kind) {
    case policy::BaselineKind::kKedaQueue:
      reason_ =
          s.metrics_available
              ? absl::StrFormat("%s: waiting %g over %d replicas (target %g) -> %d", last_.reason,
                                s.waiting_sum, s.current_replicas, spec_.parameter, last_.desired)
              : absl::StrFormat("%s: no fresh vllm:num_requests_waiting -> %d", last_.reason,
                                last_.desired);
      break;
    case policy::BaselineKind::kHpaKv:
      reason_ = s.metrics_available
                    ? absl::StrFormat(
                          "%s: KV use %.3f over %d reporting of %d replicas (target %g) -> %d",
                          last_.reason, s.kv_usage_mean, s.ready_replicas, s.current_replicas,
                          spec_.parameter, last_.desired)
                    : absl::StrFormat("%s: no fresh vllm:kv_cache_usage_perc -> %d", last_.reason,
                                      last_.desired);
      break;
    case policy::BaselineKind::kStatic:
      reason_ = absl::StrFormat("%s: %d replicas", last_.reason, last_.desired);
      break;
  }
  return last_.desired;
}

}  // namespace twinscale::replay
