// The Reconciler's pass, case by case, against an in-memory API (fakes::FakeKubeClient, which
// keeps the server's rules: resourceVersion preconditions, generation, /status and /scale), a
// scripted decider (the replica count each pass is told to decide) and a scripted metrics source.
// Each case states what a platform team would expect of the operator and checks it on the objects
// and requests the fake saw.
#include "controller/reconcile/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "absl/strings/str_split.h"
#include "controller/common/json_log.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/informer.h"
#include "controller/kube/leader_election.h"
#include "controller/kube/leader_pod_label.h"
#include "controller/kube/resource_ref.h"
#include "controller/outputs/decision_board.h"
#include "controller/reconcile/pod_informers.h"
#include "controller/state/arrival_history_codec.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/eventually.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::reconcile {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);

// Decides what the test says; records what it was shown. Its arrival history (5-minute buckets,
// a week) counts 10 requests a second between decisions.
class ScriptedDecider : public policy::Decider {
 public:
  // What NoteScaled was told: (at, from, to).
  using Scaled = std::tuple<absl::Time, int32_t, int32_t>;
  explicit ScriptedDecider(std::deque<int32_t>* script, std::vector<state::ClusterView>* views,
                           policy::CalibrationFactors* restored, std::vector<Scaled>* scaled,
                           std::vector<state::ArrivalBuckets>* restored_arrivals)
      : script_(script),
        views_(views),
        restored_(restored),
        scaled_(scaled),
        restored_arrivals_(restored_arrivals) {}
  void NoteScaled(absl::Time at, int32_t from, int32_t to) override {
    scaled_->emplace_back(at, from, to);
  }
  policy::Decision Decide(const state::ClusterView& view) override {
    if (last_decided_.has_value()) {
      history_.Add(*last_decided_, view.now, 10 * absl::ToDoubleSeconds(view.now - *last_decided_));
    }
    last_decided_ = view.now;
    views_->push_back(view);
    policy::Decision d;
    d.at = view.now;
    d.current = view.spec_replicas;
    d.replicas = script_->empty() ? view.spec_replicas : script_->front();
    if (!script_->empty()) script_->pop_front();
    d.reasons.push_back({"Scripted", "the test said so"});
    return d;
  }
  const state::FleetSnapshot* last_snapshot() const override { return nullptr; }
  policy::CalibrationFactors calibration() const override { return cal_; }
  void RestoreCalibration(const policy::CalibrationFactors& f) override {
    cal_ = f;
    *restored_ = f;
  }
  std::optional<double> last_prediction_error_ms() const override { return std::nullopt; }
  const state::ArrivalHistory* arrival_history() const override { return &history_; }
  void RestoreArrivals(const state::ArrivalBuckets& b) override {
    restored_arrivals_->push_back(b);
    for (size_t i = 0; i < b.size(); ++i) {
      const absl::Time from = b.start + b.bucket * static_cast<int64_t>(i);
      history_.Add(from, from + absl::Seconds(b.observed_s[i]), b.arrivals[i]);
    }
  }

 private:
  std::deque<int32_t>* script_;
  std::vector<state::ClusterView>* views_;
  policy::CalibrationFactors* restored_;
  std::vector<Scaled>* scaled_;
  std::vector<state::ArrivalBuckets>* restored_arrivals_;
  policy::CalibrationFactors cal_;
  state::ArrivalHistory history_{absl::Minutes(5), absl::Hours(24 * 7)};
  std::optional<absl::Time> last_decided_;
};

class ScriptedFactory : public policy::DeciderFactory {
 public:
  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const api::InferenceAutoscalerSpec& spec) override {
    ++created;
    if (spec.model.profile == "no-such-profile") {
      return absl::InvalidArgumentError("spec.model.profile: unknown profile \"no-such-profile\"");
    }
    return std::make_unique<ScriptedDecider>(&script, &views, &restored, &scaled,
                                             &restored_arrivals);
  }
  absl::Status Reconfigure(const api::InferenceAutoscalerSpec&, policy::Decider&) override {
    ++reconfigured;
    return absl::OkStatus();
  }
  std::deque<int32_t> script;
  std::vector<state::ClusterView> views;
  std::vector<ScriptedDecider::Scaled> scaled;
  policy::CalibrationFactors restored;
  std::vector<state::ArrivalBuckets> restored_arrivals;  // each RestoreArrivals, in order
  int created = 0, reconfigured = 0;
};

// Every pod reads fine with `running` requests in flight, unless failed: the whole read
// (fail_all) or one pod's (failing: the pod's error).
class ScriptedSource : public metrics::MetricsSource {
 public:
  explicit ScriptedSource(const Clock* clock, std::map<std::string, double>* load, bool* fail_all,
                          std::map<std::string, std::string>* failing)
      : clock_(clock), load_(load), fail_all_(fail_all), failing_(failing) {}
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>& pods) const override {
    if (*fail_all_) return absl::UnavailableError("prometheus http://prom:9090 is down");
    std::vector<metrics::PodResult> out;
    for (const auto& p : pods) {
      if (auto it = failing_->find(p.pod); it != failing_->end()) {
        out.push_back({p.pod, absl::UnavailableError(it->second)});
        continue;
      }
      metrics::PodReading r;
      r.scraped_at = clock_->Now();
      metrics::EngineObservation e;
      e.running = load_->count(p.pod) ? (*load_)[p.pod] : 1.0;
      e.waiting = 0.0;
      r.observation.engines.push_back(e);
      out.push_back({p.pod, r});
    }
    return out;
  }

 private:
  const Clock* clock_;
  std::map<std::string, double>* load_;
  bool* fail_all_;
  std::map<std::string, std::string>* failing_;
};

nlohmann::json Ias(const std::string& mode,
                   const std::string& profile = "llama-3.1-8b-h100-sxm-tp1") {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", "llama"}, {"namespace", "llm"}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
            {"mode", mode},
            {"minReplicas", 1},
            {"maxReplicas", 16},
            {"model", {{"profile", profile}}}}}};
}

nlohmann::json Deployment(int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", "vllm"}}}}},
            {"template", {{"metadata", {{"labels", {{"app", "vllm"}}}}}}}}}};
}

nlohmann::json ReadyPod(const std::string& name, int ip_suffix, const std::string& created) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "llm"},
            {"labels", {{"app", "vllm"}}},
            {"creationTimestamp", created}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", "10.0.0." + std::to_string(ip_suffix)},
            {"conditions",
             {{{"type", "PodScheduled"}, {"status", "True"}},
              {{"type", "ContainersReady"}, {"status", "True"}},
              {{"type", "Ready"},
               {"status", "True"},
               {"lastTransitionTime", "2026-11-21T09:01:10Z"}}}}}}};
}

