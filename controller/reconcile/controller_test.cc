// The Controller against the in-memory API (fakes::FakeKubeClient): its informer must watch the
// InferenceAutoscalers themselves, so an object that appears is reconciled without anyone asking,
// and with leader election only the Lease holder acts. The targets' pods are watched as well: a
// pod that becomes Ready or goes away wakes its autoscaler long before a retry would, pod churn
// never makes passes come faster than one per interval, and a watch that expires (410) re-lists
// without losing a pod. The decider is scripted (3 replicas unless a test says otherwise) and
// records what each pass showed it; the Reconciler is the real one. Real time, short waits (polls
// with a deadline).
#include "controller/reconcile/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <streambuf>
#include <string>

#include "absl/synchronization/mutex.h"
#include "controller/common/json_log.h"
#include "controller/common/metrics_registry.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/resource_ref.h"
#include "controller/outputs/decision_board.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/pod_informers.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/autoscaler_object.h"
#include "tests/util/eventually.h"

namespace twinscale::reconcile {
namespace {

using nlohmann::json;
using testutil::Eventually;

// What one pass showed the decider: when, and each pod's stage by name.
struct SeenPass {
  absl::Time at;
  std::map<std::string, state::PodView::Stage> pods;
};

// Shared by the deciders a factory makes: the count to decide, and every pass seen (passes run on
// the controller's worker threads, tests read from theirs).
struct DecisionLog {
  std::atomic<int32_t> decide{3};
  mutable absl::Mutex mu;
  std::vector<SeenPass> passes ABSL_GUARDED_BY(mu);

  std::vector<SeenPass> Passes() const {
    absl::MutexLock lock(&mu);
    return passes;
  }
  size_t Count() const {
    absl::MutexLock lock(&mu);
    return passes.size();
  }
};

class FixedDecider : public policy::Decider {
 public:
  explicit FixedDecider(DecisionLog* log) : log_(log) {}
  policy::Decision Decide(const state::ClusterView& view) override {
    SeenPass seen;
    seen.at = view.now;
    for (const state::PodView& p : view.pods) seen.pods[p.name] = p.stage;
    {
      absl::MutexLock lock(&log_->mu);
      log_->passes.push_back(std::move(seen));
    }
    policy::Decision d;
    d.at = view.now;
    d.current = view.spec_replicas;
    d.replicas = log_->decide.load();
    d.reasons.push_back({"Fixed", "the test decides"});
    return d;
  }
  void NoteScaled(absl::Time, int32_t, int32_t) override {}
  const state::FleetSnapshot* last_snapshot() const override { return nullptr; }
  policy::CalibrationFactors calibration() const override { return {}; }
  void RestoreCalibration(const policy::CalibrationFactors&) override {}
  std::optional<double> last_prediction_error_ms() const override { return std::nullopt; }

 private:
  DecisionLog* log_;
};

class FixedFactory : public policy::DeciderFactory {
 public:
  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const api::InferenceAutoscalerSpec&) override {
    return std::make_unique<FixedDecider>(&log);
  }
  absl::Status Reconfigure(const api::InferenceAutoscalerSpec&, policy::Decider&) override {
    return absl::OkStatus();
  }
  DecisionLog log;
};

// Reads nothing (every pod unread); runs the test's hook first, if any: a read is the middle of
// a pass, where a test stages a pod that vanishes mid-decision.
class NoPodsSource : public metrics::MetricsSource {
 public:
  explicit NoPodsSource(std::function<void()>* on_read) : on_read_(on_read) {}
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>&) const override {
    if (on_read_ != nullptr && *on_read_) (*on_read_)();
    return std::vector<metrics::PodResult>{};
  }

 private:
  std::function<void()>* on_read_;
};

json Ias() {
  json a = testutil::LlamaAutoscaler(8);
  a["spec"]["metrics"] = {{"interval", "1s"}, {"staleAfter", "5s"}};
  return a;
}

