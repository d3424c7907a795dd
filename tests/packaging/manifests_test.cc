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
//   - the chart's copy of the CRD is the file deploy/ installs and the binary embeds;
//   - `kubectl apply -f` of any folder of deploy/ gets whole objects only: the controller's
//     patches live in deploy/patches/, each a patch of a container the controller's Deployment
//     has, and every `--patch-file` the docs and comments name is one of them;
//   - what the InferenceAutoscalers (and the ScaledObjects and HPA beside them) target ships in
//     deploy/samples/: a vLLM Deployment of that name in that namespace (and the Namespace),
//     whose selector selects its own pods and no other Deployment's, which serves the metrics
//     where the spec reads them, has a /health readiness probe, one GPU per tensor-parallel rank,
//     and runs the engine the twin simulates (its vLLM flags, read by the controller's own parser,
//     agree with the spec's profile and overrides).
// Tests run from the repository root.
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/spec_loader.h"
#include "controller/plan/review.h"
#include "controller/state/engine_args.h"
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

// The controller Deployment's patches for `kubectl patch --patch-file` (fragments, not objects):
// the one folder of deploy/ that `kubectl apply -f` must not be given.
constexpr char kPatchesDir[] = "deploy/patches";

// `twinscale plan`'s review files: inputs to the CLI, not objects for the API server (a
// `kubectl apply -f deploy/samples/` does not descend into the folder).
constexpr char kReviewsDir[] = "deploy/samples/plan";

