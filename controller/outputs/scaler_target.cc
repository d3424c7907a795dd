// The InferenceAutoscaler a ScaledObject's trigger names: see scaler_target.h.
#include "controller/outputs/scaler_target.h"

#include "absl/strings/str_cat.h"
#include "controller/outputs/object_names.h"

namespace twinscale::outputs {

absl::StatusOr<ScalerTarget> ResolveScalerTarget(std::optional<std::string_view> name,
                                                 std::optional<std::string_view> metadata_namespace,
                                                 std::string_view scaled_object_namespace,
                                                 std::string_view scaled_object_name) {
  ScalerTarget t;
  if (!name.has_value() || name->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scalerMetadata.name: required: the InferenceAutoscaler whose decisions this trigger "
        "follows (ScaledObject ",
        std::string(scaled_object_namespace), "/", std::string(scaled_object_name), ")"));
  }
  t.name = std::string(*name);
  if (metadata_namespace.has_value() && !metadata_namespace->empty()) {
    t.namespace_name = std::string(*metadata_namespace);
    if (absl::Status s = ValidateNamespaceName(t.namespace_name, "scalerMetadata.namespace");
        !s.ok()) {
      return s;
    }
  } else {
    t.namespace_name = std::string(scaled_object_namespace);
    if (t.namespace_name.empty()) {
      return absl::InvalidArgumentError(
          "scalerMetadata.namespace: required when the ScaledObjectRef carries no namespace");
    }
    if (absl::Status s = ValidateNamespaceName(t.namespace_name, "ScaledObjectRef.namespace");
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ValidateObjectName(t.name, "scalerMetadata.name"); !s.ok()) return s;
  return t;
}

}  // namespace twinscale::outputs