json Deployment(int replicas = 1) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
          {"spec", {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", "vllm"}}}}}}}};
}

// A pod of the Deployment: Ready, or scheduled with its containers still starting (Loading).
json Pod(const std::string& name, bool ready) {
  const char* r = ready ? "True" : "False";
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "llm"}, {"labels", {{"app", "vllm"}}}}},
      {"status",
       {{"phase", "Running"},
        {"podIP", "10.0.0.1"},
        {"conditions",
         {{{"type", "PodScheduled"}, {"status", "True"}},
          {{"type", "ContainersReady"}, {"status", r}},
          {{"type", "Ready"}, {"status", r}, {"lastTransitionTime", "2026-11-21T09:01:10Z"}}}}}}};
}

// The /status patch that makes a pod Ready or not (what the kubelet writes).
json ReadyPatch(bool ready) {
  const char* r = ready ? "True" : "False";
  return {
      {"status",
       {{"conditions",
         {{{"type", "PodScheduled"}, {"status", "True"}},
          {{"type", "ContainersReady"}, {"status", r}},
          {{"type", "Ready"}, {"status", r}, {"lastTransitionTime", "2026-11-21T09:01:10Z"}}}}}}};
}

json IasWithInterval(const std::string& mode, const std::string& interval) {
  json ias = Ias();
  ias["spec"]["mode"] = mode;
  ias["spec"]["metrics"]["interval"] = interval;
  ias["spec"]["metrics"]["staleAfter"] = "30s";
  return ias;
}

// A log sink a test can read while the controller's threads write to it.
class LockedLog : public std::streambuf {
 public:
  std::string text() const {
    absl::MutexLock lock(&mu_);
    return text_;
  }
  // Lines containing `needle`.
  int Count(std::string_view needle) const {
    int n = 0;
    const std::string all = text();
    for (size_t at = all.find(needle); at != std::string::npos; at = all.find(needle, at + 1)) ++n;
    return n;
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    absl::MutexLock lock(&mu_);
    text_.append(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      absl::MutexLock lock(&mu_);
      text_.push_back(static_cast<char>(c));
    }
    return c;
  }

 private:
  mutable absl::Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
};