class ReconcilerTest : public ::testing::Test {
 protected:
  // The fake stamps creationTimestamp from the clock: objects are made at 09:00:00 (kT0) and
  // each test starts at 09:10:00.
  ReconcilerTest() : clock_(kT0), api_(&clock_), pods_(&api_), events_(&api_, &clock_) {
    deps_.client = &api_;
    deps_.clock = &clock_;
    deps_.pods = &pods_;
    deps_.deciders = &factory_;
    deps_.events = &events_;
    deps_.metrics_sources =
        [this](const api::MetricsSpec&,
               const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
      return std::make_unique<ScriptedSource>(&clock_, &load_, &fail_all_, &failing_);
    };
  }
  void SetUpFleet(const std::string& mode, int replicas) {
    ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Ias(mode)).ok());
    ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(replicas)).ok());
    for (int i = 0; i < replicas; ++i) {
      ASSERT_TRUE(api_.Create(kube::kPods, "llm",
                              ReadyPod("vllm-" + std::to_string(i), 10 + i, "2026-11-21T09:00:00Z"))
                      .ok());
    }
    clock_.Set(kT0 + absl::Minutes(10));
  }
  int32_t SpecReplicas() {
    return (*api_.Get(kube::kDeployments, "llm", "vllm"))["spec"]["replicas"].get<int32_t>();
  }
  nlohmann::json Status() {
    return (*api_.Get(kube::kInferenceAutoscalers, "llm", "llama"))["status"];
  }
  nlohmann::json Condition(const std::string& type) {
    const nlohmann::json status = Status();
    for (const auto& c : status.value("conditions", nlohmann::json::array())) {
      if (c["type"] == type) return c;
    }
    return nullptr;
  }
  std::vector<nlohmann::json> Events() { return api_.List(kube::kEvents, "llm")->items; }
  int Writes(const std::string& verb, const kube::ResourceRef& ref, const std::string& sub) {
    int n = 0;
    for (const auto& r : api_.requests()) {
      if (r.verb == verb && r.resource == ref && r.subresource == sub) ++n;
    }
    return n;
  }
  // Waits (real time, up to 10 s) until the pods the reconciler's next pass reads — the watch's
  // cache, through the same informer — satisfy `done`: the watch delivers a write a moment after
  // it returns, so a test that changed pods waits for that before the next pass.
  bool WaitForPodCache(const std::function<bool(const std::vector<nlohmann::json>&)>& done) {
    return testutil::Eventually([&] {
      auto pods = pods_.Pods("llm/cache-probe", "llm", "app=vllm", clock_.Now(), absl::Seconds(15));
      return pods.ok() && done(*pods);
    });
  }
  static bool HasPod(const std::vector<nlohmann::json>& pods, const std::string& name) {
    for (const auto& p : pods) {
      if (p["metadata"]["name"] == name) return true;
    }
    return false;
  }

  ManualClock clock_;
  fakes::FakeKubeClient api_;
  PodInformers pods_;
  kube::EventRecorder events_;
  ScriptedFactory factory_;
  std::map<std::string, double> load_;
  bool fail_all_ = false;
  std::map<std::string, std::string> failing_;  // pod -> the error its read fails with
  ReconcilerDeps deps_;
};

TEST_F(ReconcilerTest, DirectScalesUpThroughScaleAndSaysWhy) {
  SetUpFleet("Direct", 3);
  factory_.script = {5};
  Reconciler r(deps_);
  const ReconcileResult res = r.Reconcile("llm", "llama");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_EQ(res.requeue_after, absl::Seconds(15));  // the spec's default interval
  EXPECT_EQ(SpecReplicas(), 5);
  EXPECT_EQ(Status()["desiredReplicas"], 5);
  EXPECT_EQ(Status()["currentReplicas"], 5);
  EXPECT_EQ(Condition("ScalingActive")["status"], "True");
  EXPECT_EQ(Condition("SpecValid")["status"], "True");
  ASSERT_EQ(factory_.views.size(), 1u);
  EXPECT_EQ(factory_.views[0].spec_replicas, 3);
  EXPECT_EQ(factory_.views[0].pods.size(), 3u);
  EXPECT_TRUE(factory_.views[0].pods[0].scrape_ok);
  EXPECT_EQ(factory_.views[0].pods[0].ready_for, absl::Seconds(530));  // 09:10:00 - 09:01:10
  bool scaled_event = false;
  for (const auto& e : Events()) {
    if (e["reason"] == "ScaledUp") {
      scaled_event = true;
      EXPECT_THAT(e["message"].get<std::string>(), HasSubstr("from 3 to 5"));
    }
  }
  EXPECT_TRUE(scaled_event);
  EXPECT_EQ(Status()["measuredWarmup"], "1m10s");  // created 09:00:00, Ready 09:01:10
  // The write that landed is the decider's scale event (its rate limits count it).
  const std::vector<ScriptedDecider::Scaled> want_scaled = {{kT0 + absl::Minutes(10), 3, 5}};
  EXPECT_EQ(factory_.scaled, want_scaled);
}

TEST_F(ReconcilerTest, AScaleWriteThatFailsIsNoScaleEvent) {
  SetUpFleet("Direct", 3);
  factory_.script = {5};
  api_.SetInterceptor([](const fakes::FakeKubeClient::Request& req) {
    if (req.verb == "patch" && req.subresource == "scale") {
      return absl::PermissionDeniedError("deployments.apps \"vllm\" is forbidden");
    }
    return absl::OkStatus();
  });
  Reconciler r(deps_);
  EXPECT_FALSE(r.Reconcile("llm", "llama").status.ok());
  EXPECT_EQ(SpecReplicas(), 3);
  EXPECT_TRUE(factory_.scaled.empty());
}

TEST_F(ReconcilerTest, AConflictOnScaleIsReReadAndRetried) {
  SetUpFleet("Direct", 3);
  factory_.script = {6};
  int failed = 0;
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& req) {
    if (req.verb == "patch" && req.subresource == "scale" && failed++ == 0) {
      return absl::AbortedError("Operation cannot be fulfilled: the object has been modified");
    }
    return absl::OkStatus();
  });
  Reconciler r(deps_);
  EXPECT_TRUE(r.Reconcile("llm", "llama").status.ok());
  EXPECT_EQ(SpecReplicas(), 6);
  const std::vector<ScriptedDecider::Scaled> want_scaled = {{kT0 + absl::Minutes(10), 3, 6}};
  EXPECT_EQ(factory_.scaled, want_scaled);
  EXPECT_EQ(Writes("patch", kube::kDeployments, "scale"), 2);
  EXPECT_EQ(Writes("get", kube::kDeployments, "scale"), 2);  // the first read and the re-read
}

