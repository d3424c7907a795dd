// The `twinscale controller` binary against a REAL control plane (control_plane.h): kube-apiserver
// and kube-controller-manager v1.26 with etcd, the chart rendered and applied with kubectl, and
// the controller run out of cluster with the chart's ServiceAccount token, so every request it
// makes passes the chart's RBAC. The target is a real Deployment: the controller-manager makes
// its ReplicaSet and Pods, and LoopbackKubelet makes each Pod Ready on a 127.0.0.N address where a
// simulated vLLM replica serves real vLLM-format /metrics.
//
// Cases: Direct mode scales an overloaded Deployment up; Recommend mode gives one steady answer
// and scales nothing; KEDA mode serves the decision over mutual TLS as status says it; HPA mode
// feeds a real HPA through the aggregation layer; a follower takes over when the leader is killed;
// a refused Lease is logged and fails /readyz; stale metrics never scale in and raise one Warning
// Event. Skipped (not passed) where ../shared/k8s is absent. 20-60 s each.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "externalscaler.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster_harness.h"
#include "tests/e2e/live_fleet.h"
#include "tests/k8s/control_plane.h"
#include "tests/k8s/loopback_kubelet.h"
#include "tests/util/controller_harness.h"
#include "tests/util/eventually.h"
#include "tests/util/grpc_test_util.h"
#include "tests/util/test_pki.h"

#ifndef TWINSCALE_BINARY
#error "TWINSCALE_BINARY must be defined"
#endif
#ifndef TS_HELM_RENDER_BIN
#error "TS_HELM_RENDER_BIN must be defined"
#endif

namespace twinscale::k8s_test {
namespace {

using nlohmann::json;
using testutil::ControllerProcess;
using testutil::Eventually;

// Polls of the control plane (kubectl, the API) every 200 ms: each is a process or a request.
constexpr absl::Duration kPoll = absl::Milliseconds(200);

constexpr char kNs[] = "llm";
constexpr char kApp[] = "vllm";
constexpr char kAutoscaler[] = "llama";
constexpr char kSystemNs[] = "twinscale-system";
constexpr char kServiceAccount[] = "twinscale-controller";
// 2,048-token prompts and 64-token outputs: 40 req/s overloads two replicas, 2 req/s is quiet.
constexpr int32_t kPromptTokens = 2048;
constexpr int32_t kOutputTokens = 64;
constexpr double kOverloadRps = 40;
constexpr double kQuietRps = 2;

class RealControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TS_SKIP_WITHOUT_CONTROL_PLANE();
    auto cp = ControlPlane::Start();
    ASSERT_TRUE(cp.ok()) << cp.status();
    cp_ = *std::move(cp);
  }

  void TearDown() override {
    controllers_.clear();  // before the fleet and the API server go
    kubelet_.reset();
    if (HasFailure() && cp_ != nullptr) {
      std::cerr << "--- pods:\n" << cp_->Kubectl("-n llm get pods -o wide").all();
      std::cerr << "--- events:\n" << cp_->Kubectl("-n llm get events").all();
    }
  }

  void ExpectOk(const Command& r, const std::string& what) {
    ASSERT_TRUE(r.ok()) << what << " (exit " << r.exit_code << "): " << r.all();
  }

