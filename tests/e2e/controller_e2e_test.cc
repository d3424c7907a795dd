// End-to-end tests of the Kubernetes operator (`twinscale controller`), with real parts.
//
// WHAT IS REAL AND WHAT IS FAKED
//   Faked: the Kubernetes API server. tests/fake_apiserver is a fake of its WIRE behaviour (list
//     and watch with resourceVersions, bookmarks, 410 Expired inside the 200 stream, generation,
//     /status and /scale, the CRD's schema defaults, 409s, Leases, events), served over real HTTP
//     on loopback. It runs no controllers: the harness (cluster_harness.h) plays the Deployment
//     controller and the kubelet, mirroring a live simulated fleet as a Deployment and Pods.
//   Real: everything else. The controller runs in-process with the wiring of
//     controller/cli/controller_command.cc: HttpKubeClient over HTTP, the informer, Lease leader
//     election, the event recorder, the Reconciler and the Controller's work queue and workers, the
//     twin-backed policy (TwinDeciderFactory over the embedded profiles). The fleet
//     (tests/e2e/live_fleet.h) is the simulator's vLLM replicas in wall-clock time, each serving
//     vLLM-format /metrics text on its own 127.0.0.N address; the controller reads it with the
//     PodScraper, or through a REAL Prometheus (/usr/bin/prometheus, 1 s scrapes, file_sd targets
//     the harness rewrites as pods come and go) with the PromqlSource.
//
// THE SCENARIOS (each test states what it checks; all waits are polls with deadlines)
//   Scaling (Pods source, then Prometheus): a quiet start, a burst that needs more replicas, then
//   quiet again. The controller must scale up before the burst ends, then back down to
//   minReplicas, never faster than the scale-down policy (one pod per 5 s) and never below
//   minReplicas, with conditions, observed values, calibration and events in order.
//   Faults: every pod hanging or answering garbage, Prometheus stopped, the API server failing
//   requests with 500, a compacted history with dropped watches, two controllers on one Lease (a
//   follower never acts; it takes over when the leader stops), and a restart that must pick the
//   calibration up from status. No fault may cause a crash or a scale-in on missing data, and each
//   must show in a condition that says what is wrong.
//
// Timing: the fleet runs in wall time, decisions every 2 s (spec.metrics.interval), new pods take
// 6 s to become Ready (the fleet's warm-up override, also spec.warmup.expected). The suite takes
// about 4.5 minutes of wall time one test after another (the two scaling tests about 85 s each),
// about 2.3 minutes under `ctest -j2`, and little CPU (mostly waiting): label slow. The Prometheus
// tests skip when /usr/bin/prometheus is not installed.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/kube/kube_time.h"
#include "controller/state/arrival_history_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simulator/profiles/profile_loader.h"
#include "tests/e2e/cluster_harness.h"
#include "tests/util/eventually.h"

namespace twinscale::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testutil::Eventually;

// Polls of the fake cluster every 100 ms.
constexpr absl::Duration kPoll = absl::Milliseconds(100);

// ---- The workload ------------------------------------------------------------------------------
// Long prompts and short answers make each request mostly prefill, so a replica's capacity is a
// small number of requests per second (about 9) and the simulation stays cheap.
constexpr int32_t kPromptTokens = 2048;
constexpr int32_t kOutputTokens = 64;
// `twinscale simulate --input-tokens 2048 --output-tokens 64 --duration 120s --find-replicas`
// on llama-3.1-8b-h100-sxm-tp1 (p90 TTFT <= 500 ms): 2 req/s needs 1 replica (p90 119 ms), 20
// needs 3, 40 needs 5 (2 replicas: p90 65 s, hopelessly overloaded).
// Quiet: served by one replica, so minReplicas (2) is the floor.
constexpr double kQuietRps = 2;
// Burst: needs about 5 replicas.
constexpr double kBurstRps = 40;

constexpr absl::Duration kQuietStart = absl::Seconds(8);
constexpr absl::Duration kBurst = absl::Seconds(20);
constexpr absl::Duration kQuietAfter = absl::Minutes(3);  // longer than any test needs

// The scale-down policy the tests' autoscalers use, and the tolerance of checking it from outside:
// the policy times a step at the START of its pass, the write lands after the pass's reads,
// scrapes and what-ifs (well under a second, more on a loaded machine), and the harness sees it
// within a tick (100 ms). So two steps exactly one period apart may look up to about a second
// closer. A real breach would look like one decision interval (2 s) or less.
constexpr absl::Duration kScaleDownPeriod = absl::Seconds(5);
constexpr absl::Duration kObservationSlack = absl::Seconds(1);

// How long decisions may take to react: a few intervals (2 s each) plus a pod's warm-up (6 s).
constexpr absl::Duration kReact = absl::Seconds(20);

