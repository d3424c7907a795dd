// The structural-schema check of what twinscale ships (`kubectl apply --dry-run=client` needs an
// API server, so CI checks with the project's own schema engine,
// controller/api/openapi_schema.h, the one the spec loader and the fake API server use):
//   - every CustomResourceDefinition under deploy/ and charts/ is a valid structural schema whose
//     defaults are valid against their own schema, every field documented, and whose printer
//     columns read fields of the column's type; the columns the handbook promises are there;
//   - every InferenceAutoscaler under deploy/ (samples, examples) and charts/, and in README.md's
//     yaml blocks, validates against the CRD (types, enums, min/max, patterns, required, no unknown
//     fields) and passes the loader's cross-field checks, after the schema's defaults;
//   - the check rejects what it must (a negative control per kind of rule);
//   - the chart's copy of the CRD is the file deploy/ installs and the binary embeds.
// Tests run from the repository root.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/spec_loader.h"
#include "controller/twin/resolve.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/packaging/manifest_files.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::packaging {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kCrdPath[] = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";
constexpr char kChartCrdPath[] =
    "charts/twinscale/files/crds/twinscale.io_inferenceautoscalers.yaml";

// Every plain manifest file: deploy/ and the chart's non-template files (templates/ holds Go
// template text, checked after rendering by chart_render_test; ci/ holds values files). Files
// named *-patch.yaml are patches for `kubectl patch --patch-file` (fragments, not objects).
std::vector<std::string> ManifestFiles() {
  std::vector<std::string> files;
  for (const std::string& f : YamlFilesUnder("deploy")) {
    if (!absl::EndsWith(f, "-patch.yaml")) files.push_back(f);
  }
  for (const std::string& f : YamlFilesUnder("charts", {"twinscale/templates", "twinscale/ci"})) {
    if (f == "charts/twinscale/Chart.yaml" || f == "charts/twinscale/values.yaml") continue;
    files.push_back(f);
  }
  return files;
}

struct Found {
  std::string where;  // "path:line"
  YamlDocument doc;
  YAML::Node node;
};

// Every document of every manifest file, parsed; a syntax error fails the test.
std::vector<Found> AllDocuments() {
  std::vector<Found> out;
  for (const std::string& file : ManifestFiles()) {
    absl::StatusOr<std::string> text = ReadFile(file);
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) continue;
    for (const YamlDocument& doc : SplitYamlDocuments(*text)) {
      absl::StatusOr<YAML::Node> node = ParseYamlDocument(doc, file);
      EXPECT_TRUE(node.ok()) << node.status();
      if (node.ok()) out.push_back({absl::StrCat(file, ":", doc.first_line), doc, *node});
    }
  }
  return out;
}

// Checks one InferenceAutoscaler document as the controller and `replay` would load it: the
// loader (schema defaults, the schema, the cross-field checks), then the twin's resolution of
// spec.model against the embedded profiles (an unknown profile is InvalidSpec in the cluster).
absl::Status CheckInferenceAutoscaler(const YamlDocument& doc, const std::string& where) {
  absl::StatusOr<std::vector<api::InferenceAutoscaler>> all =
      api::ParseInferenceAutoscalers(doc.text, where);
  if (!all.ok()) return all.status();
  if (all->size() != 1) return absl::InternalError(absl::StrCat(where, ": not one object"));
  static const absl::StatusOr<sim::ProfileRegistry> profiles = sim::ProfileRegistry::LoadEmbedded();
  if (!profiles.ok()) return profiles.status();
  absl::StatusOr<twin::ResolvedTarget> resolved = twin::Resolve((*all)[0].spec, *profiles);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", resolved.status().message()));
  }
  return absl::OkStatus();
}

bool IsKind(const YAML::Node& n, const std::string& kind) {
  return n.IsMap() && n["kind"] && n["kind"].Scalar() == kind;
}

// ---- Every document is a Kubernetes object ---------------------------------------------------

TEST(Manifests, EveryDocumentIsAnObjectWithKindAndName) {
  const std::vector<Found> docs = AllDocuments();
  EXPECT_GE(docs.size(), 8u) << "deploy/ should hold the CRD, RBAC, Deployment, Services, samples";
  for (const Found& f : docs) {
    SCOPED_TRACE(f.where);
    ASSERT_TRUE(f.node.IsMap());
    EXPECT_TRUE(f.node["apiVersion"] && !f.node["apiVersion"].Scalar().empty());
    EXPECT_TRUE(f.node["kind"] && !f.node["kind"].Scalar().empty());
    EXPECT_TRUE(f.node["metadata"]["name"] && !f.node["metadata"]["name"].Scalar().empty());
  }
}

// ---- CRDs ------------------------------------------------------------------------------------

