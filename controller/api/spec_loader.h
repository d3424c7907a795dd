// Reads InferenceAutoscaler manifests (YAML) into typed specs, exactly as the API server would
// accept and default them. The one loader of the spec (one schema, validated once): the controller,
// `twinscale replay` and the sample checks all come through here, so a file behaves the same
// everywhere.
//
// For each InferenceAutoscaler document, in order:
//   1. the object's shape: apiVersion twinscale.io/v1alpha1, kind InferenceAutoscaler, metadata
//   (name
//      required; namespace, uid, generation, resourceVersion, labels, annotations read; the other
//      standard ObjectMeta fields accepted and ignored) and spec; `status` is ignored, as the API
//      server ignores it on create; any other key is an error;
//   2. the schema's defaults applied to spec (OpenApiSchema::ApplyDefaults: the API server's
//   rules);
//   3. spec validated against the CRD's openAPIV3Schema, embedded in the binary at build time from
//      deploy/crds/twinscale.io_inferenceautoscalers.yaml: types, enums, bounds, patterns, required
//      fields, and no unknown fields (a typo is an error, never silently dropped);
//   4. conversion to InferenceAutoscalerSpec (durations with absl::ParseDuration), then the checks
//      that span fields: maxReplicas >= minReplicas; source Prometheus needs prometheus.url;
//      staleAfter > interval; thresholds and warm-up > 0; Prometheus label names valid.
// Other documents in the same file (a Deployment, a Service, ...) are skipped; so are empty ones. A
// `List` (or InferenceAutoscalerList) is read item by item, as `kubectl get -o yaml` writes it.
//
// Errors are InvalidArgument, one line per problem, each naming the source, the 1-based line and
// the field path as the API server prints it:
//   "deploy/samples/x.yaml:23: spec.scaleDown.policies[1].periodSeconds: must be >= 1, got 0"
// YAML syntax errors name the source, line and column. LoadInferenceAutoscalerFile returns NotFound
// for a file that can't be opened. Internal only if the embedded CRD is broken (a build whose tests
// passed never is). No exceptions escape.
//
// Thread-safety: all functions may be called concurrently. The CRD is parsed once, on first use.
#ifndef TWINSCALE_CONTROLLER_API_SPEC_LOADER_H_
#define TWINSCALE_CONTROLLER_API_SPEC_LOADER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/api/spec.h"
#include "nlohmann/json.hpp"

namespace twinscale::api {

// The one InferenceAutoscaler in `yaml` (other kinds skipped). InvalidArgument if there are none or
// several. `source_name` names the input in messages (a file path, "<stdin>", ...).
absl::StatusOr<InferenceAutoscaler> ParseInferenceAutoscaler(std::string_view yaml,
                                                             std::string_view source_name);

// Every InferenceAutoscaler in `yaml`, in document order (possibly none). All or nothing: the first
// invalid one fails the call.
absl::StatusOr<std::vector<InferenceAutoscaler>> ParseInferenceAutoscalers(
    std::string_view yaml, std::string_view source_name);

// ParseInferenceAutoscaler on a file's contents; the path is the source name.
absl::StatusOr<InferenceAutoscaler> LoadInferenceAutoscalerFile(const std::string& path);

// The one InferenceAutoscaler of `yaml` as the JSON object the API server would store and a
// controller would read (apiVersion, kind, metadata and spec as written; status dropped, as on
// create; defaults not applied: the loader applies them when the object is read). The same errors
// as ParseInferenceAutoscaler for input it refuses, and InvalidArgument for a manifest whose text
// is not valid UTF-8 (JSON's strings must be). Replay serves this object to the reconciler.
absl::StatusOr<nlohmann::json> InferenceAutoscalerObject(std::string_view yaml,
                                                         std::string_view source_name);

// The CRD text the loader validates against (deploy/crds/twinscale.io_inferenceautoscalers.yaml as
// it was at build time), e.g. for `twinscale crd` or to check a cluster's copy.
std::string_view InferenceAutoscalerCrdYaml();

// The API group, version and kind the loader reads.
inline constexpr std::string_view kInferenceAutoscalerGroup = "twinscale.io";
inline constexpr std::string_view kInferenceAutoscalerVersion = "v1alpha1";
inline constexpr std::string_view kInferenceAutoscalerKind = "InferenceAutoscaler";

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_SPEC_LOADER_H_
