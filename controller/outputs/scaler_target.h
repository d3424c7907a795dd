// Which InferenceAutoscaler a KEDA ScaledObject's external trigger follows: its metadata `name`
// (required) and `namespace` (default: the ScaledObject's own namespace), checked as Kubernetes
// names so a typo gets a message naming the metadata key. Pure; outside input (fuzzed:
// tests/fuzz/scaler_target_fuzz.cc).
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_SCALER_TARGET_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_SCALER_TARGET_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinscale::outputs {

struct ScalerTarget {
  std::string namespace_name;
  std::string name;
};

// `name` / `metadata_namespace`: the trigger metadata's values (nullopt when the key is absent;
// an empty value counts as absent). `scaled_object` is "namespace/name" of the ScaledObject, for
// messages. InvalidArgument naming the key ("scalerMetadata.name: required ...",
// "scalerMetadata.namespace: \"LLM\" is not a valid namespace name ...") otherwise.
absl::StatusOr<ScalerTarget> ResolveScalerTarget(std::optional<std::string_view> name,
                                                 std::optional<std::string_view> metadata_namespace,
                                                 std::string_view scaled_object_namespace,
                                                 std::string_view scaled_object_name);

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_SCALER_TARGET_H_
