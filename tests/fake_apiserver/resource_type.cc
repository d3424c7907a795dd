// Resource kinds and their registry rules; see resource_type.h.
#include "tests/fake_apiserver/resource_type.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/api/spec_loader.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::fake_apiserver {
namespace {

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string Str(const YAML::Node& n, const char* key, std::string fallback = "") {
  if (!n.IsDefined() || !n.IsMap()) return fallback;
  const YAML::Node v = n[key];
  return v.IsDefined() && v.IsScalar() ? v.Scalar() : fallback;
}

std::vector<std::string> Strs(const YAML::Node& n, const char* key) {
  std::vector<std::string> out;
  if (!n.IsDefined() || !n.IsMap()) return out;
  const YAML::Node v = n[key];
  if (!v.IsDefined() || !v.IsSequence()) return out;
  for (const auto& item : v) {
    if (item.IsScalar()) out.push_back(item.Scalar());
  }
  return out;
}

ResourceType Core(std::string resource, std::string kind, std::string singular) {
  ResourceType t;
  t.version = "v1";
  t.resource = std::move(resource);
  t.list_kind = kind + "List";
  t.kind = std::move(kind);
  t.singular = std::move(singular);
  return t;
}

ResourceType Grouped(std::string group, std::string version, std::string resource, std::string kind,
                     std::string singular) {
  ResourceType t = Core(std::move(resource), std::move(kind), std::move(singular));
  t.group = std::move(group);
  t.version = std::move(version);
  return t;
}

}  // namespace

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourceType::GroupResource() const {
  return group.empty() ? resource : absl::StrCat(resource, ".", group);
}

std::string ResourceType::Key() const { return absl::StrCat(ApiVersion(), "/", resource); }

bool ResourceType::SupportsFieldLabel(std::string_view field) const {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  return std::find(field_labels.begin(), field_labels.end(), field) != field_labels.end();
}

