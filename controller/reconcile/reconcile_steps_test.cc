// The rules of a reconcile pass's steps, one at a time (reconcile_steps.h): what each step reads,
// decides or writes, on hand-made inputs; the API calls against fakes::FakeKubeClient. The whole
// pass is reconciler_test.cc's.
#include "controller/reconcile/reconcile_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "controller/kube/kube_client.h"
#include "controller/kube/resource_ref.h"
#include "controller/state/arrival_history_codec.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_kube_client.h"

namespace twinscale::reconcile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Stage = state::PodView::Stage;

const absl::Time kNow = absl::FromUnixSeconds(1795252200);

KubePod Pod(const std::string& name, Stage stage, absl::Duration age, std::string ip = "10.0.0.1") {
  KubePod p;
  p.name = name;
  p.stage = stage;
  p.ip = std::move(ip);
  p.created = kNow - age;
  return p;
}

metrics::PodReading Reading(double running, double waiting, absl::Time at = kNow) {
  metrics::PodReading r;
  r.scraped_at = at;
  metrics::EngineObservation e;
  e.running = running;
  e.waiting = waiting;
  r.observation.engines.push_back(e);
  return r;
}

// ---- 1. Read spec.

nlohmann::json Object(int max_replicas = 16,
                      const std::string& profile = "llama-3.1-8b-h100-sxm-tp1") {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", "llama"}, {"namespace", "llm"}, {"generation", 1}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
            {"mode", "Direct"},
            {"minReplicas", 1},
            {"maxReplicas", max_replicas},
            {"model", {{"profile", profile}}}}}};
}

class NullDecider : public policy::Decider {
 public:
  policy::Decision Decide(const state::ClusterView&) override { return {}; }
  void NoteScaled(absl::Time, int32_t, int32_t) override {}
  const state::FleetSnapshot* last_snapshot() const override { return nullptr; }
  policy::CalibrationFactors calibration() const override { return restored; }
  void RestoreCalibration(const policy::CalibrationFactors& f) override { restored = f; }
  std::optional<double> last_prediction_error_ms() const override { return std::nullopt; }
  policy::CalibrationFactors restored;
};

// Counts what it is asked; fails Create for an unknown profile, Reconfigure when told to.
class CountingFactory : public policy::DeciderFactory {
 public:
  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const api::InferenceAutoscalerSpec& spec) override {
    ++created;
    if (spec.model.profile == "no-such-profile") {
      return absl::InvalidArgumentError("spec.model.profile: unknown profile");
    }
    return std::make_unique<NullDecider>();
  }
  absl::Status Reconfigure(const api::InferenceAutoscalerSpec&, policy::Decider&) override {
    ++reconfigured;
    return reconfigure_error;
  }
  int created = 0, reconfigured = 0;
  absl::Status reconfigure_error;
};

TEST(ResolveSpecTest, TheFirstPassBuildsADeciderFromTheCalibrationInStatus) {
  CountingFactory factory;
  SpecState state;
  const AutoscalerStatus::Calibration saved{0.8, 1.25, 7, 0.2, 0.030};
  ASSERT_TRUE(ResolveSpec(Object(), "llm/llama", 1, saved, factory, state).ok());
  EXPECT_EQ(factory.created, 1);
  EXPECT_EQ(state.generation, 1);
  ASSERT_TRUE(state.spec.has_value());
  EXPECT_EQ(state.spec->max_replicas, 16);
  const auto& decider = static_cast<const NullDecider&>(*state.decider);
  EXPECT_EQ(decider.restored.prefill_speed, 0.8);
  EXPECT_EQ(decider.restored.decode_speed, 1.25);
  EXPECT_EQ(decider.restored.updates, 7);
  EXPECT_EQ(decider.restored.router_random_share, 0.2);
  EXPECT_EQ(decider.restored.extra_front_end_seconds, 0.030);
}

TEST(ResolveSpecTest, TheSameGenerationKeepsTheDeciderAndANewOneReconfiguresIt) {
  CountingFactory factory;
  SpecState state;
  ASSERT_TRUE(ResolveSpec(Object(), "llm/llama", 1, std::nullopt, factory, state).ok());
  const policy::Decider* first = state.decider.get();
  ASSERT_TRUE(ResolveSpec(Object(), "llm/llama", 1, std::nullopt, factory, state).ok());
  EXPECT_EQ(factory.reconfigured, 0);
  ASSERT_TRUE(
      ResolveSpec(Object(/*max_replicas=*/8), "llm/llama", 2, std::nullopt, factory, state).ok());
  EXPECT_EQ(factory.created, 1);
  EXPECT_EQ(factory.reconfigured, 1);
  EXPECT_EQ(state.decider.get(), first);
  EXPECT_EQ(state.generation, 2);
  EXPECT_EQ(state.spec->max_replicas, 8);
}

