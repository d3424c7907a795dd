// Renders the Helm chart (charts/twinscale) with hack/helm-render, Go's text/template and sprig
// from Debian with the Helm built-ins the chart uses (Helm itself is not packaged here), and
// checks:
//   - the chart has no default image (none is published): without one it refuses to render, with
//     one message saying how to build the image and which values name it, and following that
//     message renders; every `helm install` the docs show names the image they build;
//   - the default render (with the image twinscale:dev) is exactly what deploy/ ships
//     (hack/generate-deploy.sh writes it);
//   - every render (defaults, each documented option in charts/twinscale/ci/, another release
//     name and namespace) keeps the invariants: non-root, read-only root filesystem, no
//     privilege escalation, every capability dropped, probes on a declared port, CPU and memory
//     requests and a memory limit, Services and the PDB selecting the controller's pods on ports
//     it declares, volumes for every mount and a mount for every file a flag names, bindings to
//     roles and accounts that exist, the Lease rule naming the Lease, unique objects, and only
//     flags `twinscale controller` defines;
//   - each option does what its values say (the flags, ports, Services, Secrets, certificates,
//     APIService and RBAC it adds, written out here from the values, not captured);
//   - invalid values fail with a message naming the value to fix;
//   - NOTES.txt renders for every option;
//   - values.yaml and the templates agree: every value a template reads is declared, and every
//     declared value is read by a template.
// The renderer is built once per run (a few seconds; hack/helm-render/build.sh, GOPATH mode
// against /usr/share/gocode). Tests run from the repository root.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/packaging/manifest_files.h"
#include "tests/util/temp_dir.h"
#include "yaml-cpp/yaml.h"

#ifndef TS_HELM_RENDER_BIN
#error "TS_HELM_RENDER_BIN (where the test builds hack/helm-render) must be defined"
#endif

namespace twinscale::packaging {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kChart[] = "charts/twinscale";
constexpr char kRenderer[] = TS_HELM_RENDER_BIN;

// ---- Processes and files ---------------------------------------------------------------------

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Command {
  int exit = -1;
  std::string out;
  std::string err;
};

Command RunShell(const std::string& command) {
  const testutil::TempDir tmp("twinscale-chart");
  const std::string dir = tmp.path();
  const std::string out = dir + "/out", err = dir + "/err";
  const int status = std::system((command + " >" + out + " 2>" + err).c_str());
  Command c;
  c.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  c.out = ReadFile(out).value_or("");
  c.err = ReadFile(err).value_or("");
  return c;
}

void WriteFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
}

// ---- Rendering -------------------------------------------------------------------------------

struct Object {
  std::string file;  // relative to templates/
  YAML::Node node;
  std::string kind() const { return node["kind"].Scalar(); }
  std::string name() const { return node["metadata"]["name"].Scalar(); }
  std::string ns() const {
    return node["metadata"]["namespace"] ? node["metadata"]["namespace"].Scalar() : "";
  }
};

struct Render {
  Command command;
  std::map<std::string, std::string> files;  // path relative to templates/ -> content
  std::vector<Object> objects;

  bool ok() const { return command.exit == 0; }
  std::vector<const Object*> OfKind(const std::string& kind) const {
    std::vector<const Object*> out;
    for (const Object& o : objects) {
      if (o.kind() == kind) out.push_back(&o);
    }
    return out;
  }
  const Object* Find(const std::string& kind, const std::string& name) const {
    for (const Object& o : objects) {
      if (o.kind() == kind && o.name() == name) return &o;
    }
    return nullptr;
  }
  const YAML::Node Deployment() const {
    auto d = OfKind("Deployment");
    return d.size() == 1 ? d[0]->node : YAML::Node();
  }
  YAML::Node Container() const { return Deployment()["spec"]["template"]["spec"]["containers"][0]; }
  std::vector<std::string> Args() const {
    std::vector<std::string> out;
    for (const YAML::Node& a : Container()["args"]) out.push_back(a.Scalar());
    return out;
  }
  // The value of --name=value among the container's arguments (the last one if repeated).
  std::optional<std::string> Flag(const std::string& name) const {
    std::optional<std::string> v;
    for (const std::string& a : Args()) {
      if (absl::StartsWith(a, "--" + name + "=")) v = a.substr(name.size() + 3);
    }
    return v;
  }
};

// Renders the chart with the renderer's arguments `args` (values, release; the output directory
// and the chart are added).
Render RenderWithArgs(const std::string& args) {
  Render r;
  const testutil::TempDir tmp("twinscale-chart");
  const std::string dir = tmp.path();
  r.command = RunShell(
      absl::StrCat(Quote(kRenderer), " ", args, " --output-dir ", Quote(dir), " ", kChart));
  if (r.ok()) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string rel = fs::relative(entry.path(), dir).generic_string();
      r.files[rel] = ReadFile(entry.path().string()).value_or("");
      for (const YamlDocument& doc : SplitYamlDocuments(r.files[rel])) {
        absl::StatusOr<YAML::Node> node = ParseYamlDocument(doc, rel);
        EXPECT_TRUE(node.ok()) << node.status();
        if (node.ok()) r.objects.push_back({rel, *node});
      }
    }
  }
  return r;
}

// The image hack/generate-deploy.sh renders deploy/ with (what `docker build -t twinscale:dev .`
// makes): the chart has no default, so every render below names it unless a test says otherwise,
// as a values file before the test's own, which win (pod-values.yaml's image).
constexpr char kLocalImageValues[] = "image:\n  repository: twinscale\n  tag: dev\n";
constexpr char kLocalImage[] = "twinscale:dev";

Render RenderChart(const std::vector<std::string>& values, const std::string& name = "twinscale",
                   const std::string& ns = "twinscale-system") {
  const testutil::TempDir tmp("twinscale-chart-values");
  const std::string image_values = tmp.path() + "/image-values.yaml";
  WriteFile(image_values, kLocalImageValues);
  std::string args =
      absl::StrCat("--name ", Quote(name), " --namespace ", Quote(ns), " -f ", Quote(image_values));
  for (const std::string& v : values) absl::StrAppend(&args, " -f ", Quote(v));
  return RenderWithArgs(args);
}

