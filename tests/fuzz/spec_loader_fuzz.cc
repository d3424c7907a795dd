// Fuzzes the InferenceAutoscaler loader (manifests from users, `twinscale replay` policy files and,
// later, objects from the API server), and the object replay makes of a manifest: any bytes must
// give typed specs or a clear error, never a crash, a hang or unbounded memory (YAML alias bombs
// included). A spec that loads must also hold the bounds the schema and the cross-field checks
// promise; the policy relies on them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "controller/api/spec_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  const auto all = twinscale::api::ParseInferenceAutoscalers(yaml, "fuzz.yaml");
  if (!all.ok()) return 0;
  for (const twinscale::api::InferenceAutoscaler& ias : *all) {
    const twinscale::api::InferenceAutoscalerSpec& s = ias.spec;
    const bool holds =
        !ias.metadata.name.empty() && s.min_replicas >= 1 && s.max_replicas >= s.min_replicas &&
        s.slo.ttft.percentile > 0 && s.slo.ttft.percentile <= 100 &&
        s.slo.ttft.threshold > absl::ZeroDuration() && s.scale_down.safety_margin > 0 &&
        s.scale_down.safety_margin <= 1 && s.metrics.interval > absl::ZeroDuration() &&
        s.metrics.stale_after > s.metrics.interval && !s.scale_up.policies.empty() &&
        !s.model.profile.empty();
    if (!holds) abort();  // the loader accepted a spec that breaks its own contract
    // Scale-down policies may be absent (twinscale's own rate, policy/rate_limit.h); each one
    // written, in either direction, allows a change of at least one pod per positive period.
    const auto written = [](const std::vector<twinscale::api::ScalingPolicy>& policies) {
      for (const auto& p : policies) {
        if (p.value < 1 || p.period <= absl::ZeroDuration()) return false;
      }
      return true;
    };
    if (!written(s.scale_up.policies) || !written(s.scale_down.rules.policies)) abort();
  }
  // The same input as the object replay serves its reconciler: accepted only when one
  // InferenceAutoscaler loads (and refused then only for text that is not UTF-8), and then an
  // object that loads again as the same spec.
  const auto object = twinscale::api::InferenceAutoscalerObject(yaml, "fuzz.yaml");
  if (object.ok() && all->size() != 1) abort();
  if (!object.ok() && all->size() == 1 &&
      !absl::StrContains(object.status().message(), "not valid UTF-8")) {
    abort();
  }
  if (object.ok()) {
    const auto again = twinscale::api::ParseInferenceAutoscaler(object->dump(), "object");
    if (!again.ok() || again->spec.max_replicas != all->front().spec.max_replicas ||
        again->spec.metrics.interval != all->front().spec.metrics.interval) {
      abort();
    }
  }
  return 0;
}
