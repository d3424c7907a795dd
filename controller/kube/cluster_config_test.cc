// Kubeconfig loading by kubectl's rules, on hand-written files in a temporary directory, and the
// in-cluster service-account configuration from an injected environment.
#include "controller/kube/cluster_config.h"

#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace twinscale::kube {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

// Two files of a KUBECONFIG list. The second lives in a subdirectory and names its certificate
// files relatively; both define a cluster "shared" (the first file's must win).
constexpr char kFirst[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: shared
  cluster:
    server: https://first.example:6443
    certificate-authority-data: )";
constexpr char kFirstRest[] = R"(
users:
- name: dev-user
  user:
    token: dev-token
- name: eks-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [eks, get-token]
contexts:
- name: dev
  context:
    cluster: shared
    user: dev-user
    namespace: ml
- name: eks
  context:
    cluster: shared
    user: eks-user
)";
constexpr char kSecond[] = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: shared
  cluster:
    server: https://second.example:6443
- name: prod-cluster
  cluster:
    server: https://prod.example
    certificate-authority: certs/ca.crt
    insecure-skip-tls-verify: false
users:
- name: prod-user
  user:
    client-certificate: certs/client.crt
    client-key: /abs/client.key
    tokenFile: token
contexts:
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
)";

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    first_ =
        dir_.Write("first.yaml", std::string(kFirst) + absl::Base64Escape("CA-PEM") + kFirstRest);
    second_ = dir_.Write("other/second.yaml", kSecond);
  }
  TempDir dir_;
  std::string first_, second_;
};

TEST_F(KubeconfigTest, FirstFileWinsAndSetsCurrentContext) {
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({first_, second_}, "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://first.example:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");  // certificate-authority-data, base64-decoded
  EXPECT_EQ(c->bearer_token, "dev-token");
  EXPECT_EQ(c->default_namespace, "ml");
  EXPECT_THAT(c->source, HasSubstr("\"dev\""));
}

TEST_F(KubeconfigTest, OrderDecidesWhichDuplicateWins) {
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({second_, first_}, "dev");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://second.example:6443");  // "shared" now comes from second
  EXPECT_EQ(c->ca_pem, "");
  // With the second file first, its current-context (prod) is the default.
  absl::StatusOr<ClusterConfig> d = LoadKubeconfig({second_, first_}, "");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->server, "https://prod.example");
}

TEST_F(KubeconfigTest, RelativePathsAreRelativeToTheirFile) {
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({first_, second_}, "prod");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_file, dir_.path() + "/other/certs/ca.crt");
  EXPECT_EQ(c->client_cert_file, dir_.path() + "/other/certs/client.crt");
  EXPECT_EQ(c->client_key_file, "/abs/client.key");
  EXPECT_EQ(c->token_file, dir_.path() + "/other/token");
  EXPECT_EQ(c->default_namespace, "default");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST_F(KubeconfigTest, ExecUserIsRefusedNamingTheUserAndTheAlternatives) {
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({first_, second_}, "eks");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string msg(c.status().message());
  EXPECT_THAT(msg, HasSubstr("\"eks-user\""));
  EXPECT_THAT(msg, HasSubstr("exec credential plugin (command \"aws\")"));
  EXPECT_THAT(msg, HasSubstr("token"));
  EXPECT_THAT(msg, HasSubstr("client certificate"));
  EXPECT_THAT(msg, HasSubstr(first_ + ":"));  // where the user is defined
}

TEST_F(KubeconfigTest, AuthProviderAndBasicAuthAreRefused) {
  const std::string f = dir_.Write("ap.yaml", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
users:
- name: gke
  user:
    auth-provider:
      name: gcp
- name: basic
  user: {username: admin, password: secret}
contexts:
- {name: c, context: {cluster: k, user: gke}}
- {name: b, context: {cluster: k, user: basic}}
)");
  absl::StatusOr<ClusterConfig> gke = LoadKubeconfig({f}, "");
  EXPECT_EQ(gke.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(gke.status().message()), HasSubstr("auth-provider (\"gcp\")"));
  absl::StatusOr<ClusterConfig> basic = LoadKubeconfig({f}, "b");
  EXPECT_EQ(basic.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(basic.status().message()), HasSubstr("username and password"));
  EXPECT_THAT(std::string(basic.status().message()), ::testing::Not(HasSubstr("secret")));
}

TEST_F(KubeconfigTest, MissingFilesAreSkippedButNoneAtAllIsNotFound) {
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({dir_.path() + "/nope", first_}, "");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ClusterConfig> none = LoadKubeconfig({dir_.path() + "/nope"}, "");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("/nope"));
}

TEST_F(KubeconfigTest, AnEmptyFileMergesAsNothing) {
  const std::string empty = dir_.Write("empty.yaml", "");
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({empty, first_}, "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://first.example:6443");
}