std::string Dump(const absl::StatusOr<json>& j) {
  return j.ok() ? j->dump(2) : std::string(j.status().message());
}

std::string HistoryText(const std::vector<ReplicaChange>& history, absl::Time t0) {
  std::vector<std::string> parts;
  for (const ReplicaChange& c : history) {
    parts.push_back(
        absl::StrCat("t+", absl::FormatDuration(absl::Trunc(c.at - t0, absl::Milliseconds(100))),
                     " -> ", c.replicas));
  }
  return absl::StrJoin(parts, ", ");
}

// Every decision of autoscaler `name` that reached status, oldest first, as the status patches
// the API server received carried them: "time replicas [reason codes and messages]".
std::string DecisionTrail(const ClusterHarness& harness, const std::string& name) {
  std::string out;
  const std::string suffix = absl::StrCat("/inferenceautoscalers/", name, "/status");
  for (const auto& r : harness.api().Requests()) {
    if (r.method != "PATCH" || !absl::EndsWith(r.path, suffix)) continue;
    const json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.contains("status")) continue;
    const json d = body["status"].value("lastDecision", json::object());
    std::vector<std::string> reasons;
    for (const json& reason : d.value("reasons", json::array())) {
      reasons.push_back(absl::StrCat(reason.value("code", ""), ": ", reason.value("message", "")));
    }
    absl::StrAppend(&out, d.value("time", "?"), " ", d.value("replicas", -1), " [",
                    absl::StrJoin(reasons, "; "), "]\n");
  }
  return out;
}

class ControllerE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = sim::ProfileRegistry::LoadEmbedded();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    profiles_ = new sim::ProfileRegistry(*std::move(loaded));
  }
  static void TearDownTestSuite() {
    delete profiles_;
    profiles_ = nullptr;
  }

  void TearDown() override {
    // On failure, say what the cluster and the controllers did.
    if (HasFailure() && harness_ != nullptr) {
      std::string why =
          absl::StrCat("replicas: ", HistoryText(harness_->ReplicaHistory(), harness_->started()),
                       "\n", "autoscaler: ", Dump(harness_->Autoscaler("llama")), "\n",
                       "decisions written to status:\n", DecisionTrail(*harness_, "llama"));
      for (const auto& c : controllers_) absl::StrAppend(&why, c->LogTail(60));
      if (harness_->prometheus() != nullptr) {
        absl::StrAppend(&why, "---- prometheus log ----\n", harness_->prometheus()->Log());
      }
      ADD_FAILURE() << "diagnostics:\n" << why;
    }
    for (auto& c : controllers_) c->Stop();
    controllers_.clear();
    harness_.reset();
  }

  void StartHarness(HarnessOptions options) {
    auto h = ClusterHarness::Start(std::move(options));
    ASSERT_TRUE(h.ok()) << h.status();
    harness_ = *std::move(h);
  }

  ControllerInstance* StartController(ControllerInstanceOptions options = {}) {
    auto c = ControllerInstance::Start(*harness_, profiles_, std::move(options));
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return nullptr;
    controllers_.push_back(*std::move(c));
    return controllers_.back().get();
  }

  // The autoscaler's status condition `type` has `status` (and, if given, `reason`).
  bool ConditionIs(const std::string& type, const std::string& status,
                   const std::string& reason = "", const std::string& name = "llama") {
    const json c = harness_->Condition(name, type);
    return c.is_object() && c.value("status", "") == status &&
           (reason.empty() || c.value("reason", "") == reason);
  }
  json Status(const std::string& name = "llama") {
    auto ias = harness_->Autoscaler(name);
    return ias.ok() ? ias->value("status", json::object()) : json::object();
  }
  // Waits until every condition the tests expect of a healthy autoscaler is True.
  bool WaitHealthy(absl::Duration timeout, const std::string& name = "llama") {
    return Eventually(
        [&] {
          return ConditionIs("SpecValid", "True", "", name) &&
                 ConditionIs("MetricsFresh", "True", "", name) &&
                 ConditionIs("ScalingActive", "True", "", name);
        },
        timeout, kPoll);
  }
  // Asserts the replica count stays `replicas` for `span` (polled), e.g. while data is missing.
  void ExpectHeldFor(int32_t replicas, absl::Duration span, const std::string& while_what) {
    const bool changed = Eventually([&] { return harness_->SpecReplicas() != replicas; }, span,
                                    absl::Milliseconds(50));
    EXPECT_FALSE(changed) << "spec.replicas changed from " << replicas << " to "
                          << harness_->SpecReplicas() << " while " << while_what;
  }

  // The scaling scenario of tests 1 and 2 (source "Pods" or "Prometheus").
  void RunBurstScenario(const std::string& source);
  // The fault tests' start: an oversized fleet with quiet traffic, an autoscaler (minReplicas 1)
  // and a controller; returns once the autoscaler is healthy, before any scale-in.
  void StartOversizedFleet(const std::string& source);

  static sim::ProfileRegistry* profiles_;
  std::unique_ptr<ClusterHarness> harness_;
  std::vector<std::unique_ptr<ControllerInstance>> controllers_;
};