class ControllerTest : public ::testing::Test {
 protected:
  // The controller, its reconciler and the fake API read real time, or `manual_clock_` when asked
  // (ControllerOnManualClockTest).
  explicit ControllerTest(bool manual_clock = false)
      : clock_(manual_clock ? static_cast<const Clock*>(&manual_clock_) : &real_clock_),
        api_(clock_),
        pods_(&api_) {
    deps_.client = &api_;
    deps_.clock = clock_;
    deps_.pods = &pods_;
    deps_.deciders = &factory_;
    deps_.metrics_sources =
        [this](const api::MetricsSpec&,
               const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
      return std::make_unique<NoPodsSource>(&on_read_);
    };
  }
  // Passes of autoscaler llm/llama so far: each begins by reading the object.
  int Passes() {
    int n = 0;
    for (const auto& r : api_.requests()) {
      if (r.verb == "get" && r.resource == kube::kInferenceAutoscalers && r.name == "llama") ++n;
    }
    return n;
  }
  // Requests for the leader election Lease so far: each election attempt reads it, some write.
  int LeaseRequests() {
    int n = 0;
    for (const auto& r : api_.requests()) n += r.resource == kube::kLeases;
    return n;
  }
  int PodRequests(const std::string& verb) {
    int n = 0;
    for (const auto& r : api_.requests()) {
      if (r.verb == verb && r.resource == kube::kPods) ++n;
    }
    return n;
  }
  // The last pass the decider saw, if any.
  std::optional<SeenPass> LastPass() {
    std::vector<SeenPass> passes = factory_.log.Passes();
    if (passes.empty()) return std::nullopt;
    return passes.back();
  }
  // Creates the Deployment with `ready` + `starting` pods (vllm-0, vllm-1, ...; the Ready ones
  // first) and autoscaler llama with `interval`.
  void SetUpFleet(int ready, int starting, const std::string& interval) {
    ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(ready + starting)).ok());
    for (int i = 0; i < ready + starting; ++i) {
      ASSERT_TRUE(
          api_.Create(kube::kPods, "llm", Pod("vllm-" + std::to_string(i), i < ready)).ok());
    }
    ASSERT_TRUE(
        api_.Create(kube::kInferenceAutoscalers, "llm", IasWithInterval("Direct", interval)).ok());
  }
  int32_t SpecReplicas() {
    return (*api_.Get(kube::kDeployments, "llm", "vllm"))["spec"].value("replicas", 0);
  }
  int ScalePatches() {
    int n = 0;
    for (const auto& r : api_.requests()) {
      if (r.verb == "patch" && r.subresource == "scale") ++n;
    }
    return n;
  }

  // Starts controller_: the fixture's reconciler over its fake API, without leader election.
  absl::Status StartController() {
    reconciler_ = std::make_unique<Reconciler>(deps_);
    ControllerOptions options;
    options.leader_election = false;
    controller_ = std::make_unique<Controller>(options, &api_, reconciler_.get(), &pods_, clock_,
                                               nullptr, nullptr);
    return controller_->Start();
  }

  RealClock real_clock_;
  ManualClock manual_clock_{absl::FromUnixSeconds(1795251600)};  // 2026-11-21T09:00:00Z
  const Clock* const clock_;
  fakes::FakeKubeClient api_;
  PodInformers pods_;
  FixedFactory factory_;
  std::function<void()> on_read_;  // set before the controller starts, or not at all
  ReconcilerDeps deps_;
  // Last, so they go first: the controller before the reconciler and everything they use.
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(ControllerTest, AnAutoscalerThatAppearsIsFoundByTheInformerAndReconciled) {
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment()).ok());
  ASSERT_TRUE(StartController().ok());
  Controller& controller = *controller_;
  ASSERT_TRUE(Eventually([&] { return controller.Synced(); }, absl::Seconds(5)));
  // Created after the first list: only the watch of InferenceAutoscalers can bring it.
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Ias()).ok());
  EXPECT_TRUE(Eventually([&] { return SpecReplicas() == 3; }, absl::Seconds(5)))
      << "the controller never reconciled the new InferenceAutoscaler";
  bool listed_autoscalers = false;
  for (const auto& r : api_.requests()) {
    if (r.verb == "list" && r.resource == kube::kInferenceAutoscalers) listed_autoscalers = true;
  }
  EXPECT_TRUE(listed_autoscalers);
  controller.Stop();
}

