// Spec + profile -> deployment, policy parameters, twin options: see resolve.h.
#include "controller/twin/resolve.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace twinscale::twin {
namespace {

double P99(const sim::DelayDistribution& d) {
  const double ratio = std::max(1.0, d.p90_over_median);
  return d.median.seconds() * std::pow(ratio, 2.3263478740 / 1.2815515655);
}

}  // namespace

absl::Duration ExpectedWarmup(const sim::LifecycleSpec& l) {
  return absl::Seconds(l.provisioning.median.seconds() + l.loading.median.seconds() +
                       l.warming_up.median.seconds());
}

absl::Duration P99Warmup(const sim::LifecycleSpec& l) {
  return absl::Seconds(P99(l.provisioning) + P99(l.loading) + P99(l.warming_up));
}

sim::RouterKind RouterFor(api::Routing routing) {
  switch (routing) {
    case api::Routing::kRandom:
      return sim::RouterKind::kRandom;
    case api::Routing::kRoundRobin:
      return sim::RouterKind::kRoundRobin;
    case api::Routing::kLeastRequests:
      return sim::RouterKind::kLeastRequests;
    case api::Routing::kPrefixAware:
      return sim::RouterKind::kPrefixAware;
  }
  return sim::RouterKind::kRandom;
}

absl::StatusOr<ResolvedTarget> Resolve(const api::InferenceAutoscalerSpec& spec,
                                       const sim::ProfileRegistry& profiles) {
  sim::DeploymentOverrides o;
  o.tensor_parallel = spec.model.tensor_parallel;
  o.max_num_seqs = spec.model.max_num_seqs;
  o.max_num_batched_tokens = spec.model.max_num_batched_tokens;
  o.gpu_memory_utilization = spec.model.gpu_memory_utilization;
  o.block_size = spec.model.block_size;
  o.max_model_len = spec.model.max_model_len;
  absl::StatusOr<sim::DeploymentSpec> d = profiles.Resolve(spec.model.profile, o);
  if (!d.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.model.profile: ", d.status().message()));
  }
  if (absl::Status v = sim::ValidateDeployment(*d); !v.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.model: ", v.message()));
  }
  ResolvedTarget r;
  r.deployment = *d;
  r.stated.max_num_seqs = spec.model.max_num_seqs.has_value();
  r.stated.max_num_batched_tokens = spec.model.max_num_batched_tokens.has_value();
  r.stated.max_model_len = spec.model.max_model_len.has_value();
  r.stated.block_size = spec.model.block_size.has_value();
  r.stated.gpu_memory_utilization = spec.model.gpu_memory_utilization.has_value();
  policy::PolicyConfig& c = r.policy;
  c.min_replicas = spec.min_replicas;
  c.max_replicas = spec.max_replicas;
  c.ttft_threshold = spec.slo.ttft.threshold;
  c.ttft_per_prompt_token = spec.slo.ttft.per_prompt_token;
  if (spec.slo.itl.has_value()) {
    c.itl_threshold = spec.slo.itl->threshold;
    c.itl_percentile = spec.slo.itl->percentile;
  }
  c.surplus_window = spec.slo.ttft.surplus_window;
  c.target_requests = spec.slo.target.requests;
  c.target_minutes = spec.slo.target.minutes;
  c.target_window = spec.slo.target.window;
  c.percentile = spec.slo.ttft.percentile;
  c.scale_up = spec.scale_up;
  c.scale_down = spec.scale_down.rules;
  c.safety_margin = spec.scale_down.safety_margin;
  c.clear_scale_in_window = spec.scale_down.clearly_safe_window;
  c.queue_depth_per_replica = spec.limits.queue_depth_per_replica;
  c.kv_cache_utilization = spec.limits.kv_cache_utilization;
  c.enforce_limits_on_scale_up = spec.limits.enforce_on_scale_up;
  c.warmup_expected = spec.warmup.expected.value_or(ExpectedWarmup(r.deployment.lifecycle));
  c.warmup_p99 = std::max(P99Warmup(r.deployment.lifecycle), 2 * c.warmup_expected);
  c.interval = spec.metrics.interval;
  c.admission_enabled = spec.admission.enabled;
  c.admission_max_queue_per_replica = spec.admission.max_queue_per_replica;
  r.twin.deployment = r.deployment;
  r.twin.router = RouterFor(spec.routing);
  // A decision's first batch is two or three units (twin_forecaster.h): two threads take most of
  // it at once where the machine has them.
  r.twin.threads = std::clamp(static_cast<int32_t>(std::thread::hardware_concurrency()), 1, 2);
  return r;
}

}  // namespace twinscale::twin
