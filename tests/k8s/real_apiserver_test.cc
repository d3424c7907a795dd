// twinscale's manifests against a REAL kube-apiserver v1.26 (control_plane.h): the CRD from
// deploy/ and from the rendered chart becomes Established; every manifest in deploy/ and every
// rendered chart variant passes `kubectl apply --dry-run=server`; the samples are accepted and
// stored with the same defaults the project's own schema engine fills in; a table of invalid
// InferenceAutoscalers is refused by the server and by the project's loader alike.
//
// Skipped (not passed) where ../shared/k8s is absent. About 10 s a test (each starts its own
// etcd and API server; the controller-manager is not needed here).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/spec_loader.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/json_yaml.h"
#include "tests/k8s/control_plane.h"
#include "yaml-cpp/yaml.h"

#ifndef TS_HELM_RENDER_BIN
#error "TS_HELM_RENDER_BIN (where the test builds hack/helm-render) must be defined"
#endif

namespace twinscale::k8s_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kCrdFile[] = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";
constexpr char kCrdName[] = "inferenceautoscalers.twinscale.io";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Renders charts/twinscale (release twinscale in twinscale-system) with `values` files; the
// manifests as one multi-document YAML stream.
absl::StatusOr<std::string> RenderChart(const std::vector<std::string>& values) {
  const Command built =
      RunCommand(absl::StrCat("hack/helm-render/build.sh ", ShellQuote(TS_HELM_RENDER_BIN)));
  if (!built.ok()) return absl::InternalError("hack/helm-render/build.sh failed: " + built.all());
  // The chart has no default image: the one hack/generate-deploy.sh renders deploy/ with.
  std::string cmd = absl::StrCat(ShellQuote(TS_HELM_RENDER_BIN),
                                 " --name twinscale --namespace twinscale-system"
                                 " --set image.repository=twinscale --set image.tag=dev");
  for (const std::string& v : values) absl::StrAppend(&cmd, " -f ", ShellQuote(v));
  absl::StrAppend(&cmd, " charts/twinscale");
  const Command r = RunCommand(cmd);
  if (!r.ok()) return absl::InvalidArgumentError("helm-render: " + r.all());
  return r.out;
}

// The documents of a YAML stream whose kind is `kind`, re-emitted.
std::string DocumentsOfKind(const std::string& stream, const std::string& kind) {
  std::string out;
  for (const YAML::Node& doc : YAML::LoadAll(stream)) {
    if (!doc.IsMap() || !doc["kind"] || doc["kind"].Scalar() != kind) continue;
    YAML::Emitter e;
    e << doc;
    absl::StrAppend(&out, "---\n", e.c_str(), "\n");
  }
  return out;
}

// A manifest file that is a patch (documents without kind), not whole objects.
bool IsPatchFile(const std::string& path) {
  for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
    if (doc.IsMap() && !doc["kind"]) return true;
  }
  return false;
}

class RealApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TS_SKIP_WITHOUT_CONTROL_PLANE();
    ControlPlaneOptions o;
    o.controller_manager = false;
    auto cp = ControlPlane::Start(o);
    ASSERT_TRUE(cp.ok()) << cp.status();
    cp_ = *std::move(cp);
  }

  void ExpectOk(const Command& r, const std::string& what) {
    EXPECT_TRUE(r.ok()) << what << " (exit " << r.exit_code << "): " << r.all();
  }

  // Applies the CRD and waits until the server says it is Established.
  void InstallCrd(const std::string& crd_yaml) {
    ExpectOk(cp_->KubectlWithFile("apply", crd_yaml), "apply the CRD");
    ExpectOk(cp_->WaitEstablished(absl::StrCat("crd/", kCrdName)), "CRD Established");
  }

  std::unique_ptr<ControlPlane> cp_;
};

TEST_F(RealApiServerTest, TheCrdFromDeployAndFromTheChartBecomesEstablished) {
  InstallCrd(ReadFile(kCrdFile));
  // The server keeps the schema as written: the spec's required fields and the status
  // subresource the controller writes through.
  auto stored = cp_->GetJson(absl::StrCat("crd ", kCrdName));
  ASSERT_TRUE(stored.ok()) << stored.status();
  const json& version = (*stored)["spec"]["versions"][0];
  EXPECT_EQ(version["name"], "v1alpha1");
  EXPECT_EQ(version["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"],
            json::array({"targetRef", "maxReplicas", "model"}));
  EXPECT_TRUE(version["subresources"].contains("status"));

  ExpectOk(cp_->Kubectl(absl::StrCat("delete crd ", kCrdName, " --wait=true")), "delete the CRD");
  auto rendered = RenderChart({});
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  const std::string chart_crd = DocumentsOfKind(*rendered, "CustomResourceDefinition");
  ASSERT_FALSE(chart_crd.empty()) << "the chart renders no CustomResourceDefinition";
  InstallCrd(chart_crd);
}

