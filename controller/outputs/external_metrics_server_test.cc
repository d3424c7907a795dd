// The external metrics API over real HTTPS on loopback, with certificates made by the openssl
// CLI: a cpprestsdk client presenting a client certificate (as the aggregator presents its
// front-proxy certificate), curl, and `kubectl get --raw` through a kubeconfig with a client
// certificate. Checks discovery, a value, bad selectors, unknown targets, stale inputs, a
// follower, missing / untrusted / unlisted client certificates, certificate rotation, and the
// options Start refuses.
#include "controller/outputs/external_metrics_server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/common/clock.h"
#include "controller/outputs/decision_board.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/test_http.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale::outputs {
namespace {

namespace th = fake_apiserver::testing;
using nlohmann::json;

constexpr char kValuePath[] =
    "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas"
    "?labelSelector=twinscale.io%2Fautoscaler%3Dllama";

class ExternalMetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testutil::TestPki> certs = testutil::MakeTestPki(dir_.path());
    ASSERT_TRUE(certs.ok()) << "openssl could not make the test certificates: " << certs.status();
    certs_ = *std::move(certs);
    other_ca_ = certs_.other_ca_crt;
  }

  ExternalMetricsServerOptions Options() const {
    ExternalMetricsServerOptions o;
    o.address = "127.0.0.1:0";
    o.tls_cert_file = certs_.server_crt;
    o.tls_key_file = certs_.server_key;
    o.client_ca_file = certs_.ca_crt;
    return o;
  }

  // Starts a server (fails the test if it can't).
  std::unique_ptr<ExternalMetricsServer> Start(const ExternalMetricsServerOptions& o) {
    auto server = std::make_unique<ExternalMetricsServer>(&api_, o, &clock_);
    const absl::Status s = server->Start();
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? std::move(server) : nullptr;
  }

  th::TlsClientConfig Trusted() const {
    return {certs_.ca_crt, certs_.client_crt, certs_.client_key};
  }

  void Publish(int32_t current, int32_t desired, bool stale) {
    PublishedDecision d;
    d.mode = api::Mode::kHpa;
    d.current_replicas = current;
    d.desired_replicas = desired;
    d.inputs_stale = stale;
    d.decided_at = absl::FromUnixSeconds(1767225600);  // 2026-01-01T00:00:00Z
    board_.Publish("llm", "llama", d);
  }

  testutil::TempDir dir_{"twinscale-external-metrics"};
  testutil::TestPki certs_;
  std::string other_ca_;
  ManualClock clock_{absl::FromUnixSeconds(1767225600)};
  DecisionBoard board_;
  ExternalMetricsApi api_{&board_};
};

// The one item's value of an ExternalMetricValueList answer.
std::string ItemValue(const th::HttpResult& r) {
  EXPECT_EQ(r.code, 200) << r.error << r.body;
  EXPECT_EQ(r.json.value("kind", ""), "ExternalMetricValueList") << r.body;
  if (!r.json.contains("items") || r.json["items"].size() != 1) {
    ADD_FAILURE() << "want one item: " << r.body;
    return "";
  }
  EXPECT_EQ(r.json["items"][0]["metricLabels"], json({{"twinscale.io/autoscaler", "llama"}}));
  EXPECT_EQ(r.json["items"][0].value("timestamp", ""), "2026-01-01T00:00:00Z");
  return r.json["items"][0].value("value", "");
}

