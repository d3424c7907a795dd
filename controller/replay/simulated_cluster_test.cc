// The simulated cluster as a controller sees it: per-pod values that went through vLLM text and
// back equal what the fleet holds; pods walk through the Kubernetes stages with the profile's
// delays; scrapes lag by the scrape delay. Expected values worked by hand from constant delays.
#include "controller/replay/simulated_cluster.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/util/engine_test_util.h"

namespace twinscale::replay {
namespace {

using sim::SimDuration;
using sim::SimTime;
using sim::testing::HandDeployment;
using sim::testing::Req;
using Stage = PodView::Stage;

absl::Time At(double seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

std::shared_ptr<const sim::Trace> TraceOf(std::vector<sim::RequestSpec> requests) {
  auto t = std::make_shared<sim::Trace>();
  t->source = "test";
  t->requests = std::move(requests);
  return t;
}

// Steps of 10 ms; Provisioning 10 s, Loading 20 s, WarmingUp 30 s, all constant: a pod scaled at
// t is Ready at t + 60 s.
ClusterOptions Options(int32_t replicas) {
  ClusterOptions o;
  o.fleet.deployment = HandDeployment(4, 2048, 100000, 10000);
  o.fleet.deployment.lifecycle.provisioning = {SimDuration::Seconds(10), 1.0};
  o.fleet.deployment.lifecycle.loading = {SimDuration::Seconds(20), 1.0};
  o.fleet.deployment.lifecycle.warming_up = {SimDuration::Seconds(30), 1.0};
  o.fleet.router.kind = sim::RouterKind::kLeastRequests;
  o.fleet.initial_replicas = replicas;
  return o;
}

const PodView* FindPod(const ClusterView& v, const std::string& name) {
  for (const PodView& p : v.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(SimulatedClusterTest, ScrapedValuesEqualWhatTheFleetHolds) {
  // 20 long requests at t = 0 on 2 replicas of max_num_seqs 4: each replica runs 4 and queues 6;
  // the gauges reach the policy only as vLLM text, parsed and extracted, and must come back equal.
  std::vector<sim::RequestSpec> reqs;
  for (int i = 0; i < 20; ++i) reqs.push_back(Req(i, 0, 100 + 10 * i, 1000));
  SimulatedCluster cluster(Options(2), TraceOf(reqs));
  for (double t : {0.5, 1.0, 3.0}) {
    SCOPED_TRACE(t);
    cluster.AdvanceTo(At(t));
    const ClusterView view = cluster.View();
    EXPECT_EQ(view.now, At(t));
    EXPECT_EQ(view.spec_replicas, 2);
    ASSERT_EQ(view.pods.size(), 2u);
    for (const sim::ReplicaView& r : cluster.fleet().Replicas()) {
      const PodView* pod = FindPod(view, absl::StrCat("vllm-", r.index));
      ASSERT_NE(pod, nullptr);
      EXPECT_EQ(pod->stage, Stage::kReady);
      ASSERT_TRUE(pod->scrape_ok);
      EXPECT_EQ(pod->scraped_at, At(t));
      ASSERT_EQ(pod->observation.engines.size(), 1u);
      const metrics::EngineObservation& e = pod->observation.engines[0];
      EXPECT_EQ(e.waiting, static_cast<double>(r.waiting));
      EXPECT_EQ(e.running, static_cast<double>(r.running));
      EXPECT_EQ(e.kv_cache_usage, r.kv_usage);  // exact: Python's repr round-trips a double
      EXPECT_EQ(r.running, 4);
      EXPECT_EQ(r.waiting, 6);
      EXPECT_GT(r.kv_usage, 0.0);
    }
  }
  const FleetState s = cluster.State();
  EXPECT_EQ(s.ready, 2);
  EXPECT_EQ(s.running, 8);
  EXPECT_EQ(s.waiting, 12);
}

TEST(SimulatedClusterTest, AShortContextServerShowsItsLengthLadderAndRefusesLongerRequests) {
  // --max-model-len 8192: vLLM's 1-2-5 ladder of prompt lengths stops at 5000 (the last step not
  // above 8192), so a 6,000-token prompt is counted in +Inf; 8,100 + 100 tokens is refused.
  ClusterOptions o = Options(1);
  o.fleet.deployment.engine.max_model_len = 8192;
  SimulatedCluster cluster(o, TraceOf({Req(1, 0, 6000, 10), Req(2, 0, 8100, 100)}));
  cluster.AdvanceTo(At(5.0));
  const ClusterView view = cluster.View();
  ASSERT_EQ(view.pods.size(), 1u);
  ASSERT_TRUE(view.pods[0].scrape_ok);
  ASSERT_EQ(view.pods[0].observation.engines.size(), 1u);
  const auto& prompts = view.pods[0].observation.engines[0].prompt_tokens;
  ASSERT_TRUE(prompts.has_value());
  ASSERT_FALSE(prompts->upper_bounds.empty());
  EXPECT_EQ(prompts->upper_bounds.back(), 5000);
  EXPECT_EQ(prompts->count, 1);  // the refused request never reached the engine's histograms
  EXPECT_EQ(prompts->cumulative.back() - prompts->cumulative[prompts->cumulative.size() - 2], 1);
  int rejected = 0;
  for (const RequestFate& f : cluster.fates()) {
    rejected += f.outcome == sim::RequestOutcome::kRejected;
  }
  EXPECT_EQ(rejected, 1);
}

TEST(SimulatedClusterTest, ScaleOutShowsEveryStageBeforeReadyWithTheProfileDelays) {
  SimulatedCluster cluster(Options(1), TraceOf({}));
  cluster.AdvanceTo(At(100));
  cluster.Scale(2);  // the new pod vllm-1: Pending until 110, Loading until 130, WarmingUp to 160
  EXPECT_EQ(cluster.spec_replicas(), 2);
  const struct {
    int64_t ms;
    Stage want;
    bool scraped;
  } steps[] = {{100000, Stage::kPending, false},   {109999, Stage::kPending, false},
               {110000, Stage::kLoading, false},   {129999, Stage::kLoading, false},
               {130000, Stage::kWarmingUp, false}, {159999, Stage::kWarmingUp, false},
               {160000, Stage::kReady, true},      {175000, Stage::kReady, true}};
  for (const auto& step : steps) {
    SCOPED_TRACE(step.ms);
    const absl::Time t = absl::UnixEpoch() + absl::Milliseconds(step.ms);
    cluster.AdvanceTo(t);
    const ClusterView view = cluster.View();
    ASSERT_EQ(view.pods.size(), 2u);
    const PodView* pod = FindPod(view, "vllm-1");
    ASSERT_NE(pod, nullptr);
    EXPECT_EQ(pod->stage, step.want);
    EXPECT_EQ(pod->age, absl::Milliseconds(step.ms - 100000));
    EXPECT_EQ(pod->ready_for, step.want == Stage::kReady ? absl::Milliseconds(step.ms - 160000)
                                                         : absl::ZeroDuration());
    EXPECT_EQ(pod->scrape_ok, step.scraped);
    // The first pod is an initial replica: it stands for a fleet that was serving before the
    // trace began, so it shows as Ready for an hour before time 0 as well, settled from the start
    // (a controller leaves out of calibration pods Ready for less than 90 s).
    EXPECT_EQ(FindPod(view, "vllm-0")->ready_for, absl::Hours(1) + absl::Milliseconds(step.ms));
    EXPECT_EQ(FindPod(view, "vllm-0")->age, absl::Hours(1) + absl::Milliseconds(step.ms));
  }
  const FleetState s = cluster.State();
  EXPECT_EQ(s.ready, 2);
  EXPECT_EQ(s.warming, 0);
  // GPU time: vllm-0 for 175 s, vllm-1 from Loading (110 s) on: 65 s.
  EXPECT_DOUBLE_EQ(cluster.GpuHours(), (175.0 + 65.0) / 3600.0);
}

TEST(SimulatedClusterTest, ScaleInTerminatesABusyPodAndDropsAnIdleOne) {
  // One long request (1000 steps of 10 ms: done at about 10 s) on one of two pods. Scaling to 1
  // picks the idle pod, which goes at once; then scaling to 0 drains the busy one (Terminating,
  // still scraped) until its request is done.
  SimulatedCluster cluster(Options(2), TraceOf({Req(0, 0, 100, 1000)}));
  cluster.AdvanceTo(At(1));
  cluster.Scale(1);
  ClusterView view = cluster.View();
  ASSERT_EQ(view.pods.size(), 1u);  // the idle pod went at once
  const std::string busy = view.pods[0].name;
  EXPECT_EQ(view.pods[0].observation.engines[0].running, 1.0);
  cluster.Scale(0);
  cluster.AdvanceTo(At(2));
  view = cluster.View();
  ASSERT_EQ(view.pods.size(), 1u);
  EXPECT_EQ(view.pods[0].name, busy);
  EXPECT_EQ(view.pods[0].stage, Stage::kTerminating);
  EXPECT_TRUE(view.pods[0].scrape_ok);
  EXPECT_EQ(view.pods[0].observation.engines[0].running, 1.0);
  EXPECT_EQ(cluster.State().draining, 1);
  cluster.AdvanceTo(At(11));
  EXPECT_TRUE(cluster.View().pods.empty());
  EXPECT_TRUE(cluster.Done());
  ASSERT_EQ(cluster.fates().size(), 1u);
  EXPECT_EQ(cluster.fates()[0].outcome, sim::RequestOutcome::kCompleted);
}

TEST(SimulatedClusterTest, ViewsLagByTheScrapeDelayOnTheScrapeGrid) {
  // Scrapes every 10 s from 0. At 40 s with a 15 s delay the newest usable scrape is from 20 s.
  ClusterOptions o = Options(1);
  o.scrape_interval = absl::Seconds(10);
  SimulatedCluster cluster(o, TraceOf({}));
  cluster.AdvanceTo(At(40));
  EXPECT_EQ(cluster.View(absl::Seconds(15)).pods[0].scraped_at, At(20));
  EXPECT_EQ(cluster.View(absl::ZeroDuration()).pods[0].scraped_at, At(40));
  EXPECT_EQ(cluster.View(absl::Seconds(10)).pods[0].scraped_at, At(30));
  EXPECT_EQ(cluster.View(absl::Seconds(9)).pods[0].scraped_at, At(30));
  // A new pod Ready at 45 + 60 = 105 s: at 112 s with a 10 s delay (scrape of 100 s) it has no
  // scrape yet, as Prometheus would not; with no delay (scrape of 110 s) it has one.
  cluster.AdvanceTo(At(45));
  cluster.Scale(2);
  cluster.AdvanceTo(At(112));
  const ClusterView late = cluster.View(absl::Seconds(10));
  EXPECT_EQ(FindPod(late, "vllm-1")->stage, Stage::kReady);
  EXPECT_FALSE(FindPod(late, "vllm-1")->scrape_ok);
  EXPECT_EQ(FindPod(late, "vllm-1")->scraped_at, absl::InfinitePast());
  EXPECT_TRUE(FindPod(late, "vllm-0")->scrape_ok);
  const ClusterView fresh = cluster.View();
  EXPECT_TRUE(FindPod(fresh, "vllm-1")->scrape_ok);
  EXPECT_EQ(FindPod(fresh, "vllm-1")->scraped_at, At(110));
}

TEST(SimulatedClusterTest, RecordsEveryRequestsFate) {
  // Two short requests, served at once: TTFT = one 10 ms prefill step each (their own replica).
  SimulatedCluster cluster(Options(2), TraceOf({Req(0, 0, 16, 1), Req(1, 500, 16, 1)}));
  cluster.AdvanceTo(At(5));
  ASSERT_TRUE(cluster.Done());
  ASSERT_EQ(cluster.fates().size(), 2u);
  for (const RequestFate& f : cluster.fates()) {
    EXPECT_EQ(f.outcome, sim::RequestOutcome::kCompleted);
    EXPECT_EQ(f.ttft, SimDuration::Millis(10));
    EXPECT_EQ(f.prompt_tokens, 16);
  }
  EXPECT_EQ(cluster.fates()[1].arrival, SimTime::FromNanos(500'000'000));
}

}  // namespace
}  // namespace twinscale::replay