std::vector<ResourceType> BuiltinResourceTypes() {
  std::vector<ResourceType> out;

  ResourceType pods = Core("pods", "Pod", "pod");
  pods.short_names = {"po"};
  pods.categories = {"all"};
  pods.status_subresource = true;
  pods.has_generation = false;
  pods.delete_returns_object = true;
  pods.initial_status_json = R"({"phase":"Pending"})";
  pods.field_labels = {
      "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
      "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  out.push_back(std::move(pods));

  ResourceType events = Core("events", "Event", "event");
  events.short_names = {"ev"};
  events.has_generation = false;
  events.field_labels = {"involvedObject.kind",
                         "involvedObject.namespace",
                         "involvedObject.name",
                         "involvedObject.uid",
                         "involvedObject.apiVersion",
                         "involvedObject.resourceVersion",
                         "involvedObject.fieldPath",
                         "reason",
                         "reportingComponent",
                         "source",
                         "type"};
  out.push_back(std::move(events));

  ResourceType namespaces = Core("namespaces", "Namespace", "namespace");
  namespaces.short_names = {"ns"};
  namespaces.namespaced = false;
  namespaces.status_subresource = true;
  namespaces.has_generation = false;
  namespaces.initial_status_json = R"({"phase":"Active"})";
  namespaces.field_labels = {"status.phase"};
  out.push_back(std::move(namespaces));

  ScaleRule workload_scale;
  workload_scale.selector_from_spec = true;

  ResourceType deployments = Grouped("apps", "v1", "deployments", "Deployment", "deployment");
  deployments.short_names = {"deploy"};
  deployments.categories = {"all"};
  deployments.status_subresource = true;
  deployments.scale = workload_scale;
  deployments.annotations_bump_generation = true;
  deployments.default_replicas = true;
  out.push_back(std::move(deployments));

  ResourceType statefulsets = Grouped("apps", "v1", "statefulsets", "StatefulSet", "statefulset");
  statefulsets.short_names = {"sts"};
  statefulsets.categories = {"all"};
  statefulsets.status_subresource = true;
  statefulsets.scale = workload_scale;
  statefulsets.default_replicas = true;
  out.push_back(std::move(statefulsets));

  ResourceType leases = Grouped("coordination.k8s.io", "v1", "leases", "Lease", "lease");
  leases.has_generation = false;
  out.push_back(std::move(leases));

  ResourceType new_events = Grouped("events.k8s.io", "v1", "events", "Event", "event");
  new_events.short_names = {"ev"};
  new_events.has_generation = false;
  out.push_back(std::move(new_events));

  ResourceType hpa = Grouped("autoscaling", "v2", "horizontalpodautoscalers",
                             "HorizontalPodAutoscaler", "horizontalpodautoscaler");
  hpa.short_names = {"hpa"};
  hpa.categories = {"all"};
  hpa.status_subresource = true;
  out.push_back(std::move(hpa));

  ResourceType scaled_objects =
      Grouped("keda.sh", "v1alpha1", "scaledobjects", "ScaledObject", "scaledobject");
  scaled_objects.short_names = {"so"};
  scaled_objects.status_subresource = true;
  scaled_objects.custom_resource = true;
  scaled_objects.allow_unconditional_update = false;
  out.push_back(std::move(scaled_objects));

  // The project's own CRD, as embedded at build time. It is checked by the policy tests, so a
  // failure here is a build defect: fall back to a schemaless registration rather than lose the
  // kind.
  auto ias = ResourceTypesFromCrd(api::InferenceAutoscalerCrdYaml(),
                                  "deploy/crds/twinscale.io_inferenceautoscalers.yaml");
  if (ias.ok() && !ias->empty()) {
    for (ResourceType& t : *ias) out.push_back(std::move(t));
  } else {
    ResourceType t = Grouped("twinscale.io", "v1alpha1", "inferenceautoscalers",
                             "InferenceAutoscaler", "inferenceautoscaler");
    t.short_names = {"ias"};
    t.status_subresource = true;
    t.custom_resource = true;
    t.allow_unconditional_update = false;
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<ResourceType>> ResourceTypesFromCrd(std::string_view yaml,
                                                               std::string_view where) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  std::vector<ResourceType> out;
  try {
    for (const YAML::Node& doc : docs) {
      if (!doc.IsMap() || Str(doc, "kind") != "CustomResourceDefinition") continue;
      const YAML::Node spec = doc["spec"];
      const YAML::Node names = spec.IsDefined() && spec.IsMap() ? spec["names"] : YAML::Node();
      if (!spec.IsDefined() || !spec.IsMap() || !names.IsDefined() || !names.IsMap()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Sv(where), ": a CRD needs spec.group, spec.names and spec.versions"));
      }
      ResourceType base;
      base.group = Str(spec, "group");
      base.resource = Str(names, "plural");
      base.kind = Str(names, "kind");
      base.list_kind = Str(names, "listKind", base.kind + "List");
      base.singular = Str(names, "singular");
      base.short_names = Strs(names, "shortNames");
      base.categories = Strs(names, "categories");
      base.namespaced = Str(spec, "scope", "Namespaced") == "Namespaced";
      base.custom_resource = true;
      base.allow_unconditional_update = false;
      if (base.group.empty() || base.resource.empty() || base.kind.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            Sv(where), ": a CRD needs spec.group, spec.names.plural and spec.names.kind"));
      }
      const YAML::Node versions = spec["versions"];
      if (!versions.IsDefined() || !versions.IsSequence()) {
        return absl::InvalidArgumentError(absl::StrCat(Sv(where), ": spec.versions is missing"));
      }
      for (const YAML::Node& v : versions) {
        if (Str(v, "served", "true") != "true") continue;
        ResourceType t = base;
        t.version = Str(v, "name");
        const YAML::Node sub = v["subresources"];
        if (sub.IsDefined() && sub.IsMap()) {
          t.status_subresource = sub["status"].IsDefined();
          if (const YAML::Node scale = sub["scale"]; scale.IsDefined() && scale.IsMap()) {
            ScaleRule rule;
            rule.spec_replicas_path = Str(scale, "specReplicasPath", ".spec.replicas");
            rule.status_replicas_path = Str(scale, "statusReplicasPath", ".status.replicas");
            rule.label_selector_path = Str(scale, "labelSelectorPath");
            t.scale = rule;
          }
        }
        if (const YAML::Node cols = v["additionalPrinterColumns"];
            cols.IsDefined() && cols.IsSequence()) {
          for (const YAML::Node& c : cols) {
            PrinterColumn col;
            col.name = Str(c, "name");
            col.type = Str(c, "type", "string");
            col.format = Str(c, "format");
            col.description = Str(c, "description");
            col.json_path = Str(c, "jsonPath");
            if (!absl::SimpleAtoi(Str(c, "priority", "0"), &col.priority)) col.priority = 0;
            t.printer_columns.push_back(std::move(col));
          }
        }
        auto schema = api::CrdVersionSchema(doc, t.version);
        if (!schema.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(Sv(where), ": ", t.resource, ".", t.group,
                                                         "/", t.version, ": ",
                                                         schema.status().message()));
        }
        if (absl::Status s = schema->CheckStructural(); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Sv(where), ": ", t.resource, ".", t.group, "/", t.version,
                           ": the schema is not structural: ", s.message()));
        }
        t.schema = std::move(*schema);
        out.push_back(std::move(t));
      }
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(where), ": ", e.what()));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ": no served version of a CustomResourceDefinition"));
  }
  return out;
}

}  // namespace twinscale::fake_apiserver