TEST_F(ExternalMetricsServerTest, ServesDiscoveryValuesAndStatusErrorsOverMutualTls) {
  auto server = Start(Options());
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(absl::StartsWith(server->url(), "https://127.0.0.1:")) << server->url();
  const std::string url = server->url();

  th::HttpResult groups = th::Request(url, "GET", "/apis", "", "", {}, Trusted());
  ASSERT_EQ(groups.code, 200) << groups.error;
  EXPECT_EQ(groups.headers["content-type"], "application/json");
  EXPECT_EQ(groups.json["groups"][0].value("name", ""), "external.metrics.k8s.io");
  th::HttpResult group =
      th::Request(url, "GET", "/apis/external.metrics.k8s.io", "", "", {}, Trusted());
  EXPECT_EQ(group.json.value("kind", ""), "APIGroup") << group.body;
  th::HttpResult resources =
      th::Request(url, "GET", "/apis/external.metrics.k8s.io/v1beta1", "", "", {}, Trusted());
  EXPECT_EQ(resources.json.value("kind", ""), "APIResourceList") << resources.body;
  EXPECT_EQ(resources.json["resources"][0].value("name", ""), "twinscale-desired-replicas");

  // Nothing decided yet: 404, not an empty list.
  th::HttpResult none = th::Request(url, "GET", kValuePath, "", "", {}, Trusted());
  EXPECT_EQ(none.code, 404) << none.body;
  EXPECT_EQ(none.json.value("kind", ""), "Status");
  EXPECT_EQ(none.json.value("reason", ""), "NotFound");

  Publish(3, 5, false);
  EXPECT_EQ(ItemValue(th::Request(url, "GET", kValuePath, "", "", {}, Trusted())), "5");
  Publish(10, 9, false);
  EXPECT_EQ(ItemValue(th::Request(url, "GET", kValuePath, "", "", {}, Trusted())), "8002m");
  // Stale inputs: the current count (hold), not the decision of 1.
  Publish(4, 1, true);
  EXPECT_EQ(ItemValue(th::Request(url, "GET", kValuePath, "", "", {}, Trusted())), "4");

  th::HttpResult bad =
      th::Request(url, "GET",
                  "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas"
                  "?labelSelector=twinscale.io%2Fautoscaler%20in%20(a%2Cb)",
                  "", "", {}, Trusted());
  EXPECT_EQ(bad.code, 400) << bad.body;
  EXPECT_EQ(bad.json.value("reason", ""), "BadRequest");
  EXPECT_TRUE(absl::StrContains(bad.json.value("message", ""), "names 2 InferenceAutoscalers"))
      << bad.body;
  th::HttpResult unparsable =
      th::Request(url, "GET",
                  "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas"
                  "?labelSelector=twinscale.io%2Fautoscaler%20in%20x",
                  "", "", {}, Trusted());
  EXPECT_EQ(unparsable.code, 400) << unparsable.body;
  EXPECT_TRUE(absl::StrContains(unparsable.json.value("message", ""), "labelSelector: at "))
      << unparsable.body;
  th::HttpResult unknown =
      th::Request(url, "GET",
                  "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas"
                  "?labelSelector=twinscale.io%2Fautoscaler%3Dmistral",
                  "", "", {}, Trusted());
  EXPECT_EQ(unknown.code, 404) << unknown.body;
  EXPECT_TRUE(absl::StrContains(unknown.json.value("message", ""), "llm/mistral")) << unknown.body;
  th::HttpResult other_metric =
      th::Request(url, "GET",
                  "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/kv-cache?labelSelector="
                  "twinscale.io%2Fautoscaler%3Dllama",
                  "", "", {}, Trusted());
  EXPECT_EQ(other_metric.code, 404) << other_metric.body;
  th::HttpResult post =
      th::Request(url, "POST", kValuePath, "{}", "application/json", {}, Trusted());
  EXPECT_EQ(post.code, 405) << post.body;

  // A follower: 503 with a Status; discovery still answers.
  board_.SetServing(false);
  th::HttpResult follower = th::Request(url, "GET", kValuePath, "", "", {}, Trusted());
  EXPECT_EQ(follower.code, 503) << follower.body;
  EXPECT_EQ(follower.json.value("reason", ""), "ServiceUnavailable");
  EXPECT_TRUE(absl::StrContains(follower.json.value("message", ""), "not the leader"));
  EXPECT_EQ(
      th::Request(url, "GET", "/apis/external.metrics.k8s.io/v1beta1", "", "", {}, Trusted()).code,
      200);
}