TEST(ResolveSpecTest, ASpecThatDoesNotParseNamesTheFieldAndChangesNothing) {
  CountingFactory factory;
  SpecState state;
  ASSERT_TRUE(ResolveSpec(Object(), "llm/llama", 1, std::nullopt, factory, state).ok());
  nlohmann::json bad = Object();
  bad["spec"]["maxReplicas"] = "lots";
  const absl::Status s = ResolveSpec(bad, "llm/llama", 2, std::nullopt, factory, state);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("maxReplicas"));
  EXPECT_EQ(factory.reconfigured, 0);
  EXPECT_EQ(state.generation, 1);
  EXPECT_EQ(state.spec->max_replicas, 16);
}

TEST(ResolveSpecTest, ASpecTheFactoryCannotResolveLeavesNoDecider) {
  CountingFactory factory;
  SpecState state;
  const absl::Status s =
      ResolveSpec(Object(16, "no-such-profile"), "llm/llama", 1, std::nullopt, factory, state);
  EXPECT_THAT(std::string(s.message()), HasSubstr("spec.model.profile"));
  EXPECT_EQ(state.decider, nullptr);
  EXPECT_FALSE(state.spec.has_value());
  EXPECT_EQ(state.generation, -1);
}

TEST(ResolveSpecTest, AFailedReconfigureKeepsTheSpecTheDeciderWasBuiltFor) {
  CountingFactory factory;
  SpecState state;
  ASSERT_TRUE(ResolveSpec(Object(), "llm/llama", 1, std::nullopt, factory, state).ok());
  factory.reconfigure_error = absl::InvalidArgumentError("spec.slo: no");
  EXPECT_FALSE(ResolveSpec(Object(8), "llm/llama", 2, std::nullopt, factory, state).ok());
  EXPECT_EQ(state.generation, 1);
  EXPECT_EQ(state.spec->max_replicas, 16);
  EXPECT_NE(state.decider, nullptr);
}

// ---- 2. Read target.