TEST_F(ReconcilerTest, AnotherAutoscalerOfTheTargetStopsDirectScaling) {
  SetUpFleet("Direct", 3);
  ASSERT_TRUE(
      api_.Create(kube::kHorizontalPodAutoscalers, "llm",
                  {{"apiVersion", "autoscaling/v2"},
                   {"kind", "HorizontalPodAutoscaler"},
                   {"metadata", {{"name", "old-hpa"}, {"namespace", "llm"}}},
                   {"spec",
                    {{"scaleTargetRef",
                      {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
                     {"maxReplicas", 10}}}})
          .ok());
  factory_.script = {8};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_EQ(SpecReplicas(), 3);
  EXPECT_EQ(Writes("patch", kube::kDeployments, "scale"), 0);
  EXPECT_EQ(Condition("ScalingActive")["status"], "False");
  EXPECT_EQ(Condition("ScalingActive")["reason"], "ConflictingAutoscaler");
  EXPECT_THAT(Condition("ScalingActive")["message"].get<std::string>(),
              HasSubstr("HorizontalPodAutoscaler old-hpa"));
  EXPECT_EQ(Status()["desiredReplicas"], 8);  // still reported
  EXPECT_TRUE(factory_.scaled.empty());
}

TEST_F(ReconcilerTest, AnInvalidSpecGetsAConditionAndOneEventPerGeneration) {
  ASSERT_TRUE(
      api_.Create(kube::kInferenceAutoscalers, "llm", Ias("Direct", "no-such-profile")).ok());
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(3)).ok());
  Reconciler r(deps_);
  const ReconcileResult res = r.Reconcile("llm", "llama");
  EXPECT_FALSE(res.status.ok());
  EXPECT_EQ(Condition("SpecValid")["status"], "False");
  EXPECT_THAT(Condition("SpecValid")["message"].get<std::string>(),
              HasSubstr("spec.model.profile"));
  r.Reconcile("llm", "llama");
  int warnings = 0;
  for (const auto& e : Events()) {
    if (e["reason"] == "InvalidSpec") warnings += e.value("count", 1);
  }
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(Writes("patch", kube::kDeployments, "scale"), 0);
  EXPECT_EQ(SpecReplicas(), 3);
}

TEST_F(ReconcilerTest, AMalformedSpecNamesTheField) {
  nlohmann::json bad = Ias("Direct");
  bad["spec"]["maxReplicas"] = "lots";
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", bad).ok());
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_EQ(Condition("SpecValid")["status"], "False");
  EXPECT_THAT(Condition("SpecValid")["message"].get<std::string>(), HasSubstr("maxReplicas"));
}

TEST_F(ReconcilerTest, RecommendReportsButNeverScales) {
  SetUpFleet("Recommend", 3);
  factory_.script = {7};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_EQ(SpecReplicas(), 3);
  EXPECT_EQ(Writes("patch", kube::kDeployments, "scale"), 0);
  EXPECT_EQ(Status()["desiredReplicas"], 7);
  EXPECT_EQ(Status()["currentReplicas"], 3);
  EXPECT_TRUE(factory_.scaled.empty()) << "a decision nobody carried out is no scale event";
}

TEST_F(ReconcilerTest, StatusIsWrittenOnlyWhenSomethingMeaningfulChanged) {
  SetUpFleet("Recommend", 3);
  factory_.script = {4, 4, 4, 5};
  Reconciler r(deps_);
  for (int i = 0; i < 3; ++i) {
    r.Reconcile("llm", "llama");
    clock_.Advance(absl::Seconds(15));
  }
  EXPECT_EQ(Writes("patch", kube::kInferenceAutoscalers, "status"), 1);
  // The status write changed resourceVersion, not generation (so the watch ignores it).
  EXPECT_EQ((*api_.Get(kube::kInferenceAutoscalers, "llm", "llama"))["metadata"]["generation"], 1);
  r.Reconcile("llm", "llama");
  EXPECT_EQ(Writes("patch", kube::kInferenceAutoscalers, "status"), 2);
  EXPECT_EQ(Status()["desiredReplicas"], 5);
}

TEST_F(ReconcilerTest, ScaleInMarksTheLeastLoadedReadyPodForDeletion) {
  SetUpFleet("Direct", 3);
  load_ = {{"vllm-0", 12}, {"vllm-1", 2}, {"vllm-2", 30}};
  factory_.script = {2};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_EQ(SpecReplicas(), 2);
  const auto annotations = [&](const char* pod) {
    return (*api_.Get(kube::kPods, "llm", pod))["metadata"].value("annotations",
                                                                  nlohmann::json::object());
  };
  EXPECT_EQ(annotations("vllm-1").value("controller.kubernetes.io/pod-deletion-cost", ""), "-1000");
  EXPECT_FALSE(annotations("vllm-0").contains("controller.kubernetes.io/pod-deletion-cost"));
  EXPECT_FALSE(annotations("vllm-2").contains("controller.kubernetes.io/pod-deletion-cost"));
}

// A mark left from an earlier scale-in that didn't remove its pod (the /scale write failed, or the
// fleet was scaled up again) must not outlive it: with two pods at -1000 the ReplicaSet could
// remove the stale one, now busy, instead of the one chosen now.
TEST_F(ReconcilerTest, ScaleInClearsItsStaleMarksFromEarlierScaleIns) {
  SetUpFleet("Direct", 3);
  load_ = {{"vllm-0", 12}, {"vllm-1", 2}, {"vllm-2", 30}};
  factory_.script = {2};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  ASSERT_EQ(SpecReplicas(), 2);
  // The next pass reads the marks from the watch: wait until it has brought this one.
  ASSERT_TRUE(WaitForPodCache([](const std::vector<nlohmann::json>& pods) {
    for (const auto& p : pods) {
      if (p["metadata"]["name"] == "vllm-1") {
        return p["metadata"]
                   .value("annotations", nlohmann::json::object())
                   .value("controller.kubernetes.io/pod-deletion-cost", "") == "-1000";
      }
    }
    return false;
  }));
  // Nothing removed vllm-1 (no ReplicaSet here); the fleet grows again and vllm-1 gets busy.
  ASSERT_TRUE(
      api_.MergePatch(kube::kDeployments, "llm", "vllm", {{"spec", {{"replicas", 3}}}}).ok());
  load_ = {{"vllm-0", 1}, {"vllm-1", 40}, {"vllm-2", 30}};
  factory_.script = {2};
  clock_.Advance(absl::Seconds(15));
  r.Reconcile("llm", "llama");
  ASSERT_EQ(SpecReplicas(), 2);
  const auto cost = [&](const char* pod) {
    return (*api_.Get(kube::kPods, "llm", pod))["metadata"]
        .value("annotations", nlohmann::json::object())
        .value("controller.kubernetes.io/pod-deletion-cost", "");
  };
  EXPECT_EQ(cost("vllm-0"), "-1000");
  EXPECT_EQ(cost("vllm-1"), "") << "the earlier victim's mark was left behind";
  EXPECT_EQ(cost("vllm-2"), "");
}