TEST_F(ExternalMetricsServerTest, RefusesMissingAndUntrustedClientCertificates) {
  auto server = Start(Options());
  ASSERT_NE(server, nullptr);
  Publish(3, 3, false);
  const std::string url = server->url();

  EXPECT_EQ(th::Request(url, "GET", kValuePath, "", "", {}, Trusted()).code, 200);
  // No client certificate: the handshake fails, no answer at all.
  th::HttpResult missing =
      th::Request(url, "GET", kValuePath, "", "", {}, {certs_.ca_crt, "", ""}, absl::Seconds(5));
  EXPECT_EQ(missing.code, 0) << missing.body;
  EXPECT_FALSE(missing.error.empty());
  // A certificate from another CA: refused the same way.
  th::HttpResult untrusted = th::Request(
      url, "GET", kValuePath, "", "", {},
      {certs_.ca_crt, certs_.other_client_crt, certs_.other_client_key}, absl::Seconds(5));
  EXPECT_EQ(untrusted.code, 0) << untrusted.body;
  // The server is only trusted through the CA: a client that doesn't know it refuses the server.
  th::HttpResult unverified =
      th::Request(url, "GET", kValuePath, "", "", {}, {"", certs_.client_crt, certs_.client_key},
                  absl::Seconds(5));
  EXPECT_EQ(unverified.code, 0) << unverified.body;
  // Plain HTTP gets no answer either.
  th::HttpResult plain = th::Request(absl::StrCat("http://127.0.0.1:", server->port()), "GET",
                                     kValuePath, "", "", {}, {}, absl::Seconds(3));
  EXPECT_NE(plain.code, 200);
}

TEST_F(ExternalMetricsServerTest, AllowedClientNamesNarrowTheTrustedCertificates) {
  ExternalMetricsServerOptions o = Options();
  o.allowed_client_names = {"front-proxy-client"};
  auto strict = Start(o);
  ASSERT_NE(strict, nullptr);
  Publish(3, 3, false);
  // Signed by the CA, but CN twinscale-test-client is not listed.
  EXPECT_EQ(
      th::Request(strict->url(), "GET", kValuePath, "", "", {}, Trusted(), absl::Seconds(5)).code,
      0);
  o.allowed_client_names = {"front-proxy-client", "twinscale-test-client"};
  auto listed = Start(o);
  ASSERT_NE(listed, nullptr);
  EXPECT_EQ(th::Request(listed->url(), "GET", kValuePath, "", "", {}, Trusted()).code, 200);
}

TEST_F(ExternalMetricsServerTest, InsecureSkipClientVerifyAsksForNoCertificate) {
  ExternalMetricsServerOptions o = Options();
  o.client_ca_file.clear();
  o.insecure_skip_client_verify = true;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  Publish(2, 2, false);
  EXPECT_EQ(
      ItemValue(th::Request(server->url(), "GET", kValuePath, "", "", {}, {certs_.ca_crt, "", ""})),
      "2");
}

// Each answer closes its connection: a kept-alive connection that the client drops without a TLS
// close_notify makes cpprestsdk's listener answer the broken stream while Stop closes it, which
// crashes inside boost::asio about once in a few hundred stops.
TEST_F(ExternalMetricsServerTest, EveryAnswerClosesItsConnection) {
  auto server = Start(Options());
  ASSERT_NE(server, nullptr);
  Publish(1, 4, false);
  th::HttpResult value = th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted());
  EXPECT_EQ(ItemValue(value), "4");
  EXPECT_EQ(value.headers["connection"], "close");
  th::HttpResult missing =
      th::Request(server->url(), "GET", "/apis/nothing", "", "", {}, Trusted());
  EXPECT_EQ(missing.code, 404) << missing.body;
  EXPECT_EQ(missing.headers["connection"], "close");
  // curl sees the server end the connection rather than keep it for the next request.
  if (th::HaveProgram("curl")) {
    const th::CommandResult curl = th::Run(absl::StrCat(
        "curl -sv --max-time 10 --cacert ", certs_.ca_crt, " --cert ", certs_.client_crt, " --key ",
        certs_.client_key, " '", server->url(), kValuePath, "' 2>&1"));
    EXPECT_TRUE(absl::StrContains(curl.output, "\"value\":\"4\"")) << curl.output;
    EXPECT_FALSE(absl::StrContains(curl.output, "left intact")) << curl.output;
  }
  server->Stop();
  server->Stop();  // idempotent
}