sim::ProfileRegistry* ControllerE2eTest::profiles_ = nullptr;

void ControllerE2eTest::RunBurstScenario(const std::string& source) {
  HarnessOptions ho;
  ho.initial_replicas = 2;
  ho.prometheus = source == "Prometheus";
  ho.trace = PhasedTrace({{kQuietStart, kQuietRps}, {kBurst, kBurstRps}, {kQuietAfter, kQuietRps}},
                         kPromptTokens, kOutputTokens);
  ASSERT_NO_FATAL_FAILURE(StartHarness(ho));
  AutoscalerOptions ao;
  ao.min_replicas = 2;
  ao.max_replicas = 6;
  ao.source = source;
  ao.prometheus_url = harness_->prometheus_url();
  auto created = harness_->CreateAutoscaler(ao);
  ASSERT_TRUE(created.ok()) << created.status();
  // The fake applied the CRD's defaults on create, as the API server does.
  EXPECT_EQ((*created)["spec"]["slo"]["ttft"]["threshold"], "500ms");
  ControllerInstance* controller = StartController();
  ASSERT_NE(controller, nullptr);
  const absl::Time t0 = harness_->started();
  const absl::Time burst_start = t0 + kQuietStart;
  const absl::Time burst_end = burst_start + kBurst;

  // Quiet start: the autoscaler becomes healthy (Prometheus needs a few scrapes first).
  ASSERT_TRUE(WaitHealthy(absl::Seconds(20))) << Dump(harness_->Autoscaler("llama"));

  // The burst: the controller scales up while it lasts.
  RealClock clock;
  ASSERT_TRUE(
      Eventually([&] { return harness_->SpecReplicas() > 2; }, burst_end - clock.Now(), kPoll))
      << "no scale-up before the burst ended";
  const absl::Time scaled_up_at = clock.Now();
  EXPECT_GE(scaled_up_at, burst_start) << "scaled up during the quiet start";
  // The event follows the /scale write that the harness has just seen.
  EXPECT_TRUE(Eventually([&] { return !harness_->Events("llama", "ScaledUp").empty(); },
                         absl::Seconds(5), kPoll));

  // After the burst: back to minReplicas. From at most 6 that takes the 10 s window plus 4 steps of
  // one pod per 5 s (decisions on a 2 s grid make each step 6 s): about 35 s. Seen: 57 to 67 s,
  // as the burst's backlog drains first and the twin's recommendations alternate for a while
  // (each higher one restarts the window; once a step down was undone 4 s later). 120 s allowed.
  Eventually([&] { return clock.Now() >= burst_end; }, kBurst, kPoll);
  EXPECT_TRUE(Eventually([&] { return harness_->SpecReplicas() == 2; }, absl::Seconds(120), kPoll))
      << "did not scale back to minReplicas after the burst";

  // The harness records changes within a tick: let it catch up with the last one.
  EXPECT_TRUE(Eventually([&] { return harness_->ReplicaHistory().back().replicas == 2; },
                         absl::Seconds(2), kPoll));
  const std::vector<ReplicaChange> history = harness_->ReplicaHistory();
  SCOPED_TRACE(absl::StrCat("replicas: ", HistoryText(history, t0)));
  int32_t peak = 0;
  std::optional<absl::Time> last_decrease;
  for (size_t i = 0; i < history.size(); ++i) {
    const ReplicaChange& c = history[i];
    peak = std::max(peak, c.replicas);
    EXPECT_GE(c.replicas, ao.min_replicas) << "below minReplicas";
    EXPECT_LE(c.replicas, ao.max_replicas) << "above maxReplicas";
    if (i == 0 || c.replicas >= history[i - 1].replicas) continue;
    // A decrease: at most one pod, and at least one policy period after the previous one.
    EXPECT_EQ(history[i - 1].replicas - c.replicas, 1) << "more than one pod removed at once";
    if (last_decrease.has_value()) {
      EXPECT_GE(c.at - *last_decrease, kScaleDownPeriod - kObservationSlack)
          << "two scale-downs within one period of the policy";
    }
    last_decrease = c.at;
  }
  EXPECT_GT(peak, 2);
  EXPECT_TRUE(Eventually([&] { return !harness_->Events("llama", "ScaledDown").empty(); },
                         absl::Seconds(5), kPoll));

  // Status: healthy conditions, the decision, what was observed, the measured warm-up and the
  // calibration.
  EXPECT_TRUE(WaitHealthy(absl::Seconds(10)));
  EXPECT_TRUE(ConditionIs("SpecValid", "True", "Valid"));
  EXPECT_TRUE(ConditionIs("ScalingActive", "True", "Direct"));
  const json status = Status();
  SCOPED_TRACE(status.dump(2));
  EXPECT_EQ(status.value("observedGeneration", int64_t{-1}),
            (*harness_->Autoscaler("llama"))["metadata"]["generation"].get<int64_t>());
  EXPECT_EQ(status.value("desiredReplicas", -1), 2);
  EXPECT_EQ(status.value("currentReplicas", -1), 2);
  ASSERT_TRUE(status.contains("observed"));
  EXPECT_TRUE(status["observed"].contains("queueDepthPerReplica"));
  EXPECT_TRUE(status["observed"].contains("kvCacheUtilization"));
  EXPECT_TRUE(status["observed"].contains("arrivalRate"));
  // Every pod takes 6 s from creation to Ready (the initial ones are mirrored that way too);
  // creationTimestamp and lastTransitionTime carry whole seconds, so the median is 6 s +- 1 s.
  ASSERT_TRUE(status.contains("measuredWarmup"));
  absl::Duration measured;
  ASSERT_TRUE(absl::ParseDuration(status["measuredWarmup"].get<std::string>(), &measured));
  EXPECT_GE(measured, absl::Seconds(5));
  EXPECT_LE(measured, absl::Seconds(7));
  ASSERT_TRUE(status.contains("calibration"));
  const json cal = status["calibration"];
  // The factors stay inside the calibrator's bounds [0.5, 1.5]; the burst gave the settled
  // replicas decode traffic, so windows were folded in.
  EXPECT_GE(cal.value("prefillSpeed", 0.0), 0.5);
  EXPECT_LE(cal.value("prefillSpeed", 9.0), 1.5);
  EXPECT_GE(cal.value("decodeSpeed", 0.0), 0.5);
  EXPECT_LE(cal.value("decodeSpeed", 9.0), 1.5);
  EXPECT_GE(cal.value("updates", int64_t{0}), 1);
  ASSERT_TRUE(status.contains("lastDecision"));
  EXPECT_FALSE(status["lastDecision"].value("reasons", json::array()).empty());

  // Informational: the fleet picks its own scale-in victims (see cluster_harness.h); how often it
  // took a pod the controller had marked with pod-deletion-cost.
  int marked = 0;
  std::vector<std::string> removed;
  const std::vector<Victim> victims = harness_->victims();
  for (const Victim& v : victims) {
    marked += v.marked_by_controller ? 1 : 0;
    removed.push_back(absl::StrCat(v.pod, v.marked_by_controller ? " (marked)" : ""));
  }
  std::vector<std::string> marked_pods;
  auto pods = harness_->api().List(absl::StrCat("/api/v1/namespaces/", harness_->ns(), "/pods"));
  if (pods.ok()) {
    for (const json& p : (*pods)["items"]) {
      if (p["metadata"]
              .value("annotations", json::object())
              .contains("controller.kubernetes.io/pod-deletion-cost")) {
        marked_pods.push_back(p["metadata"]["name"].get<std::string>());
      }
    }
  }
  std::cout << "[ info ] replicas: " << HistoryText(history, t0) << "\n"
            << "[ info ] the fleet removed " << absl::StrJoin(removed, ", ") << " (" << marked
            << " of " << victims.size()
            << " marked by the controller); still marked: " << absl::StrJoin(marked_pods, ", ")
            << "\n[ info ] calibration: " << cal.dump() << "\n";
}