TEST_F(ReconcilerTest, APodDeletedMidDecisionDoesNotStopTheScaleIn) {
  SetUpFleet("Direct", 3);
  load_ = {{"vllm-0", 12}, {"vllm-1", 2}, {"vllm-2", 30}};
  factory_.script = {2};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& req) {
    if (req.verb == "patch" && req.resource == kube::kPods) {
      return absl::NotFoundError("pods \"vllm-1\" not found");
    }
    return absl::OkStatus();
  });
  Reconciler r(deps_);
  EXPECT_TRUE(r.Reconcile("llm", "llama").status.ok());
  EXPECT_EQ(SpecReplicas(), 2);
}

TEST_F(ReconcilerTest, AFailedMetricsSourceMarksInputsStaleAndSaysSo) {
  SetUpFleet("Direct", 3);
  fail_all_ = true;
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  ASSERT_EQ(factory_.views.size(), 1u);
  for (const auto& p : factory_.views[0].pods) EXPECT_FALSE(p.scrape_ok) << p.name;
  EXPECT_EQ(Condition("MetricsFresh")["status"], "False");
  EXPECT_THAT(Condition("MetricsFresh")["message"].get<std::string>(), HasSubstr("prom:9090"));
}

// Stale metrics are an episode: a Warning event when MetricsFresh turns False or its reason
// changes, nothing while it stays so, another on the next episode after a recovery.
TEST_F(ReconcilerTest, StaleMetricsRaiseOneWarningEventPerEpisode) {
  SetUpFleet("Recommend", 3);
  Reconciler r(deps_);
  auto warnings = [&](const std::string& reason) {
    int n = 0;
    for (const auto& e : Events()) {
      if (e["reason"] == reason && e["type"] == "Warning") n += e.value("count", 1);
    }
    return n;
  };
  const std::map<std::string, std::string> every_pod_fails = {{"vllm-0", "connection refused"},
                                                              {"vllm-1", "connection refused"},
                                                              {"vllm-2", "connection refused"}};
  struct Pass {
    std::string name;
    bool source_down;
    std::map<std::string, std::string> failing;
    std::string want_condition;                  // MetricsFresh's reason
    int want_source_failed, want_scrapes_stale;  // Warning events so far
  };
  const std::vector<Pass> passes = {
      {"the source goes down: an event", true, {}, "MetricsSourceFailed", 1, 0},
      {"still down: no more", true, {}, "MetricsSourceFailed", 1, 0},
      {"still down a pass later: no more", true, {}, "MetricsSourceFailed", 1, 0},
      {"the source is back but no pod reads: another cause, an event", false, every_pod_fails,
       "ScrapesStale", 1, 1},
      {"still no pod reads: no more", false, every_pod_fails, "ScrapesStale", 1, 1},
      {"one pod of three reads again: fresh, nothing",
       false,
       {{"vllm-0", "connection refused"}, {"vllm-1", "connection refused"}},
       "Fresh",
       1,
       1},
      {"every pod reads: nothing", false, {}, "Fresh", 1, 1},
      {"the source goes down again: a new episode, an event",
       true,
       {},
       "MetricsSourceFailed",
       2,
       1},
  };
  for (const Pass& p : passes) {
    SCOPED_TRACE(p.name);
    fail_all_ = p.source_down;
    failing_ = p.failing;
    r.Reconcile("llm", "llama");
    EXPECT_EQ(Condition("MetricsFresh")["reason"], p.want_condition);
    EXPECT_EQ(warnings("MetricsSourceFailed"), p.want_source_failed);
    EXPECT_EQ(warnings("ScrapesStale"), p.want_scrapes_stale);
    clock_.Advance(absl::Seconds(15));
  }
}

// Failed pod reads are logged when the failing pods or their errors change, one Warning line
// for all of them (how many, of how many, the first few by name with their errors), and one line
// when they recover; not one line per pod per pass.
TEST_F(ReconcilerTest, FailedPodReadsAreLoggedWhenTheyChangeNotEveryPass) {
  SetUpFleet("Recommend", 3);
  std::ostringstream out;
  JsonLogger log(clock_, out);
  deps_.log = &log;
  Reconciler r(deps_);
  auto lines = [&](const std::string& msg) {
    std::vector<nlohmann::json> found;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j["msg"] == msg) found.push_back(j);
    }
    return found;
  };
  struct Pass {
    std::string name;
    std::map<std::string, std::string> failing;
    size_t want_unavailable, want_recovered;  // lines so far
  };
  const std::vector<Pass> passes = {
      {"every pod reads: nothing", {}, 0, 0},
      {"one pod fails: a line", {{"vllm-1", "connection refused"}}, 1, 0},
      {"the same pod, the same error: no line", {{"vllm-1", "connection refused"}}, 1, 0},
      {"another pod fails too: a line",
       {{"vllm-1", "connection refused"}, {"vllm-2", "timed out after 5s"}},
       2,
       0},
      {"the same two: no line",
       {{"vllm-1", "connection refused"}, {"vllm-2", "timed out after 5s"}},
       2,
       0},
      {"the first fails otherwise: a line",
       {{"vllm-1", "HTTP 500"}, {"vllm-2", "timed out after 5s"}},
       3,
       0},
      {"all read again: recovered", {}, 3, 1},
      {"still all read: nothing", {}, 3, 1},
  };
  for (const Pass& p : passes) {
    SCOPED_TRACE(p.name);
    failing_ = p.failing;
    r.Reconcile("llm", "llama");
    EXPECT_EQ(lines("pod metrics unavailable").size(), p.want_unavailable) << out.str();
    EXPECT_EQ(lines("pod metrics recovered").size(), p.want_recovered) << out.str();
    clock_.Advance(absl::Seconds(15));
  }
  const std::vector<nlohmann::json> unavailable = lines("pod metrics unavailable");
  ASSERT_EQ(unavailable.size(), 3u);
  EXPECT_EQ(unavailable[1]["level"], "warning");
  EXPECT_EQ(unavailable[1]["failing"], 2);
  EXPECT_EQ(unavailable[1]["of"], 3);
  EXPECT_EQ(unavailable[1]["pods"], "vllm-1: connection refused; vllm-2: timed out after 5s");
  EXPECT_EQ(lines("pod metrics recovered")[0]["pods"], 2);
}