TEST(ScaleTargetResourceTest, NamesTheScaleBearingResource) {
  struct Case {
    std::string name;
    api::TargetRef ref;
    kube::ResourceRef want;
  };
  const std::vector<Case> cases = {
      {"a Deployment", {"apps/v1", "Deployment", "vllm"}, kube::kDeployments},
      {"a StatefulSet", {"apps/v1", "StatefulSet", "vllm"}, kube::kStatefulSets},
      {"a custom kind: group/version and the lower-case plural",
       {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm"},
       {"leaderworkerset.x-k8s.io", "v1", "leaderworkersets", true}},
      {"a core-group kind: no group",
       {"v1", "ReplicationController", "vllm"},
       {"", "v1", "replicationcontrollers", true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const kube::ResourceRef got = ScaleTargetResource(c.ref);
    EXPECT_EQ(got.group, c.want.group);
    EXPECT_EQ(got.version, c.want.version);
    EXPECT_EQ(got.resource, c.want.resource);
    EXPECT_EQ(got.namespaced, c.want.namespaced);
  }
}

TEST(ParseScaleTest, ReadsReplicasSelectorAndResourceVersion) {
  const ScaleRead read = ParseScale({{"metadata", {{"resourceVersion", "42"}}},
                                     {"spec", {{"replicas", 3}}},
                                     {"status", {{"replicas", 3}, {"selector", "app=vllm"}}}});
  EXPECT_EQ(read.spec_replicas, 3);
  EXPECT_EQ(read.selector, "app=vllm");
  EXPECT_EQ(read.resource_version, "42");
  // A target scaled to nothing yet, and without a selector: 0 replicas, no pods known.
  const ScaleRead bare =
      ParseScale({{"metadata", nlohmann::json::object()}, {"spec", nlohmann::json::object()}});
  EXPECT_EQ(bare.spec_replicas, 0);
  EXPECT_EQ(bare.selector, "");
  EXPECT_EQ(bare.resource_version, "");
}

nlohmann::json Autoscaler(const std::string& api_version, const std::string& kind,
                          const std::string& name, nlohmann::json target_ref) {
  return {{"apiVersion", api_version},
          {"kind", kind},
          {"metadata", {{"name", name}, {"namespace", "llm"}}},
          {"spec", {{"scaleTargetRef", std::move(target_ref)}}}};
}

TEST(OtherAutoscalerTest, NamesAnHpaOrScaledObjectOfTheTargetOnly) {
  const api::TargetRef target{"apps/v1", "Deployment", "vllm"};
  fakes::FakeKubeClient api;
  EXPECT_EQ(*OtherAutoscaler(api, "llm", target), "");
  // Another target's HPA, and one in another namespace, are none of ours.
  ASSERT_TRUE(api.Create(kube::kHorizontalPodAutoscalers, "llm",
                         Autoscaler("autoscaling/v2", "HorizontalPodAutoscaler", "web",
                                    {{"kind", "Deployment"}, {"name", "web"}}))
                  .ok());
  nlohmann::json elsewhere = Autoscaler("autoscaling/v2", "HorizontalPodAutoscaler", "far",
                                        {{"kind", "Deployment"}, {"name", "vllm"}});
  elsewhere["metadata"]["namespace"] = "other";
  ASSERT_TRUE(api.Create(kube::kHorizontalPodAutoscalers, "other", elsewhere).ok());
  EXPECT_EQ(*OtherAutoscaler(api, "llm", target), "");
  // KEDA's scaleTargetRef.kind defaults to Deployment.
  ASSERT_TRUE(
      api.Create(kube::kScaledObjects, "llm",
                 Autoscaler("keda.sh/v1alpha1", "ScaledObject", "keda-vllm", {{"name", "vllm"}}))
          .ok());
  EXPECT_EQ(*OtherAutoscaler(api, "llm", target), "ScaledObject keda-vllm");
  // An HPA of the target is found first.
  ASSERT_TRUE(api.Create(kube::kHorizontalPodAutoscalers, "llm",
                         Autoscaler("autoscaling/v2", "HorizontalPodAutoscaler", "old-hpa",
                                    {{"kind", "Deployment"}, {"name", "vllm"}}))
                  .ok());
  EXPECT_EQ(*OtherAutoscaler(api, "llm", target), "HorizontalPodAutoscaler old-hpa");
}

TEST(OtherAutoscalerTest, AKindTheClusterDoesNotServeIsNoneAndOtherFailuresAreReturned) {
  const api::TargetRef target{"apps/v1", "Deployment", "vllm"};
  fakes::FakeKubeClient api;
  absl::Status scaled_objects = absl::NotFoundError("the server could not find the resource");
  api.SetInterceptor([&](const fakes::FakeKubeClient::Request& req) {
    return req.resource == kube::kScaledObjects ? scaled_objects : absl::OkStatus();
  });
  EXPECT_EQ(*OtherAutoscaler(api, "llm", target), "");
  scaled_objects = absl::UnavailableError("connection refused");
  EXPECT_EQ(OtherAutoscaler(api, "llm", target).status().code(), absl::StatusCode::kUnavailable);
}

// ---- 3. Read pods.

nlohmann::json PodJson(const std::string& name, const std::string& deletion_cost = "") {
  nlohmann::json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name}, {"namespace", "llm"}, {"creationTimestamp", "2026-11-21T09:00:00Z"}}},
      {"status", {{"phase", "Running"}, {"podIP", "10.0.0.7"}}}};
  if (!deletion_cost.empty()) p["metadata"]["annotations"] = {{kDeletionCost, deletion_cost}};
  return p;
}