TEST_F(ControllerTest, AFollowerDoesNotActWhileAnotherReplicaHoldsTheLease) {
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment()).ok());
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Ias()).ok());
  // A peer holds a fresh lease, valid for a minute.
  const std::string now = kube::FormatMicroTime(clock_->Now());
  ASSERT_TRUE(api_.Create(kube::kLeases, "llm",
                          {{"apiVersion", "coordination.k8s.io/v1"},
                           {"kind", "Lease"},
                           {"metadata", {{"name", "twinscale"}, {"namespace", "llm"}}},
                           {"spec",
                            {{"holderIdentity", "peer"},
                             {"leaseDurationSeconds", 60},
                             {"acquireTime", now},
                             {"renewTime", now},
                             {"leaseTransitions", 0}}}})
                  .ok());
  // The gRPC outputs' board, wired as `twinscale controller` wires it: a follower serves nothing.
  outputs::DecisionBoard board;
  board.SetServing(false);
  deps_.board = &board;
  absl::Mutex hook_mu;
  std::vector<bool> hook_calls;
  Reconciler reconciler(deps_);
  MetricsRegistry registry;
  auto metrics = ControllerMetrics::Register(registry);
  ASSERT_TRUE(metrics.ok());
  ControllerOptions options;
  options.lease = {
      "llm", "twinscale", "me", absl::Seconds(3), absl::Seconds(2), absl::Milliseconds(200)};
  options.on_leadership_change = [&](bool leading) {
    board.SetServing(leading);
    absl::MutexLock lock(&hook_mu);
    hook_calls.push_back(leading);
  };
  auto hooks = [&] {
    absl::MutexLock lock(&hook_mu);
    return hook_calls;
  };
  Controller controller(options, &api_, &reconciler, &pods_, clock_, nullptr, &*metrics);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(Eventually([&] { return controller.Synced(); }, absl::Seconds(5)));
  const int attempts = LeaseRequests();
  ASSERT_TRUE(Eventually([&] { return LeaseRequests() >= attempts + 5; }))
      << "the follower stopped trying for the Lease";
  EXPECT_FALSE(controller.IsLeader());
  EXPECT_TRUE(hooks().empty());  // never told "leading"
  EXPECT_FALSE(board.serving());
  EXPECT_EQ(ScalePatches(), 0);
  EXPECT_EQ(SpecReplicas(), 1);
  // A follower says so on /metrics (a missing series can't be alerted on).
  EXPECT_NE(registry.Render().find("\ntwinscale_leader 0\n"), std::string::npos)
      << registry.Render();

  // The peer gives the lease up: this replica takes it and acts.
  ASSERT_TRUE(api_.MergePatch(kube::kLeases, "llm", "twinscale",
                              {{"spec", {{"holderIdentity", ""}, {"leaseDurationSeconds", 1}}}})
                  .ok());
  EXPECT_TRUE(Eventually([&] { return controller.IsLeader(); }, absl::Seconds(5)));
  EXPECT_TRUE(Eventually([&] { return SpecReplicas() == 3; }, absl::Seconds(5)));
  EXPECT_NE(registry.Render().find("\ntwinscale_leader 1\n"), std::string::npos);
  // The leader serves, and its passes publish.
  EXPECT_EQ(hooks(), std::vector<bool>{true});
  EXPECT_TRUE(board.serving());
  EXPECT_TRUE(Eventually([&] { return board.Get("llm", "llama").has_value(); }, absl::Seconds(5)));
  EXPECT_EQ(board.Get("llm", "llama")->decision.desired_replicas, 3);
  // Stopping (SIGTERM) stops leading: the outputs stop serving, with nothing left published.
  controller.Stop();
  EXPECT_EQ(hooks(), (std::vector<bool>{true, false}));
  EXPECT_FALSE(board.serving());
  EXPECT_TRUE(board.List().empty());
}

// The Role lacks leases create/update (403 Forbidden): the replica can't lead, says so once (not
// at every retry, 200 ms apart here) and is not ready (/readyz: 503) until the Lease is written.
TEST_F(ControllerTest, ARefusedLeaseIsLoggedOnceAndMakesTheReplicaUnready) {
  std::atomic<bool> refuse{true};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& r) {
    const bool write = r.verb == "create" || r.verb == "update";
    if (refuse.load() && r.resource == kube::kLeases && write) {
      return kube::KubeApiError(403, "Forbidden",
                                "leases.coordination.k8s.io is forbidden: User "
                                "\"system:serviceaccount:llm:twinscale\" cannot create resource "
                                "\"leases\" in API group \"coordination.k8s.io\"",
                                "creating lease");
    }
    return absl::OkStatus();
  });
  LockedLog sink;
  std::ostream out(&sink);
  JsonLogger log(*clock_, out);
  Reconciler reconciler(deps_);
  ControllerOptions options;
  options.lease = {
      "llm", "twinscale", "me", absl::Seconds(3), absl::Seconds(2), absl::Milliseconds(200)};
  Controller controller(options, &api_, &reconciler, &pods_, clock_, &log, nullptr);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(Eventually([&] { return !controller.LeaseHealth().ok(); }, absl::Seconds(5)));
  const int attempts = LeaseRequests();
  ASSERT_TRUE(Eventually([&] { return LeaseRequests() >= attempts + 5; }))  // all refused
      << "the replica stopped trying for the Lease";
  EXPECT_FALSE(controller.IsLeader());
  const absl::Status health = controller.LeaseHealth();
  EXPECT_EQ(health.code(), absl::StatusCode::kPermissionDenied) << health;
  EXPECT_NE(health.message().find("llm/twinscale"), std::string::npos) << health;
  EXPECT_NE(health.message().find("Forbidden"), std::string::npos) << health;
  EXPECT_EQ(sink.Count("cannot read or write the leader election Lease"), 1) << sink.text();
  EXPECT_EQ(sink.Count("\"level\":\"warning\",\"msg\":\"cannot read or write"), 1);
  EXPECT_EQ(sink.Count("\"reason\":\"Forbidden\""), 1) << sink.text();

  // The Role is fixed: the Lease is written, the replica leads and is ready again.
  refuse = false;
  EXPECT_TRUE(Eventually([&] { return controller.IsLeader(); }, absl::Seconds(5)));
  EXPECT_TRUE(controller.LeaseHealth().ok()) << controller.LeaseHealth();
  EXPECT_EQ(sink.Count("leader election Lease reachable again"), 1) << sink.text();
  controller.Stop();
  EXPECT_EQ(sink.Count("cannot read or write the leader election Lease"), 1) << sink.text();
}

