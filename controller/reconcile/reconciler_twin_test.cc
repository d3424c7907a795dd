// The Reconciler with twinscale's real decision chain (twin::TwinDeciderFactory over the embedded
// profiles: snapshot, policy, the twin's what-ifs) against the in-memory API, passes driven by a
// manual clock. Scenarios whose outcome is the policy's rules seen from outside — in the
// autoscaler's status, its events and the target's /scale — rather than a scripted decision.
//
// Pods that never become Ready (docs/architecture.md "Failure handling"): a Direct-mode
// autoscaler scales up under load, and the new pods stay Ready=False (their containers never
// start serving). The rule under test (controller/policy/observed_question.h): a starting pod
// counts as capacity arriving with its remaining warm-up until it is older than the p99 warm-up,
// then it holds a slot of spec.replicas but counts as nothing. The test's expectations come from
// that rule and the spec, not from the twin's numbers:
//   - the deadline is max(the profile's p99 warm-up, 2 x spec.warmup.expected). The profile
//     (llama-3.1-8b-h100-sxm-tp1) has loading median 20 s with p90/median 1.5 and warming-up median
//     25 s with 1.6; its p99 is each median x (p90/median)^(z99/z90), z99/z90 = 2.3263/1.2816 =
//     1.8153: 20 x 1.5^1.8153 + 25 x 1.6^1.8153 = 41.8 + 58.7 = 100.4 s. With expected = 60 s the
//     deadline is 2 x 60 = 120 s;
//   - so the pods created at the scale-up count at ages 15 ... 120 s and not at 135 s (older than
//     the deadline: "older than" is the rule);
//   - while they count, the count ordered holds and nothing is said about them;
//   - once they don't, the 2 Ready replicas are all the capacity there is: the controller orders
//     replacements (more than it had, at most the stuck ones more) and never fewer, over 15
//     minutes — three times the default scale-down window (300 s), so a scale-in the stuck pods
//     caused would have had time to happen — while the replacements get stuck in turn;
//   - the status says so (PodsStalled=True, reason PodsNotReady, the count and the deadline, the
//     pods by name, the same words every pass while the same pods are stuck) and one Warning
//     event PodsNotReady tells it once, not every pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/resource_ref.h"
#include "controller/reconcile/pod_informers.h"
#include "controller/reconcile/reconciler.h"
#include "controller/state/arrival_history_codec.h"
#include "controller/twin/target_decider.h"
#include "nlohmann/json.hpp"
#include "simulator/profiles/profile_loader.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/autoscaler_object.h"
#include "tests/util/eventually.h"

namespace twinscale::reconcile {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);  // 2026-11-21T09:00:00Z
constexpr double kRate = 80;  // req/s: 2 replicas can't hold it (about 25 each at 512/256 tokens)

// vLLM as the scraper would read it: every Ready pod's request counter grows at its share of
// the rate (kRate unless a test says otherwise; the fleet's traffic goes to the Ready pods only);
// a pod that is not Ready doesn't answer /metrics yet (its server hasn't started), as a vLLM pod
// loading its weights.
class FleetSource : public metrics::MetricsSource {
 public:
  FleetSource(const Clock* clock, fakes::FakeKubeClient* api, const double* rate)
      : clock_(clock), api_(api), rate_(rate) {}
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>& pods) const override {
    std::vector<std::string> ready;
    for (const auto& p : pods) {
      if (IsReady(p.pod)) ready.push_back(p.pod);
    }
    const double seconds = absl::ToDoubleSeconds(clock_->Now() - kT0);
    std::vector<metrics::PodResult> out;
    for (const auto& p : pods) {
      if (std::find(ready.begin(), ready.end(), p.pod) == ready.end()) {
        out.push_back({p.pod, absl::UnavailableError(absl::StrCat(
                                  "http://", p.ip, ":", p.port, p.path, ": connection refused"))});
        continue;
      }
      metrics::PodReading r;
      r.scraped_at = clock_->Now();
      metrics::EngineObservation e;
      e.running = 0.0;
      e.waiting = 0.0;
      e.kv_cache_usage = 0.1;
      e.requests_finished_total = *rate_ / static_cast<double>(ready.size()) * seconds;
      r.observation.engines.push_back(e);
      out.push_back({p.pod, r});
    }
    return out;
  }

 private:
  bool IsReady(const std::string& pod) const {
    auto p = api_->Get(kube::kPods, "llm", pod);
    if (!p.ok()) return false;
    for (const json& c : (*p)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
    }
    return false;
  }
  const Clock* clock_;
  fakes::FakeKubeClient* api_;
  const double* rate_;
};