// The server's own refusal of the schema bug that blocked installs; the project's structural check
// (used by the loader and the fake API server) refuses it with the same path.
TEST_F(RealApiServerTest, ACrdWithADescribedRootMetadataIsRefusedHereAndByTheSchemaCheck) {
  const std::string good = ReadFile(kCrdFile);
  const std::string needle = "            metadata:\n              type: object\n";
  ASSERT_TRUE(absl::StrContains(good, needle));
  const std::string bad = absl::StrReplaceAll(
      good, {{needle, needle + "              description: Standard object metadata.\n"}});
  const Command r = cp_->KubectlWithFile("apply", bad);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.err,
                                "openAPIV3Schema.properties[metadata]: Forbidden: must not "
                                "specify anything other than name and generateName"))
      << r.err;
  auto schema = api::CrdVersionSchema(YAML::Load(bad), "v1alpha1");
  ASSERT_TRUE(schema.ok()) << schema.status();
  const absl::Status structural = schema->CheckStructural();
  EXPECT_FALSE(structural.ok());
  EXPECT_TRUE(absl::StrContains(structural.message(), "properties[metadata]")) << structural;
}

TEST_F(RealApiServerTest, EveryManifestAndEveryChartVariantPassesServerSideDryRun) {
  // What an install has before twinscale's manifests: the namespaces they name and the CRDs of
  // cert-manager, KEDA and the Prometheus operator (stand-ins: tests/data/k8s/standin-crds.yaml).
  // (monitoring: where the monitoring values put the ServiceMonitor and the dashboard.)
  for (const char* ns : {"twinscale-system", "llm", "cert-manager", "monitoring"}) {
    ExpectOk(cp_->Kubectl(absl::StrCat("create namespace ", ns)), ns);
  }
  ExpectOk(cp_->Kubectl("apply -f tests/data/k8s/standin-crds.yaml"), "stand-in CRDs");
  ExpectOk(cp_->WaitEstablished("crd/scaledobjects.keda.sh crd/certificates.cert-manager.io "
                                "crd/servicemonitors.monitoring.coreos.com"),
           "stand-in CRDs Established");
  InstallCrd(ReadFile(kCrdFile));
  // Patches (deploy/patches/) apply to the controller's Deployment, which must exist.
  ExpectOk(cp_->Kubectl("apply -f deploy/controller/"), "deploy/controller/");

  // Every manifest under deploy/ but `twinscale plan`'s review files (deploy/samples/plan/: inputs
  // to the CLI, which `kubectl apply -f deploy/samples/` does not descend into).
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator("deploy");
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path() == fs::path("deploy/samples/plan")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".yaml") {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u) << "deploy/ holds fewer manifests than expected";
  std::vector<std::string> failures;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const Command r =
        IsPatchFile(f)
            ? cp_->Kubectl(absl::StrCat("-n twinscale-system patch deployment twinscale-controller "
                                        "--dry-run=server --patch-file ",
                                        ShellQuote(f)))
            : cp_->Kubectl(absl::StrCat("apply --dry-run=server -f ", ShellQuote(f)));
    if (!r.ok()) failures.push_back(absl::StrCat(f, ": ", r.err));
  }
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");

  std::vector<std::vector<std::string>> variants = {{}};
  for (const auto& e : fs::directory_iterator("charts/twinscale/ci")) {
    if (absl::EndsWith(e.path().string(), "-values.yaml")) variants.push_back({e.path().string()});
  }
  std::sort(variants.begin(), variants.end());
  ASSERT_GE(variants.size(), 5u);
  for (const auto& values : variants) {
    const std::string name = values.empty() ? "default values" : values[0];
    SCOPED_TRACE(name);
    auto rendered = RenderChart(values);
    ASSERT_TRUE(rendered.ok()) << rendered.status();
    const Command r = cp_->KubectlWithFile("apply --dry-run=server", *rendered);
    EXPECT_TRUE(r.ok()) << name << ": " << r.err;
  }
}