// The controller on a ManualClock: its passes are due by the clock alone (the work queue's delayed
// keys, the pods' wake-ups), so a test can say exactly when each one runs.
class ControllerOnManualClockTest : public ControllerTest {
 protected:
  ControllerOnManualClockTest() : ControllerTest(/*manual_clock=*/true) {}
  void Advance(absl::Duration d) { manual_clock_.Advance(d); }
  // Writes a change to pod vllm-0 that matters to no pass (an annotation) and waits until the
  // controller's pod cache has it: the pods' watch then has delivered, and its handler reported,
  // every change written before. (The cache is read as autoscaler llm/llama's last pass read it:
  // the same key, start and interval.)
  bool PodChangesDelivered() {
    static int sentinel = 0;
    const std::string value = std::to_string(++sentinel);
    if (!api_.MergePatch(kube::kPods, "llm", "vllm-0",
                         {{"metadata", {{"annotations", {{"test/sentinel", value}}}}}})
             .ok()) {
      return false;
    }
    return Eventually([&] {
      const std::optional<SeenPass> last = LastPass();
      if (!last.has_value()) return false;
      auto pods = pods_.Pods("llm/llama", "llm", "app=vllm", last->at, absl::Seconds(1));
      if (!pods.ok()) return false;
      for (const json& p : *pods) {
        if (p["metadata"].value("name", "") != "vllm-0") continue;
        return p["metadata"].value("annotations", json::object()).value("test/sentinel", "") ==
               value;
      }
      return false;
    });
  }
};