json Autoscaler() {
  json a = testutil::LlamaAutoscaler(10);
  a["spec"]["minReplicas"] = 2;
  a["spec"]["warmup"] = {{"expected", "60s"}};
  return a;
}

// Autoscaler() in `mode`, its scale-up limited to one pod a minute: at 80 req/s on 2 replicas the
// twin wants more than one more, so each decision is held to the limit, and a scale event within
// the last minute holds the next decisions where they are.
json OnePodAMinute(const std::string& mode) {
  json a = Autoscaler();
  a["spec"]["mode"] = mode;
  a["spec"]["scaleUp"] = {
      {"policies", json::array({{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 60}}})}};
  return a;
}

json Deployment(int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
          {"spec", {{"replicas", replicas}, {"selector", {{"matchLabels", {{"app", "vllm"}}}}}}}};
}

// A pod as the kubelet reports it: Ready since a minute after creation, or scheduled with its
// containers started but never Ready (ContainersReady=False: the model server never comes up).
json Pod(const std::string& name, int ip, bool ready) {
  json conditions = {{{"type", "PodScheduled"}, {"status", "True"}}};
  if (ready) {
    conditions.push_back({{"type", "ContainersReady"}, {"status", "True"}});
    conditions.push_back(
        {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-21T09:01:00Z"}});
  } else {
    conditions.push_back({{"type", "ContainersReady"}, {"status", "False"}});
    conditions.push_back({{"type", "Ready"}, {"status", "False"}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "llm"}, {"labels", {{"app", "vllm"}}}}},
      {"status",
       {{"phase", "Running"}, {"podIP", absl::StrCat("10.0.0.", ip)}, {"conditions", conditions}}}};
}

class ReconcilerTwinTest : public ::testing::Test {
 protected:
  ReconcilerTwinTest() : clock_(kT0), api_(&clock_), pods_(&api_), events_(&api_, &clock_) {
    auto profiles = sim::ProfileRegistry::LoadEmbedded();
    EXPECT_TRUE(profiles.ok()) << profiles.status();
    if (profiles.ok()) profiles_ = std::make_unique<sim::ProfileRegistry>(*std::move(profiles));
    deciders_ = std::make_unique<twin::TwinDeciderFactory>(profiles_.get());
    deps_.client = &api_;
    deps_.clock = &clock_;
    deps_.pods = &pods_;
    deps_.deciders = deciders_.get();
    deps_.events = &events_;
    deps_.metrics_sources =
        [this](const api::MetricsSpec&,
               const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
      return std::make_unique<FleetSource>(&clock_, &api_, &rate_);
    };
  }

  int32_t SpecReplicas() {
    return (*api_.Get(kube::kDeployments, "llm", "vllm"))["spec"]["replicas"].get<int32_t>();
  }
  json Status() { return (*api_.Get(kube::kInferenceAutoscalers, "llm", "llama"))["status"]; }
  json Condition(const std::string& type) {
    for (const json& c : Status().value("conditions", json::array())) {
      if (c["type"] == type) return c;
    }
    return nullptr;
  }
  std::vector<std::string> ReasonCodes() {
    std::vector<std::string> codes;
    for (const json& r : Status()["lastDecision"].value("reasons", json::array())) {
      codes.push_back(r.value("code", ""));
    }
    return codes;
  }
  int WarningEvents(const std::string& reason) {
    int n = 0;
    const absl::StatusOr<kube::ObjectList> events = api_.List(kube::kEvents, "llm");
    for (const json& e : events->items) {
      if (e.value("reason", "") == reason && e.value("type", "") == "Warning") {
        n += e.value("count", 1);
      }
    }
    return n;
  }
  // The Deployment controller's part: pods up to spec.replicas, each new one never Ready.
  // Returns the names created.
  std::vector<std::string> CreateMissingPods() {
    std::vector<std::string> created;
    const int32_t want = SpecReplicas();
    int32_t have = static_cast<int32_t>(api_.List(kube::kPods, "llm")->items.size());
    for (; have < want; ++have) {
      const std::string name = absl::StrCat("vllm-", have);
      EXPECT_TRUE(api_.Create(kube::kPods, "llm", Pod(name, 10 + have, false)).ok());
      created.push_back(name);
    }
    return created;
  }
  // The pass of now, after the watch has brought the pods as they are.
  ReconcileResult Pass(Reconciler& r) {
    const size_t want = api_.List(kube::kPods, "llm")->items.size();
    (void)testutil::Eventually([&] {  // if it never does, the pass's own checks say what it saw
      auto cached =
          pods_.Pods("llm/cache-probe", "llm", "app=vllm", clock_.Now(), absl::Seconds(15));
      return cached.ok() && cached->size() == want;
    });
    return r.Reconcile("llm", "llama");
  }

  // Two Ready pods under OnePodAMinute(mode), and the first pass at 09:10:00 (the first scrape:
  // no rate yet, it holds). Returns false (with a failure) if that pass failed.
  bool StartTwoReplicas(Reconciler& r, const std::string& mode) {
    EXPECT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(2)).ok());
    EXPECT_TRUE(api_.Create(kube::kPods, "llm", Pod("vllm-0", 10, true)).ok());
    EXPECT_TRUE(api_.Create(kube::kPods, "llm", Pod("vllm-1", 11, true)).ok());
    EXPECT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", OnePodAMinute(mode)).ok());
    clock_.Set(kT0 + absl::Minutes(10));
    const ReconcileResult res = Pass(r);
    EXPECT_TRUE(res.status.ok()) << res.status;
    return res.status.ok();
  }
  // In a mode where twinscale doesn't scale, at constant overload with the target left at 2
  // replicas: every decision from 09:10:15 on, 15 s apart for two minutes, is the same 3 (2 plus
  // the one pod a minute allows). A decision is no scale event: were it counted as one, the
  // decisions within the next minute would be held at 2.
  void ExpectTheSameDecisionEveryPass(const std::string& mode) {
    ASSERT_NE(profiles_, nullptr);
    Reconciler r(deps_);
    ASSERT_TRUE(StartTwoReplicas(r, mode));
    for (int s = 15; s <= 135; s += 15) {
      SCOPED_TRACE(absl::StrCat(mode, " at 09:10:00 + ", s, " s"));
      clock_.Set(kT0 + absl::Minutes(10) + absl::Seconds(s));
      ASSERT_TRUE(Pass(r).status.ok());
      EXPECT_EQ(Status()["desiredReplicas"], 3) << Status()["lastDecision"].dump(2);
      EXPECT_EQ(SpecReplicas(), 2);
    }
  }

  ManualClock clock_;
  double rate_ = kRate;  // req/s, constant through a test
  fakes::FakeKubeClient api_;
  PodInformers pods_;
  kube::EventRecorder events_;
  std::unique_ptr<sim::ProfileRegistry> profiles_;
  std::unique_ptr<twin::TwinDeciderFactory> deciders_;
  ReconcilerDeps deps_;
};