std::vector<std::string> CiValuesFiles() {
  std::vector<std::string> files = YamlFilesUnder(absl::StrCat(kChart, "/ci"));
  EXPECT_GE(files.size(), 8u);
  return files;
}

class ChartRenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Command built = RunShell(absl::StrCat("hack/helm-render/build.sh ", Quote(kRenderer)));
    build_error_ = built.exit == 0 ? "" : "hack/helm-render/build.sh failed: " + built.err;
  }
  void SetUp() override {
    ASSERT_EQ(build_error_, "") << "(hack/setup.sh installs golang-go and the Go libraries)";
  }
  static std::string build_error_;
};
std::string ChartRenderTest::build_error_;

// ---- The controller's flags ------------------------------------------------------------------

// Flags `twinscale controller` accepts: those defined in its own file and the shared ones
// (controller/main.cc: FlagBelongsTo), spelled with dashes as on the command line.
std::set<std::string> ControllerFlags() {
  std::set<std::string> flags;
  const std::regex def(R"(ABSL_FLAG\(\s*[^,]+,\s*([A-Za-z0-9_]+)\s*,)");
  for (const char* file :
       {"controller/cli/controller_command.cc", "controller/cli/common_flags.cc"}) {
    const std::string text = ReadFile(file).value_or("");
    EXPECT_FALSE(text.empty()) << file;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), def);
         it != std::sregex_iterator(); ++it) {
      std::string name = (*it)[1];
      std::replace(name.begin(), name.end(), '_', '-');
      flags.insert(name);
    }
  }
  return flags;
}

// Flags the chart passes that this tree's controller may not define yet, and why (none today: an
// entry is for an output built beside the chart, until it lands).
const std::map<std::string, std::string> kPendingFlags = {};

// ---- Invariants of every render --------------------------------------------------------------

const std::set<std::string> kClusterScoped = {
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "Namespace"};

bool SelectorMatches(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector.IsMap() || selector.size() == 0) return false;
  for (const auto& kv : selector) {
    if (!labels[kv.first.Scalar()] || labels[kv.first.Scalar()].Scalar() != kv.second.Scalar()) {
      return false;
    }
  }
  return true;
}