TEST(ParseListedPodsTest, KeepsReadablePodsInOrderNotesMarksAndSaysWhyOthersAreSkipped) {
  nlohmann::json unreadable = PodJson("bad");
  unreadable["metadata"]["creationTimestamp"] = "yesterday";
  const ListedPods listed =
      ParseListedPods({PodJson("b", kVictimCost), PodJson("a"), unreadable, PodJson("c", "500")});
  std::vector<std::string> names;
  for (const KubePod& p : listed.pods) names.push_back(p.name);
  EXPECT_THAT(names, ElementsAre("b", "a", "c"));
  // Only twinscale's own mark counts: a deletion cost someone else set is theirs.
  EXPECT_THAT(listed.marked, ElementsAre("b"));
  ASSERT_EQ(listed.skipped.size(), 1u);
  EXPECT_EQ(listed.skipped[0].code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsSourceOutdatedTest, ASourceIsRebuiltWhenWhatItReadsChanges) {
  api::MetricsSpec built;
  built.source = api::MetricsSourceKind::kPrometheus;
  built.prometheus = api::PrometheusSpec{};
  built.prometheus->url = "http://prom:9090";
  struct Case {
    std::string name;
    std::function<void(api::MetricsSpec&)> change;
    bool want;
  };
  const std::vector<Case> cases = {
      {"nothing changed", [](api::MetricsSpec&) {}, false},
      {"only the interval changed: a source doesn't use it",
       [](api::MetricsSpec& m) { m.interval = absl::Seconds(30); }, false},
      {"the source kind", [](api::MetricsSpec& m) { m.source = api::MetricsSourceKind::kPods; },
       true},
      {"the port", [](api::MetricsSpec& m) { m.port = 9000; }, true},
      {"the path", [](api::MetricsSpec& m) { m.path = "/stats"; }, true},
      {"staleAfter", [](api::MetricsSpec& m) { m.stale_after = absl::Seconds(60); }, true},
      {"Prometheus dropped", [](api::MetricsSpec& m) { m.prometheus.reset(); }, true},
      {"the Prometheus URL", [](api::MetricsSpec& m) { m.prometheus->url = "http://p2"; }, true},
      {"the label matchers",
       [](api::MetricsSpec& m) {
         m.prometheus->label_matchers = {{"cluster", "a"}};
       },
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::MetricsSpec wanted = built;
    c.change(wanted);
    EXPECT_EQ(MetricsSourceOutdated(built, wanted), c.want);
  }
  EXPECT_TRUE(MetricsSourceOutdated(std::nullopt, built)) << "none built yet";
}

TEST(ScrapeTargetsTest, AsksOnlyStartedPodsWithAnAddress) {
  api::MetricsSpec spec;
  spec.port = 8080;
  spec.path = "/m";
  const std::vector<metrics::PodTarget> targets =
      ScrapeTargets({Pod("ready", Stage::kReady, absl::Minutes(5), "10.0.0.1"),
                     Pod("pending", Stage::kPending, absl::Minutes(1), "10.0.0.2"),
                     Pod("no-ip", Stage::kLoading, absl::Minutes(1), ""),
                     Pod("loading", Stage::kLoading, absl::Minutes(1), "10.0.0.3"),
                     Pod("going", Stage::kTerminating, absl::Minutes(9), "10.0.0.4")},
                    spec);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].pod, "ready");
  EXPECT_EQ(targets[0].ip, "10.0.0.1");
  EXPECT_EQ(targets[0].port, 8080);
  EXPECT_EQ(targets[0].path, "/m");
  EXPECT_EQ(targets[1].pod, "loading");
  EXPECT_EQ(targets[2].pod, "going");
}

TEST(SplitReadingsTest, SeparatesReadingsFromFailures) {
  std::vector<metrics::PodResult> results;
  results.push_back({"a", Reading(2, 1)});
  results.push_back({"b", absl::UnavailableError("connection refused")});
  results.push_back({"c", absl::DeadlineExceededError("timed out")});
  const PodReadings split = SplitReadings(std::move(results));
  ASSERT_EQ(split.readings.size(), 1u);
  EXPECT_EQ(split.readings.at("a").observation.engines[0].running, 2);
  EXPECT_EQ(split.unread, 2);
  EXPECT_EQ(split.failing.at("b"), "connection refused");
  EXPECT_EQ(split.failing.at("c"), "timed out");
}

TEST(DescribeFailingTest, NamesThreePodsThenCountsTheRest) {
  EXPECT_EQ(DescribeFailing({}), "");
  EXPECT_EQ(DescribeFailing({{"b", "refused"}, {"a", "timeout"}}), "a: timeout; b: refused");
  EXPECT_EQ(DescribeFailing({{"a", "e"}, {"b", "e"}, {"c", "e"}}), "a: e; b: e; c: e");
  EXPECT_EQ(DescribeFailing({{"a", "e"}, {"b", "e"}, {"c", "e"}, {"d", "e"}, {"e", "e"}}),
            "a: e; b: e; c: e; and 2 more");
}

// ---- 4. Decide.