// 1. Pods source: up under the burst, down after it within the policy, status and events.
TEST_F(ControllerE2eTest, PodsSourceScalesUpUnderABurstAndBackDownWithinThePolicy) {
  RunBurstScenario("Pods");
}

// 2. The same through a real Prometheus scraping the fleet.
TEST_F(ControllerE2eTest, PrometheusSourceScalesUpUnderABurstAndBackDownWithinThePolicy) {
  if (!testutil::Installed(testutil::kPrometheusBinary)) GTEST_SKIP() << "prometheus not installed";
  RunBurstScenario("Prometheus");
}

// ---- Faults ------------------------------------------------------------------------------------
// Each fault test starts from a fleet larger than the quiet traffic needs (so the controller WANTS
// to scale in), injects the fault before the scale-down window (6 s here) has run out, checks that
// nothing is scaled in while it lasts (kHold: past the window and a policy period after the first
// decision) and that a condition says what is wrong, then clears it and checks the controller
// recovers (it scales in: proof that it was the fault that held it).

constexpr int32_t kOversized = 4;
constexpr int32_t kFaultWindowSeconds = 6;
constexpr absl::Duration kHold = absl::Seconds(12);

void ControllerE2eTest::StartOversizedFleet(const std::string& source) {
  HarnessOptions ho;
  ho.initial_replicas = kOversized;
  ho.prometheus = source == "Prometheus";
  ho.trace = PhasedTrace({{absl::Minutes(5), kQuietRps}}, kPromptTokens, kOutputTokens);
  ASSERT_NO_FATAL_FAILURE(StartHarness(ho));
  AutoscalerOptions ao;
  ao.min_replicas = 1;
  ao.scale_down_window_seconds = kFaultWindowSeconds;
  ao.source = source;
  ao.prometheus_url = harness_->prometheus_url();
  auto created = harness_->CreateAutoscaler(ao);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_NE(StartController(), nullptr);
  ASSERT_TRUE(WaitHealthy(absl::Seconds(20))) << Dump(harness_->Autoscaler("llama"));
  ASSERT_EQ(harness_->SpecReplicas(), kOversized) << "scaled in before the fault";
}