void CheckInvariants(const Render& r, const std::set<std::string>& defined_flags) {
  // Unique objects, namespaced where they must be.
  std::set<std::string> seen;
  for (const Object& o : r.objects) {
    SCOPED_TRACE(o.file + ": " + o.kind() + " " + o.name());
    EXPECT_TRUE(seen.insert(absl::StrCat(o.kind(), "/", o.ns(), "/", o.name())).second)
        << "rendered twice";
    EXPECT_EQ(o.ns().empty(), kClusterScoped.count(o.kind()) == 1) << "namespace";
    EXPECT_LE(o.name().size(), 253u);
  }

  const YAML::Node deployment = r.Deployment();
  ASSERT_TRUE(deployment.IsMap()) << "exactly one Deployment";
  const YAML::Node pod = deployment["spec"]["template"]["spec"];
  const YAML::Node pod_labels = deployment["spec"]["template"]["metadata"]["labels"];
  EXPECT_TRUE(SelectorMatches(deployment["spec"]["selector"]["matchLabels"], pod_labels));
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node c = r.Container();

  // Security: non-root, read-only root filesystem, nothing to escalate with.
  const bool non_root =
      (pod["securityContext"]["runAsNonRoot"] &&
       pod["securityContext"]["runAsNonRoot"].as<bool>()) ||
      (c["securityContext"]["runAsNonRoot"] && c["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_TRUE(non_root) << "runAsNonRoot";
  EXPECT_NE(pod["securityContext"]["runAsUser"].as<int>(0), 0) << "runAsUser 0 is root";
  EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>(false));
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>(true));
  std::vector<std::string> dropped;
  for (const YAML::Node& d : c["securityContext"]["capabilities"]["drop"])
    dropped.push_back(d.Scalar());
  EXPECT_THAT(dropped, Contains("ALL"));
  EXPECT_FALSE(c["securityContext"]["capabilities"]["add"].IsDefined());
  EXPECT_FALSE(pod["hostNetwork"].IsDefined());

  // Ports, probes and resources.
  std::set<std::string> ports;
  for (const YAML::Node& p : c["ports"]) ports.insert(p["name"].Scalar());
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    SCOPED_TRACE(probe);
    ASSERT_TRUE(c[probe]["httpGet"].IsMap());
    EXPECT_TRUE(ports.count(c[probe]["httpGet"]["port"].Scalar()));
  }
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].Scalar(), "/healthz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].Scalar(), "/readyz");
  EXPECT_TRUE(c["resources"]["requests"]["cpu"].IsDefined());
  EXPECT_TRUE(c["resources"]["requests"]["memory"].IsDefined());
  EXPECT_TRUE(c["resources"]["limits"]["memory"].IsDefined());
  EXPECT_EQ(r.Flag("ops-port").value_or(""), [&] {
    for (const YAML::Node& p : c["ports"]) {
      if (p["name"].Scalar() == "ops") return p["containerPort"].Scalar();
    }
    return std::string();
  }());

  // Volumes: one for every mount, a mount for every file a flag names.
  std::set<std::string> volumes;
  for (const YAML::Node& v : pod["volumes"]) volumes.insert(v["name"].Scalar());
  std::vector<std::string> mounts;
  for (const YAML::Node& m : c["volumeMounts"]) {
    EXPECT_TRUE(volumes.count(m["name"].Scalar())) << "mount without volume " << m["name"];
    EXPECT_TRUE(m["readOnly"].as<bool>(false)) << m["name"];
    mounts.push_back(m["mountPath"].Scalar() + "/");
  }
  EXPECT_EQ(volumes.size(), mounts.size()) << "a volume nothing mounts";

  // Flags: the controller subcommand, and only flags it defines.
  const std::vector<std::string> args = r.Args();
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "controller");
  for (size_t i = 1; i < args.size(); ++i) {
    SCOPED_TRACE(args[i]);
    ASSERT_TRUE(absl::StartsWith(args[i], "--"));
    const std::string name = args[i].substr(2, args[i].find('=') - 2);
    if (!defined_flags.count(name)) {
      EXPECT_TRUE(kPendingFlags.count(name)) << "`twinscale controller` has no flag --" << name;
    }
    const std::string value = args[i].substr(args[i].find('=') + 1);
    if (absl::StartsWith(value, "/")) {
      EXPECT_TRUE(std::any_of(mounts.begin(), mounts.end(), [&](const std::string& m) {
        return absl::StartsWith(value, m);
      })) << "no volume is mounted where the flag points";
    }
  }
  // The Lease's identity comes from the pod name.
  bool pod_name = false;
  for (const YAML::Node& e : c["env"]) {
    pod_name |= e["name"].Scalar() == "POD_NAME" &&
                e["valueFrom"]["fieldRef"]["fieldPath"].Scalar() == "metadata.name";
  }
  EXPECT_TRUE(pod_name);

  // Services and the PDB select the controller's pods, on ports the container declares. The
  // outputs' Services (all but the ops one, which every replica serves) select only the leader: the
  // pod the Lease holder labels twinscale.io/leader: "true" at run time.
  YAML::Node leader_labels = YAML::Clone(pod_labels);
  leader_labels["twinscale.io/leader"] = "true";
  for (const Object* s : r.OfKind("Service")) {
    SCOPED_TRACE(s->name());
    bool ops = false;
    for (const YAML::Node& p : s->node["spec"]["ports"]) ops |= p["targetPort"].Scalar() == "ops";
    const YAML::Node selector = s->node["spec"]["selector"];
    EXPECT_TRUE(SelectorMatches(selector, ops ? pod_labels : leader_labels));
    EXPECT_EQ(static_cast<bool>(selector["twinscale.io/leader"]), !ops)
        << (ops ? "the ops Service must reach every replica"
                : "an output must reach the leader only");
    for (const YAML::Node& p : s->node["spec"]["ports"]) {
      EXPECT_TRUE(ports.count(p["targetPort"].Scalar())) << p["targetPort"];
    }
  }
  for (const Object* p : r.OfKind("PodDisruptionBudget")) {
    EXPECT_TRUE(SelectorMatches(p->node["spec"]["selector"]["matchLabels"], pod_labels));
    EXPECT_LT(p->node["spec"]["minAvailable"].as<int>(), deployment["spec"]["replicas"].as<int>())
        << "a PDB that blocks every drain";
  }

  // RBAC: bindings name roles that exist (the chart's, or the well-known ones an aggregated API
  // server binds to) and subjects that exist (the controller's account, or the HPA controller's).
  const std::string account = pod["serviceAccountName"].Scalar();
  if (r.Find("ServiceAccount", account) == nullptr) {
    EXPECT_THAT(r.OfKind("ServiceAccount"), ::testing::IsEmpty())
        << "the pod's account is not the chart's";
  }
  const std::set<std::string> well_known = {"system:auth-delegator",
                                            "extension-apiserver-authentication-reader"};
  for (const char* kind : {"RoleBinding", "ClusterRoleBinding"}) {
    for (const Object* b : r.OfKind(kind)) {
      SCOPED_TRACE(b->name());
      const std::string role = b->node["roleRef"]["name"].Scalar();
      EXPECT_TRUE(well_known.count(role) || r.Find(b->node["roleRef"]["kind"].Scalar(), role))
          << "no " << b->node["roleRef"]["kind"] << " " << role;
      for (const YAML::Node& s : b->node["subjects"]) {
        if (s["namespace"].Scalar() == "kube-system") continue;  // the HPA controller
        EXPECT_EQ(s["name"].Scalar(), account);
      }
    }
  }
  // Leader election: the Lease rule names the Lease the controller campaigns for.
  if (r.Flag("leader-elect") == "true") {
    bool named = false;
    for (const Object* role : r.OfKind("Role")) {
      for (const YAML::Node& rule : role->node["rules"]) {
        for (const YAML::Node& n : rule["resourceNames"])
          named |= n.Scalar() == r.Flag("lease-name");
      }
    }
    EXPECT_TRUE(named) << "no Role lets the controller renew its Lease";
    EXPECT_TRUE(r.Flag("lease-namespace").has_value());
  } else {
    EXPECT_EQ(deployment["spec"]["replicas"].as<int>(), 1) << "several replicas need a Lease";
  }
}

// ---- Tests -----------------------------------------------------------------------------------