// Every plain manifest file: deploy/ but its patches and the review files, and the chart's
// non-template files (templates/ holds Go template text, checked after rendering by
// chart_render_test; ci/ holds values files).
std::vector<std::string> ManifestFiles() {
  std::vector<std::string> files;
  for (const std::string& f : YamlFilesUnder("deploy", {"patches", "samples/plan"})) {
    files.push_back(f);
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

bool IsWholeObject(const YAML::Node& n) {
  return n.IsMap() && n["apiVersion"] && !n["apiVersion"].Scalar().empty() && n["kind"] &&
         !n["kind"].Scalar().empty() && n["metadata"]["name"] &&
         !n["metadata"]["name"].Scalar().empty();
}

// `kubectl apply -f <folder>` (the docs' way to apply the KEDA and HPA-mode examples, the samples,
// the CRD and the controller) refuses the whole folder over one document that is not an object,
// so every file outside deploy/patches/ must hold whole objects only.
TEST(Manifests, EveryDocumentIsAnObjectWithKindAndName) {
  const std::vector<Found> docs = AllDocuments();
  EXPECT_GE(docs.size(), 8u) << "deploy/ should hold the CRD, RBAC, Deployment, Services, samples";
  std::set<std::string> folders;
  for (const Found& f : docs) {
    SCOPED_TRACE(f.where);
    folders.insert(std::filesystem::path(f.where).parent_path().generic_string());
    EXPECT_TRUE(IsWholeObject(f.node)) << "not an object with apiVersion, kind and metadata.name"
                                       << " (a patch belongs in " << kPatchesDir << "/)";
  }
  // The folders the docs apply whole are among those checked.
  for (const char* folder : {"deploy/keda", "deploy/external-metrics", "deploy/samples",
                             "deploy/crds", "deploy/controller"}) {
    EXPECT_TRUE(folders.count(folder)) << folder;
  }
}

// `kubectl apply -f FOLDER` (not recursive) applies at most one scaler a workload: KEDA refuses a
// second ScaledObject on a Deployment, and two HPAs would fight over its replicas. Alternatives
// live in a subfolder.
// The review files beside the samples are what `twinscale plan` reads, and no more: each parses
// as a CapacityReview, whose profiles the binary ships.
TEST(Manifests, EveryReviewFileIsACapacityReview) {
  const std::vector<std::string> reviews = YamlFilesUnder(kReviewsDir);
  EXPECT_GE(reviews.size(), 1u);
  for (const std::string& file : reviews) {
    SCOPED_TRACE(file);
    absl::StatusOr<plan::Review> review = plan::LoadReviewFile(file);
    ASSERT_TRUE(review.ok()) << review.status();
    EXPECT_GE(review->profiles.size(), 2u) << "a review compares profiles";
    EXPECT_GE(review->scenarios.size(), 6u) << "the documented example has six scenarios or more";
  }
}

TEST(Manifests, AFolderAppliedWholeScalesEachWorkloadOnce) {
  std::map<std::string, std::string> scaler_of;  // "<folder> <namespace>/<kind>/<name>" -> where
  for (const Found& f : AllDocuments()) {
    const YAML::Node& node = f.node;
    const std::string kind = node["kind"] ? node["kind"].Scalar() : "";
    if (kind != "ScaledObject" && kind != "HorizontalPodAutoscaler") continue;
    const YAML::Node target = node["spec"]["scaleTargetRef"];
    ASSERT_TRUE(target && target["name"]) << f.where << ": no scaleTargetRef.name";
    const std::string folder =
        std::filesystem::path(f.where.substr(0, f.where.find(':'))).parent_path().generic_string();
    const std::string ns =
        node["metadata"]["namespace"] ? node["metadata"]["namespace"].Scalar() : "default";
    const std::string key =
        absl::StrCat(folder, " ", ns, "/", target["kind"] ? target["kind"].Scalar() : "Deployment",
                     "/", target["name"].Scalar());
    const auto [it, fresh] = scaler_of.emplace(key, f.where);
    EXPECT_TRUE(fresh) << key << ": scaled by " << it->second << " and " << f.where;
  }
  EXPECT_GE(scaler_of.size(), 2u) << "the KEDA and HPA examples";
}

// The patches: fragments of the controller's Deployment, merged by container name (a name the
// Deployment lacks would add a second container instead), each named in the folder's README and
// applied, in its own comment, from where it is.
TEST(Manifests, EachPatchPatchesAContainerOfTheControllerDeployment) {
  const YAML::Node controller = YAML::LoadFile("deploy/controller/deployment.yaml");
  std::set<std::string> containers;
  for (const YAML::Node& c : controller["spec"]["template"]["spec"]["containers"]) {
    containers.insert(c["name"].Scalar());
  }
  ASSERT_FALSE(containers.empty());
  const std::string readme = ReadFile(absl::StrCat(kPatchesDir, "/README.md")).value_or("");
  const std::vector<std::string> patches = YamlFilesUnder(kPatchesDir);
  EXPECT_GE(patches.size(), 2u) << "the gRPC server's and the external metrics server's";
  for (const std::string& file : patches) {
    SCOPED_TRACE(file);
    absl::StatusOr<std::string> text = ReadFile(file);
    ASSERT_TRUE(text.ok()) << text.status();
    const std::vector<YamlDocument> docs = SplitYamlDocuments(*text);
    ASSERT_EQ(docs.size(), 1u) << "one patch a file";
    absl::StatusOr<YAML::Node> patch = ParseYamlDocument(docs[0], file);
    ASSERT_TRUE(patch.ok()) << patch.status();
    EXPECT_FALSE((*patch)["kind"].IsDefined() || (*patch)["apiVersion"].IsDefined())
        << "an object, not a patch: it belongs beside the examples";
    const YAML::Node patched = (*patch)["spec"]["template"]["spec"]["containers"];
    ASSERT_TRUE(patched.IsSequence() && patched.size() > 0);
    for (const YAML::Node& c : patched) {
      EXPECT_TRUE(containers.count(c["name"].Scalar()))
          << "deploy/controller/deployment.yaml has no container " << c["name"].Scalar();
    }
    const std::string base = std::filesystem::path(file).filename().string();
    EXPECT_THAT(readme, HasSubstr("`" + base + "`")) << "README.md does not list it";
    EXPECT_THAT(*text, HasSubstr("--patch-file " + file)) << "its comment applies another path";
  }
}

// Every `--patch-file PATH` the docs, the READMEs and the manifests' comments give names a patch
// that exists, in deploy/patches/.
TEST(Manifests, EveryPatchFileTheDocsNameIsInThePatchesFolder) {
  std::vector<std::string> sources = {"README.md", "deploy/patches/README.md",
                                      "deploy/samples/README.md", "charts/twinscale/README.md"};
  for (const auto& e : std::filesystem::directory_iterator("docs")) {
    if (e.path().extension() == ".md") sources.push_back(e.path().generic_string());
  }
  for (const std::string& f : YamlFilesUnder("deploy")) sources.push_back(f);
  const std::regex patch_file(R"(--patch-file[ =]+([A-Za-z0-9_./-]+\.ya?ml))");
  int named = 0;
  for (const std::string& source : sources) {
    const std::string text = ReadFile(source).value_or("");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), patch_file);
         it != std::sregex_iterator(); ++it) {
      const std::string path = (*it)[1];
      SCOPED_TRACE(absl::StrCat(source, ": --patch-file ", path));
      ++named;
      EXPECT_TRUE(absl::StartsWith(path, absl::StrCat(kPatchesDir, "/")));
      EXPECT_TRUE(std::filesystem::is_regular_file(path)) << "no such file";
    }
  }
  EXPECT_GE(named, 4) << "docs/usage.md's two, and each patch's own comment";
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

