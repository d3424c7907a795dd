// HPA mode's high availability, end to end: the real `twinscale controller` binary, two replicas
// (A and B) with leader election on a short Lease (4 s), against the fake API server, each serving
// the external metrics API over mutual TLS (certificates made by the openssl CLI; the client CA
// and allowed names read from the cluster's kube-system/extension-apiserver-authentication, as
// --external-metrics-client-ca-from-cluster does in a real cluster) and labelling its own pod
// (POD_NAME / POD_NAMESPACE as the downward API would set them). The target's pods
// can't be scraped, so the inputs are stale and the only right answer is "hold at 3" (the
// Deployment's replicas).
//
// While a client polls the metric on every replica that is up (as a Service's endpoints would
// include it), the leader A is killed (SIGKILL: it releases nothing), its container restarted,
// and then the new leader B is stopped (SIGTERM). Checks:
//  - no answer is ever a value below the current count (every 200 is exactly one item "3"), and
//    every other answer is a Kubernetes Status (503 from a follower, 404 before a new leader's
//    first decision), never an empty item list;
//  - after the kill, B serves the value within the Lease duration plus one election attempt and
//    one reconcile pass (A's Lease has to expire first: a crash can't release it);
//  - the label twinscale.io/leader follows the Lease: "true" on the leader's pod, "false" on a
//    follower's; a restarted container clears its pod's stale "true" at start; SIGTERM sets
//    "false" before the process exits.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/test_http.h"
#include "tests/util/controller_harness.h"
#include "tests/util/eventually.h"
#include "tests/util/grpc_test_util.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale {
namespace {

namespace th = fake_apiserver::testing;
using Clock = std::chrono::steady_clock;
using fake_apiserver::FakeApiServer;
using nlohmann::json;
using testutil::ControllerProcess;

constexpr char kValuePath[] =
    "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas"
    "?labelSelector=twinscale.io%2Fautoscaler%3Dllama-3-1-8b";
constexpr auto kLeaseDuration = std::chrono::seconds(4);

struct Observation {
  std::string replica;
  int code = 0;  // 0: no answer (the process is going down)
  std::string body;
};

// One replica's external metrics endpoint, polled while `up`.
struct Endpoint {
  std::string name;
  std::string url;
  std::atomic<bool> up{false};
};

class HpaFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testutil::TestPki> certs = testutil::MakeTestPki(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *std::move(certs);
    FakeApiServer::Options ao;
    ao.crd_files = {"deploy/crds/twinscale.io_inferenceautoscalers.yaml"};
    auto api = FakeApiServer::Start(ao);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(testutil::SeedStaleFleet(*api_, "HPA", testutil::FreeLoopbackPort()).ok());
    for (const char* pod : {"twinscale-a", "twinscale-b"}) {
      const json p = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata",
                       {{"name", pod},
                        {"namespace", "twinscale-system"},
                        {"labels", {{"app.kubernetes.io/name", "twinscale"}}}}}};
      ASSERT_TRUE(
          api_->Put(absl::StrCat("/api/v1/namespaces/twinscale-system/pods/", pod), p).ok());
    }
    // The aggregator's client CA and the name of its certificate, as a kube-apiserver publishes
    // them (the test client plays the aggregator).
    fake_apiserver::ResourceType configmaps;
    configmaps.version = "v1";
    configmaps.resource = "configmaps";
    configmaps.kind = "ConfigMap";
    configmaps.list_kind = "ConfigMapList";
    configmaps.singular = "configmap";
    configmaps.has_generation = false;
    api_->AddResourceType(configmaps);
    const json auth = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata",
         {{"name", "extension-apiserver-authentication"}, {"namespace", "kube-system"}}},
        {"data",
         {{"requestheader-client-ca-file", th::Run("cat " + certs_.ca_crt).output},
          {"requestheader-allowed-names", "[\"twinscale-test-client\"]"}}}};
    ASSERT_TRUE(
        api_->Put("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
                  auth)
            .ok());
    kubeconfig_ = dir_.File("kubeconfig");
    testutil::WriteFakeKubeconfig(kubeconfig_, api_->url());
  }

  void TearDown() override {
    stop_polling_ = true;
    if (poller_.joinable()) poller_.join();
  }

  std::unique_ptr<ControllerProcess> StartReplica(const std::string& identity,
                                                  const std::string& pod, int port) {
    const std::vector<std::string> args = {
        "--kubeconfig=" + kubeconfig_,
        "--leader-elect=true",
        "--lease-namespace=twinscale-system",
        absl::StrCat("--lease-duration=", kLeaseDuration.count(), "s"),
        "--renew-deadline=3s",
        "--retry-period=500ms",
        "--ops-address=127.0.0.1",
        absl::StrCat("--ops-port=", testutil::FreeLoopbackPort()),
        absl::StrCat("--external-metrics-addr=127.0.0.1:", port),
        "--external-metrics-tls-cert=" + certs_.server_crt,
        "--external-metrics-tls-key=" + certs_.server_key,
        "--external-metrics-client-ca-from-cluster"};
    return std::make_unique<ControllerProcess>(
        TWINSCALE_BINARY, dir_.path(), identity, args,
        std::vector<std::pair<std::string, std::string>>{{"POD_NAME", pod},
                                                         {"POD_NAMESPACE", "twinscale-system"}});
  }

  th::HttpResult GetValue(const std::string& url) {
    return th::Request(url, "GET", kValuePath, "", "", {},
                       {certs_.ca_crt, certs_.client_crt, certs_.client_key}, absl::Seconds(3));
  }

  // Waits until `url` answers 200, up to `timeout`; the time it took, or nullopt.
  std::optional<Clock::duration> WaitForValue(const std::string& url,
                                              std::chrono::seconds timeout) {
    const auto start = Clock::now();
    while (Clock::now() - start < timeout) {
      if (GetValue(url).code == 200) return Clock::now() - start;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::nullopt;
  }

  std::string LeaderLabel(const std::string& pod) {
    auto p = api_->Get(absl::StrCat("/api/v1/namespaces/twinscale-system/pods/", pod));
    if (!p.ok()) return absl::StrCat("<", p.status().message(), ">");
    return (*p)["metadata"]["labels"].value("twinscale.io/leader", "<none>");
  }

  // Whether the pod's label says `want` within 10 s.
  bool WaitForLabel(const std::string& pod, const std::string& want) {
    return testutil::Eventually([&] { return LeaderLabel(pod) == want; }, absl::Seconds(10),
                                absl::Milliseconds(50));
  }

  // Starts a replica serving the external metrics API on a free port and waits until it says
  // so; `e.url` follows the port it got. A free port can be taken by another process (an outgoing
  // connection's ephemeral port, another test) before the replica binds it: the replica then
  // fails with "Address already in use", and it is started again on another port.
  std::unique_ptr<ControllerProcess> StartServing(const std::string& identity,
                                                  const std::string& pod, Endpoint& e) {
    std::unique_ptr<ControllerProcess> proc;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int port = testutil::FreeLoopbackPort();
      e.url = absl::StrCat("https://127.0.0.1:", port);
      proc = StartReplica(identity, pod, port);
      if (proc->WaitForLog("serving the external metrics API", std::chrono::seconds(20))) break;
      if (proc->Log().find("Address already in use") == std::string::npos) break;
      proc->Kill();
    }
    return proc;
  }

  void StartPolling(std::vector<Endpoint*> endpoints) {
    poller_ = std::thread([this, endpoints] {
      while (!stop_polling_) {
        for (Endpoint* e : endpoints) {
          if (!e->up) continue;
          th::HttpResult r = GetValue(e->url);
          std::lock_guard<std::mutex> lock(mu_);
          observations_.push_back({e->name, r.code, r.body});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }

  testutil::TempDir dir_{"twinscale-hpa-failover"};
  testutil::TestPki certs_;
  std::unique_ptr<FakeApiServer> api_;
  std::string kubeconfig_;
  std::thread poller_;
  std::atomic<bool> stop_polling_{false};
  std::mutex mu_;
  std::vector<Observation> observations_;
};

TEST_F(HpaFailoverTest, AnswersNeverDropBelowTheCurrentCountAndTheLabelFollowsTheLease) {
  Endpoint a, b;
  a.name = "a";
  b.name = "b";

  // A starts alone and leads.
  auto proc_a = StartServing("a", "twinscale-a", a);
  ASSERT_TRUE(proc_a->WaitForLog("serving the external metrics API", std::chrono::seconds(1)))
      << proc_a->Log();
  a.up = true;
  ASSERT_TRUE(WaitForValue(a.url, std::chrono::seconds(30)).has_value()) << proc_a->Log();
  EXPECT_TRUE(WaitForLabel("twinscale-a", "true")) << LeaderLabel("twinscale-a");

  // B starts as a follower: its pod says so, and it answers 503.
  auto proc_b = StartServing("b", "twinscale-b", b);
  ASSERT_TRUE(proc_b->WaitForLog("serving the external metrics API", std::chrono::seconds(1)))
      << proc_b->Log();
  b.up = true;
  EXPECT_TRUE(WaitForLabel("twinscale-b", "false")) << LeaderLabel("twinscale-b");
  EXPECT_EQ(GetValue(b.url).code, 503);
  StartPolling({&a, &b});
  std::this_thread::sleep_for(std::chrono::seconds(1));

  // A crashes: its Lease must expire before B may take over.
  a.up = false;
  proc_a->Kill();
  const auto takeover = WaitForValue(b.url, std::chrono::seconds(30));
  ASSERT_TRUE(takeover.has_value()) << proc_b->Log();
  // The Lease's duration, one election attempt (500 ms, +20% jitter) and one reconcile pass.
  EXPECT_LT(*takeover, kLeaseDuration + std::chrono::seconds(4))
      << std::chrono::duration_cast<std::chrono::milliseconds>(*takeover).count() << " ms";
  EXPECT_TRUE(WaitForLabel("twinscale-b", "true")) << LeaderLabel("twinscale-b");
  // A crashed container can't take its label down...
  EXPECT_EQ(LeaderLabel("twinscale-a"), "true");
  // ...but when the kubelet restarts it, its first write clears it.
  auto proc_a2 = StartServing("a-restarted", "twinscale-a", a);
  ASSERT_TRUE(proc_a2->WaitForLog("serving the external metrics API", std::chrono::seconds(1)))
      << proc_a2->Log();
  a.up = true;
  EXPECT_TRUE(WaitForLabel("twinscale-a", "false")) << LeaderLabel("twinscale-a");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(GetValue(a.url).code, 503);

  // B stops (SIGTERM): it steps down, takes its label off, releases the Lease; A takes over.
  b.up = false;
  EXPECT_EQ(proc_b->Terminate(std::chrono::seconds(20)), 0) << proc_b->Log();
  EXPECT_EQ(LeaderLabel("twinscale-b"), "false") << proc_b->Log();
  const auto handover = WaitForValue(a.url, std::chrono::seconds(30));
  ASSERT_TRUE(handover.has_value()) << proc_a2->Log();
  EXPECT_LT(*handover, kLeaseDuration)
      << "a released Lease is taken at the next attempt, not after it expires";
  EXPECT_TRUE(WaitForLabel("twinscale-a", "true")) << LeaderLabel("twinscale-a");
  std::this_thread::sleep_for(std::chrono::seconds(1));

  stop_polling_ = true;
  poller_.join();
  EXPECT_EQ(proc_a2->Terminate(std::chrono::seconds(20)), 0) << proc_a2->Log();
  EXPECT_EQ(LeaderLabel("twinscale-a"), "false");

  // Every answer the HPA could have read.
  int values_from_a = 0, values_from_b = 0;
  std::map<std::string, int> tally;  // "a 200" -> count, for the log
  for (const Observation& o : observations_) ++tally[absl::StrCat(o.replica, " ", o.code)];
  for (const auto& [what, n] : tally) std::cout << "answers " << what << ": " << n << "\n";
  std::cout << "takeover after SIGKILL: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(*takeover).count()
            << " ms; handover after SIGTERM: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(*handover).count() << " ms\n";
  for (const Observation& o : observations_) {
    SCOPED_TRACE(absl::StrCat(o.replica, ": ", o.code, " ", o.body));
    if (o.code == 0) continue;  // no answer: the HPA would keep its count
    // A request that reaches a replica while its listener closes (SIGTERM) is answered by
    // cpprestsdk itself, 404 with no body: it carries no value either, and the HPA keeps its
    // count. (Seen once in a fresh-clone CI run: "b: 404 " during B's shutdown.)
    if (o.code == 404 && o.body.empty()) continue;
    const json body = json::parse(o.body, nullptr, false);
    ASSERT_FALSE(body.is_discarded());
    if (o.code == 200) {
      ASSERT_EQ(body.value("kind", ""), "ExternalMetricValueList");
      ASSERT_EQ(body["items"].size(), 1u);
      EXPECT_EQ(body["items"][0].value("value", ""), "3");  // hold: never below the current 3
      (o.replica == "a" ? values_from_a : values_from_b)++;
    } else {
      EXPECT_EQ(body.value("kind", ""), "Status");
      EXPECT_TRUE(o.code == 503 || o.code == 404);
    }
  }
  EXPECT_GT(values_from_a, 0);
  EXPECT_GT(values_from_b, 0);
}

// The flags of the external metrics server: a missing certificate or client CA is a usage error
// (exit 2) that names what is missing, before the controller connects anywhere.
TEST(ExternalMetricsFlagsTest, MissingCertificatesAreUsageErrorsThatSayWhatIsMissing) {
  const std::string base = absl::StrCat(TWINSCALE_BINARY,
                                        " controller --kubeconfig=/nonexistent/kubeconfig "
                                        "--external-metrics-addr=127.0.0.1:6443");
  th::CommandResult no_cert = th::Run(base + " 2>&1");
  EXPECT_EQ(no_cert.exit_code, 2) << no_cert.output;
  EXPECT_NE(no_cert.output.find("needs --external-metrics-tls-cert and --external-metrics-tls-key"),
            std::string::npos)
      << no_cert.output;
  th::CommandResult no_ca = th::Run(
      base + " --external-metrics-tls-cert=/x/tls.crt --external-metrics-tls-key=/x/tls.key 2>&1");
  EXPECT_EQ(no_ca.exit_code, 2) << no_ca.output;
  EXPECT_NE(no_ca.output.find("needs --external-metrics-client-ca"), std::string::npos)
      << no_ca.output;
  EXPECT_NE(no_ca.output.find("--external-metrics-client-ca-from-cluster"), std::string::npos)
      << no_ca.output;
  EXPECT_NE(no_ca.output.find("--external-metrics-insecure-skip-client-verify"), std::string::npos)
      << no_ca.output;
}

}  // namespace
}  // namespace twinscale