TEST_F(ChartRenderTest, TheDefaultRenderIsWhatDeployShips) {
  const Render r = RenderChart({});
  ASSERT_TRUE(r.ok()) << r.command.err;
  const std::string fix = "; run hack/generate-deploy.sh";
  for (const auto& [path, content] : r.files) {
    SCOPED_TRACE(path);
    absl::StatusOr<std::string> shipped = ReadFile("deploy/" + path);
    ASSERT_TRUE(shipped.ok()) << "the chart renders " << path << ", deploy/ lacks it" << fix;
    EXPECT_TRUE(*shipped == content)
        << "deploy/" << path << " differs from the chart's render" << fix;
  }
  // And deploy/ has nothing the chart doesn't render, but the Namespace (Helm makes it with
  // --create-namespace), the samples and the examples.
  for (const char* dir : {"deploy/crds", "deploy/controller"}) {
    for (const std::string& file : YamlFilesUnder(dir)) {
      if (file == "deploy/controller/namespace.yaml") continue;
      EXPECT_TRUE(r.files.count(file.substr(7))) << file << " is not rendered by the chart" << fix;
    }
  }
  // What the issue asks deploy/ to hold.
  for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
           {"CustomResourceDefinition", "inferenceautoscalers.twinscale.io"},
           {"ServiceAccount", "twinscale-controller"},
           {"ClusterRole", "twinscale-controller"},
           {"ClusterRoleBinding", "twinscale-controller"},
           {"Role", "twinscale-leader-election"},
           {"RoleBinding", "twinscale-leader-election"},
           {"Deployment", "twinscale-controller"},
           {"PodDisruptionBudget", "twinscale-controller"},
           {"Service", "twinscale-controller-metrics"}}) {
    EXPECT_NE(r.Find(kind, name), nullptr) << kind << " " << name;
  }
  EXPECT_EQ(r.Deployment()["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(r.Flag("leader-elect"), "true");
  // deploy/ runs the image `docker build -t twinscale:dev .` makes.
  EXPECT_EQ(r.Container()["image"].Scalar(), kLocalImage);
  // No output is on by default; the external metrics API never is (one provider per cluster).
  EXPECT_EQ(r.Find("APIService", "v1beta1.external.metrics.k8s.io"), nullptr);
  EXPECT_FALSE(r.Flag("keda-addr").has_value());
  EXPECT_FALSE(r.Flag("admission-addr").has_value());
}

// No image is published, so the chart has no default one. Without one (or with half of one) the
// render fails with one message that says how to build the image from the repository's
// Dockerfile and which values name it; following it renders the image it built.
TEST_F(ChartRenderTest, WithoutAnImageTheChartRefusesToRenderAndSaysHowToBuildOne) {
  struct Case {
    std::string why;
    std::string args;
  };
  const std::vector<Case> cases = {
      {"the defaults name no image", ""},
      {"a repository without a tag or a digest", "--set image.repository=twinscale"},
      {"a tag without a repository", "--set image.tag=dev"},
      {"a digest without a repository", "--set image.digest=sha256:0123"},
  };
  std::string message;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const Render r = RenderWithArgs(c.args);
    EXPECT_NE(r.command.exit, 0);
    EXPECT_THAT(r.command.err, HasSubstr("image.repository and image.tag are required"));
    EXPECT_THAT(r.command.err, HasSubstr("docker build -t twinscale:dev ."));
    // One message, as Helm prints a failed `fail`: not text/template's chain of includes, which
    // quotes the call's source and so says everything twice.
    EXPECT_THAT(r.command.err,
                ::testing::StartsWith("helm-render: execution error at (twinscale/templates/"));
    const std::vector<std::string> builds = absl::StrSplit(r.command.err, "docker build");
    EXPECT_EQ(builds.size(), 2u) << "the message once: " << r.command.err;
    message = r.command.err;
  }
  // Doing what it says: the image it builds, named by the --set flags it gives.
  std::smatch built, named;
  ASSERT_TRUE(std::regex_search(message, built, std::regex(R"(docker build -t (\S+) \.)")));
  ASSERT_TRUE(std::regex_search(
      message, named, std::regex(R"((--set image\.repository=\S+ --set image\.tag=\S+))")));
  const Render r = RenderWithArgs(named[1]);
  ASSERT_TRUE(r.ok()) << r.command.err;
  EXPECT_EQ(r.Container()["image"].Scalar(), built[1]);
  // A digest instead of a tag.
  const Render digest = RenderWithArgs(
      "--set image.repository=registry.example.com/twinscale "
      "--set image.digest=sha256:0123");
  ASSERT_TRUE(digest.ok()) << digest.command.err;
  EXPECT_EQ(digest.Container()["image"].Scalar(), "registry.example.com/twinscale@sha256:0123");
}

TEST_F(ChartRenderTest, TheGeneratorScriptAgrees) {
  const Command c =
      RunShell(absl::StrCat("HELM_RENDER=", Quote(kRenderer), " hack/generate-deploy.sh --check"));
  EXPECT_EQ(c.exit, 0) << c.out << c.err;
}

TEST_F(ChartRenderTest, EveryRenderKeepsTheInvariants) {
  const std::set<std::string> flags = ControllerFlags();
  ASSERT_TRUE(flags.count("leader-elect") && flags.count("ops-port") && flags.count("workers"));
  std::vector<std::pair<std::string, Render>> renders;
  renders.emplace_back("defaults", RenderChart({}));
  renders.emplace_back("release prod in ops", RenderChart({}, "prod", "ops"));
  for (const std::string& f : CiValuesFiles()) renders.emplace_back(f, RenderChart({f}));
  for (const auto& [what, r] : renders) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(r.ok()) << r.command.err;
    CheckInvariants(r, flags);
  }
}

TEST_F(ChartRenderTest, AnotherReleaseNameAndNamespaceNameEverything) {
  const Render r = RenderChart({}, "prod", "ops");
  ASSERT_TRUE(r.ok()) << r.command.err;
  for (const Object& o : r.objects) {
    SCOPED_TRACE(o.kind() + " " + o.name());
    if (o.kind() == "CustomResourceDefinition") continue;
    EXPECT_TRUE(absl::StartsWith(o.name(), "prod-twinscale-"));
    if (!o.ns().empty()) {
      EXPECT_EQ(o.ns(), "ops");
    }
    EXPECT_EQ(o.node["metadata"]["labels"]["app.kubernetes.io/instance"].Scalar(), "prod");
  }
  EXPECT_EQ(r.Flag("lease-namespace"), "ops");
  EXPECT_EQ(r.Flag("lease-name"), "prod-twinscale-controller");
  const Object* binding = r.Find("ClusterRoleBinding", "prod-twinscale-controller");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ(binding->node["subjects"][0]["namespace"].Scalar(), "ops");
}