TEST_F(KubeconfigTest, MissingContextClusterOrUserIsNotFound) {
  EXPECT_EQ(LoadKubeconfig({first_}, "nope").status().code(), absl::StatusCode::kNotFound);
  const std::string f = dir_.Write("dangling.yaml", R"(current-context: c
contexts: [{name: c, context: {cluster: missing, user: u}}]
)");
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({f}, "");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("\"missing\""));
  const std::string no_current = dir_.Write("nocurrent.yaml", "contexts: []\n");
  EXPECT_EQ(LoadKubeconfig({no_current}, "").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeconfigTest, YamlSyntaxErrorsCarryOneBasedLineNumbers) {
  // Line 6 holds a second ':' in a plain scalar, which YAML forbids in a block mapping.
  const std::string f = dir_.Write("bad.yaml", R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://x: y
)");
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({f}, "");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(f + ":6:")) << c.status();
}

TEST_F(KubeconfigTest, FieldErrorsCarryTheirLine) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string want;  // "line: message part"
  };
  const std::vector<Case> cases = {
      {"a boolean that is not",
       "clusters:\n- name: c\n  cluster:\n    server: https://x\n"
       "    insecure-skip-tls-verify: maybe\n",
       ":5: insecure-skip-tls-verify: must be true or false"},
      {"bad base64", "users:\n- name: u\n  user:\n    client-key-data: '%%%'\n",
       ":4: client-key-data: not valid base64"},
      {"clusters not a list", "kind: Config\nclusters: {a: b}\n", ":2: clusters: must be a list"},
      {"an entry without a name", "contexts:\n- context: {cluster: c}\n",
       ":2: contexts[0]: needs a name"},
      {"a top level that is a list", "- a\n- b\n", ":1: a kubeconfig must be a YAML mapping"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Kubeconfig> k = ParseKubeconfig(c.yaml, "k.yaml");
    EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(k.status().message()), HasSubstr("k.yaml" + c.want)) << k.status();
  }
}

TEST_F(KubeconfigTest, ACertificateNeedsItsKey) {
  const std::string f = dir_.Write("half.yaml", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {client-certificate: /x.crt}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)");
  absl::StatusOr<ClusterConfig> c = LoadKubeconfig({f}, "");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("certificate but no key"));
}

TEST(KubeconfigPathsFromEnvTest, SplitsOnColonsAndDefaultsToHome) {
  EXPECT_EQ(KubeconfigPathsFromEnv("/a:/b::/c:"), (std::vector<std::string>{"/a", "/b", "/c"}));
  EXPECT_EQ(KubeconfigPathsFromEnv(std::nullopt, "/home/me"),
            (std::vector<std::string>{"/home/me/.kube/config"}));
  EXPECT_EQ(KubeconfigPathsFromEnv("", "/home/me"),
            (std::vector<std::string>{"/home/me/.kube/config"}));
  EXPECT_TRUE(KubeconfigPathsFromEnv(std::nullopt).empty());
}

// ---- in-cluster -----------------------------------------------------------------------------

EnvGetter Env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(InClusterConfigTest, ReadsTheServiceAccount) {
  TempDir sa;
  sa.Write("token", "sa-token\n");
  sa.Write("ca.crt", "CA");
  sa.Write("namespace", "ml-serving\n");
  absl::StatusOr<ClusterConfig> c = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      sa.path());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, sa.path() + "/token");
  EXPECT_EQ(c->bearer_token, "sa-token");
  EXPECT_EQ(c->ca_file, sa.path() + "/ca.crt");
  EXPECT_EQ(c->default_namespace, "ml-serving");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST(InClusterConfigTest, BracketsAnIpv6HostAndDefaultsTheNamespace) {
  TempDir sa;
  sa.Write("token", "t");
  sa.Write("ca.crt", "CA");
  absl::StatusOr<ClusterConfig> c = LoadInClusterConfig(
      Env({{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
      sa.path());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00:10:96::1]:6443");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(InClusterConfigTest, SaysWhatIsMissing) {
  TempDir sa;
  absl::StatusOr<ClusterConfig> no_env = LoadInClusterConfig(Env({}), sa.path());
  EXPECT_EQ(no_env.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_env.status().message()), HasSubstr("KUBERNETES_SERVICE_HOST"));

  const auto env = Env({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}});
  absl::StatusOr<ClusterConfig> no_token = LoadInClusterConfig(env, sa.path());
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_token.status().message()), HasSubstr(sa.path() + "/token"));

  sa.Write("token", "t");
  absl::StatusOr<ClusterConfig> no_ca = LoadInClusterConfig(env, sa.path());
  EXPECT_EQ(no_ca.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_ca.status().message()), HasSubstr("ca.crt"));
}

}  // namespace
}  // namespace twinscale::kube