TEST_F(ReconcilerTest, EachPassPublishesItsDecisionForTheOutputs) {
  SetUpFleet("KEDA", 3);
  outputs::DecisionBoard board;
  deps_.board = &board;
  factory_.script = {5, 1};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  auto e = board.Get("llm", "llama");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decision.mode, api::Mode::kKeda);
  EXPECT_EQ(e->decision.desired_replicas, 5);
  EXPECT_EQ(e->decision.current_replicas, 3);  // KEDA mode: the target is not scaled by us
  EXPECT_FALSE(e->decision.inputs_stale);
  EXPECT_EQ(e->decision.published_replicas(), 5);
  EXPECT_EQ(e->decision.decided_at, clock_.Now());
  EXPECT_EQ(SpecReplicas(), 3);

  // The metrics source fails: the inputs are stale, and the outputs hold at the current count
  // although the policy said 1.
  fail_all_ = true;
  clock_.Advance(absl::Seconds(15));
  r.Reconcile("llm", "llama");
  e = board.Get("llm", "llama");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decision.desired_replicas, 1);
  EXPECT_TRUE(e->decision.inputs_stale);
  EXPECT_EQ(e->decision.published_replicas(), 3);

  // Deleted: the next pass finds it gone and its entry goes with it.
  ASSERT_TRUE(api_.Delete(kube::kInferenceAutoscalers, "llm", "llama").ok());
  r.Reconcile("llm", "llama");
  EXPECT_FALSE(board.Get("llm", "llama").has_value());
}

TEST_F(ReconcilerTest, ForgetRemovesThePublishedDecision) {
  SetUpFleet("Recommend", 2);
  outputs::DecisionBoard board;
  deps_.board = &board;
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  ASSERT_TRUE(board.Get("llm", "llama").has_value());
  EXPECT_EQ(board.Get("llm", "llama")->decision.mode, api::Mode::kRecommend);
  r.Forget("llm", "llama");  // the informer saw the delete
  EXPECT_FALSE(board.Get("llm", "llama").has_value());
}

TEST_F(ReconcilerTest, ANewLeaderStartsFromTheCalibrationInStatus) {
  SetUpFleet("Recommend", 3);
  nlohmann::json status = {{"observedGeneration", 1},
                           {"calibration",
                            {{"prefillSpeed", 0.75},
                             {"decodeSpeed", 0.8},
                             {"updates", 40},
                             {"routerRandomShare", 0.2},
                             {"extraFrontEndSeconds", 0.030}}}};
  ASSERT_TRUE(
      api_.MergePatch(kube::kInferenceAutoscalers, "llm", "llama", {{"status", status}}, "status")
          .ok());
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_DOUBLE_EQ(factory_.restored.prefill_speed, 0.75);
  EXPECT_DOUBLE_EQ(factory_.restored.decode_speed, 0.8);
  EXPECT_EQ(factory_.restored.updates, 40);
  EXPECT_DOUBLE_EQ(factory_.restored.router_random_share, 0.2);
  EXPECT_DOUBLE_EQ(factory_.restored.extra_front_end_seconds, 0.030);
}

// Someone's edit of the status subresource left one field of the wrong type: the new leader still
// starts from the calibration beside it, and says once, as a Warning event, what it left out.
TEST_F(ReconcilerTest, ANewLeaderKeepsWhatReadsOfADamagedStatusAndSaysWhatItLeftOut) {
  SetUpFleet("Recommend", 3);
  const nlohmann::json status = {
      {"observedGeneration", 1},
      {"lastDecision", {{"time", 1}, {"replicas", 3}}},
      {"calibration", {{"prefillSpeed", 0.75}, {"decodeSpeed", 0.8}, {"updates", 40}}}};
  ASSERT_TRUE(
      api_.MergePatch(kube::kInferenceAutoscalers, "llm", "llama", {{"status", status}}, "status")
          .ok());
  Reconciler r(deps_);
  EXPECT_TRUE(r.Reconcile("llm", "llama").status.ok());
  EXPECT_DOUBLE_EQ(factory_.restored.prefill_speed, 0.75);
  EXPECT_DOUBLE_EQ(factory_.restored.decode_speed, 0.8);
  EXPECT_EQ(factory_.restored.updates, 40);
  r.Reconcile("llm", "llama");  // read once per leadership: no second event
  int unreadable = 0;
  for (const auto& e : Events()) {
    if (e["reason"] != "StatusUnreadable") continue;
    ++unreadable;
    EXPECT_EQ(e["type"], "Warning");
    EXPECT_THAT(e["message"].get<std::string>(), HasSubstr("status.lastDecision.time"));
  }
  EXPECT_EQ(unreadable, 1);
}