// ---- What the examples target: the vLLM servers beside the samples ----------------------------

constexpr char kSamplesDir[] = "deploy/samples/";

// matchLabels selects `labels` when each of its pairs is among them. An empty selector (which
// selects every pod) is no selector for these purposes.
bool Selects(const YAML::Node& match_labels, const YAML::Node& labels) {
  if (!match_labels.IsMap() || match_labels.size() == 0 || !labels.IsMap()) return false;
  for (const auto& kv : match_labels) {
    const YAML::Node v = labels[kv.first.Scalar()];
    if (!v || v.Scalar() != kv.second.Scalar()) return false;
  }
  return true;
}

std::string NamespaceOf(const YAML::Node& n) {
  return n["metadata"]["namespace"] ? n["metadata"]["namespace"].Scalar() : "default";
}

std::string NameOf(const YAML::Node& n) { return n["metadata"]["name"].Scalar(); }

// The documents of deploy/samples/ of `kind`.
std::vector<Found> Samples(const std::vector<Found>& docs, const std::string& kind) {
  std::vector<Found> out;
  for (const Found& f : docs) {
    if (absl::StartsWith(f.where, kSamplesDir) && IsKind(f.node, kind)) out.push_back(f);
  }
  return out;
}

// The Deployment of deploy/samples/ called `name` in `ns`, or nullptr.
const Found* SampleDeployment(const std::vector<Found>& deployments, const std::string& ns,
                              const std::string& name) {
  for (const Found& d : deployments) {
    if (NamespaceOf(d.node) == ns && NameOf(d.node) == name) return &d;
  }
  return nullptr;
}

// What an object under deploy/ scales: an InferenceAutoscaler's targetRef, a KEDA ScaledObject's
// or an HPA's scaleTargetRef.
struct TargetReference {
  std::string where;
  std::string ns;
  std::string kind;
  std::string name;
};

std::vector<TargetReference> TargetReferences(const std::vector<Found>& docs) {
  std::vector<TargetReference> out;
  for (const Found& f : docs) {
    if (!absl::StartsWith(f.where, "deploy/")) continue;
    YAML::Node ref;
    if (IsKind(f.node, "InferenceAutoscaler")) ref = f.node["spec"]["targetRef"];
    if (IsKind(f.node, "ScaledObject") || IsKind(f.node, "HorizontalPodAutoscaler")) {
      ref = f.node["spec"]["scaleTargetRef"];
    }
    if (!ref.IsMap()) continue;
    // A ScaledObject's scaleTargetRef.kind defaults to Deployment.
    const std::string kind = ref["kind"] ? ref["kind"].Scalar() : "Deployment";
    out.push_back({f.where, NamespaceOf(f.node), kind, ref["name"].Scalar()});
  }
  return out;
}

// The container that runs vLLM (the controller reads its flags from the pod spec).
YAML::Node VllmContainer(const YAML::Node& deployment) {
  for (const YAML::Node& c : deployment["spec"]["template"]["spec"]["containers"]) {
    if (absl::StrContains(c["image"].Scalar(), "vllm")) return c;
  }
  return YAML::Node();
}

// The container's command and args, as the controller reads them from a pod.
std::vector<std::string> CommandLine(const YAML::Node& container) {
  std::vector<std::string> words;
  for (const char* key : {"command", "args"}) {
    for (const YAML::Node& w : container[key]) words.push_back(w.Scalar());
  }
  return words;
}

// Whether `port` (a number or a name) is a port the container declares.
bool DeclaresPort(const YAML::Node& container, const std::string& port) {
  for (const YAML::Node& p : container["ports"]) {
    if (p["name"].Scalar() == port || p["containerPort"].Scalar() == port) return true;
  }
  return false;
}

