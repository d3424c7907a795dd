// kubectl (a real, independent Kubernetes client) against the fake: raw reads with token and
// client-certificate kubeconfigs, typed gets through discovery and Table answers, create with the
// server's defaults and validation, scale through the /scale subresource, patches, and the
// standalone `fake_apiserver` binary. Skipped when kubectl is not installed.
//
// kubectl's client-side validation downloads the OpenAPI document, which the fake does not serve:
// creates pass --validate=false and rely on the server's schema check, as intended.
#include <signal.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/test_http.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::HttpResult;
using testing::Post;

constexpr char kIas[] = "/apis/twinscale.io/v1alpha1/namespaces/default/inferenceautoscalers";
constexpr char kDeployments[] = "/apis/apps/v1/namespaces/default/deployments";

json Ias(const std::string& name) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "web"}}},
            {"maxReplicas", 8},
            {"model", {{"profile", "llama-3.1-8b-h100"}}}}}};
}

json Deployment(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
          {"spec", {{"replicas", 2}, {"selector", {{"matchLabels", {{"app", name}}}}}}}};
}

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveProgram("kubectl")) GTEST_SKIP() << "kubectl is not installed";
  }

  void StartServer(FakeApiServer::Options o) {
    auto s = FakeApiServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }

  // A kubeconfig for the server with the given user entry (YAML lines under `user:`).
  void WriteKubeconfig(const std::string& cluster_extra, const std::string& user) {
    testing::WriteFile(
        dir_.File("kubeconfig"),
        absl::StrCat("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n"
                     "  cluster:\n    server: ",
                     server_->url(), "\n", cluster_extra, "users:\n- name: tester\n  user:\n", user,
                     "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                     "    user: tester\n    namespace: default\n"
                     "current-context: fake\n"));
  }

  CommandResult Kubectl(const std::string& args) {
    return testing::Run(absl::StrCat("kubectl --kubeconfig ", dir_.File("kubeconfig"),
                                     " --cache-dir ", dir_.File("cache"), " ", args));
  }

  testutil::TempDir dir_{"ts_fake_apiserver"};
  std::unique_ptr<FakeApiServer> server_;
};

// kubectl sends bearer tokens over HTTPS only: the server's certificate is verified against the
// kubeconfig's CA, then the token is checked.
TEST_F(KubectlTest, GetRawReadsInferenceAutoscalersWithABearerToken) {
  absl::StatusOr<testutil::TestPki> certs = testutil::MakeTestPki(dir_.path());
  if (absl::IsFailedPrecondition(certs.status())) GTEST_SKIP() << certs.status();
  ASSERT_TRUE(certs.ok()) << certs.status();
  FakeApiServer::Options o;
  o.tls_cert_file = certs->server_crt;
  o.tls_key_file = certs->server_key;
  o.bearer_token = "kubectl-token";
  StartServer(o);
  const std::string ca_line = absl::StrCat("    certificate-authority: ", certs->ca_crt, "\n");
  WriteKubeconfig(ca_line, "    token: kubectl-token\n");
  ASSERT_TRUE(server_->Put(std::string(kIas) + "/llm", Ias("llm")).ok());
  server_->ClearRequests();

  CommandResult r = Kubectl(absl::StrCat("get --raw ", kIas));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json list = json::parse(r.output, nullptr, false);
  ASSERT_TRUE(list.is_object()) << r.output;
  EXPECT_EQ(list["kind"], "InferenceAutoscalerList");
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "llm");
  EXPECT_EQ(list["items"][0]["spec"]["maxReplicas"], 8);
  // kubectl really sent the token.
  const auto log = server_->Requests();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().headers.at("authorization"), "Bearer kubectl-token");

  WriteKubeconfig(ca_line, "    token: wrong\n");
  CommandResult refused = Kubectl(absl::StrCat("get --raw ", kIas));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(refused.output, "Unauthorized")) << refused.output;
}

TEST_F(KubectlTest, TypedGetsUseDiscoveryAndTables) {
  StartServer({});
  WriteKubeconfig("", "    token: unused\n");
  ASSERT_EQ(Post(server_->url(), kIas, Ias("llm")).code, 201);
  ASSERT_EQ(Post(server_->url(), kDeployments, Deployment("web")).code, 201);

  // The short name from the CRD, and its printer columns.
  CommandResult ias = Kubectl("get ias");
  ASSERT_EQ(ias.exit_code, 0) << ias.output;
  EXPECT_TRUE(absl::StrContains(ias.output, "NAME")) << ias.output;
  EXPECT_TRUE(absl::StrContains(ias.output, "TARGET")) << ias.output;
  EXPECT_TRUE(absl::StrContains(ias.output, "MODE")) << ias.output;
  EXPECT_TRUE(absl::StrContains(ias.output, "llm")) << ias.output;
  EXPECT_TRUE(absl::StrContains(ias.output, "Recommend")) << ias.output;

  CommandResult deploy = Kubectl("get deploy -o name");
  ASSERT_EQ(deploy.exit_code, 0) << deploy.output;
  EXPECT_EQ(deploy.output, "deployment.apps/web\n");

  CommandResult jsonpath = Kubectl("get inferenceautoscalers llm -o jsonpath={.spec.maxReplicas}");
  ASSERT_EQ(jsonpath.exit_code, 0) << jsonpath.output;
  EXPECT_EQ(jsonpath.output, "8");

  CommandResult missing = Kubectl("get deploy nope");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(missing.output, "deployments.apps \"nope\" not found"))
      << missing.output;
}