// The type a printer column's field must have: kubectl formats the column by its own type.
bool ColumnTypeFits(const std::string& column_type, const api::OpenApiSchema& field) {
  if (column_type == "integer") return field.Type() == "integer";
  if (column_type == "number") return field.Type() == "number" || field.Type() == "integer";
  if (column_type == "boolean") return field.Type() == "boolean";
  if (column_type == "string") return field.Type() == "string";
  if (column_type == "date") return field.Type() == "string";
  return false;
}

TEST(Manifests, EveryCrdIsStructuralDocumentedAndItsColumnsReadFieldsOfTheirType) {
  int crds = 0;
  for (const Found& f : AllDocuments()) {
    if (!IsKind(f.node, "CustomResourceDefinition")) continue;
    SCOPED_TRACE(f.where);
    ++crds;
    for (const YAML::Node& version : f.node["spec"]["versions"]) {
      const std::string name = version["name"].Scalar();
      SCOPED_TRACE(name);
      absl::StatusOr<api::OpenApiSchema> schema = api::CrdVersionSchema(f.node, name);
      ASSERT_TRUE(schema.ok()) << schema.status();
      // Structural, with every default valid against its own schema (CheckStructural's rules).
      EXPECT_TRUE(schema->CheckStructural().ok()) << schema->CheckStructural();
      EXPECT_THAT(schema->UndocumentedFields(), IsEmpty());
      EXPECT_TRUE(version["subresources"]["status"].IsMap()) << "status subresource";
      for (const YAML::Node& column : version["additionalPrinterColumns"]) {
        const std::string path = column["jsonPath"].Scalar();
        const std::string type = column["type"].Scalar();
        SCOPED_TRACE(path);
        if (path == ".metadata.creationTimestamp") {
          EXPECT_EQ(type, "date");
          continue;
        }
        std::optional<api::OpenApiSchema> node = *schema;
        for (const std::string& part :
             std::vector<std::string>(absl::StrSplit(path.substr(1), '.'))) {
          if (node) node = node->Property(part);
        }
        ASSERT_TRUE(node.has_value()) << "the schema has no field " << path;
        EXPECT_TRUE(ColumnTypeFits(type, *node))
            << "column type " << type << " for a field of type " << node->Type();
      }
    }
  }
  EXPECT_GE(crds, 2) << "deploy/crds and the chart's copy";
}

TEST(Manifests, KubectlGetIasShowsTargetModeReplicasTtftKvUseAndAge) {
  const YAML::Node crd = YAML::LoadFile(kCrdPath);
  std::map<std::string, std::string> columns;  // name -> jsonPath
  for (const YAML::Node& c : crd["spec"]["versions"][0]["additionalPrinterColumns"]) {
    columns[c["name"].Scalar()] = c["jsonPath"].Scalar();
  }
  const std::map<std::string, std::string> want = {
      {"Target", ".spec.targetRef.name"},       {"Mode", ".spec.mode"},
      {"Current", ".status.currentReplicas"},   {"Desired", ".status.desiredReplicas"},
      {"P90-TTFT", ".status.observed.ttftP90"}, {"KV-Use", ".status.observed.kvCacheUtilization"},
      {"Age", ".metadata.creationTimestamp"},
  };
  EXPECT_EQ(columns, want);
}

TEST(Manifests, SchemaDefaultsTogetherValidateAgainstTheSchema) {
  // Each default is valid alone (CheckStructural); here all of them at once, on the smallest
  // valid spec, must give an object the schema accepts.
  absl::StatusOr<api::OpenApiSchema> root =
      api::CrdVersionSchema(YAML::LoadFile(kCrdPath), "v1alpha1");
  ASSERT_TRUE(root.ok()) << root.status();
  std::optional<api::OpenApiSchema> spec = root->Property("spec");
  ASSERT_TRUE(spec.has_value());
  const YAML::Node minimal = YAML::Load(
      "targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n"
      "maxReplicas: 4\n"
      "model: {profile: llama-3.1-8b-h100-sxm-tp1}\n");
  const YAML::Node defaulted = spec->ApplyDefaults(minimal);
  EXPECT_TRUE(spec->Validate(defaulted, "spec").ok()) << spec->Validate(defaulted, "spec");
  // The defaults did apply (the documented ones, written out from the CRD).
  EXPECT_EQ(defaulted["mode"].Scalar(), "Recommend");
  EXPECT_EQ(defaulted["slo"]["ttft"]["threshold"].Scalar(), "500ms");
  EXPECT_EQ(defaulted["slo"]["target"]["requests"].Scalar(), "95");
  EXPECT_EQ(defaulted["slo"]["target"]["window"].Scalar(), "24h");
  EXPECT_EQ(defaulted["scaleDown"]["safetyMargin"].Scalar(), "0.8");
  EXPECT_EQ(defaulted["metrics"]["staleAfter"].Scalar(), "45s");
}