// The arrival history goes to status when a 5-minute bucket closes, not every pass; a new leader
// (a second Reconciler over the same API) starts its decider from those buckets, and Prometheus,
// though the spec reads it, is not asked.
TEST_F(ReconcilerTest, TheArrivalHistoryIsWrittenAsBucketsCloseAndANewLeaderRestoresIt) {
  SetUpFleet("Recommend", 3);  // 09:10:00, a bucket boundary
  ASSERT_TRUE(
      api_.MergePatch(
              kube::kInferenceAutoscalers, "llm", "llama",
              {{"spec",
                {{"metrics",
                  {{"source", "Prometheus"}, {"prometheus", {{"url", "http://prom:9090"}}}}}}}})
          .ok());
  int prometheus_asked = 0;
  deps_.prometheus_arrivals = [&](const api::MetricsSpec&, absl::Time, absl::Duration,
                                  int64_t) -> absl::StatusOr<metrics::ArrivalSeries> {
    ++prometheus_asked;
    return absl::UnavailableError("no Prometheus in this test");
  };
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  EXPECT_FALSE(Status().contains("arrivalHistory"));  // no bucket has closed
  // Passes every 15 s to 09:19:45: the bucket 09:10-09:15 closes at 09:15:00.
  int status_writes = Writes("patch", kube::kInferenceAutoscalers, "status");
  std::vector<int> writes_at;
  for (int i = 1; i < 40; ++i) {
    clock_.Advance(absl::Seconds(15));
    r.Reconcile("llm", "llama");
    const int now = Writes("patch", kube::kInferenceAutoscalers, "status");
    if (now != status_writes) writes_at.push_back(i * 15);
    status_writes = now;
  }
  EXPECT_EQ(writes_at, (std::vector<int>{300})) << "one write, as the first bucket closed";
  const nlohmann::json h = Status()["arrivalHistory"];
  EXPECT_EQ(h["bucket"], "5m");
  EXPECT_EQ(h["start"], "2026-11-21T09:10:00Z");
  EXPECT_EQ(h["end"], "2026-11-21T09:15:00Z");
  // The next closing, at 09:20:00, writes it again with two buckets.
  clock_.Advance(absl::Seconds(15));
  r.Reconcile("llm", "llama");
  EXPECT_EQ(Status()["arrivalHistory"]["end"], "2026-11-21T09:20:00Z");
  const absl::StatusOr<state::ArrivalBuckets> in_status =
      state::DecodeArrivalBuckets(absl::Minutes(5), kT0 + absl::Minutes(10),
                                  Status()["arrivalHistory"]["data"].get<std::string>());
  ASSERT_TRUE(in_status.ok()) << in_status.status();

  EXPECT_EQ(prometheus_asked, 1) << "the first leader had no history in status";

  // A new leader, a minute later.
  prometheus_asked = 0;
  clock_.Advance(absl::Minutes(1));
  Reconciler next(deps_);
  next.Reconcile("llm", "llama");
  ASSERT_EQ(factory_.restored_arrivals.size(), 1u);
  const state::ArrivalBuckets& got = factory_.restored_arrivals[0];
  EXPECT_EQ(got.start, kT0 + absl::Minutes(10));
  // 10 requests a second over each bucket, whole (the passes covered them end to end).
  EXPECT_EQ(got.arrivals, (std::vector<double>{3000, 3000}));
  EXPECT_EQ(got.observed_s, (std::vector<double>{300, 300}));
  EXPECT_EQ(got.arrivals, in_status->arrivals);
  EXPECT_EQ(prometheus_asked, 0);
}