TEST_F(ReconcilerTwinTest, PodsThatNeverBecomeReadyStopCountingAtTheDeadlineAndNeverScaleIn) {
  ASSERT_NE(profiles_, nullptr);
  // 09:00:00: two Ready pods and the autoscaler. Passes every 15 s (the default interval) from
  // 09:10:00.
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(2)).ok());
  ASSERT_TRUE(api_.Create(kube::kPods, "llm", Pod("vllm-0", 10, true)).ok());
  ASSERT_TRUE(api_.Create(kube::kPods, "llm", Pod("vllm-1", 11, true)).ok());
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Autoscaler()).ok());
  Reconciler r(deps_);
  const absl::Time start = kT0 + absl::Minutes(10);
  clock_.Set(start);
  ASSERT_TRUE(Pass(r).status.ok());  // the first scrape: no rate yet, it holds
  ASSERT_EQ(SpecReplicas(), 2);

  // 09:10:15: the rate is known; 2 replicas can't hold 80 req/s.
  clock_.Advance(absl::Seconds(15));
  ASSERT_TRUE(Pass(r).status.ok());
  const int32_t ordered = SpecReplicas();
  ASSERT_GT(ordered, 2) << Status().dump(2);
  const absl::Time created = clock_.Now();  // the new pods' creationTimestamp
  const std::vector<std::string> stuck = CreateMissingPods();
  ASSERT_EQ(static_cast<int32_t>(stuck.size()), ordered - 2);

  // Ages 15 ... 120 s: they count, the count holds, nothing is said about them.
  for (int age = 15; age <= 120; age += 15) {
    SCOPED_TRACE(absl::StrCat("pods ", age, " s old"));
    clock_.Set(created + absl::Seconds(age));
    ASSERT_TRUE(Pass(r).status.ok());
    EXPECT_EQ(SpecReplicas(), ordered);
    EXPECT_EQ(Status()["desiredReplicas"], ordered);
    EXPECT_THAT(ReasonCodes(), ::testing::Not(::testing::Contains("PendingNotCounted")));
    EXPECT_EQ(Condition("PodsStalled")["status"], "False");
  }
  EXPECT_EQ(WarningEvents("PodsNotReady"), 0);

  // 135 s: past the 120 s deadline they count as nothing; the controller orders replacements.
  clock_.Set(created + absl::Seconds(135));
  ASSERT_TRUE(Pass(r).status.ok());
  const int32_t replaced = SpecReplicas();
  EXPECT_GT(replaced, ordered) << "stuck pods still counted as capacity" << Status().dump(2);
  EXPECT_LE(replaced, ordered + static_cast<int32_t>(stuck.size()));
  EXPECT_THAT(ReasonCodes(), ::testing::Contains("PendingNotCounted"));
  const json stalled = Condition("PodsStalled");
  ASSERT_FALSE(stalled.is_null()) << Status().dump(2);
  EXPECT_EQ(stalled["status"], "True");
  EXPECT_EQ(stalled["reason"], "PodsNotReady");
  const std::string message = stalled["message"].get<std::string>();
  EXPECT_THAT(message,
              HasSubstr(absl::StrCat(stuck.size(), stuck.size() == 1 ? " pod is" : " pods are",
                                     " not Ready 2m after creation")));
  for (const std::string& pod : stuck) EXPECT_THAT(message, HasSubstr(pod));
  EXPECT_THAT(message, HasSubstr(kube::FormatKubeTime(created)));
  EXPECT_EQ(stalled["lastTransitionTime"], kube::FormatKubeTime(clock_.Now()));
  EXPECT_EQ(WarningEvents("PodsNotReady"), 1);

  // The replacements start, count until their own deadline, then get stuck too. Fifteen minutes
  // of passes: never fewer replicas, never more than maxReplicas, the condition held (the same
  // words while the same pods are stuck), no second event.
  const absl::Time replaced_at = clock_.Now();
  CreateMissingPods();
  int32_t previous = SpecReplicas();
  while (clock_.Now() < replaced_at + absl::Minutes(15)) {
    clock_.Advance(absl::Seconds(15));
    SCOPED_TRACE(absl::StrCat(absl::FormatDuration(clock_.Now() - replaced_at), " later"));
    ASSERT_TRUE(Pass(r).status.ok());
    const int32_t now = SpecReplicas();
    EXPECT_GE(now, previous) << "scaled in while pods were stalled";
    EXPECT_LE(now, 10);
    previous = now;
    const json c = Condition("PodsStalled");
    EXPECT_EQ(c["status"], "True");
    EXPECT_EQ(c["lastTransitionTime"], stalled["lastTransitionTime"]);
    if (clock_.Now() - replaced_at <= absl::Seconds(120)) {
      EXPECT_EQ(c["message"], message) << "the replacements are still within their deadline";
    }
    CreateMissingPods();
  }
  EXPECT_EQ(WarningEvents("PodsNotReady"), 1);
  // By now every pod but the 2 Ready ones is past its deadline.
  const int32_t all_stuck = SpecReplicas() - 2;
  EXPECT_THAT(Condition("PodsStalled")["message"].get<std::string>(),
              HasSubstr(absl::StrCat(all_stuck, " pods are not Ready 2m after creation")));
}