// A pod flapping between Ready and not Ready — hundreds of watch events, each a stage change that
// matters — must not become hundreds of passes: a pod change only brings a pass forward, never to
// less than an interval (1 s) after the previous one. With the clock standing still however many
// changes come, the next pass runs when the clock reaches one interval after the last, and the one
// after it an interval later: one pass per interval of clock time.
TEST_F(ControllerOnManualClockTest, PodChurnNeverMakesPassesComeFasterThanOnePerInterval) {
  ASSERT_NO_FATAL_FAILURE(SetUpFleet(2, 0, "1s"));
  ASSERT_TRUE(StartController().ok());
  Controller& controller = *controller_;
  ASSERT_TRUE(Eventually([&] { return factory_.log.Count() >= 1; }));  // the first pass, at once
  // Passes by the clock time the decider saw them at, in (from, to].
  const absl::Time start = clock_->Now();
  auto passes_in = [&](absl::Time from, absl::Time to) {
    int n = 0;
    for (const SeenPass& p : factory_.log.Passes()) n += p.at > from && p.at <= to;
    return n;
  };
  int flips = 0;
  auto churn = [&] {
    for (int i = 0; i < 150; ++i, ++flips) {
      ASSERT_TRUE(
          api_.MergePatch(kube::kPods, "llm", "vllm-1", ReadyPatch(flips % 2 == 1), "status").ok());
    }
  };
  ASSERT_NO_FATAL_FAILURE(churn());
  ASSERT_TRUE(PodChangesDelivered());
  Advance(absl::Seconds(1));  // one interval after the first pass: the next is due
  ASSERT_TRUE(Eventually([&] { return passes_in(start, start + absl::Seconds(1)) >= 1; }));
  ASSERT_NO_FATAL_FAILURE(churn());
  ASSERT_TRUE(PodChangesDelivered());
  Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually(
      [&] { return passes_in(start + absl::Seconds(1), start + absl::Seconds(2)) >= 1; }));
  controller.Stop();
  // However many pod changes came, one pass per interval of clock time: none more at the start
  // (the first, and one its pods' first list may have made due then), then one a second.
  EXPECT_LE(passes_in(start - absl::Nanoseconds(1), start), 2);
  EXPECT_EQ(passes_in(start, start + absl::Seconds(1)), 1);
  EXPECT_EQ(passes_in(start + absl::Seconds(1), start + absl::Seconds(2)), 1);
  const int passes = passes_in(start, clock_->Now());
  const double seconds = absl::ToDoubleSeconds(clock_->Now() - start);
  ASSERT_GT(flips, 100);
  EXPECT_LE(passes, static_cast<int>(seconds) + 1)
      << passes << " passes in " << seconds << " s of " << flips << " pod changes";
  EXPECT_GE(passes, 1) << "the periodic passes stopped";
}

// After a failed pass the next is a retry 10 s away. A pod that becomes Ready meanwhile brings it
// forward to one interval (1 s) after the failed pass: the new capacity is seen one second of
// clock time later, through the watch, not at the retry.
TEST_F(ControllerOnManualClockTest, APodBecomingReadyWakesItsAutoscalerLongBeforeTheRetry) {
  ASSERT_NO_FATAL_FAILURE(SetUpFleet(1, 1, "1s"));
  std::atomic<bool> fail_scale{false};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& r) -> absl::Status {
    if (r.verb == "get" && r.subresource == "scale" && fail_scale.exchange(false)) {
      return absl::UnavailableError("the API server is restarting");
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(StartController().ok());
  Controller& controller = *controller_;
  auto last_saw = [&](state::PodView::Stage stage) {
    auto p = LastPass();
    return p.has_value() && p->pods.count("vllm-1") != 0 && p->pods.at("vllm-1") == stage;
  };
  // The first pass saw vllm-1 starting; so does the next, one interval later (by then whatever
  // the pods' first list made due has run).
  ASSERT_TRUE(Eventually([&] { return last_saw(state::PodView::Stage::kLoading); }));
  const absl::Time start = clock_->Now();
  Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] {
    const std::optional<SeenPass> p = LastPass();
    return p.has_value() && p->at == start + absl::Seconds(1);
  }));
  ASSERT_TRUE(last_saw(state::PodView::Stage::kLoading));
  // The next, another interval later, fails: its retry is 10 s away.
  fail_scale = true;
  Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return !fail_scale.load(); }, absl::Seconds(5)));  // it failed
  const absl::Time failed = clock_->Now();
  const int passes = Passes();
  ASSERT_TRUE(api_.MergePatch(kube::kPods, "llm", "vllm-1", ReadyPatch(true), "status").ok());
  // One interval after the failed pass.
  Advance(absl::Seconds(1));
  EXPECT_TRUE(Eventually([&] { return last_saw(state::PodView::Stage::kReady); }, absl::Seconds(6)))
      << "the pod became Ready but no pass saw it before the 10 s retry";
  EXPECT_EQ(Passes(), passes + 1) << "one pass, the pod's wake-up";
  EXPECT_LT(clock_->Now() - failed, absl::Seconds(8));
  controller.Stop();
}