// The samples as a user applies them: accepted, and stored with exactly the defaults the
// project's schema engine (the loader `replay` and the controller use) fills in.
TEST_F(RealApiServerTest, SamplesAreStoredWithTheDefaultsTheLoaderFillsIn) {
  InstallCrd(ReadFile(kCrdFile));
  ExpectOk(cp_->Kubectl("create namespace llm"), "namespace");
  auto schema = api::CrdVersionSchema(YAML::LoadFile(kCrdFile), "v1alpha1");
  ASSERT_TRUE(schema.ok()) << schema.status();
  const std::optional<api::OpenApiSchema> spec_schema = schema->Property("spec");
  ASSERT_TRUE(spec_schema.has_value());
  int checked = 0;
  for (const auto& e : fs::directory_iterator("deploy/samples")) {
    if (e.path().extension() != ".yaml") continue;
    // vllm-*.yaml: the vLLM servers the samples target, dry-run with the rest of deploy/ above.
    if (absl::StartsWith(e.path().filename().string(), "vllm-")) continue;
    const std::string f = e.path().string();
    SCOPED_TRACE(f);
    ASSERT_TRUE(api::LoadInferenceAutoscalerFile(f).ok());
    ExpectOk(cp_->Kubectl(absl::StrCat("apply -f ", ShellQuote(f))), f);
    const YAML::Node doc = YAML::LoadFile(f);
    auto stored =
        cp_->GetJson(absl::StrCat("-n ", doc["metadata"]["namespace"].Scalar(),
                                  " inferenceautoscaler ", doc["metadata"]["name"].Scalar()));
    ASSERT_TRUE(stored.ok()) << stored.status();
    const json ours = fake_apiserver::YamlToJson(spec_schema->ApplyDefaults(doc["spec"]));
    EXPECT_EQ((*stored)["spec"], ours) << "server:\n"
                                       << (*stored)["spec"].dump(2) << "\nloader:\n"
                                       << ours.dump(2);
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

struct InvalidCase {
  std::string name;
  std::string spec;   // YAML of spec (the base's fields replaced)
  std::string field;  // what the server's message names
};

TEST_F(RealApiServerTest, InvalidAutoscalersAreRefusedByTheServerAndByTheLoader) {
  InstallCrd(ReadFile(kCrdFile));
  ExpectOk(cp_->Kubectl("create namespace llm"), "namespace");
  const std::string target = "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n";
  const std::string model = "  model: {profile: llama-3.1-8b-h100-sxm-tp1}\n";
  const std::vector<InvalidCase> cases = {
      {"maxReplicas is required", target + model, "spec.maxReplicas"},
      {"targetRef is required", "  maxReplicas: 4\n" + model, "spec.targetRef"},
      {"minReplicas below 1", target + model + "  maxReplicas: 4\n  minReplicas: 0\n",
       "spec.minReplicas"},
      {"an unknown mode", target + model + "  maxReplicas: 4\n  mode: Sometimes\n", "spec.mode"},
      {"a clearly-safe window that is not a duration",
       target + model + "  maxReplicas: 4\n  scaleDown: {clearlySafeWindow: 3 minutes}\n",
       "spec.scaleDown.clearlySafeWindow"},
      {"an interval that is not a duration",
       target + model + "  maxReplicas: 4\n  metrics: {interval: 5 minutes}\n",
       "spec.metrics.interval"},
      {"an unknown field (strict field validation)",
       target + model + "  maxReplicas: 4\n  maxReplica: 5\n", "maxReplica"},
      {"a percentile over 100",
       target + model + "  maxReplicas: 4\n  slo: {ttft: {threshold: 500ms, percentile: 150}}\n",
       "spec.slo.ttft.percentile"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string manifest = absl::StrCat(
        "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\nmetadata:\n  name: bad\n"
        "  namespace: llm\nspec:\n",
        c.spec);
    const Command r = cp_->KubectlWithFile("apply --dry-run=server", manifest);
    EXPECT_FALSE(r.ok()) << "the server accepted it";
    EXPECT_TRUE(absl::StrContains(r.err, c.field)) << r.err;
    auto ours = api::ParseInferenceAutoscaler(manifest, "case");
    EXPECT_FALSE(ours.ok()) << "the loader accepted it";
    EXPECT_TRUE(absl::StrContains(ours.status().message(), c.field)) << ours.status();
  }
}

}  // namespace
}  // namespace twinscale::k8s_test