// The twin simulates the engine the pods run (twin/running_engine.h), read
// from the pod objects as the API server returns them: two Ready pods whose vLLM container runs
// `vllm serve ... --max-num-seqs $(SEQS)` with SEQS=4 in its env. The decision, as the autoscaler's
// status shows it, says which flag the twin followed; a pod whose flags vLLM would refuse is named.
TEST_F(ReconcilerTwinTest, TheDecisionFollowsThePodsVllmFlagsAndSaysSo) {
  ASSERT_NE(profiles_, nullptr);
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment(2)).ok());
  for (int i = 0; i < 2; ++i) {
    json pod = Pod(absl::StrCat("vllm-", i), 10 + i, true);
    pod["spec"] = {{"containers",
                    {{{"name", "vllm"},
                      {"command", {"/bin/sh", "-c"}},
                      {"args",
                       {"exec vllm serve meta-llama/Llama-3.1-8B-Instruct "
                        "--max-num-seqs $(SEQS) --port 8000"}},
                      {"env", {{{"name", "SEQS"}, {"value", "4"}}}}}}}};
    ASSERT_TRUE(api_.Create(kube::kPods, "llm", pod).ok());
  }
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Autoscaler()).ok());
  Reconciler r(deps_);
  clock_.Set(kT0 + absl::Minutes(10));
  ASSERT_TRUE(Pass(r).status.ok());
  clock_.Advance(absl::Seconds(15));
  ASSERT_TRUE(Pass(r).status.ok());
  std::string followed;
  for (const json& reason : Status()["lastDecision"].value("reasons", json::array())) {
    if (reason.value("code", "") == "EngineFromPods") followed = reason.value("message", "");
  }
  EXPECT_THAT(followed, HasSubstr("pods run --max-num-seqs 4 (profile: 1024)")) << Status().dump(2);

  // One pod's flags turn unreadable (a rollout with a typo): its pod, container and flag are named.
  json bad = *api_.Get(kube::kPods, "llm", "vllm-1");
  bad["spec"]["containers"][0]["env"][0]["value"] = "four";
  ASSERT_TRUE(api_.Update(kube::kPods, "llm", bad).ok());
  clock_.Advance(absl::Seconds(15));
  std::string unreadable;
  bool pass_failed = false;
  (void)testutil::Eventually(
      [&] {
        const ReconcileResult pass = Pass(r);
        EXPECT_TRUE(pass.status.ok()) << pass.status;
        pass_failed = !pass.status.ok();
        for (const json& reason : Status()["lastDecision"].value("reasons", json::array())) {
          if (reason.value("code", "") == "EngineArgsUnreadable") {
            unreadable = reason.value("message", "");
          }
        }
        return pass_failed || !unreadable.empty();
      },
      absl::Seconds(10), absl::Milliseconds(20));
  ASSERT_FALSE(pass_failed);
  EXPECT_EQ(unreadable,
            "pod vllm-1 container vllm: vLLM flag --max-num-seqs: \"four\" is not an integer (the "
            "twin keeps the spec's engine)");
}