TEST(ClusterViewOfTest, ShowsEachPodWithItsAgesAndReading) {
  KubePod ready = Pod("ready", Stage::kReady, absl::Minutes(10));
  ready.ready_since = kNow - absl::Minutes(7);
  KubePod warming = Pod("warming", Stage::kWarmingUp, absl::Minutes(2));
  warming.ready_since = kNow - absl::Minutes(1);  // Ready once, not now: no time Ready
  KubePod unscheduled = Pod("unscheduled", Stage::kPending, absl::Minutes(3), "");
  unscheduled.unschedulable = true;
  const state::ClusterView view = ClusterViewOf(
      {ready, warming, unscheduled}, {{"ready", Reading(3, 2, kNow - absl::Seconds(4))}}, 5, kNow);
  EXPECT_EQ(view.now, kNow);
  EXPECT_EQ(view.spec_replicas, 5);
  ASSERT_EQ(view.pods.size(), 3u);
  EXPECT_EQ(view.pods[0].name, "ready");
  EXPECT_EQ(view.pods[0].age, absl::Minutes(10));
  EXPECT_EQ(view.pods[0].ready_for, absl::Minutes(7));
  EXPECT_TRUE(view.pods[0].scrape_ok);
  EXPECT_EQ(view.pods[0].scraped_at, kNow - absl::Seconds(4));
  EXPECT_EQ(view.pods[0].observation.engines[0].running, 3);
  EXPECT_EQ(view.pods[1].stage, Stage::kWarmingUp);
  EXPECT_EQ(view.pods[1].ready_for, absl::ZeroDuration());
  EXPECT_FALSE(view.pods[1].scrape_ok);
  EXPECT_TRUE(view.pods[2].unschedulable);
}

TEST(MeasuredWarmupTest, IsTheUpperMedianOfCreationToReady) {
  auto pod = [](absl::Duration warmup) {
    KubePod p = Pod("p", Stage::kReady, absl::Hours(1));
    p.ready_since = p.created + warmup;
    return p;
  };
  EXPECT_EQ(MeasuredWarmup({Pod("never-ready", Stage::kLoading, absl::Minutes(1))}), std::nullopt);
  EXPECT_EQ(MeasuredWarmup({pod(absl::Seconds(90))}), absl::Seconds(90));
  EXPECT_EQ(
      MeasuredWarmup({pod(absl::Seconds(300)), pod(absl::Seconds(60)), pod(absl::Seconds(90))}),
      absl::Seconds(90));
  EXPECT_EQ(MeasuredWarmup({pod(absl::Seconds(60)), pod(absl::Seconds(90))}), absl::Seconds(90));
  // A Ready time before creation (clock skew) says nothing of the warm-up.
  EXPECT_EQ(MeasuredWarmup({pod(absl::Seconds(-5)), pod(absl::Seconds(80))}), absl::Seconds(80));
}

// ---- 5. Act.

TEST(VictimCandidatesOfTest, LeavesTerminatingPodsOutAndCountsRequestsInFlight) {
  metrics::PodReading two_engines = Reading(3, 1);
  metrics::EngineObservation second;
  second.running = 2;  // waiting unknown: none
  two_engines.observation.engines.push_back(second);
  const std::vector<policy::VictimCandidate> got = VictimCandidatesOf(
      {Pod("read", Stage::kReady, absl::Minutes(5)), Pod("unread", Stage::kReady, absl::Minutes(6)),
       Pod("loading", Stage::kLoading, absl::Minutes(1)),
       Pod("going", Stage::kTerminating, absl::Minutes(9))},
      {{"read", two_engines}});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].name, "read");
  EXPECT_TRUE(got[0].ready);
  EXPECT_EQ(got[0].created, kNow - absl::Minutes(5));
  EXPECT_EQ(got[0].in_flight, 6.0);
  EXPECT_EQ(got[1].name, "unread");
  EXPECT_EQ(got[1].in_flight, std::nullopt);
  EXPECT_EQ(got[2].name, "loading");
  EXPECT_FALSE(got[2].ready);
}

class WriteScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Create(kube::kDeployments, "llm",
                            {{"apiVersion", "apps/v1"},
                             {"kind", "Deployment"},
                             {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
                             {"spec", {{"replicas", 3}}}})
                    .ok());
  }
  ScaleRead Read() { return ParseScale(*api_.Get(kube::kDeployments, "llm", "vllm", "scale")); }
  int32_t Replicas() {
    return (*api_.Get(kube::kDeployments, "llm", "vllm"))["spec"]["replicas"].get<int32_t>();
  }
  // Someone else scales the target to `replicas`.
  void ScaleBehindOurBack(int32_t replicas) {
    ASSERT_TRUE(api_.MergePatch(kube::kDeployments, "llm", "vllm",
                                {{"spec", {{"replicas", replicas}}}}, "scale")
                    .ok());
  }
  ScaleWrite Write(const ScaleRead& read, int32_t replicas) {
    return WriteScale(api_, kube::kDeployments, "llm", "vllm", read, replicas,
                      [this](std::string_view outcome) { outcomes_.emplace_back(outcome); });
  }
  fakes::FakeKubeClient api_;
  std::vector<std::string> outcomes_;
};

