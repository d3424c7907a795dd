// The kinds the fake API server serves and the per-kind rules the real server's registry
// strategies apply: which subresources exist, whether metadata.generation is kept, whether a PUT
// may omit metadata.resourceVersion, what DELETE answers, which field selectors work, and the
// OpenAPI schema (for custom resources, from their CustomResourceDefinition) whose defaults and
// validation apply on every write.
//
// Built in (BuiltinResourceTypes): v1 pods, events, namespaces; apps/v1 deployments and
// statefulsets; coordination.k8s.io/v1 leases; events.k8s.io/v1 events; autoscaling/v2
// horizontalpodautoscalers; keda.sh/v1alpha1 scaledobjects (schemaless) and
// twinscale.io/v1alpha1 inferenceautoscalers (from the CRD embedded at build time, the same
// deploy/crds/ file the cluster installs). ResourceTypesFromCrd reads any other CRD.
//
// Thread-safety: values; an OpenApiSchema is immutable and shareable.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_RESOURCE_TYPE_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_RESOURCE_TYPE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/api/openapi_schema.h"

namespace twinscale::fake_apiserver {

// A column of `kubectl get` (a CRD's additionalPrinterColumns).
struct PrinterColumn {
  std::string name;    // "Target"
  std::string type;    // string, integer, number, boolean, date
  std::string format;  // "" or e.g. "name"
  std::string description;
  std::string json_path;  // ".spec.targetRef.name" (simple dotted paths only)
  int priority = 0;
};

// Where a /scale subresource reads and writes its numbers.
struct ScaleRule {
  std::string spec_replicas_path = ".spec.replicas";
  std::string status_replicas_path = ".status.replicas";
  // Custom resources: a dotted path to a selector string in the object (e.g. ".status.selector";
  // "" leaves status.selector empty). Ignored when selector_from_spec is set.
  std::string label_selector_path;
  // Deployments and StatefulSets: status.selector is spec.selector (a LabelSelector object)
  // printed as a selector string.
  bool selector_from_spec = false;
};

struct ResourceType {
  std::string group;      // "" for the core group
  std::string version;    // "v1", "v1alpha1"
  std::string resource;   // the plural in URLs: "deployments"
  std::string kind;       // "Deployment"
  std::string list_kind;  // "DeploymentList"
  std::string singular;   // "deployment"
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  bool namespaced = true;

  // PUT/PATCH of the object keep the stored status, /status writes change only the status, and
  // create drops any status given (the real server's rules with a status subresource).
  bool status_subresource = false;
  // A /scale subresource (autoscaling/v1 Scale).
  std::optional<ScaleRule> scale;

  // metadata.generation: 1 on create, +1 on each write that changes anything but metadata and
  // status. Off for pods, events, leases and namespaces, which don't keep one.
  bool has_generation = true;
  // Deployments: an annotation change bumps the generation too (annotations are copied to
  // ReplicaSets; apps/deployment/strategy.go).
  bool annotations_bump_generation = false;
  // Whether a PUT without metadata.resourceVersion is accepted (true for built-in kinds; custom
  // resources require it: 422 "must be specified for an update").
  bool allow_unconditional_update = true;
  // Custom resources: strategic merge patch is refused (415) as the real server does; list items
  // carry apiVersion and kind (typed lists of built-in kinds omit them).
  bool custom_resource = false;
  // DELETE answers with the deleted object (pods) instead of a Status{status: Success}.
  bool delete_returns_object = false;
  // spec.replicas defaults to 1 (Deployment, StatefulSet).
  bool default_replicas = false;
  // A new object's initial status (pods start `{phase: Pending}`); null for none.
  std::string initial_status_json;

  // Field selectors besides metadata.name and metadata.namespace (which every kind supports).
  std::vector<std::string> field_labels;
  // Columns of `kubectl get` besides Name and Age.
  std::vector<PrinterColumn> printer_columns;
  // The OpenAPI v3 schema of the whole object; absent for kinds the fake doesn't validate.
  std::optional<api::OpenApiSchema> schema;

  // "apps/v1", or "v1" for the core group.
  std::string ApiVersion() const;
  // "deployments.apps", or "pods" for the core group (how errors name the resource).
  std::string GroupResource() const;
  // "apps/v1/deployments": unique per served resource.
  std::string Key() const;
  // Whether `field` ("metadata.name", "status.phase") may be used in a field selector.
  bool SupportsFieldLabel(std::string_view field) const;
};

// The kinds the operator touches (see the file comment). The InferenceAutoscaler type carries the
// schema of the embedded CRD.
std::vector<ResourceType> BuiltinResourceTypes();

// The served versions of every CustomResourceDefinition in `yaml` (one or more documents;
// documents of other kinds are skipped). `where` names the source in errors. InvalidArgument if
// the text is not YAML, holds no CRD, or a CRD's schema is not structural.
absl::StatusOr<std::vector<ResourceType>> ResourceTypesFromCrd(std::string_view yaml,
                                                               std::string_view where);

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_RESOURCE_TYPE_H_