// Recommend, KEDA and HPA modes: twinscale decides, something else (a person, KEDA's HPA, the
// HPA) scales. At constant overload with the target unchanged, the decision doesn't change either.
TEST_F(ReconcilerTwinTest, RecommendModeDecidesTheSameEveryPassAtConstantLoad) {
  ExpectTheSameDecisionEveryPass("Recommend");
}
TEST_F(ReconcilerTwinTest, KedaModeDecidesTheSameEveryPassAtConstantLoad) {
  ExpectTheSameDecisionEveryPass("KEDA");
}
TEST_F(ReconcilerTwinTest, HpaModeDecidesTheSameEveryPassAtConstantLoad) {
  ExpectTheSameDecisionEveryPass("HPA");
}

// KEDA mode: when KEDA's HPA does scale (2 -> 3 between passes), the pass that sees it records
// the change at its own time: the next pod is allowed a minute after that pass, not before. At
// 160 req/s 3 replicas are far from enough, so each decision asks for all the limit allows.
TEST_F(ReconcilerTwinTest, AScaleSeenInTheTargetIsRateLimitedFromThePassThatSawIt) {
  ASSERT_NE(profiles_, nullptr);
  rate_ = 160;
  Reconciler r(deps_);
  ASSERT_TRUE(StartTwoReplicas(r, "KEDA"));
  const absl::Time start = kT0 + absl::Minutes(10);
  clock_.Set(start + absl::Seconds(15));
  ASSERT_TRUE(Pass(r).status.ok());
  ASSERT_EQ(Status()["desiredReplicas"], 3);
  // 09:10:20: KEDA's HPA scales the target to 3.
  clock_.Set(start + absl::Seconds(20));
  ASSERT_TRUE(
      api_.MergePatch(kube::kDeployments, "llm", "vllm", {{"spec", {{"replicas", 3}}}}, "scale")
          .ok());
  CreateMissingPods();
  // Seen at 09:10:30: held at 3 until 09:11:30 (the event is then a minute old, out of the
  // period), when one more is allowed.
  for (int s = 30; s <= 90; s += 15) {
    SCOPED_TRACE(absl::StrCat("09:10:00 + ", s, " s"));
    clock_.Set(start + absl::Seconds(s));
    ASSERT_TRUE(Pass(r).status.ok());
    EXPECT_EQ(Status()["desiredReplicas"], s < 90 ? 3 : 4) << Status()["lastDecision"].dump(2);
  }
}