// Each documented option, checked against what its values file says.
TEST_F(ChartRenderTest, EachDocumentedOptionDoesWhatItsValuesSay) {
  using Check = std::function<void(const Render&)>;
  auto service_port = [](const Render& r, const std::string& name) {
    const Object* s = r.Find("Service", name);
    return s ? s->node["spec"]["ports"][0] : YAML::Node();
  };
  auto secret_of_volume = [](const Render& r, const std::string& volume) {
    for (const YAML::Node& v : r.Deployment()["spec"]["template"]["spec"]["volumes"]) {
      if (v["name"].Scalar() == volume) return v["secret"]["secretName"].Scalar();
    }
    return std::string();
  };
  const std::map<std::string, Check> checks = {
      {"keda-mutual-tls-values.yaml",
       [&](const Render& r) {
         // One server for both services, mutual TLS from a cert-manager certificate.
         EXPECT_EQ(r.Flag("keda-addr"), "0.0.0.0:9443");
         EXPECT_EQ(r.Flag("admission-addr"), "0.0.0.0:9443");
         EXPECT_EQ(r.Flag("grpc-tls-cert"), "/etc/twinscale/grpc-tls/tls.crt");
         EXPECT_EQ(r.Flag("grpc-tls-key"), "/etc/twinscale/grpc-tls/tls.key");
         EXPECT_EQ(r.Flag("grpc-client-ca"), "/etc/twinscale/grpc-tls/ca.crt");
         EXPECT_EQ(r.Flag("grpc-cert-refresh"), "1m");
         EXPECT_FALSE(r.Flag("grpc-plaintext").has_value());
         const YAML::Node port = service_port(r, "twinscale-grpc");
         EXPECT_EQ(port["port"].as<int>(0), 9443);
         EXPECT_EQ(port["targetPort"].Scalar(), "grpc");
         // KEDA's scalerAddress (deploy/keda: twinscale-grpc.twinscale-system.svc:9443) is a name
         // the certificate holds, and the certificate's Secret is what the pod mounts.
         const Object* cert = r.Find("Certificate", "twinscale-grpc");
         ASSERT_NE(cert, nullptr);
         std::vector<std::string> names;
         for (const YAML::Node& n : cert->node["spec"]["dnsNames"]) names.push_back(n.Scalar());
         EXPECT_THAT(names, Contains("twinscale-grpc.twinscale-system.svc"));
         EXPECT_EQ(cert->node["spec"]["secretName"].Scalar(), secret_of_volume(r, "grpc-tls"));
         // The chart's own CA signs it: self-signed Issuer -> CA Certificate -> CA Issuer.
         EXPECT_EQ(cert->node["spec"]["issuerRef"]["name"].Scalar(), "twinscale-ca");
         const Object* ca_issuer = r.Find("Issuer", "twinscale-ca");
         const Object* ca_cert = r.Find("Certificate", "twinscale-ca");
         ASSERT_NE(ca_issuer, nullptr);
         ASSERT_NE(ca_cert, nullptr);
         EXPECT_TRUE(ca_cert->node["spec"]["isCA"].as<bool>(false));
         EXPECT_EQ(ca_issuer->node["spec"]["ca"]["secretName"].Scalar(),
                   ca_cert->node["spec"]["secretName"].Scalar());
         EXPECT_NE(r.Find("Issuer", "twinscale-selfsigned"), nullptr);
       }},
      {"keda-server-tls-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Flag("keda-addr"), "0.0.0.0:9000");
         EXPECT_FALSE(r.Flag("admission-addr").has_value());
         EXPECT_FALSE(r.Flag("grpc-client-ca").has_value()) << "server TLS: no client certificates";
         EXPECT_EQ(r.Flag("grpc-cert-refresh"), "30s");
         EXPECT_EQ(secret_of_volume(r, "grpc-tls"), "my-grpc-tls");
         EXPECT_EQ(service_port(r, "twinscale-grpc")["port"].as<int>(0), 9000);
         EXPECT_THAT(r.OfKind("Certificate"), ::testing::IsEmpty());
       }},
      {"admission-plaintext-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Flag("admission-addr"), "0.0.0.0:9443");
         EXPECT_FALSE(r.Flag("keda-addr").has_value());
         EXPECT_EQ(r.Flag("grpc-plaintext"), "true");
         EXPECT_FALSE(r.Flag("grpc-tls-cert").has_value());
         EXPECT_FALSE(r.Deployment()["spec"]["template"]["spec"]["volumes"].IsDefined());
         EXPECT_NE(r.Find("Service", "twinscale-grpc"), nullptr);
       }},
      {"external-metrics-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Flag("external-metrics-addr"), "0.0.0.0:6443");
         EXPECT_EQ(r.Flag("external-metrics-tls-cert"),
                   "/etc/twinscale/external-metrics-tls/tls.crt");
         EXPECT_EQ(r.Flag("external-metrics-tls-key"),
                   "/etc/twinscale/external-metrics-tls/tls.key");
         EXPECT_EQ(r.Flag("external-metrics-client-ca"),
                   "/etc/twinscale/external-metrics-client-ca/ca.crt");
         EXPECT_EQ(secret_of_volume(r, "external-metrics-client-ca"), "aggregator-client-ca");
         // The APIService points at the Service, which reaches the server's port.
         const Object* api = r.Find("APIService", "v1beta1.external.metrics.k8s.io");
         ASSERT_NE(api, nullptr);
         const YAML::Node spec = api->node["spec"];
         EXPECT_EQ(spec["group"].Scalar(), "external.metrics.k8s.io");
         EXPECT_EQ(spec["version"].Scalar(), "v1beta1");
         EXPECT_EQ(spec["service"]["name"].Scalar(), "twinscale-external-metrics");
         EXPECT_EQ(spec["service"]["namespace"].Scalar(), "twinscale-system");
         EXPECT_EQ(service_port(r, "twinscale-external-metrics")["port"].as<int>(0),
                   spec["service"]["port"].as<int>(-1));
         EXPECT_FALSE(spec["insecureSkipTLSVerify"].as<bool>(true));
         // cert-manager injects the CA of the Certificate whose Secret the pod serves.
         const Object* cert = r.Find("Certificate", "twinscale-external-metrics");
         ASSERT_NE(cert, nullptr);
         EXPECT_EQ(api->node["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].Scalar(),
                   "twinscale-system/twinscale-external-metrics");
         EXPECT_EQ(cert->node["spec"]["secretName"].Scalar(),
                   secret_of_volume(r, "external-metrics-tls"));
         EXPECT_EQ(cert->node["spec"]["issuerRef"]["kind"].Scalar(), "ClusterIssuer");
         EXPECT_EQ(cert->node["spec"]["issuerRef"]["name"].Scalar(), "cluster-ca");
         EXPECT_EQ(r.Find("Issuer", "twinscale-ca"), nullptr) << "the user's issuer is used";
         // An aggregated API server's RBAC.
         const Object* delegator =
             r.Find("ClusterRoleBinding", "twinscale-external-metrics:system:auth-delegator");
         ASSERT_NE(delegator, nullptr);
         EXPECT_EQ(delegator->node["roleRef"]["name"].Scalar(), "system:auth-delegator");
         const Object* reader = r.Find("RoleBinding", "twinscale-external-metrics-auth-reader");
         ASSERT_NE(reader, nullptr);
         EXPECT_EQ(reader->ns(), "kube-system");
         EXPECT_EQ(reader->node["roleRef"]["kind"].Scalar(), "Role");
         EXPECT_EQ(reader->node["roleRef"]["name"].Scalar(),
                   "extension-apiserver-authentication-reader");
         const Object* hpa_role = r.Find("ClusterRole", "twinscale-external-metrics-reader");
         ASSERT_NE(hpa_role, nullptr);
         EXPECT_EQ(hpa_role->node["rules"][0]["apiGroups"][0].Scalar(), "external.metrics.k8s.io");
         const Object* hpa_binding =
             r.Find("ClusterRoleBinding", "twinscale-external-metrics-reader");
         ASSERT_NE(hpa_binding, nullptr);
         EXPECT_EQ(hpa_binding->node["subjects"][0]["name"].Scalar(), "horizontal-pod-autoscaler");
         EXPECT_EQ(hpa_binding->node["subjects"][0]["namespace"].Scalar(), "kube-system");
         EXPECT_FALSE(r.Flag("keda-addr").has_value());
       }},
      {"external-metrics-cabundle-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Flag("external-metrics-addr"), "0.0.0.0:8443");
         EXPECT_FALSE(r.Flag("external-metrics-client-ca").has_value());
         EXPECT_EQ(secret_of_volume(r, "external-metrics-tls"), "twinscale-external-metrics-tls");
         const Object* api = r.Find("APIService", "v1beta1.external.metrics.k8s.io");
         ASSERT_NE(api, nullptr);
         EXPECT_EQ(api->node["spec"]["caBundle"].Scalar(),
                   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==");
         EXPECT_FALSE(api->node["metadata"]["annotations"].IsDefined());
         EXPECT_THAT(r.OfKind("Certificate"), ::testing::IsEmpty());
       }},
      {"watch-namespace-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Flag("watch-namespace"), "llm");
         EXPECT_EQ(r.Flag("log-level"), "debug");
         EXPECT_EQ(r.Flag("workers"), "8") << "extraArgs come last and win";
         EXPECT_EQ(r.Flag("lease-name"), "llm-autoscaler");
         EXPECT_EQ(r.Flag("lease-duration"), "30s");
         EXPECT_EQ(r.Flag("renew-deadline"), "20s");
         EXPECT_EQ(r.Flag("retry-period"), "5s");
         // Permissions in the watched namespace only.
         EXPECT_EQ(r.Find("ClusterRoleBinding", "twinscale-controller"), nullptr);
         const Object* binding = r.Find("RoleBinding", "twinscale-controller");
         ASSERT_NE(binding, nullptr);
         EXPECT_EQ(binding->ns(), "llm");
         EXPECT_EQ(binding->node["roleRef"]["kind"].Scalar(), "ClusterRole");
       }},
      {"single-replica-values.yaml",
       [&](const Render& r) {
         EXPECT_EQ(r.Deployment()["spec"]["replicas"].as<int>(), 1);
         EXPECT_EQ(r.Flag("leader-elect"), "false");
         EXPECT_FALSE(r.Flag("lease-name").has_value());
         EXPECT_THAT(r.OfKind("Role"), ::testing::IsEmpty()) << "no Lease, no Lease permissions";
         EXPECT_THAT(r.OfKind("PodDisruptionBudget"), ::testing::IsEmpty());
         EXPECT_FALSE(r.Deployment()["spec"]["template"]["spec"]["affinity"].IsDefined());
       }},
      {"monitoring-values.yaml",
       [&](const Render& r) {
         const Object* sm = r.Find("ServiceMonitor", "twinscale-controller");
         ASSERT_NE(sm, nullptr);
         EXPECT_EQ(sm->node["metadata"]["labels"]["release"].Scalar(), "kube-prometheus-stack");
         EXPECT_EQ(sm->node["spec"]["endpoints"][0]["port"].Scalar(), "ops");
         EXPECT_EQ(sm->node["spec"]["endpoints"][0]["interval"].Scalar(), "15s");
         const Object* metrics = r.Find("Service", "twinscale-controller-metrics");
         ASSERT_NE(metrics, nullptr);
         EXPECT_TRUE(SelectorMatches(sm->node["spec"]["selector"]["matchLabels"],
                                     metrics->node["metadata"]["labels"]));
         const Object* cm = r.Find("ConfigMap", "twinscale-dashboard");
         ASSERT_NE(cm, nullptr);
         EXPECT_EQ(cm->ns(), "monitoring");
         EXPECT_EQ(cm->node["metadata"]["labels"]["grafana_dashboard"].Scalar(), "1");
         const std::string shipped =
             ReadFile(absl::StrCat(kChart, "/dashboards/twinscale.json")).value_or("");
         EXPECT_EQ(nlohmann::json::parse(cm->node["data"]["twinscale.json"].Scalar()),
                   nlohmann::json::parse(shipped));
       }},
      {"pod-values.yaml",
       [&](const Render& r) {
         EXPECT_THAT(r.OfKind("CustomResourceDefinition"), ::testing::IsEmpty());
         const YAML::Node pod = r.Deployment()["spec"]["template"];
         EXPECT_EQ(r.Container()["image"].Scalar(),
                   "registry.example.com/ml/twinscale@sha256:"
                   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
         EXPECT_EQ(pod["spec"]["imagePullSecrets"][0]["name"].Scalar(), "regcred");
         EXPECT_EQ(pod["metadata"]["annotations"]["example.com/owner"].Scalar(), "platform");
         EXPECT_EQ(pod["metadata"]["labels"]["team"].Scalar(), "platform");
         EXPECT_EQ(pod["spec"]["nodeSelector"]["kubernetes.io/os"].Scalar(), "linux");
         EXPECT_EQ(pod["spec"]["tolerations"][0]["key"].Scalar(), "dedicated");
         EXPECT_EQ(pod["spec"]["priorityClassName"].Scalar(), "system-cluster-critical");
         EXPECT_TRUE(pod["spec"]["affinity"]["podAntiAffinity"]
                        ["requiredDuringSchedulingIgnoredDuringExecution"]
                            .IsDefined());
         EXPECT_EQ(r.Container()["resources"]["limits"]["memory"].Scalar(), "512Mi");
         const Object* sa = r.Find("ServiceAccount", "twinscale-controller");
         ASSERT_NE(sa, nullptr);
         EXPECT_EQ(sa->node["metadata"]["annotations"]["iam.example.com/role"].Scalar(),
                   "twinscale");
       }},
  };
  std::set<std::string> covered;
  for (const std::string& file : CiValuesFiles()) {
    const std::string base = fs::path(file).filename().string();
    SCOPED_TRACE(base);
    auto it = checks.find(base);
    ASSERT_NE(it, checks.end()) << "a documented option without expectations here";
    covered.insert(base);
    const Render r = RenderChart({file});
    ASSERT_TRUE(r.ok()) << r.command.err;
    it->second(r);
  }
  EXPECT_EQ(covered.size(), checks.size()) << "expectations for a values file that is gone";
}