TEST_F(ExternalMetricsServerTest, RotatedClientCaTakesEffectAfterTheRefreshInterval) {
  const std::string ca_file = dir_.File("rotating-ca.crt");
  th::WriteFile(ca_file, th::Run("cat " + certs_.ca_crt).output);
  ExternalMetricsServerOptions o = Options();
  o.client_ca_file = ca_file;
  o.cert_refresh_interval = absl::Minutes(1);
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  Publish(3, 3, false);
  const th::TlsClientConfig other = {certs_.ca_crt, certs_.other_client_crt,
                                     certs_.other_client_key};
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted()).code, 200);

  // The Secret now holds the other CA; before the interval has passed the old one still counts.
  th::WriteFile(ca_file, th::Run("cat " + other_ca_).output);
  clock_.Advance(absl::Seconds(30));
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted()).code, 200);
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ(
      th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted(), absl::Seconds(5)).code,
      0);
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, other).code, 200);
  EXPECT_TRUE(server->last_reload_error().ok()) << server->last_reload_error();

  // A broken file keeps the last good one in use, and says why.
  th::WriteFile(ca_file, "not a certificate\n");
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, other).code, 200);
  EXPECT_FALSE(server->last_reload_error().ok());
  EXPECT_TRUE(absl::StrContains(server->last_reload_error().message(), "client CA"))
      << server->last_reload_error();
}

TEST_F(ExternalMetricsServerTest, AClientTrustSourceGivesTheCaAndTheNames) {
  // What the controller reads from kube-system/extension-apiserver-authentication.
  std::mutex mu;
  absl::StatusOr<ClientTrust> trust =
      ClientTrust{th::Run("cat " + certs_.ca_crt).output, {"front-proxy-client"}};
  ExternalMetricsServerOptions o = Options();
  o.client_ca_file.clear();
  o.client_trust = [&]() -> absl::StatusOr<ClientTrust> {
    std::lock_guard<std::mutex> lock(mu);
    return trust;
  };
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  Publish(3, 3, false);
  // The CA signed the test client, but its CN is not an allowed name.
  EXPECT_EQ(
      th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted(), absl::Seconds(5)).code,
      0);
  {
    std::lock_guard<std::mutex> lock(mu);
    trust->allowed_names.push_back("twinscale-test-client");
  }
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted()).code, 200);
  // The source fails: the last good trust stays.
  {
    std::lock_guard<std::mutex> lock(mu);
    trust = absl::UnavailableError("the API server is down");
  }
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(th::Request(server->url(), "GET", kValuePath, "", "", {}, Trusted()).code, 200);
  EXPECT_TRUE(absl::StrContains(server->last_reload_error().message(), "the API server is down"))
      << server->last_reload_error();
  // And a source that fails at Start fails Start.
  ExternalMetricsServer failing(&api_, o, &clock_);
  const absl::Status s = failing.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // An empty CA is an error, never "accept anyone".
  {
    std::lock_guard<std::mutex> lock(mu);
    trust = ClientTrust{"", {}};
  }
  ExternalMetricsServer empty(&api_, o, &clock_);
  const absl::Status e = empty.Start();
  EXPECT_EQ(e.code(), absl::StatusCode::kInvalidArgument) << e;
}

TEST_F(ExternalMetricsServerTest, StartRefusesInconsistentOptionsAndBadFiles) {
  struct Case {
    std::string name;
    std::function<void(ExternalMetricsServerOptions&)> change;
    std::string want;
  };
  const std::string garbage = dir_.File("garbage.pem");
  th::WriteFile(garbage, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  const std::string empty = dir_.File("empty.pem");
  th::WriteFile(empty, "");
  const std::vector<Case> cases = {
      {"no certificate", [](auto& o) { o.tls_cert_file.clear(); },
       "certificate and key are required"},
      {"no client CA and no explicit skip", [](auto& o) { o.client_ca_file.clear(); },
       "a client CA is required"},
      {"a client CA and the skip", [](auto& o) { o.insecure_skip_client_verify = true; },
       "contradict"},
      {"allowed names without a CA",
       [](auto& o) {
         o.client_ca_file.clear();
         o.insecure_skip_client_verify = true;
         o.allowed_client_names = {"front-proxy-client"};
       },
       "need a client CA"},
      {"a missing key file", [this](auto& o) { o.tls_key_file = dir_.File("nope.key"); },
       "TLS key \"" + dir_.File("nope.key") + "\" can't be read"},
      {"a certificate that is not PEM", [&](auto& o) { o.tls_cert_file = garbage; },
       "TLS certificate \"" + garbage + "\""},
      {"a key of another certificate", [this](auto& o) { o.tls_key_file = certs_.client_key; },
       "TLS key"},
      {"a client CA that is not PEM", [&](auto& o) { o.client_ca_file = garbage; },
       "client CA \"" + garbage + "\""},
      {"an empty client CA must not mean \"no check\"", [&](auto& o) { o.client_ca_file = empty; },
       "client CA \"" + empty + "\": no PEM certificate"},
      {"an address without a port", [](auto& o) { o.address = "127.0.0.1"; }, "is not host:port"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExternalMetricsServerOptions o = Options();
    c.change(o);
    ExternalMetricsServer server(&api_, o, &clock_);
    const absl::Status s = server.Start();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.want)) << s;
  }
}