  // Renders the chart with `values_yaml` (a values file's text, may be empty) and applies it:
  // the CRD, the ServiceAccount, RBAC, the controller's own Deployment (its pods stay Pending:
  // the controller under test runs out of cluster) and whatever the values enable.
  void InstallChart(const std::string& values_yaml = "") {
    ExpectOk(RunCommand(absl::StrCat("hack/helm-render/build.sh ", ShellQuote(TS_HELM_RENDER_BIN))),
             "build hack/helm-render");
    // The chart has no default image; the controller under test runs out of cluster anyway.
    std::string cmd = absl::StrCat(ShellQuote(TS_HELM_RENDER_BIN),
                                   " --name twinscale --namespace twinscale-system"
                                   " --set image.repository=twinscale --set image.tag=dev");
    if (!values_yaml.empty()) {
      const std::string values = cp_->dir() + "/values.yaml";
      std::ofstream(values) << values_yaml;
      absl::StrAppend(&cmd, " -f ", ShellQuote(values));
    }
    const Command rendered = RunCommand(absl::StrCat(cmd, " charts/twinscale"));
    ExpectOk(rendered, "render the chart");
    if (!cp_->GetJson("namespace twinscale-system").ok()) {
      ExpectOk(cp_->Kubectl("create namespace twinscale-system"), "namespace");
    }
    ExpectOk(cp_->KubectlWithFile("apply", rendered.out), "apply the chart");
    ExpectOk(cp_->WaitEstablished("crd/inferenceautoscalers.twinscale.io"), "CRD Established");
  }

  // The vLLM Deployment (a real one: the controller-manager makes its pods) at `replicas`, the
  // stand-in kubelet with traffic at `rps`, and waits until `replicas` pods are Ready.
  void StartFleet(int32_t replicas, double rps) {
    ExpectOk(cp_->Kubectl("create namespace llm"), "namespace llm");
    const json deployment = {
        {"apiVersion", "apps/v1"},
        {"kind", "Deployment"},
        {"metadata", {{"name", kApp}, {"namespace", kNs}}},
        {"spec",
         {{"replicas", replicas},
          {"selector", {{"matchLabels", {{"app", kApp}}}}},
          {"template",
           {{"metadata", {{"labels", {{"app", kApp}}}}},
            {"spec",
             {{"containers",
               json::array({{{"name", "vllm"},
                             {"image", "vllm/vllm-openai:v0.8.5"},
                             {"args", json::array({"--model", "meta-llama/Llama-3.1-8B-Instruct"})},
                             {"ports", json::array({{{"containerPort", 8000}}})}}})}}}}}}}};
    ExpectOk(cp_->KubectlWithFile("apply", deployment.dump()), "the vLLM Deployment");
    LoopbackKubeletOptions ko;
    ko.kubeconfig = cp_->kubeconfig();
    ko.namespace_name = kNs;
    ko.app = kApp;
    ko.initial_replicas = replicas;
    ko.trace = e2e::SyntheticTrace(rps, absl::Minutes(10), kPromptTokens, kOutputTokens);
    auto k = LoopbackKubelet::Start(ko);
    ASSERT_TRUE(k.ok()) << k.status();
    kubelet_ = *std::move(k);
    ASSERT_TRUE(
        Eventually([&] { return kubelet_->ready_pods() >= replicas; }, absl::Seconds(60), kPoll))
        << "pods not made Ready: " << kubelet_->last_error();
  }

  void CreateAutoscaler(e2e::AutoscalerOptions o) {
    o.name = kAutoscaler;
    o.metrics_port = kubelet_->metrics_port();
    ExpectOk(cp_->KubectlWithFile("apply", e2e::AutoscalerManifest(o, kNs, kApp).dump()),
             "the InferenceAutoscaler");
  }

  // `twinscale controller` out of cluster with the ServiceAccount's token; its ops port in
  // *ops_port.
  ControllerProcess* StartController(const std::string& identity,
                                     const std::vector<std::string>& extra, int* ops_port = nullptr,
                                     const std::string& service_account = kServiceAccount) {
    auto kubeconfig = cp_->ServiceAccountKubeconfig(kSystemNs, service_account);
    EXPECT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    if (!kubeconfig.ok()) return nullptr;
    const int port = testutil::FreeLoopbackPort();
    if (ops_port != nullptr) *ops_port = port;
    std::vector<std::string> args = {"--kubeconfig=" + *kubeconfig,
                                     "--lease-namespace=twinscale-system",
                                     "--lease-duration=4s",
                                     "--renew-deadline=3s",
                                     "--retry-period=1s",
                                     "--ops-address=127.0.0.1",
                                     absl::StrCat("--ops-port=", port)};
    args.insert(args.end(), extra.begin(), extra.end());
    controllers_.push_back(
        std::make_unique<ControllerProcess>(TWINSCALE_BINARY, cp_->dir(), identity, args));
    return controllers_.back().get();
  }