// The pass that scales up loses a pod while it reads metrics (deleted mid-decision) and then
// fails to write /scale: its retry is 10 s away. The pod's deletion, seen by the watch, wakes the
// autoscaler one interval after that pass: the scale-up is written within seconds, by a pass that
// no longer counts the vanished pod.
TEST_F(ControllerTest, APodDeletedMidDecisionBringsTheRetryForward) {
  ASSERT_NO_FATAL_FAILURE(SetUpFleet(3, 0, "1s"));
  factory_.log.decide = 3;  // hold while the fleet settles
  std::atomic<bool> delete_on_read{false};
  on_read_ = [&] {
    if (delete_on_read.exchange(false)) (void)api_.Delete(kube::kPods, "llm", "vllm-2");
  };
  std::atomic<bool> fail_patch{false};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& r) -> absl::Status {
    if (r.verb == "patch" && r.subresource == "scale" && fail_patch.exchange(false)) {
      return absl::UnavailableError("etcd leader changed");
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(StartController().ok());
  Controller& controller = *controller_;
  ASSERT_TRUE(Eventually([&] { return factory_.log.Count() >= 2; }, absl::Seconds(10)));
  ASSERT_EQ(LastPass()->pods.size(), 3u);

  fail_patch = true;
  delete_on_read = true;
  factory_.log.decide = 4;
  ASSERT_TRUE(Eventually([&] { return !fail_patch.load(); }, absl::Seconds(5)));  // it failed
  ASSERT_FALSE(delete_on_read.load());
  EXPECT_TRUE(Eventually([&] { return SpecReplicas() == 4; }, absl::Seconds(6)))
      << "the scale-up waited for the 10 s retry";
  std::optional<SeenPass> last = LastPass();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->pods.count("vllm-2"), 0u);
  EXPECT_EQ(last->pods.size(), 2u);
  controller.Stop();
}

// The pods' watch is down while pods change (one deleted, one added, one no longer Ready) and the
// server compacts its history meanwhile: the watch's resume gets 410 Expired, the informer lists
// again, and the passes see exactly the pods that exist — the unchanged one included — from the
// watch's cache again, with no list per pass once it is back.
TEST_F(ControllerTest, AnExpiredPodWatchReListsWithoutLosingPods) {
  using Stage = state::PodView::Stage;
  ASSERT_NO_FATAL_FAILURE(SetUpFleet(3, 0, "1s"));
  std::atomic<bool> watch_down{false};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& r) -> absl::Status {
    if (r.verb == "watch" && r.resource == kube::kPods && watch_down.load()) {
      return absl::UnavailableError("connection refused");
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(StartController().ok());
  Controller& controller = *controller_;
  ASSERT_TRUE(Eventually([&] { return factory_.log.Count() >= 3; }, absl::Seconds(10)));
  EXPECT_EQ(PodRequests("list"), 1) << "the pods are listed once, then watched";

  watch_down = true;
  api_.DropWatches();
  ASSERT_TRUE(api_.Delete(kube::kPods, "llm", "vllm-0").ok());
  ASSERT_TRUE(api_.Create(kube::kPods, "llm", Pod("vllm-3", true)).ok());
  ASSERT_TRUE(api_.MergePatch(kube::kPods, "llm", "vllm-1", ReadyPatch(false), "status").ok());
  api_.Compact();
  watch_down = false;

  const std::map<std::string, Stage> want = {
      {"vllm-1", Stage::kLoading}, {"vllm-2", Stage::kReady}, {"vllm-3", Stage::kReady}};
  // Back on the watch: two passes in a row that saw `want` and listed nothing.
  bool settled = false;
  RealClock real;
  const absl::Time deadline = real.Now() + absl::Seconds(20);
  while (!settled && real.Now() < deadline) {
    const int lists = PodRequests("list");
    const size_t count = factory_.log.Count();
    if (!Eventually([&] { return factory_.log.Count() >= count + 2; }, absl::Seconds(5))) break;
    settled = PodRequests("list") == lists && LastPass()->pods == want;
  }
  EXPECT_TRUE(settled) << "pods seen: " << LastPass()->pods.size();
  EXPECT_GE(PodRequests("list"), 2) << "no list after the expiry";
  controller.Stop();
}

}  // namespace
}  // namespace twinscale::reconcile