TEST(SampleTargets, EveryExampleTargetsAVllmDeploymentShippedBesideTheSamples) {
  const std::vector<Found> docs = AllDocuments();
  const std::vector<Found> deployments = Samples(docs, "Deployment");
  std::set<std::string> namespaces;
  for (const Found& n : Samples(docs, "Namespace")) namespaces.insert(NameOf(n.node));
  int from_samples = 0;
  std::set<std::string> targeted;
  for (const TargetReference& ref : TargetReferences(docs)) {
    SCOPED_TRACE(absl::StrCat(ref.where, " targets ", ref.kind, " ", ref.ns, "/", ref.name));
    from_samples += absl::StartsWith(ref.where, kSamplesDir);
    EXPECT_EQ(ref.kind, "Deployment");
    EXPECT_NE(SampleDeployment(deployments, ref.ns, ref.name), nullptr)
        << "no Deployment of that name in that namespace in " << kSamplesDir;
    EXPECT_TRUE(ref.ns == "default" || namespaces.count(ref.ns))
        << "no Namespace " << ref.ns << " in " << kSamplesDir;
    targeted.insert(ref.ns + "/" + ref.name);
  }
  EXPECT_GE(from_samples, 3) << "the three InferenceAutoscaler samples";
  // And every server shipped is one an example targets.
  for (const Found& d : deployments) {
    EXPECT_TRUE(targeted.count(NamespaceOf(d.node) + "/" + NameOf(d.node))) << d.where;
  }
}

TEST(SampleTargets, EachDeploymentSelectsItsOwnPodsAndNoOtherDeploymentsPods) {
  const std::vector<Found> docs = AllDocuments();
  const std::vector<Found> deployments = Samples(docs, "Deployment");
  ASSERT_GE(deployments.size(), 3u);
  auto pod_labels = [](const Found& d) { return d.node["spec"]["template"]["metadata"]["labels"]; };
  for (const Found& d : deployments) {
    SCOPED_TRACE(d.where);
    const YAML::Node selector = d.node["spec"]["selector"];
    EXPECT_FALSE(selector["matchExpressions"].IsDefined()) << "only matchLabels is checked here";
    EXPECT_TRUE(Selects(selector["matchLabels"], pod_labels(d)));
    for (const Found& other : deployments) {
      if (&other == &d || NamespaceOf(other.node) != NamespaceOf(d.node)) continue;
      // Overlapping selectors: each Deployment (and twinscale, which reads the pods by the
      // target's selector) would count the other's pods as its own.
      EXPECT_FALSE(Selects(selector["matchLabels"], pod_labels(other)))
          << "selects " << other.where;
    }
  }
  const std::vector<Found> services = Samples(docs, "Service");
  EXPECT_GE(services.size(), deployments.size());
  for (const Found& s : services) {
    SCOPED_TRACE(s.where);
    std::vector<const Found*> selected;
    for (const Found& d : deployments) {
      if (NamespaceOf(d.node) == NamespaceOf(s.node) &&
          Selects(s.node["spec"]["selector"], pod_labels(d))) {
        selected.push_back(&d);
      }
    }
    ASSERT_EQ(selected.size(), 1u) << "a Service of one vLLM Deployment's pods";
    for (const YAML::Node& p : s.node["spec"]["ports"]) {
      EXPECT_TRUE(DeclaresPort(VllmContainer(selected[0]->node), p["targetPort"].Scalar()))
          << "targetPort " << p["targetPort"].Scalar();
    }
  }
}