// Direct mode: the write that lands is the scale event, at the time of its decision: 2 -> 3 at
// 09:10:15, then held at 3 (at 160 req/s the twin wants more) until 09:11:15, a minute later,
// then 4.
TEST_F(ReconcilerTwinTest, DirectScaleUpsAreRateLimitedFromTheWriteThatLanded) {
  ASSERT_NE(profiles_, nullptr);
  rate_ = 160;
  Reconciler r(deps_);
  ASSERT_TRUE(StartTwoReplicas(r, "Direct"));
  const absl::Time start = kT0 + absl::Minutes(10);
  for (int s = 15; s <= 75; s += 15) {
    SCOPED_TRACE(absl::StrCat("09:10:00 + ", s, " s"));
    clock_.Set(start + absl::Seconds(s));
    ASSERT_TRUE(Pass(r).status.ok());
    const int want = s < 75 ? 3 : 4;
    EXPECT_EQ(SpecReplicas(), want);
    EXPECT_EQ(Status()["desiredReplicas"], want) << Status()["lastDecision"].dump(2);
    CreateMissingPods();
  }
}

// The seasonal forecast's arrival history through a restart, with the real decider: at 80 req/s
// the closed 5-minute buckets go to status.arrivalHistory as they close (24,000 requests each);
// a new leader a minute after 09:20 restores them, so when its own first bucket closes the
// history it writes still starts at 09:10 with the old leader's buckets, then the bucket of the
// restart, seen from the new leader's first window (09:21:00, no window before it) to 09:25.
TEST_F(ReconcilerTwinTest, ARestartedControllerKeepsTheArrivalHistoryThroughTheStatus) {
  ASSERT_NE(profiles_, nullptr);
  auto history_in_status = [&]() -> absl::StatusOr<state::ArrivalBuckets> {
    const json h = Status()["arrivalHistory"];
    if (!h.is_object()) return absl::NotFoundError("no status.arrivalHistory");
    absl::Duration bucket;
    if (!absl::ParseDuration(h["bucket"].get<std::string>(), &bucket)) {
      return absl::InvalidArgumentError("bucket");
    }
    auto start = kube::ParseKubeTime(h["start"].get<std::string>());
    if (!start.ok()) return start.status();
    return state::DecodeArrivalBuckets(bucket, *start, h["data"].get<std::string>());
  };
  {
    Reconciler r(deps_);
    ASSERT_TRUE(StartTwoReplicas(r, "Recommend"));  // 09:10:00
    for (int m = 1; m <= 10; ++m) {
      clock_.Set(kT0 + absl::Minutes(10 + m));
      ASSERT_TRUE(Pass(r).status.ok());
    }
  }
  absl::StatusOr<state::ArrivalBuckets> before = history_in_status();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->start, kT0 + absl::Minutes(10));
  EXPECT_EQ(before->arrivals, (std::vector<double>{24000, 24000}));
  EXPECT_EQ(before->observed_s, (std::vector<double>{300, 300}));

  Reconciler next(deps_);  // the new leader
  for (int m = 21; m <= 25; ++m) {
    clock_.Set(kT0 + absl::Minutes(m));
    ASSERT_TRUE(Pass(next).status.ok());
  }
  absl::StatusOr<state::ArrivalBuckets> after = history_in_status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->start, kT0 + absl::Minutes(10));
  EXPECT_EQ(after->arrivals, (std::vector<double>{24000, 24000, 19200}));
  EXPECT_EQ(after->observed_s, (std::vector<double>{300, 300, 240}));
}

}  // namespace
}  // namespace twinscale::reconcile