TEST_F(ChartRenderTest, InvalidValuesFailNamingTheValueToFix) {
  struct Case {
    std::string why;
    std::string values;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"TLS needs a certificate from somewhere", "keda: {enabled: true}\n",
       "grpc.tls.secretName is required"},
      {"an unknown TLS mode", "admission: {enabled: true}\ngrpc: {tls: {mode: insecure}}\n",
       "grpc.tls.mode must be mutual, server or plaintext"},
      {"two replicas would both act without a Lease", "leaderElection: {enabled: false}\n",
       "replicas > 1 needs leaderElection.enabled"},
      {"the external metrics server needs its certificate", "externalMetrics: {enabled: true}\n",
       "externalMetrics.tls.secretName is required"},
      {"the aggregator must be able to verify the server",
       "externalMetrics: {enabled: true, tls: {secretName: s}}\n",
       "externalMetrics.apiService needs caBundle"},
      {"an unknown anti-affinity", "podAntiAffinity: sometimes\n",
       "podAntiAffinity must be soft, hard or none"},
      {"an existing account must be named", "serviceAccount: {create: false}\n",
       "serviceAccount.name is required"},
  };
  const testutil::TempDir tmp("twinscale-chart");
  const std::string dir = tmp.path();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].why);
    const std::string file = absl::StrCat(dir, "/bad-", i, ".yaml");
    WriteFile(file, cases[i].values);
    const Render r = RenderChart({file});
    EXPECT_NE(r.command.exit, 0);
    EXPECT_THAT(r.command.err, HasSubstr(cases[i].want));
  }
}