// 3a. Every pod hangs or answers garbage: MetricsFresh=False, replicas held; then recovery.
TEST_F(ControllerE2eTest, PodsThatHangOrAnswerGarbageHoldTheFleetAndSaySo) {
  ASSERT_NO_FATAL_FAILURE(StartOversizedFleet("Pods"));
  for (int i = 0; i < kOversized; ++i) {
    harness_->fleet().SetFault(absl::StrCat("vllm-", i),
                               i % 2 == 0 ? PodFault::kHang : PodFault::kGarbage);
  }
  EXPECT_TRUE(Eventually([&] { return ConditionIs("MetricsFresh", "False", "ScrapesStale"); },
                         absl::Seconds(10), kPoll))
      << Dump(harness_->Autoscaler("llama"));
  const std::string message = harness_->Condition("llama", "MetricsFresh").value("message", "");
  EXPECT_THAT(message, HasSubstr(absl::StrCat(kOversized, " reads failed")));
  EXPECT_THAT(message, HasSubstr("no scale-in on stale data"));
  ExpectHeldFor(kOversized, kHold, "every pod hung or answered garbage");
  EXPECT_TRUE(harness_->Events("llama", "ScaledDown").empty());

  for (int i = 0; i < kOversized; ++i)
    harness_->fleet().SetFault(absl::StrCat("vllm-", i), PodFault::kNone);
  EXPECT_TRUE(
      Eventually([&] { return ConditionIs("MetricsFresh", "True"); }, absl::Seconds(10), kPoll));
  EXPECT_TRUE(Eventually([&] { return harness_->SpecReplicas() < kOversized; }, kReact, kPoll))
      << "did not scale in once the pods answered again";
}