TEST(Manifests, TheChartInstallsTheCrdTheBinaryEmbeds) {
  absl::StatusOr<std::string> deploy = ReadFile(kCrdPath);
  absl::StatusOr<std::string> chart = ReadFile(kChartCrdPath);
  ASSERT_TRUE(deploy.ok()) << deploy.status();
  ASSERT_TRUE(chart.ok()) << chart.status();
  EXPECT_TRUE(*deploy == *chart) << kChartCrdPath << " differs from " << kCrdPath
                                 << ": run hack/generate-deploy.sh";
  EXPECT_EQ(api::InferenceAutoscalerCrdYaml(), *deploy);
  // Helm must keep the CRD on uninstall (deleting it deletes every InferenceAutoscaler).
  const YAML::Node crd = YAML::Load(*deploy);
  EXPECT_EQ(crd["metadata"]["annotations"]["helm.sh/resource-policy"].Scalar(), "keep");
}

// ---- InferenceAutoscalers --------------------------------------------------------------------

TEST(Manifests, EveryShippedInferenceAutoscalerValidates) {
  int checked = 0;
  for (const Found& f : AllDocuments()) {
    if (!IsKind(f.node, "InferenceAutoscaler")) continue;
    SCOPED_TRACE(f.where);
    ++checked;
    EXPECT_TRUE(CheckInferenceAutoscaler(f.doc, f.where).ok())
        << CheckInferenceAutoscaler(f.doc, f.where);
  }
  EXPECT_GE(checked, 2) << "deploy/samples holds at least two";
}

TEST(Manifests, EveryInferenceAutoscalerInTheReadmeAndDocsValidates) {
  int checked = 0;
  for (const char* file : {"README.md", "docs/usage.md", "docs/operations.md"}) {
    absl::StatusOr<std::string> text = ReadFile(file);
    ASSERT_TRUE(text.ok()) << text.status();
    for (const YamlDocument& block : MarkdownYamlBlocks(*text)) {
      for (YamlDocument doc : SplitYamlDocuments(block.text)) {
        doc.first_line += block.first_line - 1;
        const std::string where = absl::StrCat(file, ":", doc.first_line);
        absl::StatusOr<YAML::Node> node = ParseYamlDocument(doc, file);
        ASSERT_TRUE(node.ok()) << node.status();
        if (!IsKind(*node, "InferenceAutoscaler")) continue;
        ++checked;
        EXPECT_TRUE(CheckInferenceAutoscaler(doc, where).ok())
            << CheckInferenceAutoscaler(doc, where);
      }
    }
  }
  EXPECT_GE(checked, 1) << "the handbook's tuning example";
}

// The same check must reject each kind of rule's violation, naming the field (a check that
// accepts everything would pass the two tests above).
TEST(Manifests, TheCheckRejectsEachKindOfViolation) {
  const std::string head =
      "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\nmetadata: {name: x}\nspec:\n"
      "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n";
  const std::string model = "  model: {profile: llama-3.1-8b-h100-sxm-tp1}\n";
  struct Case {
    std::string why;
    std::string spec_lines;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"type: a string where an integer belongs", "  maxReplicas: ten\n", "spec.maxReplicas"},
      {"enum: no such mode", "  maxReplicas: 4\n  mode: Sideways\n", "spec.mode"},
      {"minimum: scale-to-zero is out of scope", "  maxReplicas: 4\n  minReplicas: 0\n",
       "spec.minReplicas"},
      {"maximum: a margin above 1", "  maxReplicas: 4\n  scaleDown: {safetyMargin: 1.5}\n",
       "spec.scaleDown.safetyMargin"},
      {"pattern: a duration without a unit",
       "  maxReplicas: 4\n  slo: {ttft: {threshold: '500'}}\n", "spec.slo.ttft.threshold"},
      {"required: no maxReplicas", "", "spec.maxReplicas"},
      {"unknown field: a typo", "  maxReplicas: 4\n  maxReplica: 5\n", "spec.maxReplica"},
      {"cross-field: staleAfter not longer than interval",
       "  maxReplicas: 4\n  metrics: {interval: 30s, staleAfter: 30s}\n",
       "spec.metrics.staleAfter"},
      {"the twin: a profile that does not exist",
       "  maxReplicas: 4\n  model: {profile: llama-9-h100}\n", "spec.model.profile"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const std::string own_model = absl::StrContains(c.spec_lines, "model:") ? "" : model;
    const absl::Status s =
        CheckInferenceAutoscaler(YamlDocument{head + own_model + c.spec_lines, 1}, "bad.yaml");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace twinscale::packaging