  int32_t SpecReplicas() {
    const Command r = cp_->Kubectl("-n llm get deployment vllm -o jsonpath={.spec.replicas}");
    int32_t n = -1;
    return r.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &n) ? n : -1;
  }

  json Autoscaler() {
    auto j = cp_->GetJson("-n llm inferenceautoscaler llama");
    return j.ok() ? *j : json::object();
  }

  json ConditionOf(const std::string& type) {
    for (const json& c :
         Autoscaler().value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return json::object();
  }

  bool ConditionIs(const std::string& type, const std::string& status) {
    return ConditionOf(type).value("status", "") == status;
  }

  int32_t DesiredReplicas() {
    return Autoscaler().value("status", json::object()).value("desiredReplicas", -1);
  }

  // Events about the InferenceAutoscaler, of `type` ("Warning", "Normal"; "" = any) and `reason`.
  std::vector<json> Events(const std::string& type, const std::string& reason = "") {
    std::vector<json> out;
    auto list = cp_->GetJson("-n llm events");
    if (!list.ok()) return out;
    for (const json& e : (*list)["items"]) {
      if (e["involvedObject"].value("kind", "") != "InferenceAutoscaler") continue;
      if (!type.empty() && e.value("type", "") != type) continue;
      if (!reason.empty() && e.value("reason", "") != reason) continue;
      out.push_back(e);
    }
    return out;
  }

  // The HTTP code of GET /readyz on the ops port (0: no answer).
  int Readyz(int port) {
    const Command r = RunCommand(
        absl::StrCat("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:", port, "/readyz"));
    int code = 0;
    return absl::SimpleAtoi(r.out, &code) ? code : 0;
  }

  std::string LeaseHolder() {
    const Command r = cp_->Kubectl(
        "-n twinscale-system get lease twinscale-controller "
        "-o jsonpath={.spec.holderIdentity}");
    return r.ok() ? std::string(absl::StripAsciiWhitespace(r.out)) : "";
  }

  // Forbidden answers the API server logged for the controller's ServiceAccount: a missing rule
  // in the chart's RBAC shows up here.
  std::string RbacDenials() {
    std::string out;
    for (const auto& c : controllers_) {
      for (absl::string_view line : absl::StrSplit(c->Log(), '\n')) {
        if (absl::StrContains(line, "forbidden")) absl::StrAppend(&out, line, "\n");
      }
    }
    return out;
  }

  std::unique_ptr<ControlPlane> cp_;
  std::unique_ptr<LoopbackKubelet> kubelet_;
  std::vector<std::unique_ptr<ControllerProcess>> controllers_;
};

TEST_F(RealControllerTest, DirectModeScalesAnOverloadedDeploymentUpThroughTheChartsRbac) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  ASSERT_NO_FATAL_FAILURE(StartFleet(2, kOverloadRps));
  e2e::AutoscalerOptions o;
  o.mode = "Direct";
  o.min_replicas = 2;
  o.max_replicas = 12;
  o.warmup = "3s";
  CreateAutoscaler(o);
  ControllerProcess* c = StartController("direct", {});
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(Eventually([&] { return SpecReplicas() > 2; }, absl::Seconds(60), kPoll))
      << "no scale-up\n"
      << Autoscaler().dump(2) << "\n"
      << c->Log();
  // The ReplicaSet makes the pods and they become Ready on loopback: the controller counts them.
  ASSERT_TRUE(Eventually([&] { return kubelet_->ready_pods() > 2; }, absl::Seconds(30), kPoll))
      << kubelet_->last_error();
  // The new pods, made by the ReplicaSet and Ready on their own addresses, are scraped: the
  // controller reads more than the first two pods fresh.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string m = ConditionOf("MetricsFresh").value("message", "");
        int fresh = 0;
        return absl::SimpleAtoi(m.substr(0, m.find(' ')), &fresh) && fresh > 2;
      },
      absl::Seconds(30), kPoll))
      << Autoscaler().dump(2);
  EXPECT_GE(Events("Normal", "ScaledUp").size(), 1u);
  EXPECT_TRUE(
      Eventually([&] { return ConditionIs("ScalingActive", "True"); }, absl::Seconds(10), kPoll));
  EXPECT_EQ(ConditionOf("ScalingActive").value("reason", ""), "Direct");
  EXPECT_TRUE(ConditionIs("SpecValid", "True"));
  EXPECT_LE(SpecReplicas(), 12);
  EXPECT_EQ(RbacDenials(), "") << "the chart's RBAC refused the controller something";
}