TEST_F(ChartRenderTest, NotesRenderForEveryOption) {
  auto notes = [](const std::vector<std::string>& values) {
    std::string cmd = absl::StrCat(Quote(kRenderer), " --namespace twinscale-system --notes");
    for (const std::string& v : values) absl::StrAppend(&cmd, " -f ", Quote(v));
    return RunShell(cmd + " " + kChart);
  };
  const Command defaults = notes({});
  ASSERT_EQ(defaults.exit, 0) << defaults.err;
  EXPECT_THAT(defaults.out, HasSubstr("kubectl get ias -A"));
  EXPECT_THAT(defaults.out, HasSubstr("namespace twinscale-system"));
  EXPECT_THAT(defaults.out, Not(HasSubstr("gRPC")));
  for (const std::string& f : CiValuesFiles()) {
    SCOPED_TRACE(f);
    const Command c = notes({f});
    ASSERT_EQ(c.exit, 0) << c.err;
    EXPECT_THAT(c.out, Not(HasSubstr("%!"))) << "a formatting error";
    if (absl::StrContains(f, "keda-mutual")) {
      EXPECT_THAT(c.out, HasSubstr("scalerAddress: twinscale-grpc.twinscale-system.svc:9443"));
      EXPECT_THAT(c.out, HasSubstr("tlsClientCert"));
    }
    if (absl::StrContains(f, "plaintext")) {
      EXPECT_THAT(c.out, HasSubstr("WARNING: grpc.tls.mode is plaintext"));
    }
    if (absl::StrContains(f, "external-metrics")) {
      EXPECT_THAT(
          c.out, HasSubstr("metric twinscale-desired-replicas, selector twinscale.io/autoscaler="));
    }
  }
}

// The dashboard's queries are PromQL Prometheus 2.42 parses (promtool, from Debian's prometheus
// package, checks them as recording rules; Grafana's variables replaced by what it substitutes).
TEST(Dashboard, EveryQueryParsesAsPromql) {
  const nlohmann::json dash = nlohmann::json::parse(
      ReadFile(absl::StrCat(kChart, "/dashboards/twinscale.json")).value_or("{}"));
  std::vector<std::string> exprs;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& panels) {
    for (const nlohmann::json& p : panels) {
      for (const nlohmann::json& t : p.value("targets", nlohmann::json::array())) {
        exprs.push_back(t["expr"]);
      }
      if (p.contains("panels")) walk(p["panels"]);
    }
  };
  walk(dash["panels"]);
  ASSERT_GE(exprs.size(), 15u);
  YAML::Emitter rules;
  rules << YAML::BeginMap << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq
        << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "dashboard" << YAML::Key
        << "rules" << YAML::Value << YAML::BeginSeq;
  for (size_t i = 0; i < exprs.size(); ++i) {
    std::string e = std::regex_replace(exprs[i], std::regex(R"(\$__rate_interval)"), "1m");
    e = std::regex_replace(e, std::regex(R"(\$[A-Za-z_]+)"), ".*");
    rules << YAML::BeginMap << YAML::Key << "record" << YAML::Value
          << absl::StrCat("panel_query_", i) << YAML::Key << "expr" << YAML::Value << e
          << YAML::EndMap;
  }
  rules << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  const testutil::TempDir tmp("twinscale-chart");
  const std::string dir = tmp.path();
  WriteFile(dir + "/rules.yaml", rules.c_str());
  const Command c = RunShell("promtool check rules " + Quote(dir + "/rules.yaml"));
  EXPECT_EQ(c.exit, 0) << c.out << c.err << "(promtool comes with Debian's prometheus package)";
  EXPECT_THAT(c.out, HasSubstr(absl::StrCat("SUCCESS: ", exprs.size(), " rules found")));
}