TEST_F(WriteScaleTest, AWriteAgainstTheReadVersionLands) {
  const ScaleWrite w = Write(Read(), 5);
  EXPECT_TRUE(w.status.ok());
  EXPECT_EQ(w.current, 5);
  EXPECT_EQ(w.base, 3);
  EXPECT_TRUE(w.Scaled(5));
  EXPECT_EQ(Replicas(), 5);
  EXPECT_THAT(outcomes_, ElementsAre("ok"));
}

TEST_F(WriteScaleTest, AConflictReReadsAndReappliesFromTheNewCount) {
  const ScaleRead stale = Read();
  ScaleBehindOurBack(4);
  const ScaleWrite w = Write(stale, 6);
  EXPECT_TRUE(w.status.ok());
  EXPECT_EQ(w.base, 4);  // the scale event is from what the target had, not from what we read
  EXPECT_EQ(w.current, 6);
  EXPECT_EQ(Replicas(), 6);
  EXPECT_THAT(outcomes_, ElementsAre("conflict", "ok"));
}

TEST_F(WriteScaleTest, SomeoneElseSettingTheSameCountIsNoScaleEvent) {
  const ScaleRead stale = Read();
  ScaleBehindOurBack(6);
  const ScaleWrite w = Write(stale, 6);
  EXPECT_TRUE(w.status.ok());
  EXPECT_EQ(w.current, 6);
  EXPECT_FALSE(w.Scaled(6));
  EXPECT_THAT(outcomes_, ElementsAre("conflict"));
}