TEST_F(RealControllerTest, RecommendModeGivesOneSteadyAnswerAndScalesNothing) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  ASSERT_NO_FATAL_FAILURE(StartFleet(2, kOverloadRps));
  e2e::AutoscalerOptions o;
  o.mode = "Recommend";
  o.min_replicas = 1;
  o.max_replicas = 12;
  CreateAutoscaler(o);
  ASSERT_NE(StartController("recommend", {}), nullptr);
  ASSERT_TRUE(Eventually([&] { return DesiredReplicas() > 2; }, absl::Seconds(60), kPoll))
      << Autoscaler().dump(2);
  // Constant overload on a target nobody scales: every later pass recommends the same count
  // (the scale-up limit from 2 replicas), not 6, 2, 2, 6, ...
  std::vector<int32_t> seen;
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    seen.push_back(DesiredReplicas());
  }
  const std::set<int32_t> distinct(seen.begin(), seen.end());
  EXPECT_EQ(distinct.size(), 1u) << "desiredReplicas over 12 s: " << absl::StrJoin(seen, ", ");
  EXPECT_GT(*distinct.begin(), 2);
  EXPECT_EQ(SpecReplicas(), 2) << "Recommend scaled the target";
  EXPECT_TRUE(Events("Normal", "ScaledUp").empty());
  EXPECT_EQ(ConditionOf("ScalingActive").value("reason", ""), "Recommend");
}