TEST_F(ExternalMetricsServerTest, CurlReadsAValueWithAClientCertificate) {
  if (!th::HaveProgram("curl")) GTEST_SKIP() << "curl is not installed";
  auto server = Start(Options());
  ASSERT_NE(server, nullptr);
  Publish(6, 8, false);
  const std::string curl = absl::StrCat("curl -sS --max-time 10 --cacert ", certs_.ca_crt);
  th::CommandResult ok =
      th::Run(absl::StrCat(curl, " --cert ", certs_.client_crt, " --key ", certs_.client_key, " '",
                           server->url(), kValuePath, "'"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const json list = json::parse(ok.output, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << ok.output;
  EXPECT_EQ(list["items"][0].value("value", ""), "8");
  // Without a certificate curl's handshake is refused.
  th::CommandResult refused = th::Run(absl::StrCat(curl, " '", server->url(), kValuePath, "'"));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
}

TEST_F(ExternalMetricsServerTest, KubectlGetRawReadsDiscoveryAndAValue) {
  if (!th::HaveProgram("kubectl")) GTEST_SKIP() << "kubectl is not installed";
  auto server = Start(Options());
  ASSERT_NE(server, nullptr);
  Publish(10, 9, false);
  const auto kubeconfig = [&](const std::string& name, const std::string& cert,
                              const std::string& key) {
    const std::string path = dir_.File(name);
    th::WriteFile(path,
                  absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: t\n",
                               "clusters:\n- name: extm\n  cluster:\n    server: ", server->url(),
                               "\n    certificate-authority: ", certs_.ca_crt,
                               "\ncontexts:\n- name: t\n  context: {cluster: extm, user: u}\n",
                               "users:\n- name: u\n  user:\n    client-certificate: ", cert,
                               "\n    client-key: ", key, "\n"));
    return path;
  };
  const std::string trusted = kubeconfig("kubeconfig", certs_.client_crt, certs_.client_key);
  const std::string kubectl = absl::StrCat("kubectl --request-timeout=10s --kubeconfig ", trusted);

  th::CommandResult discovery =
      th::Run(absl::StrCat(kubectl, " get --raw /apis/external.metrics.k8s.io/v1beta1 2>&1"));
  ASSERT_EQ(discovery.exit_code, 0) << discovery.output;
  const json resources = json::parse(discovery.output, nullptr, false);
  ASSERT_FALSE(resources.is_discarded()) << discovery.output;
  EXPECT_EQ(resources.value("kind", ""), "APIResourceList");
  EXPECT_EQ(resources["resources"][0].value("name", ""), "twinscale-desired-replicas");

  th::CommandResult value = th::Run(absl::StrCat(kubectl, " get --raw '", kValuePath, "' 2>&1"));
  ASSERT_EQ(value.exit_code, 0) << value.output;
  const json list = json::parse(value.output, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << value.output;
  EXPECT_EQ(list.value("kind", ""), "ExternalMetricValueList");
  EXPECT_EQ(list["items"][0].value("value", ""), "8002m");

  // kubectl shows the Status message of an error.
  th::CommandResult bad =
      th::Run(absl::StrCat(kubectl,
                           " get --raw '/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/"
                           "twinscale-desired-replicas?labelSelector=app%3Dweb' 2>&1"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(bad.output, "serves only the label twinscale.io/autoscaler"))
      << bad.output;

  // A kubeconfig whose client certificate another CA signed gets no answer.
  const std::string other =
      kubeconfig("kubeconfig-other", certs_.other_client_crt, certs_.other_client_key);
  th::CommandResult refused =
      th::Run(absl::StrCat("kubectl --request-timeout=10s --kubeconfig ", other,
                           " get --raw /apis/external.metrics.k8s.io/v1beta1 2>&1"));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
}

}  // namespace
}  // namespace twinscale::outputs