TEST_F(WriteScaleTest, FourConflictsGiveUpWithTheConflict) {
  api_.SetInterceptor([](const fakes::FakeKubeClient::Request& req) {
    if (req.verb == "patch") return absl::AbortedError("the object has been modified");
    return absl::OkStatus();
  });
  const ScaleWrite w = Write(Read(), 6);
  EXPECT_EQ(w.status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(w.current, 3);
  EXPECT_FALSE(w.Scaled(6));
  EXPECT_THAT(outcomes_, ElementsAre("conflict", "conflict", "conflict", "conflict"));
}

TEST_F(WriteScaleTest, AnotherErrorIsNotRetried) {
  api_.SetInterceptor([](const fakes::FakeKubeClient::Request& req) {
    if (req.verb == "patch") return absl::PermissionDeniedError("forbidden");
    return absl::OkStatus();
  });
  const ScaleWrite w = Write(Read(), 6);
  EXPECT_EQ(w.status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(w.current, 3);
  EXPECT_THAT(outcomes_, ElementsAre("error"));
}

// ---- 6. Write status.

TEST(ReasonsTextTest, JoinsCodesWithTheirMessages) {
  policy::Decision d;
  EXPECT_EQ(ReasonsText(d), "");
  d.reasons = {{"ForecastMissesSlo", "p90 TTFT 0.9s > 0.5s"}, {"MaxReplicas", ""}};
  EXPECT_EQ(ReasonsText(d), "ForecastMissesSlo: p90 TTFT 0.9s > 0.5s; MaxReplicas");
}

state::ReplicaState Replica(Stage stage, bool fresh, double waiting = 0) {
  state::ReplicaState r;
  r.stage = stage;
  r.fresh = fresh;
  r.waiting = waiting;
  return r;
}

TEST(FreshnessOfTest, CountsReadyPodsAsThePolicyJudgedThemOrElseByThisPassReads) {
  state::FleetSnapshot snap;
  snap.replicas = {Replica(Stage::kReady, true), Replica(Stage::kReady, false),
                   Replica(Stage::kLoading, false), Replica(Stage::kReady, true)};
  const std::vector<KubePod> pods = {Pod("a", Stage::kReady, absl::Minutes(1)),
                                     Pod("b", Stage::kReady, absl::Minutes(1)),
                                     Pod("c", Stage::kWarmingUp, absl::Minutes(1))};
  const std::map<std::string, metrics::PodReading> readings = {{"a", Reading(1, 0)},
                                                               {"c", Reading(0, 0)}};
  const Freshness judged = FreshnessOf(&snap, pods, readings);
  EXPECT_EQ(judged.readable, 3);
  EXPECT_EQ(judged.fresh, 2);
  const Freshness read = FreshnessOf(nullptr, pods, readings);
  EXPECT_EQ(read.readable, 2);
  EXPECT_EQ(read.fresh, 1);
}

TEST(SetMetricsFreshTest, SaysWhetherInputsAreStaleAndWhy) {
  struct Case {
    std::string name;
    std::string source_error;
    Freshness freshness;
    int32_t unread;
    bool want_stale;
    std::string want_reason;
    std::string want_message;
  };
  const std::vector<Case> cases = {
      {"the source failed: stale whatever the pods",
       "prometheus is down",
       {3, 3},
       0,
       true,
       "MetricsSourceFailed",
       "prometheus is down; holding (no scale-in on stale data)"},
      {"no Ready pod read fresh",
       "",
       {0, 2},
       2,
       true,
       "ScrapesStale",
       "no Ready pod's metrics are fresh (2 reads failed); holding (no scale-in on stale data)"},
      {"some read fresh", "", {1, 2}, 1, false, "Fresh", "1 of 2 Ready pods read fresh"},
      {"no Ready pods: nothing is stale",
       "",
       {0, 0},
       0,
       false,
       "Fresh",
       "0 of 0 Ready pods read fresh"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AutoscalerStatus status;
    EXPECT_EQ(SetMetricsFresh(status, c.source_error, c.freshness, c.unread, kNow, 4),
              c.want_stale);
    const Condition* cond = status.FindCondition(kMetricsFresh);
    ASSERT_NE(cond, nullptr);
    EXPECT_EQ(cond->status, c.want_stale ? "False" : "True");
    EXPECT_EQ(cond->reason, c.want_reason);
    EXPECT_EQ(cond->message, c.want_message);
    EXPECT_EQ(cond->observed_generation, 4);
  }
}

TEST(ConditionBeganTest, AnEpisodeBeginsWhenTheStatusTurnsOrItsReasonChanges) {
  auto with = [](const std::string& value, const std::string& reason) {
    AutoscalerStatus s;
    if (!value.empty()) SetCondition(s, kMetricsFresh, value, reason, "", kNow, 1);
    return s;
  };
  struct Case {
    std::string name;
    AutoscalerStatus written, next;
    bool want;
  };
  const std::vector<Case> cases = {
      {"new condition, already False", with("", ""), with("False", "ScrapesStale"), true},
      {"turns False", with("True", "Fresh"), with("False", "ScrapesStale"), true},
      {"stays False for the same reason", with("False", "ScrapesStale"),
       with("False", "ScrapesStale"), false},
      {"stays False for another reason", with("False", "ScrapesStale"),
       with("False", "MetricsSourceFailed"), true},
      {"turns True: not the value asked about", with("False", "ScrapesStale"),
       with("True", "Fresh"), false},
      {"absent", with("False", "ScrapesStale"), with("", ""), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ConditionBegan(c.written, c.next, kMetricsFresh, "False"), c.want);
  }
}

TEST(ObservedOfTest, ReportsQueueAndKvOverFreshReadyReplicasAndMeasuredRates) {
  state::FleetSnapshot snap;
  snap.replicas = {Replica(Stage::kReady, true, 4), Replica(Stage::kReady, true, 2),
                   Replica(Stage::kReady, false, 30), Replica(Stage::kWarmingUp, true, 9)};
  snap.workload.kv_usage_mean = 0.4;
  snap.workload.arrival_rate = state::Input<double>::Value(12.5);
  snap.workload.ttft_p90_seconds = state::Input<double>::Value(0.2346);
  const AutoscalerStatus::Observed o = ObservedOf(snap);
  EXPECT_EQ(o.queue_depth_per_replica, 3.0);  // (4 + 2) / 2
  EXPECT_EQ(o.kv_cache_utilization, 0.4);
  EXPECT_EQ(o.arrival_rate, 12.5);
  EXPECT_EQ(o.ttft_p90, absl::Milliseconds(235));  // to the millisecond

  state::FleetSnapshot unknown;
  unknown.replicas = {Replica(Stage::kReady, false, 5)};
  unknown.workload.arrival_rate = state::Input<double>::NoEvents(0.0);
  const AutoscalerStatus::Observed none = ObservedOf(unknown);
  EXPECT_EQ(none.queue_depth_per_replica, std::nullopt);
  EXPECT_EQ(none.kv_cache_utilization, std::nullopt);
  EXPECT_EQ(none.arrival_rate, std::nullopt);  // no events is not a measured rate
  EXPECT_EQ(none.ttft_p90, std::nullopt);
}

// ---- The arrival history: restore, Prometheus' grid, and the status form.

TEST(ArrivalHistoryStepsTest, RestorableArrivalsTable) {
  state::ArrivalBuckets one;
  one.bucket = absl::Minutes(5);
  one.start = kNow - absl::Hours(1);  // kNow is a bucket boundary
  one.arrivals = {3000};
  one.observed_s = {300};
  const std::string data = state::EncodeArrivalBuckets(one);
  struct Case {
    std::string name;
    AutoscalerStatus::ArrivalHistory saved;
    absl::StatusCode want;
  };
  const absl::Duration week = absl::Hours(24 * 7);
  const std::vector<Case> cases = {
      {"an hour old: restored",
       {absl::Minutes(5), one.start, one.end(), data},
       absl::StatusCode::kOk},
      {"damaged data: the decoder's error",
       {absl::Minutes(5), one.start, one.end(), "%%%"},
       absl::StatusCode::kInvalidArgument},
      {"a bucket of zero: the decoder's error",
       {absl::ZeroDuration(), one.start, one.end(), data},
       absl::StatusCode::kInvalidArgument},
      {"ended more than a week ago: nothing of it would be kept",
       {absl::Minutes(5), kNow - week - absl::Minutes(10), kNow, data},
       absl::StatusCode::kFailedPrecondition},
      {"ends after now: not ours to trust",
       {absl::Minutes(5), kNow, kNow, data},
       absl::StatusCode::kFailedPrecondition},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<state::ArrivalBuckets> got = RestorableArrivals(c.saved, week, kNow);
    EXPECT_EQ(got.status().code(), c.want) << got.status();
    if (got.ok()) {
      EXPECT_EQ(got->arrivals, one.arrivals);
    }
  }
}

TEST(ArrivalHistoryStepsTest, PrometheusIsAskedForTheClosedBucketsOfTheRetention) {
  const ArrivalQuery q = ArrivalQueryFor(absl::Minutes(5), absl::Hours(24 * 7) + absl::Minutes(25),
                                         kNow + absl::Seconds(170));
  EXPECT_EQ(q.step, absl::Minutes(5));
  EXPECT_EQ(q.steps, 2021);  // a week and 25 minutes, whole buckets
  EXPECT_EQ(q.start + q.step * q.steps, kNow);
}

TEST(ArrivalHistoryStepsTest, PrometheusStepsAreWholeBucketsObservedOrNot) {
  metrics::ArrivalSeries s;
  s.start = kNow;
  s.step = absl::Minutes(5);
  s.arrivals = {0, 12, 7};
  s.observed = {false, true, true};
  const state::ArrivalBuckets b = ArrivalBucketsOf(s);
  EXPECT_EQ(b.start, kNow);
  EXPECT_EQ(b.bucket, absl::Minutes(5));
  EXPECT_EQ(b.arrivals, (std::vector<double>{0, 12, 7}));
  EXPECT_EQ(b.observed_s, (std::vector<double>{0, 300, 300}));
}

TEST(ArrivalHistoryStepsTest, TheStatusFormChangesOnlyWhenABucketCloses) {
  state::ArrivalHistory h(absl::Minutes(5), absl::Hours(24));
  // Nothing closed yet: what the status holds stays (a new leader keeps the old one's).
  const AutoscalerStatus::ArrivalHistory old{absl::Minutes(5), kNow - absl::Hours(2),
                                             kNow - absl::Hours(1), "AQA="};
  EXPECT_EQ(ArrivalHistoryStatus(h, kNow, std::nullopt), std::nullopt);
  EXPECT_EQ(ArrivalHistoryStatus(h, kNow, old)->data, "AQA=");
  h.Add(kNow, kNow + absl::Minutes(4), 240);
  EXPECT_EQ(ArrivalHistoryStatus(h, kNow + absl::Minutes(4), old)->data, "AQA=");
  h.Add(kNow + absl::Minutes(4), kNow + absl::Minutes(6), 120);
  const std::optional<AutoscalerStatus::ArrivalHistory> closed =
      ArrivalHistoryStatus(h, kNow + absl::Minutes(6), old);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->start, kNow);
  EXPECT_EQ(closed->end, kNow + absl::Minutes(5));
  const absl::StatusOr<state::ArrivalBuckets> back =
      state::DecodeArrivalBuckets(closed->bucket, closed->start, closed->data);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->arrivals, (std::vector<double>{300}));
  EXPECT_EQ(back->observed_s, (std::vector<double>{300}));
  // A pass before the next closing returns the same one, not a new encoding.
  h.Add(kNow + absl::Minutes(6), kNow + absl::Minutes(7), 60);
  const std::optional<AutoscalerStatus::ArrivalHistory> again =
      ArrivalHistoryStatus(h, kNow + absl::Minutes(7), closed);
  EXPECT_EQ(again->data, closed->data);
  EXPECT_EQ(again->end, closed->end);
}

}  // namespace
}  // namespace twinscale::reconcile