TEST_F(RealControllerTest, KedaModeServesTheDecisionOverMutualTlsAsStatusSaysIt) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  ASSERT_NO_FATAL_FAILURE(StartFleet(2, kOverloadRps));
  e2e::AutoscalerOptions o;
  o.mode = "KEDA";
  o.max_replicas = 12;
  CreateAutoscaler(o);
  const absl::StatusOr<testutil::TestPki> made = testutil::MakeTestPki(cp_->dir());
  ASSERT_TRUE(made.ok()) << made.status();
  const testutil::TestPki& pki = *made;
  const int grpc_port = testutil::FreeLoopbackPort();
  const std::string addr = absl::StrCat("127.0.0.1:", grpc_port);
  ControllerProcess* c = StartController(
      "keda", {"--keda-addr=" + addr, "--grpc-tls-cert=" + pki.server_crt,
               "--grpc-tls-key=" + pki.server_key, "--grpc-client-ca=" + pki.ca_crt});
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->WaitForLog("serving gRPC", std::chrono::seconds(20))) << c->Log();
  auto channel = testutil::TlsChannel(grpc_port, testutil::ReadWholeFile(pki.ca_crt),
                                      testutil::ReadWholeFile(pki.client_crt),
                                      testutil::ReadWholeFile(pki.client_key));
  auto keda = externalscaler::ExternalScaler::NewStub(channel);
  auto get_metric = [&](int64_t* value) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    externalscaler::GetMetricsRequest req;
    req.mutable_scaledobjectref()->set_name(kAutoscaler);
    req.mutable_scaledobjectref()->set_namespace_(kNs);
    (*req.mutable_scaledobjectref()->mutable_scalermetadata())["name"] = kAutoscaler;
    req.set_metricname("twinscale-desired-replicas");
    externalscaler::GetMetricsResponse out;
    const grpc::Status s = keda->GetMetrics(&ctx, req, &out);
    if (!s.ok() || out.metricvalues_size() != 1) return false;
    *value = out.metricvalues(0).metricvalue();
    return true;
  };
  ASSERT_TRUE(Eventually([&] { return DesiredReplicas() > 2; }, absl::Seconds(60), kPoll))
      << Autoscaler().dump(2);
  // Status and the gRPC answer of the same decision: read status, the metric, status again, and
  // compare when both status reads agree (a new decision may land between two reads).
  int compared = 0;
  for (int i = 0; i < 20 && compared < 3; ++i) {
    const int32_t before = DesiredReplicas();
    int64_t served = -1;
    const bool ok = get_metric(&served);
    const int32_t after = DesiredReplicas();
    if (!ok || before != after) continue;
    EXPECT_EQ(served, before);
    ++compared;
  }
  EXPECT_EQ(compared, 3) << "no stable status to compare with";
  // A client without a certificate of the CA is refused.
  auto stranger = externalscaler::ExternalScaler::NewStub(testutil::TlsChannel(
      grpc_port, testutil::ReadWholeFile(pki.ca_crt), testutil::ReadWholeFile(pki.other_client_crt),
      testutil::ReadWholeFile(pki.other_client_key)));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  externalscaler::GetMetricsRequest req;
  req.mutable_scaledobjectref()->set_name(kAutoscaler);
  req.mutable_scaledobjectref()->set_namespace_(kNs);
  externalscaler::GetMetricsResponse out;
  EXPECT_FALSE(stranger->GetMetrics(&ctx, req, &out).ok());
  EXPECT_EQ(SpecReplicas(), 2) << "KEDA mode scaled the target itself";
  EXPECT_EQ(RbacDenials(), "");
}

