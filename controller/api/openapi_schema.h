// A small engine for Kubernetes structural OpenAPI v3 schemas (the schema of a
// CustomResourceDefinition version), over yaml-cpp nodes: validation, defaulting and the structural
// checks the API server runs on a CRD. The InferenceAutoscaler loader (spec_loader.h) uses it so a
// manifest is checked and defaulted offline exactly as the cluster would; the sample and chart
// checks and the fake API server reuse it.
//
// Internal to controller/api/: this interface takes yaml-cpp nodes, so only api's own .cc files and
// tests that hold YAML themselves (api's tests, the fake API server, the manifest and cluster
// checks under tests/) include it. The rest of controller/ reads specs through spec_loader.h, which
// keeps yaml-cpp out of its interface; hack/lint.sh checks both. The implementation is one concept
// per file (openapi_schema_node.h lists them).
//
// Supported keywords: type (object, array, string, integer, number, boolean), description,
// properties, required, additionalProperties (a schema, or true), items, enum, default, nullable,
// minimum, maximum, exclusiveMinimum / exclusiveMaximum (OpenAPI 3.0 booleans modifying minimum /
// maximum), minLength, maxLength, pattern (ECMAScript, via std::regex; unanchored like JSON
// Schema's), minItems, maxItems, minProperties, maxProperties, format (int32, int64 and date-time
// are checked; others are accepted and not checked, as the API server does for unknown formats),
// x-kubernetes-preserve-unknown-fields, x-kubernetes-int-or-string, x-kubernetes-embedded-resource,
// x-kubernetes-list-type (atomic, set, map) with x-kubernetes-list-map-keys, x-kubernetes-map-type,
// and the annotations title, example and externalDocs. Anything else (allOf / anyOf / oneOf / not,
// $ref, x-kubernetes-validations, ...) makes FromYaml fail: a schema feature must never be silently
// ignored.
//
// Values. YAML is read as the JSON it stands for. Plain scalars resolve with YAML 1.2's core schema
// (ResolveScalar): `true`/`false` are booleans, `yes`/`no`/`on`/`off` are strings, so a string
// field accepts `yes` and a boolean field requires true or false (kubectl's YAML 1.1 reader would
// turn `yes` into true; quote such strings in manifests meant for kubectl). Quoted and block
// scalars are always strings. A number where a string is expected, or a string where a number is,
// is an error, as in the API server. Unknown fields are errors (the API server's strict field
// validation), not silently pruned: a typo must not disappear. Duplicate keys are errors.
//
// Defaulting (ApplyDefaults) follows the API server (apiextensions-apiserver's structural
// defaulting):
//   1. a null in a non-nullable field without a default is removed, as if absent;
//   2. for an object, each property that is absent, or null and not nullable, gets a deep copy of
//   its
//      schema default; null items of a list (and null values of a map) get the items' default if
//      any;
//   3. the algorithm then descends into every property present, defaulted ones included, into list
//      items and map values.
// So a default applies only where the enclosing object exists: a missing object's children are
// defaulted only if the object itself has a default, typically `default: {}`. Defaults are applied
// before validation (a required field with a default is never reported missing), and the result is
// validated as a whole.
//
// Objects: the API server handles a resource's apiVersion, kind and metadata itself (the CRD's
// schema may only say `metadata: {type: object}`), so validate and default the spec and status
// subtrees (Property("spec")) and check the envelope separately, as spec_loader.cc does.
//
// Thread-safety: an OpenApiSchema is immutable after FromYaml; copies share the parsed tree, and
// const methods may run concurrently (schema defaults are only read, and are cloned before use).
#ifndef TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_H_
#define TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {

// The pattern twinscale's CRDs use for durations: what absl::ParseDuration accepts without a sign,
// "inf" or a bare "0" ("500ms", "1.5s", "1h30m"). Validation errors for it say so in words.
inline constexpr std::string_view kDurationPattern = R"(^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$)";

// The JSON value a YAML scalar stands for.
struct JsonScalar {
  enum class Kind { kNull, kBool, kInteger, kNumber, kString };
  Kind kind = Kind::kNull;
  bool boolean = false;  // kBool
  int64_t integer = 0;   // kInteger
  double number = 0;     // kInteger and kNumber (may be infinite or NaN for .inf / .nan)
  std::string text;      // the scalar's text, for every kind
};

// Resolves a scalar (or null) node with YAML 1.2's core schema: null (~, null, empty), booleans
// (true/false in three spellings), integers (decimal, 0o octal, 0x hex; beyond int64 a kNumber),
// floats (including .inf and .nan), else a string. Quoted and block scalars, and !!str, are
// strings. A map or list gives kNull; don't pass one.
JsonScalar ResolveScalar(const YAML::Node& node);