// ---- The docs install what they build ---------------------------------------------------------

// Every `helm install` (and `helm upgrade`, which resets values it is not given) in the docs names
// the image, since the chart has none: by --set image.repository and image.tag, which a
// `docker build -t <repository>:<tag> .` in the same file builds; an upgrade may keep the
// install's with --reuse-values instead.
TEST(ChartDocs, EveryHelmInstallNamesTheImageTheDocsBuild) {
  std::vector<std::string> files = {"README.md", "charts/twinscale/README.md",
                                    "charts/twinscale/templates/NOTES.txt",
                                    "deploy/samples/README.md", "deploy/patches/README.md"};
  for (const auto& e : fs::directory_iterator("docs")) {
    if (e.path().extension() == ".md") files.push_back(e.path().generic_string());
  }
  const std::regex repository(R"(image\.repository=([^\s`]+))");
  const std::regex tag(R"(image\.tag=([^\s`]+))");
  int installs = 0;
  for (const std::string& file : files) {
    // Commands with their continuation lines (a backslash at the end) joined, as a shell reads.
    const std::string text =
        std::regex_replace(ReadFile(file).value_or(""), std::regex(R"(\\\n\s*)"), " ");
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      const std::string l(line);
      const bool install = absl::StrContains(l, "helm install ");
      const bool upgrade = absl::StrContains(l, "helm upgrade ");
      if (!install && !upgrade) continue;
      SCOPED_TRACE(absl::StrCat(file, ": ", l));
      std::smatch repo, t;
      if (upgrade && absl::StrContains(l, "--reuse-values")) continue;
      ++installs;
      ASSERT_TRUE(std::regex_search(l, repo, repository)) << "no image.repository";
      ASSERT_TRUE(std::regex_search(l, t, tag)) << "no image.tag";
      EXPECT_THAT(text, HasSubstr(absl::StrCat("docker build -t ", std::string(repo[1]), ":",
                                               std::string(t[1]), " .")))
          << "the file does not build the image it installs";
    }
  }
  EXPECT_GE(installs, 3) << "docs/operations.md's two and the chart README's";
}

// ---- values.yaml and the templates agree (no rendering needed) --------------------------------

// Every path of values.yaml ("image.repository"); maps are entered, lists and scalars are leaves.
// An empty map ({}: podAnnotations, certManager.issuerRef) is free-form: `open` gets its path.
void ValuePaths(const YAML::Node& n, const std::string& prefix, std::set<std::string>& out,
                std::set<std::string>& open) {
  for (const auto& kv : n) {
    const std::string path = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    out.insert(path);
    if (kv.second.IsMap() && kv.second.size() > 0) ValuePaths(kv.second, path, out, open);
    if (kv.second.IsMap() && kv.second.size() == 0) open.insert(path);
  }
}

TEST(ChartValues, EveryValueIsReadAndEveryReadValueIsDeclared) {
  std::set<std::string> declared, open;
  ValuePaths(YAML::LoadFile(absl::StrCat(kChart, "/values.yaml")), "", declared, open);
  // References: .Values.a.b, and $x.c.d where `$x := .Values.a` (the templates' aliases).
  std::set<std::string> read;
  const std::regex direct(R"(\.Values((?:\.[A-Za-z0-9_]+)+))");
  const std::regex alias_def(R"(\$([A-Za-z0-9_]+) := \.Values((?:\.[A-Za-z0-9_]+)+))");
  for (const auto& entry : fs::recursive_directory_iterator(absl::StrCat(kChart, "/templates"))) {
    if (!entry.is_regular_file()) continue;
    const std::string text = ReadFile(entry.path().string()).value_or("");
    std::map<std::string, std::string> aliases;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), alias_def);
         it != std::sregex_iterator(); ++it) {
      aliases[(*it)[1]] = std::string((*it)[2]).substr(1);
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), direct);
         it != std::sregex_iterator(); ++it) {
      read.insert(std::string((*it)[1]).substr(1));
    }
    for (const auto& [alias, target] : aliases) {
      const std::regex use("\\$" + alias + R"(((?:\.[A-Za-z0-9_]+)+))");
      for (auto it = std::sregex_iterator(text.begin(), text.end(), use);
           it != std::sregex_iterator(); ++it) {
        read.insert(target + std::string((*it)[1]));
      }
    }
  }
  ASSERT_GE(read.size(), 30u);
  for (const std::string& r : read) {
    const bool in_open_map = std::any_of(open.begin(), open.end(), [&](const std::string& o) {
      return absl::StartsWith(r, o + ".");
    });
    EXPECT_TRUE(declared.count(r) || in_open_map)
        << "a template reads .Values." << r << ", which values.yaml lacks";
  }
  // A declared value is read if a template reads it, a value inside it (toYaml of a map), or
  // the map it sits in (toYaml .Values.resources reads resources.requests.cpu).
  for (const std::string& d : declared) {
    bool used = false;
    for (const std::string& r : read) {
      used |= r == d || absl::StartsWith(r, d + ".") || absl::StartsWith(d, r + ".");
    }
    EXPECT_TRUE(used) << "values.yaml declares " << d << ", which no template reads";
  }
}

// Every value has a comment (the chart's documentation is values.yaml): a key is documented by a
// comment block above it, or by the block above the map it belongs to.
TEST(ChartValues, EveryTopLevelValueIsDocumented) {
  const std::string text = ReadFile(absl::StrCat(kChart, "/values.yaml")).value_or("");
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty() || l[0] == ' ' || l[0] == '#') continue;
    SCOPED_TRACE(l);
    // The comment is right above, or (for a map) on the first line inside it.
    const bool above = i > 0 && absl::StartsWith(lines[i - 1], "#");
    const bool inside = i + 1 < lines.size() &&
                        absl::StartsWith(absl::StripLeadingAsciiWhitespace(lines[i + 1]), "#");
    EXPECT_TRUE(above || inside) << "undocumented value";
  }
}

}  // namespace
}  // namespace twinscale::packaging