// The server runs what the InferenceAutoscaler's twin simulates and serves what it reads. The
// expected engine is the spec's profile with its overrides (twin::Resolve, as the controller
// resolves it); the pod's flags are read by the controller's own parser (state::ParseVllmArgs).
TEST(SampleTargets, EachTargetRunsTheEngineItsInferenceAutoscalerSimulatesAndServesItsMetrics) {
  const std::vector<Found> docs = AllDocuments();
  const std::vector<Found> deployments = Samples(docs, "Deployment");
  const std::vector<Found> services = Samples(docs, "Service");
  absl::StatusOr<sim::ProfileRegistry> profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  int checked = 0;
  for (const Found& f : docs) {
    if (!absl::StartsWith(f.where, "deploy/") || !IsKind(f.node, "InferenceAutoscaler")) continue;
    SCOPED_TRACE(f.where);
    absl::StatusOr<api::InferenceAutoscaler> ias =
        api::ParseInferenceAutoscaler(f.doc.text, f.where);
    ASSERT_TRUE(ias.ok()) << ias.status();
    const api::InferenceAutoscalerSpec& spec = ias->spec;
    const std::string ns = NamespaceOf(f.node);
    const Found* target = SampleDeployment(deployments, ns, spec.target_ref.name);
    ASSERT_NE(target, nullptr) << "checked by EveryExampleTargetsAVllmDeploymentShippedBeside...";
    SCOPED_TRACE(target->where);
    absl::StatusOr<twin::ResolvedTarget> resolved = twin::Resolve(spec, *profiles);
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    const sim::DeploymentSpec& want = resolved->deployment;
    const YAML::Node c = VllmContainer(target->node);
    ASSERT_TRUE(c.IsMap()) << "no vllm container";
    ++checked;

    // The official image, at a pinned release.
    const std::string image = c["image"].Scalar();
    EXPECT_TRUE(absl::StartsWith(image, "vllm/vllm-openai:v")) << image;

    // One GPU per tensor-parallel rank, requested as the scheduler needs it (limits; requests, if
    // given, the same).
    EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(0), want.tensor_parallel);
    if (c["resources"]["requests"]["nvidia.com/gpu"]) {
      EXPECT_EQ(c["resources"]["requests"]["nvidia.com/gpu"].as<int>(0), want.tensor_parallel);
    }

    // Ready means vLLM answers /health: the controller reads Ready pods only.
    EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].Scalar(), "/health");
    EXPECT_TRUE(DeclaresPort(c, c["readinessProbe"]["httpGet"]["port"].Scalar()));

    // Metrics where the spec reads them: the pods' port (Pods), or the Prometheus job that a
    // ServiceMonitor gives the pods of the Service of that name (Prometheus).
    if (spec.metrics.source == api::MetricsSourceKind::kPods) {
      EXPECT_TRUE(DeclaresPort(c, std::to_string(spec.metrics.port)))
          << "the pods do not serve spec.metrics.port " << spec.metrics.port;
    } else {
      ASSERT_TRUE(spec.metrics.prometheus.has_value());
      const auto& matchers = spec.metrics.prometheus->label_matchers;
      if (matchers.count("namespace")) {
        EXPECT_EQ(matchers.at("namespace"), ns);
      }
      if (matchers.count("job")) {
        bool found = false;
        for (const Found& s : services) {
          found |= NamespaceOf(s.node) == ns && NameOf(s.node) == matchers.at("job") &&
                   Selects(s.node["spec"]["selector"],
                           target->node["spec"]["template"]["metadata"]["labels"]);
        }
        EXPECT_TRUE(found) << "no Service " << matchers.at("job") << " of the target's pods";
      }
    }

    // The engine: the controller finds it by its command line and follows its flags where the
    // spec states no value, so every flag given must be the value the twin simulates, and every
    // value the spec states must be given (vLLM's default would differ).
    const std::vector<std::string> words = CommandLine(c);
    EXPECT_TRUE(state::LooksLikeVllm(words)) << absl::StrJoin(words, " ");
    absl::StatusOr<state::EngineArgs> args = state::ParseVllmArgs(words);
    ASSERT_TRUE(args.ok()) << args.status();
    const twin::StatedEngineSettings& stated = resolved->stated;
    EXPECT_EQ(args->max_num_seqs.value_or(want.engine.max_num_seqs), want.engine.max_num_seqs);
    EXPECT_EQ(args->max_num_batched_tokens.value_or(want.engine.max_num_batched_tokens),
              want.engine.max_num_batched_tokens);
    EXPECT_EQ(args->max_model_len.value_or(want.engine.max_model_len), want.engine.max_model_len);
    EXPECT_EQ(args->block_size.value_or(want.engine.block_size), want.engine.block_size);
    EXPECT_EQ(args->gpu_memory_utilization.value_or(want.engine.gpu_memory_utilization),
              want.engine.gpu_memory_utilization);
    EXPECT_EQ(args->enable_prefix_caching.value_or(want.engine.enable_prefix_caching),
              want.engine.enable_prefix_caching);
    EXPECT_EQ(args->tensor_parallel_size.value_or(1), want.tensor_parallel);
    EXPECT_EQ(args->long_prefill_token_threshold.value_or(0),
              want.engine.long_prefill_token_threshold);
    EXPECT_TRUE(!stated.max_num_seqs || args->max_num_seqs.has_value()) << "--max-num-seqs";
    EXPECT_TRUE(!stated.max_num_batched_tokens || args->max_num_batched_tokens.has_value())
        << "--max-num-batched-tokens";
    EXPECT_TRUE(!stated.max_model_len || args->max_model_len.has_value()) << "--max-model-len";
    EXPECT_TRUE(!stated.block_size || args->block_size.has_value()) << "--block-size";
    EXPECT_TRUE(!stated.gpu_memory_utilization || args->gpu_memory_utilization.has_value())
        << "--gpu-memory-utilization";
  }
  EXPECT_GE(checked, 3) << "the three samples (and the KEDA and HPA-mode examples)";
}

}  // namespace
}  // namespace twinscale::packaging