// One step of a field path: an object property (printed ".name"), a map entry (printed "[key]") or
// a list index (printed "[3]").
struct PathElement {
  enum class Kind { kProperty, kMapKey, kIndex };
  Kind kind = Kind::kProperty;
  std::string key;   // kProperty, kMapKey
  size_t index = 0;  // kIndex
};

// `prefix` followed by `path`, as the API server prints field paths:
// FormatPath("spec", {policies, 1, periodSeconds}) == "spec.policies[1].periodSeconds".
std::string FormatPath(std::string_view prefix, const std::vector<PathElement>& path);

// One failed check.
struct FieldError {
  std::vector<PathElement> path;  // relative to the value passed to Violations
  std::string field;    // the whole path, formatted: "spec.scaleDown.policies[1].periodSeconds"
  std::string message;  // "must be >= 1, got 0"

  std::string ToString() const { return field.empty() ? message : field + ": " + message; }
};

// Where `path` points in `root` for an error message: the mark of the key of the deepest map entry
// or of the deepest list item on the path that exists in `root` (a missing field points at its
// parent). Use the tree that came from the parser: copies made by ApplyDefaults carry no marks.
// Returns a null mark if nothing on the path (not even the root) has one.
YAML::Mark LocatePath(const YAML::Node& root, const std::vector<PathElement>& path);

class OpenApiSchema {
 public:
  // Parses a schema (e.g. a CRD's openAPIV3Schema). InvalidArgument, naming the keyword's path in
  // the schema, for an unsupported keyword, a keyword of the wrong shape, or a pattern std::regex
  // can't compile. It does not run CheckStructural.
  static absl::StatusOr<OpenApiSchema> FromYaml(const YAML::Node& schema);

  // Every failure of `value` against the schema, in document order, at most `max_errors` (then a
  // last error says how many more there were). Field paths start with `path` ("spec"). Call it on
  // the result of ApplyDefaults to check what the API server would store.
  std::vector<FieldError> Violations(const YAML::Node& value, std::string_view path = "",
                                     size_t max_errors = 20) const;

  // OK, or InvalidArgument listing Violations ("spec.minReplicas: must be >= 1, got 0; ...").
  absl::Status Validate(const YAML::Node& value, std::string path = "") const;

  // A deep copy of `value` with the schema's defaults applied (see the header comment). Never
  // fails: values of the wrong type are copied unchanged, for Violations to report. The copy shares
  // nothing with `value` or the schema and carries no source marks.
  YAML::Node ApplyDefaults(const YAML::Node& value) const;

  // The API server's structural-schema rules, and a few more that catch schema bugs. OK, or
  // InvalidArgument listing every problem with its path in the schema
  // ("properties[spec].properties[mode]: ..."):
  //  - every node has a type (except x-kubernetes-int-or-string and untyped
  //    x-kubernetes-preserve-unknown-fields nodes), the root is an object, arrays have items;
  //  - keywords fit the node's type (no pattern on an integer, no minimum on a string, ...);
  //    properties and additionalProperties are not both set; exclusiveMinimum needs minimum;
  //  - every `required` name is a declared property;
  //  - defaults: not null unless nullable, valid against their own node, none under metadata;
  //  - enum values valid against their node; list-map keys declared, scalar, and required or
  //    defaulted; the root's metadata says only `type: object` and limits on name and
  //    generateName (a description or a default there is Forbidden by the API server).
  absl::Status CheckStructural() const;

  // Paths ("spec.slo.ttft.threshold") of properties without a description (list items and map
  // values are described by their field and are not listed).
  std::vector<std::string> UndocumentedFields() const;

  // The schema of the property `name` of this object schema, sharing this schema's tree.
  std::optional<OpenApiSchema> Property(std::string_view name) const;

  // This node's `type` ("object", "string", ...; "" if untyped).
  const std::string& Type() const;

  // The parsed schema node; defined in openapi_schema_node.h, private to the engine.
  struct Node;

 private:
  OpenApiSchema(std::shared_ptr<const Node> root, const Node* node)
      : root_(std::move(root)), node_(node) {}

  std::shared_ptr<const Node> root_;  // keeps the tree alive
  const Node* node_;                  // this schema's node within root_
};

// The openAPIV3Schema of `version` in a CustomResourceDefinition document
// (apiextensions.k8s.io/v1). InvalidArgument if the document is not a CRD, has no such version, or
// the schema doesn't parse.
absl::StatusOr<OpenApiSchema> CrdVersionSchema(const YAML::Node& crd, std::string_view version);

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_H_