TEST_F(KubectlTest, CreateGetsTheServersDefaultsAndValidation) {
  StartServer({});
  WriteKubeconfig("", "    token: unused\n");
  testing::WriteFile(dir_.File("ias.yaml"),
                     "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n"
                     "metadata:\n  name: from-kubectl\nspec:\n"
                     "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
                     "  maxReplicas: 6\n  model: {profile: llama-3.1-8b-h100}\n");
  CommandResult created =
      Kubectl(absl::StrCat("create --validate=false -f ", dir_.File("ias.yaml")));
  ASSERT_EQ(created.exit_code, 0) << created.output;
  auto stored = server_->Get(std::string(kIas) + "/from-kubectl");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)["spec"]["mode"], "Recommend");
  EXPECT_EQ((*stored)["spec"]["slo"]["ttft"]["threshold"], "500ms");

  testing::WriteFile(dir_.File("bad.yaml"),
                     "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n"
                     "metadata:\n  name: bad\nspec:\n"
                     "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
                     "  maxReplicas: 6\n  minReplicas: 0\n  model: {profile: x}\n");
  CommandResult bad = Kubectl(absl::StrCat("create --validate=false -f ", dir_.File("bad.yaml")));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(bad.output, "spec.minReplicas")) << bad.output;

  // kubectl's default patch type is strategic merge, which custom resources refuse.
  CommandResult smp =
      Kubectl("patch ias from-kubectl -p {\\\"spec\\\":{\\\"mode\\\":\\\"Direct\\\"}}");
  EXPECT_NE(smp.exit_code, 0);
  EXPECT_TRUE(
      absl::StrContains(smp.output, "application/strategic-merge-patch+json is not supported"))
      << smp.output;
  CommandResult merge = Kubectl(
      "patch ias from-kubectl --type merge -p {\\\"spec\\\":{\\\"mode\\\":\\\"Direct\\\"}}");
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_EQ((*server_->Get(std::string(kIas) + "/from-kubectl"))["spec"]["mode"], "Direct");
}

TEST_F(KubectlTest, ScaleGoesThroughTheScaleSubresource) {
  StartServer({});
  WriteKubeconfig("", "    token: unused\n");
  ASSERT_EQ(Post(server_->url(), kDeployments, Deployment("web")).code, 201);
  server_->ClearRequests();
  CommandResult r = Kubectl("scale deployment web --replicas=5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = server_->Get(std::string(kDeployments) + "/web");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)["spec"]["replicas"], 5);
  EXPECT_EQ((*d)["metadata"]["generation"], 2);
  bool used_scale = false;
  for (const auto& req : server_->Requests()) {
    used_scale = used_scale || absl::EndsWith(req.path, "/deployments/web/scale");
  }
  EXPECT_TRUE(used_scale) << "kubectl scale writes through /scale";
}

TEST_F(KubectlTest, ConnectsWithAClientCertificate) {
  absl::StatusOr<testutil::TestPki> certs = testutil::MakeTestPki(dir_.path());
  if (absl::IsFailedPrecondition(certs.status())) GTEST_SKIP() << certs.status();
  ASSERT_TRUE(certs.ok()) << certs.status();
  FakeApiServer::Options o;
  o.tls_cert_file = certs->server_crt;
  o.tls_key_file = certs->server_key;
  o.client_ca_file = certs->ca_crt;
  StartServer(o);
  WriteKubeconfig(absl::StrCat("    certificate-authority: ", certs->ca_crt, "\n"),
                  absl::StrCat("    client-certificate: ", certs->client_crt,
                               "\n    client-key: ", certs->client_key, "\n"));
  CommandResult r = Kubectl(absl::StrCat("get --raw ", kDeployments));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output, nullptr, false).value("kind", ""), "DeploymentList") << r.output;

  WriteKubeconfig(absl::StrCat("    certificate-authority: ", certs->ca_crt, "\n"),
                  "    token: no-certificate\n");
  CommandResult refused = Kubectl(absl::StrCat("get --raw ", kDeployments));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
}

// The standalone binary, as a developer would run it for kubectl.
TEST_F(KubectlTest, TheStandaloneBinaryServesKubectl) {
  const std::string out = dir_.File("server.out");
  CommandResult started = testing::Run(
      absl::StrCat(FAKE_APISERVER_BINARY,
                   " --port 0 --crd deploy/crds/twinscale.io_inferenceautoscalers.yaml > ", out,
                   " 2>&1 & echo $!"));
  ASSERT_EQ(started.exit_code, 0) << started.output;
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(started.output), &pid)) << started.output;
  std::string url;
  for (int i = 0; i < 100 && url.empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    CommandResult cat = testing::Run("cat " + out);
    if (size_t at = cat.output.find("serving "); at != std::string::npos) {
      url = std::string(absl::StripAsciiWhitespace(cat.output.substr(at + 8)));
    }
  }
  if (url.empty()) kill(pid, SIGTERM);
  ASSERT_FALSE(url.empty()) << testing::Run("cat " + out).output;
  ASSERT_EQ(Post(url, kIas, Ias("llm")).code, 201);
  CommandResult r = testing::Run(absl::StrCat("kubectl --server ", url, " --cache-dir ",
                                              dir_.File("cache"), " get ias -o name"));
  kill(pid, SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "inferenceautoscaler.twinscale.io/llm\n");
}

}  // namespace
}  // namespace twinscale::fake_apiserver