// Without a history in status, a decider whose spec reads Prometheus starts from Prometheus'
// record: the week of closed 5-minute buckets before the pass, observed steps as whole buckets.
// A failed or empty query only leaves the history empty: the pass decides as ever. Each case is a
// new leader (a new Reconciler) over the same object; the failures come first, since they leave
// no history in status for the next leader to restore instead.
TEST_F(ReconcilerTest, WithoutAHistoryInStatusANewDeciderReadsPrometheus) {
  SetUpFleet("Recommend", 3);
  ASSERT_TRUE(
      api_.MergePatch(
              kube::kInferenceAutoscalers, "llm", "llama",
              {{"spec",
                {{"metrics",
                  {{"source", "Prometheus"},
                   {"prometheus",
                    {{"url", "http://prom:9090"}, {"labelMatchers", {{"namespace", "llm"}}}}}}}}}})
          .ok());
  clock_.Advance(absl::Seconds(7));
  const absl::Time end = kT0 + absl::Minutes(10);  // the pass is at 09:10:07, the grid ends 09:10
  struct Case {
    std::string name;
    absl::StatusOr<metrics::ArrivalSeries> answer;
    bool restored;
  };
  metrics::ArrivalSeries two;
  two.start = end - absl::Minutes(10);
  two.step = absl::Minutes(5);
  two.arrivals = {0, 2400};
  two.observed = {false, true};
  const std::vector<Case> cases = {
      {"Prometheus down", absl::UnavailableError("http://prom:9090: connection refused"), false},
      {"nothing recorded", absl::NotFoundError("no series vllm:request_prompt_tokens_count"),
       false},
      {"Prometheus answers", two, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    factory_.restored_arrivals.clear();
    factory_.views.clear();
    std::vector<std::tuple<absl::Time, absl::Duration, int64_t>> asked;
    deps_.prometheus_arrivals = [&](const api::MetricsSpec& spec, absl::Time start,
                                    absl::Duration step,
                                    int64_t steps) -> absl::StatusOr<metrics::ArrivalSeries> {
      EXPECT_EQ(spec.prometheus->label_matchers.at("namespace"), "llm");
      asked.emplace_back(start, step, steps);
      return c.answer;
    };
    Reconciler r(deps_);
    const ReconcileResult res = r.Reconcile("llm", "llama");
    EXPECT_TRUE(res.status.ok()) << res.status;
    EXPECT_EQ(factory_.views.size(), 1u) << "the pass decided";
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(std::get<0>(asked[0]), end - absl::Hours(24 * 7));
    EXPECT_EQ(std::get<1>(asked[0]), absl::Minutes(5));
    EXPECT_EQ(std::get<2>(asked[0]), 2016);
    ASSERT_EQ(factory_.restored_arrivals.size(), c.restored ? 1u : 0u);
    if (c.restored) {
      EXPECT_EQ(factory_.restored_arrivals[0].arrivals, (std::vector<double>{0, 2400}));
      EXPECT_EQ(factory_.restored_arrivals[0].observed_s, (std::vector<double>{0, 300}));
    } else {
      EXPECT_FALSE(Status().contains("arrivalHistory"));
    }
    // Asked once per decider, not every pass.
    r.Reconcile("llm", "llama");
    EXPECT_EQ(asked.size(), 1u);
  }
  // Written back at once: its buckets closed before this leader began.
  EXPECT_EQ(Status()["arrivalHistory"]["end"], "2026-11-21T09:10:00Z");
}

// A history in status that can't be restored — damaged, or older than the week the history keeps
// — is passed over (the calibration beside it still comes back), and Prometheus asked instead.
TEST_F(ReconcilerTest, AHistoryInStatusTooOldOrDamagedIsNotRestored) {
  state::ArrivalBuckets week_ago;
  week_ago.bucket = absl::Minutes(5);
  week_ago.start = kT0 - absl::Hours(24 * 8);
  week_ago.arrivals = {3000};
  week_ago.observed_s = {300};
  struct Case {
    std::string name;
    nlohmann::json history;
  };
  const std::vector<Case> cases = {
      {"damaged data",
       {{"bucket", "5m"},
        {"start", "2026-11-21T08:00:00Z"},
        {"end", "2026-11-21T09:00:00Z"},
        {"data", "not base64!"}}},
      {"ended eight days ago",
       {{"bucket", "5m"},
        {"start", "2026-11-13T09:00:00Z"},
        {"end", "2026-11-13T09:05:00Z"},
        {"data", state::EncodeArrivalBuckets(week_ago)}}},
  };
  SetUpFleet("Recommend", 3);
  ASSERT_TRUE(
      api_.MergePatch(
              kube::kInferenceAutoscalers, "llm", "llama",
              {{"spec",
                {{"metrics",
                  {{"source", "Prometheus"}, {"prometheus", {{"url", "http://prom:9090"}}}}}}}})
          .ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    factory_.restored_arrivals.clear();
    factory_.restored = {};
    const nlohmann::json status = {
        {"observedGeneration", 2},
        {"calibration", {{"prefillSpeed", 0.75}, {"decodeSpeed", 0.8}, {"updates", 40}}},
        {"arrivalHistory", c.history}};
    ASSERT_TRUE(
        api_.MergePatch(kube::kInferenceAutoscalers, "llm", "llama", {{"status", status}}, "status")
            .ok());
    int asked = 0;
    deps_.prometheus_arrivals = [&](const api::MetricsSpec&, absl::Time, absl::Duration,
                                    int64_t) -> absl::StatusOr<metrics::ArrivalSeries> {
      ++asked;
      return absl::NotFoundError("nothing recorded");
    };
    Reconciler r(deps_);
    EXPECT_TRUE(r.Reconcile("llm", "llama").status.ok());
    EXPECT_TRUE(factory_.restored_arrivals.empty());
    EXPECT_EQ(asked, 1);
    EXPECT_DOUBLE_EQ(factory_.restored.decode_speed, 0.8);
  }
}

TEST_F(ReconcilerTest, ASpecChangeReconfiguresTheSameDecider) {
  SetUpFleet("Recommend", 3);
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  ASSERT_TRUE(api_.MergePatch(kube::kInferenceAutoscalers, "llm", "llama",
                              {{"spec", {{"maxReplicas", 32}}}})
                  .ok());
  r.Reconcile("llm", "llama");
  EXPECT_EQ(factory_.created, 1);
  EXPECT_EQ(factory_.reconfigured, 1);
  EXPECT_EQ(Status()["observedGeneration"], 2);
}

TEST_F(ReconcilerTest, ADeletedObjectIsForgottenAndNotRequeued) {
  Reconciler r(deps_);
  const ReconcileResult res = r.Reconcile("llm", "gone");
  EXPECT_TRUE(res.status.ok());
  EXPECT_FALSE(res.requeue_after.has_value());
}

TEST_F(ReconcilerTest, PodsComeFromTheWatchNotFromAListPerPass) {
  SetUpFleet("Recommend", 3);
  Reconciler r(deps_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(r.Reconcile("llm", "llama").status.ok());
    clock_.Advance(absl::Seconds(15));
  }
  EXPECT_EQ(Writes("list", kube::kPods, ""), 1) << "one list, then the watch";
  ASSERT_TRUE(api_.WaitForOpenWatches(1, absl::Seconds(10)));
  EXPECT_GE(Writes("watch", kube::kPods, ""), 1);

  // A pod goes and another comes: the next pass sees both changes, through the watch.
  ASSERT_TRUE(api_.Delete(kube::kPods, "llm", "vllm-0").ok());
  ASSERT_TRUE(api_.Create(kube::kPods, "llm", ReadyPod("vllm-3", 13, "2026-11-21T09:09:00Z")).ok());
  ASSERT_TRUE(WaitForPodCache([](const std::vector<nlohmann::json>& pods) {
    return !HasPod(pods, "vllm-0") && HasPod(pods, "vllm-3");
  }));
  ASSERT_TRUE(r.Reconcile("llm", "llama").status.ok());
  std::vector<std::string> seen;
  for (const auto& p : factory_.views.back().pods) seen.push_back(p.name);
  EXPECT_EQ(seen, (std::vector<std::string>{"vllm-1", "vllm-2", "vllm-3"}));
  EXPECT_EQ(Writes("list", kube::kPods, ""), 1);
}

// While the pods' watch fails the cache may miss changes, so a pass lists the pods itself; when
// that list fails too, the pods are unknown: nothing is decided (so nothing scaled) and
// MetricsFresh says why. Once the watch is back, passes read its cache again.
TEST_F(ReconcilerTest, WhileThePodWatchFailsAPassListsThePodsAndHoldsWhenThatFailsToo) {
  SetUpFleet("Recommend", 3);
  Reconciler r(deps_);
  ASSERT_TRUE(r.Reconcile("llm", "llama").status.ok());
  ASSERT_TRUE(api_.WaitForOpenWatches(1, absl::Seconds(10)));
  std::atomic<bool> fail_lists{true};
  std::atomic<bool> fail_watches{true};
  api_.SetInterceptor([&](const fakes::FakeKubeClient::Request& req) -> absl::Status {
    const bool failing =
        (req.verb == "list" && fail_lists.load()) || (req.verb == "watch" && fail_watches.load());
    if (req.resource == kube::kPods && failing) {
      return absl::UnavailableError("dial tcp 10.96.0.1:443: connection refused");
    }
    return absl::OkStatus();
  });
  const int watches = Writes("watch", kube::kPods, "");
  api_.DropWatches();
  // The informer retries its watch after the drop (and fails): it knows it is failing by then.
  ASSERT_TRUE(testutil::Eventually([&] { return Writes("watch", kube::kPods, "") > watches; }));

  factory_.script = {7};
  clock_.Advance(absl::Seconds(15));
  const ReconcileResult failed = r.Reconcile("llm", "llama");
  EXPECT_FALSE(failed.status.ok());
  EXPECT_EQ(factory_.views.size(), 1u) << "decided without knowing the pods";
  EXPECT_EQ(Condition("MetricsFresh")["status"], "False");
  EXPECT_EQ(Condition("MetricsFresh")["reason"], "FailedListPods");
  EXPECT_THAT(Condition("MetricsFresh")["message"].get<std::string>(),
              HasSubstr("connection refused"));

  // Lists work again but the watch doesn't: a pod deleted now is seen through the list.
  fail_lists = false;
  ASSERT_TRUE(api_.Delete(kube::kPods, "llm", "vllm-2").ok());
  clock_.Advance(absl::Seconds(15));
  ASSERT_TRUE(r.Reconcile("llm", "llama").status.ok());
  ASSERT_EQ(factory_.views.size(), 2u);
  EXPECT_EQ(factory_.views.back().pods.size(), 2u);
  EXPECT_EQ(Condition("MetricsFresh")["status"], "True");

  // The watch is back: once its cache is current, a pass lists nothing.
  fail_watches = false;
  ASSERT_TRUE(testutil::Eventually([&] {
    const int lists = Writes("list", kube::kPods, "");
    return WaitForPodCache([](const auto&) { return true; }) &&
           Writes("list", kube::kPods, "") == lists;
  }));
  const int lists = Writes("list", kube::kPods, "");
  clock_.Advance(absl::Seconds(15));
  ASSERT_TRUE(r.Reconcile("llm", "llama").status.ok());
  EXPECT_EQ(Writes("list", kube::kPods, ""), lists);
  EXPECT_EQ(factory_.views.back().pods.size(), 2u);
}

}  // namespace
}  // namespace twinscale::reconcile