// 3b. Prometheus stopped: MetricsFresh=False naming its URL, replicas held. Then a new Prometheus
// (at a new URL, as one that moved) and an edit of spec.metrics.prometheus.url: the controller
// takes the new source and scales in.
TEST_F(ControllerE2eTest, PrometheusDownHoldsTheFleetAndNamesTheUrl) {
  if (!testutil::Installed(testutil::kPrometheusBinary)) GTEST_SKIP() << "prometheus not installed";
  ASSERT_NO_FATAL_FAILURE(StartOversizedFleet("Prometheus"));
  const std::string url = harness_->prometheus_url();
  harness_->prometheus()->Stop();
  EXPECT_TRUE(
      Eventually([&] { return ConditionIs("MetricsFresh", "False", "MetricsSourceFailed"); },
                 absl::Seconds(10), kPoll))
      << Dump(harness_->Autoscaler("llama"));
  EXPECT_THAT(harness_->Condition("llama", "MetricsFresh").value("message", ""), HasSubstr(url));
  ExpectHeldFor(kOversized, kHold, "Prometheus was down");
  EXPECT_TRUE(ConditionIs("SpecValid", "True"));

  ASSERT_TRUE(harness_->StartPrometheus().ok());
  auto patched = harness_->PatchAutoscaler(
      "llama", {{"spec", {{"metrics", {{"prometheus", {{"url", harness_->prometheus_url()}}}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_TRUE(WaitHealthy(absl::Seconds(15))) << Dump(harness_->Autoscaler("llama"));
  EXPECT_TRUE(Eventually([&] { return harness_->SpecReplicas() < kOversized; }, kReact, kPoll))
      << "did not scale in once Prometheus answered again";
}

// 3c. The API server fails requests with 500 for a while: first only the pods' (their list and
// watch; the open watch is cut, as a restarting server cuts it, so the controller's cache of pods
// can't be trusted and its list fails too: it can still say so in status), then everything (it
// can't even renew its Lease and steps down). No crash, no scale-in; afterwards it leads again and
// carries on.
TEST_F(ControllerE2eTest, ApiServerErrorsHoldTheFleetAndTheControllerRecovers) {
  ASSERT_NO_FATAL_FAILURE(StartOversizedFleet("Pods"));
  ControllerInstance* controller = controllers_.back().get();
  fake_apiserver::FakeApiServer::Fault pods;
  pods.method = "GET";
  pods.path_prefix = absl::StrCat("/api/v1/namespaces/", harness_->ns(), "/pods");
  pods.code = 500;
  pods.count = 1000000;  // until cleared
  harness_->api().FailNext(pods);
  // An open watch outlives a fault on new requests: cut it, so the pods' watch must come back
  // through the failing server.
  harness_->api().CloseWatches(/*abrupt=*/true);
  EXPECT_TRUE(Eventually([&] { return ConditionIs("MetricsFresh", "False", "FailedListPods"); },
                         absl::Seconds(10), kPoll))
      << Dump(harness_->Autoscaler("llama"));
  ExpectHeldFor(kOversized, kHold, "listing pods failed");

  harness_->api().ClearFaults();
  fake_apiserver::FakeApiServer::Fault everything;
  everything.code = 500;
  everything.count = 1000000;
  harness_->api().FailNext(everything);
  // Past the renew deadline (4 s): the leader must step down rather than act blind.
  EXPECT_TRUE(Eventually([&] { return !controller->IsLeader(); }, absl::Seconds(10), kPoll));
  ExpectHeldFor(kOversized, absl::Seconds(4), "every request failed");
  harness_->api().ClearFaults();

  const int64_t decisions = controller->Decisions();
  EXPECT_TRUE(Eventually([&] { return controller->IsLeader(); }, absl::Seconds(10), kPoll))
      << "did not lead again";
  EXPECT_TRUE(
      Eventually([&] { return controller->Decisions() > decisions; }, absl::Seconds(10), kPoll))
      << "no decision after the API server recovered";
  EXPECT_TRUE(WaitHealthy(absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return harness_->SpecReplicas() < kOversized; }, kReact, kPoll))
      << "did not scale in after the API server recovered";
}

// 3d. The server compacts its history and drops every watch: the informers' resumes get 410
// Expired, they re-list (the autoscalers' and the pods'), and the controller keeps working: an
// autoscaler created afterwards (which only the informer can bring) is reconciled, and the first
// one keeps being decided.
TEST_F(ControllerE2eTest, CompactionAndDroppedWatchesMakeTheInformerRelist) {
  ASSERT_NO_FATAL_FAILURE(StartOversizedFleet("Pods"));
  const auto list_requests = [&] {
    int n = 0;
    for (const auto& r : harness_->api().Requests()) {
      const bool watch = r.params.count("watch") != 0 && r.params.at("watch") != "false" &&
                         r.params.at("watch") != "0";
      if (r.method == "GET" && !watch && absl::EndsWith(r.path, "/inferenceautoscalers")) ++n;
    }
    return n;
  };
  // The pods' informer (label selector app=vllm) lives through the same compaction.
  const auto pod_list_requests = [&] {
    int n = 0;
    for (const auto& r : harness_->api().Requests()) {
      const bool watch = r.params.count("watch") != 0 && r.params.at("watch") != "false" &&
                         r.params.at("watch") != "0";
      if (r.method == "GET" && !watch && absl::EndsWith(r.path, "/pods") &&
          r.params.count("labelSelector") != 0) {
        ++n;
      }
    }
    return n;
  };
  const int lists_before = list_requests();
  ASSERT_TRUE(harness_->api().WaitForWatches(2, absl::Seconds(5)));
  const int pod_lists_before = pod_list_requests();
  // A write after the informer's last event, then compaction: its resourceVersion is now too old.
  ASSERT_TRUE(harness_->api()
                  .Put(absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", harness_->ns(),
                                    "/leases/e2e-marker"),
                       {{"spec", {{"holderIdentity", "nobody"}}}})
                  .ok());
  harness_->api().Compact();
  harness_->api().CloseWatches(/*abrupt=*/false);
  EXPECT_TRUE(Eventually([&] { return list_requests() > lists_before; }, absl::Seconds(10), kPoll))
      << "the informer did not list again after its resourceVersion expired";
  EXPECT_TRUE(
      Eventually([&] { return pod_list_requests() > pod_lists_before; }, absl::Seconds(10), kPoll))
      << "the pods' informer did not list again after its resourceVersion expired";

  // A second autoscaler (Recommend: it reports, never scales) appears after the re-list.
  AutoscalerOptions second;
  second.name = "llama-dry-run";
  second.mode = "Recommend";
  second.min_replicas = 1;
  ASSERT_TRUE(harness_->CreateAutoscaler(second).ok());
  EXPECT_TRUE(
      Eventually([&] { return ConditionIs("ScalingActive", "True", "Recommend", "llama-dry-run"); },
                 absl::Seconds(10), kPoll))
      << Dump(harness_->Autoscaler("llama-dry-run"));

  // Cut the connections abruptly this time: the informer comes back again.
  const int lists_mid = list_requests();
  harness_->api().CloseWatches(/*abrupt=*/true);
  EXPECT_TRUE(harness_->api().WaitForWatches(1, absl::Seconds(15)));
  ControllerInstance* controller = controllers_.back().get();
  const int64_t decisions = controller->Decisions();
  EXPECT_TRUE(
      Eventually([&] { return controller->Decisions() > decisions; }, absl::Seconds(10), kPoll));
  EXPECT_TRUE(WaitHealthy(absl::Seconds(5)));
  std::cout << "[ info ] lists of InferenceAutoscalers: " << lists_before << " before, "
            << lists_mid << " after compaction, " << list_requests()
            << " after the cut; of pods: " << pod_lists_before << " before, " << pod_list_requests()
            << " at the end\n";
}

// 3e. Two controllers on one Lease: the follower never writes anything but its campaign for the
// Lease; when the leader stops (and releases the Lease) the follower takes over within the lease
// duration and acts.
TEST_F(ControllerE2eTest, AFollowerNeverActsAndTakesOverWhenTheLeaderStops) {
  HarnessOptions ho;
  ho.initial_replicas = 5;
  ho.trace = PhasedTrace({{absl::Minutes(5), kQuietRps}}, kPromptTokens, kOutputTokens);
  ASSERT_NO_FATAL_FAILURE(StartHarness(ho));
  AutoscalerOptions ao;
  ao.min_replicas = 1;
  ao.scale_down_window_seconds = kFaultWindowSeconds;
  ASSERT_TRUE(harness_->CreateAutoscaler(ao).ok());
  ControllerInstanceOptions a_options;
  a_options.identity = "controller-a";
  ControllerInstance* a = StartController(a_options);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(Eventually([&] { return a->IsLeader(); }, absl::Seconds(10), kPoll));
  ControllerInstanceOptions b_options = a_options;
  b_options.identity = "controller-b";
  b_options.release_on_stop = false;  // B will crash later in the test
  ControllerInstance* b = StartController(b_options);
  ASSERT_NE(b, nullptr);

  // A scales in (the quiet fleet is too big); B does nothing.
  ASSERT_TRUE(Eventually([&] { return harness_->SpecReplicas() < 5; }, kReact, kPoll));
  EXPECT_GT(harness_->ScaleWrites(a->user_agent()), 0);
  EXPECT_EQ(harness_->ScaleWrites(b->user_agent()), 0);
  EXPECT_EQ(harness_->Writes(b->user_agent(), "/leases/"), 0) << "the follower wrote something";
  EXPECT_FALSE(b->IsLeader());
  EXPECT_EQ(harness_->LeaseHolder("twinscale-controller"), "controller-a");
  EXPECT_THAT(b->MetricsPage(), HasSubstr("twinscale_leader 0"));

  // A stops (SIGTERM's path: Stop releases the Lease); B takes over within the lease duration.
  RealClock clock;
  const int32_t replicas_at_stop = harness_->SpecReplicas();
  a->Stop();
  const absl::Time stopped = clock.Now();
  EXPECT_NE(harness_->LeaseHolder("twinscale-controller"), "controller-a");
  ASSERT_TRUE(Eventually([&] { return b->IsLeader(); }, absl::Seconds(6), kPoll))
      << "the follower did not take over within the lease duration";
  std::cout << "[ info ] takeover after " << clock.Now() - stopped << "\n";
  EXPECT_EQ(harness_->LeaseHolder("twinscale-controller"), "controller-b");
  const int32_t a_writes = harness_->ScaleWrites(a->user_agent());
  if (replicas_at_stop > 1) {
    EXPECT_TRUE(
        Eventually([&] { return harness_->ScaleWrites(b->user_agent()) > 0; }, kReact, kPoll))
        << "the new leader did not act";
  }
  EXPECT_EQ(harness_->ScaleWrites(a->user_agent()), a_writes) << "the stopped leader still wrote";
  EXPECT_TRUE(WaitHealthy(absl::Seconds(10)));

  // Now a crash: A comes back (as controller-a2) and follows; B stops WITHOUT releasing the
  // Lease, as a crashed process would. B renewed at most one retry period (1 s) before it
  // stopped, so its Lease is valid until at least 5 s after the stop and at most 6 s; A2 tries
  // every 1 to 1.2 s. So A2 must not lead within 4.5 s of the crash (the Lease is still valid),
  // and must lead within 6 + 1.2 s (plus 1 s for scheduling).
  ControllerInstanceOptions a2_options = a_options;
  a2_options.identity = "controller-a2";
  ControllerInstance* a2 = StartController(a2_options);
  ASSERT_NE(a2, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a2 has tried at least once
  EXPECT_FALSE(a2->IsLeader());
  b->Stop();
  const absl::Time crashed = clock.Now();
  EXPECT_EQ(harness_->LeaseHolder("twinscale-controller"), "controller-b")
      << "the Lease was released";
  EXPECT_FALSE(Eventually([&] { return a2->IsLeader(); }, absl::Milliseconds(4500), kPoll))
      << "took over a Lease that had not expired";
  EXPECT_TRUE(Eventually([&] { return a2->IsLeader(); },
                         crashed + absl::Milliseconds(8200) - clock.Now(), kPoll))
      << "did not take over the expired Lease in time";
  std::cout << "[ info ] takeover after a crash: " << clock.Now() - crashed << "\n";
  EXPECT_EQ(harness_->LeaseHolder("twinscale-controller"), "controller-a2");
  EXPECT_TRUE(Eventually([&] { return a2->Decisions() > 0; }, absl::Seconds(5), kPoll))
      << "the new leader did not decide";
}

// 3f. A restart picks the calibration and the arrival history up from status: the previous
// process's memory. While the controller is down the status is given a distinctive calibration
// (as a previous leader that had learnt a slower fleet would have left it) and two buckets of
// arrival history ending at the last 5-minute boundary, and the spec is edited (so the new
// process must write status at its first pass). The idle fleet gives no decode traffic, so nothing
// new is folded in: the restored factors must come back exactly. A fresh decider would write 1, 1,
// 0; the history's restore is in the new process's log, and the status keeps it.
TEST_F(ControllerE2eTest, ARestartPicksTheCalibrationUpFromStatus) {
  HarnessOptions ho;
  ho.initial_replicas = 2;  // idle fleet: no trace
  ASSERT_NO_FATAL_FAILURE(StartHarness(ho));
  AutoscalerOptions ao;
  ao.min_replicas = 2;
  ASSERT_TRUE(harness_->CreateAutoscaler(ao).ok());
  ControllerInstance* first = StartController();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(WaitHealthy(absl::Seconds(20))) << Dump(harness_->Autoscaler("llama"));
  const json spec_valid_before = harness_->Condition("llama", "SpecValid");
  first->Stop();

  const std::string path = harness_->AutoscalerPath("llama");
  state::ArrivalBuckets two;
  two.start =
      absl::UnixEpoch() + absl::Floor(absl::Now() - absl::UnixEpoch(), two.bucket) - 2 * two.bucket;
  two.arrivals = {1200, 900};
  two.observed_s = {300, 300};
  const json history = {{"bucket", "5m"},
                        {"start", kube::FormatKubeTime(two.start)},
                        {"end", kube::FormatKubeTime(two.end())},
                        {"data", state::EncodeArrivalBuckets(two)}};
  ASSERT_TRUE(harness_->api()
                  .Mutate(path,
                          [&](json& o) {
                            o["status"]["calibration"] = {
                                {"prefillSpeed", 0.7}, {"decodeSpeed", 0.7}, {"updates", 50}};
                            o["status"]["arrivalHistory"] = history;
                            o["spec"]["limits"]["queueDepthPerReplica"] = 5;
                          })
                  .ok());
  const int64_t generation = (*harness_->Autoscaler("llama"))["metadata"]["generation"];

  ControllerInstance* second = StartController();
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(
      Eventually([&] { return Status().value("observedGeneration", int64_t{0}) == generation; },
                 absl::Seconds(15), kPoll))
      << Dump(harness_->Autoscaler("llama"));
  const json cal = Status()["calibration"];
  EXPECT_DOUBLE_EQ(cal.value("prefillSpeed", 0.0), 0.7) << cal;
  EXPECT_DOUBLE_EQ(cal.value("decodeSpeed", 0.0), 0.7) << cal;
  EXPECT_EQ(cal.value("updates", int64_t{0}), 50) << cal;
  EXPECT_THAT(second->LogTail(), ::testing::HasSubstr("arrival history restored from status"));
  EXPECT_EQ(Status()["arrivalHistory"]["start"], history["start"]) << Status()["arrivalHistory"];
  // The conditions did not flip across the restart: their transition times are the first
  // process's.
  EXPECT_EQ(harness_->Condition("llama", "SpecValid")["lastTransitionTime"],
            spec_valid_before["lastTransitionTime"]);
  EXPECT_TRUE(WaitHealthy(absl::Seconds(5)));
}

}  // namespace
}  // namespace twinscale::e2e