TEST_F(RealControllerTest, HpaModeFeedsARealHpaThroughTheAggregator) {
  // The chart's RBAC for the external metrics API (reading the aggregator's client CA from
  // kube-system, auth delegation), without its APIService: the test registers one that reaches
  // the controller on loopback (an ExternalName Service to localhost, see ../shared/k8s).
  ASSERT_NO_FATAL_FAILURE(InstallChart(
      "externalMetrics:\n  enabled: true\n  tls:\n    secretName: external-metrics-tls\n"
      "  apiService:\n    create: false\n"));
  ASSERT_NO_FATAL_FAILURE(StartFleet(2, kOverloadRps));
  e2e::AutoscalerOptions o;
  o.mode = "HPA";
  o.max_replicas = 8;
  o.warmup = "3s";
  CreateAutoscaler(o);
  const std::string service = "twinscale-external-metrics-e2e";
  // A serving certificate for the name the aggregator dials (<service>.<namespace>.svc), in the
  // control plane's directory (it outlives the controller).
  const std::string pki_dir = cp_->dir() + "/external-metrics-pki";
  std::filesystem::create_directories(pki_dir);
  const absl::StatusOr<testutil::TestPki> pki = testutil::MakeTestPki(
      pki_dir, {.server_dns = {absl::StrCat(service, ".twinscale-system.svc")}});
  ASSERT_TRUE(pki.ok()) << pki.status();
  const std::string cert = pki->server_crt, key = pki->server_key, ca = pki->ca_crt;
  const int port = testutil::FreeLoopbackPort();
  ControllerProcess* c = StartController(
      "hpa", {absl::StrCat("--external-metrics-addr=127.0.0.1:", port),
              "--external-metrics-tls-cert=" + cert, "--external-metrics-tls-key=" + key,
              "--external-metrics-client-ca-from-cluster"});
  ASSERT_NE(c, nullptr);
  const json svc = {{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata", {{"name", service}, {"namespace", kSystemNs}}},
                    {"spec",
                     {{"type", "ExternalName"},
                      {"externalName", "localhost"},
                      {"ports", json::array({{{"name", "https"}, {"port", port}}})}}}};
  const json apiservice = {
      {"apiVersion", "apiregistration.k8s.io/v1"},
      {"kind", "APIService"},
      {"metadata", {{"name", "v1beta1.external.metrics.k8s.io"}}},
      {"spec",
       {{"group", "external.metrics.k8s.io"},
        {"version", "v1beta1"},
        {"groupPriorityMinimum", 100},
        {"versionPriority", 100},
        {"caBundle", absl::Base64Escape(testutil::ReadWholeFile(ca))},
        {"service", {{"name", service}, {"namespace", kSystemNs}, {"port", port}}}}}};
  ExpectOk(cp_->KubectlWithFile("apply", svc.dump()), "ExternalName Service");
  ExpectOk(cp_->KubectlWithFile("apply", apiservice.dump()), "APIService");
  ASSERT_TRUE(Eventually(
      [&] {
        return cp_
            ->Kubectl(
                "wait --for condition=Available --timeout=1s "
                "apiservice/v1beta1.external.metrics.k8s.io")
            .ok();
      },
      absl::Seconds(60), kPoll))
      << cp_->Kubectl("get apiservice v1beta1.external.metrics.k8s.io -o yaml").all() << c->Log();
  // The metric as the HPA controller reads it, through the aggregator.
  ASSERT_TRUE(Eventually(
      [&] {
        return cp_
            ->Kubectl(
                "get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/llm/"
                "twinscale-desired-replicas?labelSelector=twinscale.io%2Fautoscaler%3Dllama")
            .ok();
      },
      absl::Seconds(60), kPoll))
      << c->Log();
  std::string hpa = testutil::ReadWholeFile("deploy/external-metrics/hpa.yaml");
  hpa = absl::StrReplaceAll(
      hpa, {{"name: vllm-llama-3-1-8b", "name: vllm"},
            {"twinscale.io/autoscaler: llama-3-1-8b", "twinscale.io/autoscaler: llama"},
            {"maxReplicas: 16", "maxReplicas: 8"},
            {"minReplicas: 1", "minReplicas: 2"}});
  ExpectOk(cp_->KubectlWithFile("apply", hpa), "the HPA");
  // The HPA controller (5 s sync) reads the external metric and scales the Deployment.
  ASSERT_TRUE(Eventually([&] { return SpecReplicas() > 2; }, absl::Seconds(90), kPoll))
      << cp_->Kubectl("-n llm describe hpa vllm").all() << "\n"
      << Autoscaler().dump(2);
  EXPECT_LE(SpecReplicas(), 8);
  EXPECT_EQ(ConditionOf("ScalingActive").value("reason", ""), "HPA");
  EXPECT_EQ(RbacDenials(), "");
}

TEST_F(RealControllerTest, AFollowerTakesOverWhenTheLeaderIsKilled) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  ASSERT_NO_FATAL_FAILURE(StartFleet(2, kQuietRps));
  e2e::AutoscalerOptions o;
  o.mode = "Recommend";
  CreateAutoscaler(o);
  ControllerProcess* a = StartController("controller-a", {});
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(Eventually([&] { return LeaseHolder() == "controller-a"; }, absl::Seconds(30), kPoll))
      << a->Log();
  ASSERT_TRUE(Eventually([&] { return DesiredReplicas() > 0; }, absl::Seconds(30), kPoll));
  ControllerProcess* b = StartController("controller-b", {});
  ASSERT_NE(b, nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // B campaigns and loses
  EXPECT_EQ(LeaseHolder(), "controller-a");

  a->Kill();  // SIGKILL: nothing is released; B waits out the 4 s Lease
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually([&] { return LeaseHolder() == "controller-b"; }, absl::Seconds(20), kPoll))
      << b->Log();
  // The Lease's 4 s, one 1 s retry with its jitter, and a second of polling.
  EXPECT_LE(absl::Now() - killed, absl::Seconds(8));
  // B reconciles: a spec change is observed in status.
  ExpectOk(cp_->Kubectl("-n llm patch inferenceautoscaler llama --type merge "
                        "-p '{\"spec\":{\"maxReplicas\":7}}'"),
           "patch");
  const int64_t generation = Autoscaler()["metadata"].value("generation", int64_t{0});
  EXPECT_TRUE(Eventually(
      [&] {
        return Autoscaler()
                   .value("status", json::object())
                   .value("observedGeneration", int64_t{0}) == generation;
      },
      absl::Seconds(20), kPoll))
      << b->Log();
}