namespace twinscale::reconcile {
namespace {

// deploy/controller/rbac.yaml as (apiGroup, resource, verb) triples.
std::set<std::tuple<std::string, std::string, std::string>> RbacGrants() {
  std::ifstream f("deploy/controller/rbac.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  std::set<std::tuple<std::string, std::string, std::string>> grants;
  // yaml-cpp 0.7's LoadAll can loop on some inputs: split the documents ourselves.
  for (const std::string& doc : std::vector<std::string>(absl::StrSplit(ss.str(), "\n---\n"))) {
    YAML::Node n = YAML::Load(doc);
    if (!n["rules"]) continue;
    for (const auto& rule : n["rules"]) {
      for (const auto& g : rule["apiGroups"]) {
        for (const auto& r : rule["resources"]) {
          for (const auto& v : rule["verbs"]) {
            grants.emplace(g.as<std::string>(), r.as<std::string>(), v.as<std::string>());
          }
        }
      }
    }
  }
  return grants;
}

// Every request the controller makes in a busy life — passes that scale up, scale in (marking a
// victim), report an invalid spec, record events, plus leader election, the leader label on its
// own pod and the informer — is allowed by the shipped RBAC, and the RBAC grants nothing the
// controller never asks for.
TEST_F(ReconcilerTest, TheShippedRbacAllowsExactlyWhatTheControllerDoes) {
  SetUpFleet("Direct", 3);
  load_ = {{"vllm-0", 12}, {"vllm-1", 2}, {"vllm-2", 30}};
  factory_.script = {5, 2};
  Reconciler r(deps_);
  r.Reconcile("llm", "llama");
  clock_.Advance(absl::Seconds(15));
  r.Reconcile("llm", "llama");
  ASSERT_TRUE(api_.MergePatch(kube::kInferenceAutoscalers, "llm", "llama",
                              {{"spec", {{"model", {{"profile", "no-such-profile"}}}}}})
                  .ok());
  Reconciler fresh(deps_);
  fresh.Reconcile("llm", "llama");
  Reconciler restarted(deps_);  // the same InvalidSpec event again: aggregated (a count bump)
  restarted.Reconcile("llm", "llama");
  auto elector = kube::LeaderElector::Create(&api_, &clock_,
                                             {"twinscale-system", "twinscale-controller", "a"});
  ASSERT_TRUE(elector.ok()) << elector.status();
  EXPECT_TRUE((*elector)->TryAcquireOrRenew());
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE((*elector)->TryAcquireOrRenew());
  EXPECT_TRUE((*elector)->Release().ok());
  // The leader labels its own pod, and takes the label off when it steps down.
  ASSERT_TRUE(api_.Create(kube::kPods, "twinscale-system",
                          {{"metadata", {{"name", "twinscale-controller-0"}}}})
                  .ok());
  {
    kube::LeaderPodLabelOptions lo;
    lo.pod_namespace = "twinscale-system";
    lo.pod_name = "twinscale-controller-0";
    kube::LeaderPodLabel label(&api_, lo);
    label.Set(true);
    ASSERT_TRUE(label.Start().ok());
    label.Set(false);
    EXPECT_TRUE(label.Stop(absl::Seconds(5)).ok());
  }
  kube::InformerOptions io;
  io.resource = kube::kInferenceAutoscalers;
  kube::Informer informer(&api_, io);
  informer.Start();
  EXPECT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  // The autoscalers' watch and the pods' (started by the passes above).
  ASSERT_TRUE(api_.WaitForOpenWatches(2, absl::Seconds(10)));
  informer.Stop();

  const auto grants = RbacGrants();
  std::set<std::tuple<std::string, std::string, std::string>> used;
  for (const auto& req : api_.requests()) {
    // The test's own set-up writes (creating the fleet, editing the spec) are not the controller's.
    if (req.verb == "create" &&
        (req.resource == kube::kDeployments || req.resource == kube::kPods ||
         req.resource == kube::kInferenceAutoscalers ||
         req.resource == kube::kHorizontalPodAutoscalers)) {
      continue;
    }
    if (req.verb == "patch" && req.resource == kube::kInferenceAutoscalers &&
        req.subresource.empty()) {
      continue;
    }
    const std::string resource = req.subresource.empty()
                                     ? req.resource.resource
                                     : req.resource.resource + "/" + req.subresource;
    used.emplace(req.resource.group, resource, req.verb);
    EXPECT_TRUE(grants.count({req.resource.group, resource, req.verb}))
        << "RBAC does not allow " << req.verb << " " << req.resource.group << "/" << resource;
  }
  // Nothing granted that the controller never needed (StatefulSets and LeaderWorkerSets share
  // the Deployment's code path; "update" is the PUT twin of "patch" for /scale and /status).
  for (const auto& [group, resource, verb] : grants) {
    const bool exercised = used.count({group, resource, verb}) != 0;
    const bool same_path_as_exercised =
        resource == "statefulsets/scale" || resource == "leaderworkersets/scale" ||
        (verb == "update" &&
         (resource == "deployments/scale" || resource == "inferenceautoscalers/status")) ||
        (resource == "inferenceautoscalers/status" && verb == "get");
    EXPECT_TRUE(exercised || same_path_as_exercised)
        << "RBAC grants " << verb << " " << group << "/" << resource
        << " but the controller never uses it";
  }
}

}  // namespace
}  // namespace twinscale::reconcile