TEST_F(RealControllerTest, ARefusedLeaseIsLoggedWithItsReasonAndFailsReadyz) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  // The chart's Lease rules taken away: every create of the Lease is 403 Forbidden.
  ExpectOk(cp_->Kubectl("-n twinscale-system delete rolebinding twinscale-leader-election"),
           "delete the RoleBinding");
  int ops = 0;
  ControllerProcess* c = StartController("refused", {}, &ops);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->WaitForLog("forbidden", std::chrono::seconds(20))) << c->Log();
  EXPECT_TRUE(Eventually([&] { return Readyz(ops) == 503; }, absl::Seconds(10), kPoll))
      << "readyz " << Readyz(ops) << "\n"
      << c->Log();
  // Logged once per episode, not once per retry (a retry a second).
  std::this_thread::sleep_for(std::chrono::seconds(4));
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(c->Log(), '\n')) {
    if (absl::StrContains(line, "forbidden") && absl::StrContains(line, "lease")) ++lines;
  }
  EXPECT_LE(lines, 2) << c->Log();
  // The rules back: it leads and is ready.
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  EXPECT_TRUE(Eventually([&] { return LeaseHolder() == "refused"; }, absl::Seconds(20), kPoll))
      << c->Log();
  EXPECT_TRUE(Eventually([&] { return Readyz(ops) == 200; }, absl::Seconds(10), kPoll));
}

TEST_F(RealControllerTest, StaleMetricsNeverScaleInAndRaiseOneWarningEvent) {
  ASSERT_NO_FATAL_FAILURE(InstallChart());
  // An oversized fleet on quiet traffic: with fresh metrics the controller scales it in.
  ASSERT_NO_FATAL_FAILURE(StartFleet(4, kQuietRps));
  kubelet_->SetServing(false);  // every /metrics answers 500 from before the first decision
  e2e::AutoscalerOptions o;
  o.mode = "Direct";
  o.min_replicas = 1;
  o.scale_down_window_seconds = 4;
  CreateAutoscaler(o);
  ControllerProcess* c = StartController("stale", {});
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(
      Eventually([&] { return ConditionIs("MetricsFresh", "False"); }, absl::Seconds(30), kPoll))
      << Autoscaler().dump(2) << c->Log();
  // Ten passes (2 s each) on stale data: held at 4.
  const absl::Time until = absl::Now() + absl::Seconds(20);
  while (absl::Now() < until) {
    ASSERT_EQ(SpecReplicas(), 4) << "scaled on stale metrics\n" << Autoscaler().dump(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const std::vector<json> warnings = Events("Warning");
  std::vector<json> stale;
  for (const json& e : warnings) {
    if (absl::StrContains(e.value("reason", ""), "Stale") ||
        absl::StrContains(e.value("reason", ""), "Metrics")) {
      stale.push_back(e);
    }
  }
  ASSERT_EQ(stale.size(), 1u) << json(warnings).dump(2);
  EXPECT_EQ(stale[0].value("count", 1), 1) << "raised again within one episode";
  // Fresh again: the same controller now scales the oversized fleet in.
  kubelet_->SetServing(true);
  EXPECT_TRUE(Eventually([&] { return SpecReplicas() < 4; }, absl::Seconds(60), kPoll))
      << Autoscaler().dump(2);
  EXPECT_TRUE(ConditionIs("MetricsFresh", "True"));
}

}  // namespace
}  // namespace twinscale::k8s_test
