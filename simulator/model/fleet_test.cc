// Fleet behaviour: replica lifecycle with warm-up lag, the gateway while nothing is Ready, scale-in
// victims and draining, GPU-hours, routers, and determinism. Expected values worked by hand.
#include "simulator/model/fleet.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "tests/util/engine_test_util.h"

namespace twinscale::sim {
namespace {

using testing::HandDeployment;
using testing::Harness;
using testing::Req;

DeploymentSpec WithLifecycle(DeploymentSpec d, int prov_s, int load_s, int warm_s) {
  d.lifecycle.provisioning = {SimDuration::Seconds(prov_s), 1.0};  // ratio 1: constant
  d.lifecycle.loading = {SimDuration::Seconds(load_s), 1.0};
  d.lifecycle.warming_up = {SimDuration::Seconds(warm_s), 1.0};
  return d;
}

SimTime At(double s) { return SimTime::FromSecondsF(s); }

TEST(FleetTest, NewReplicaWalksThroughTheLifecycleAndCostsFromLoading) {
  // Provisioning 20 s, Loading 30 s, WarmingUp 10 s: scaled at t = 0, Ready at 60 s.
  // GPU time at 100 s: replica 0 (ready from 0) 100 s + replica 1 (holds a GPU from 20 s) 80 s.
  Harness h(WithLifecycle(HandDeployment(8, 2048, 100000, 1000), 20, 30, 10));
  h.fleet->SetDesiredReplicas(2);
  EXPECT_EQ(h.fleet->current_replicas(), 2);
  EXPECT_EQ(h.fleet->ready_replicas(), 1);
  const struct {
    double t;
    ReplicaPhase want;
  } steps[] = {{10, ReplicaPhase::kProvisioning},
               {25, ReplicaPhase::kLoading},
               {55, ReplicaPhase::kWarmingUp},
               {59.999, ReplicaPhase::kWarmingUp},
               {60, ReplicaPhase::kReady}};
  for (const auto& s : steps) {
    h.sim.RunUntil(At(s.t));
    EXPECT_EQ(h.fleet->replica(1).phase(), s.want) << "at " << s.t << " s";
  }
  EXPECT_EQ(h.fleet->ready_replicas(), 2);
  h.sim.RunUntil(At(100));
  EXPECT_DOUBLE_EQ(h.fleet->GpuSeconds(h.sim.Now()), 180.0);
}

TEST(FleetTest, RequestsWaitAtTheGatewayUntilAReplicaIsReadyAndTheWaitCountsInTtft) {
  // No replica at first; scaling to 1 at t = 0 gives Ready at 5 + 5 + 5 = 15 s. A request arriving
  // at 1 s waits 14 s, then its prefill step takes 1 ms: TTFT = 14.001 s.
  DeploymentSpec d = WithLifecycle(HandDeployment(8, 2048, 100000, 1000), 5, 5, 5);
  Harness h(d, /*replicas=*/0);
  h.fleet->SetDesiredReplicas(1);
  h.Run({Req(1, 1000, 10, 1)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 14'001'000'000);
}

TEST(FleetTest, ScaleInWithoutNamedVictimsTakesTheNewestReplica) {
  // Two Ready replicas, round-robin: request 1 (long: 5000 steps of 1 ms) goes to replica 0,
  // nothing to replica 1. Scaling to 1 at 1 s with no victim named takes the newest, replica 1,
  // which is idle and so Gone at once; replica 0 keeps serving.
  Harness h(HandDeployment(8, 2048, 1'000'000, 1000), 2);
  h.source = std::make_unique<testing::VectorSource>(std::vector<RequestSpec>{Req(1, 0, 10, 5000)});
  h.fleet->AttachSource(h.source.get());
  h.sim.RunUntil(At(1));
  h.fleet->SetDesiredReplicas(1);
  EXPECT_EQ(h.fleet->replica(1).phase(), ReplicaPhase::kGone);
  EXPECT_EQ(h.fleet->replica(0).phase(), ReplicaPhase::kReady);
  h.sim.Run();
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kCompleted);
}

TEST(FleetTest, ScaleInDrainsTheNamedVictimsFirstAndSkipsThoseAlreadyGoing) {
  // Three Ready replicas, round-robin: the long request goes to replica 0. Named victims {0}: the
  // busy replica 0 drains (Draining, its request still running), though 1 and 2 are idle. Then to
  // 1 replica with victims {0, 5, 1}: 0 is already Draining and 5 does not exist, so 1 goes.
  Harness h(HandDeployment(8, 2048, 1'000'000, 1000), 3);
  h.source = std::make_unique<testing::VectorSource>(std::vector<RequestSpec>{Req(1, 0, 10, 5000)});
  h.fleet->AttachSource(h.source.get());
  h.sim.RunUntil(At(1));
  h.fleet->SetDesiredReplicas(2, {0});
  EXPECT_EQ(h.fleet->replica(0).phase(), ReplicaPhase::kDraining);
  EXPECT_EQ(h.fleet->replica(1).phase(), ReplicaPhase::kReady);
  EXPECT_EQ(h.fleet->replica(2).phase(), ReplicaPhase::kReady);
  h.fleet->SetDesiredReplicas(1, {0, 5, 1});
  EXPECT_EQ(h.fleet->replica(1).phase(), ReplicaPhase::kGone);
  EXPECT_EQ(h.fleet->replica(2).phase(), ReplicaPhase::kReady);
  EXPECT_EQ(h.fleet->current_replicas(), 1);
  h.sim.Run();
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kCompleted);
}

TEST(FleetTest, ADrainingReplicaFinishesInFlightWorkWithinTheGracePeriod) {
  // One replica serving a request of 3000 steps x 1 ms (ends at 3 s). Scale 1 -> 2 -> 1 would pick
  // the new, unready one; instead drain the only replica by scaling to 0 at 1 s: it finishes the
  // request at 3 s, then is Gone; GPU time = 3 s.
  Harness h(HandDeployment(8, 2048, 1'000'000, 1000), 1);
  h.source = std::make_unique<testing::VectorSource>(std::vector<RequestSpec>{Req(1, 0, 10, 3000)});
  h.fleet->AttachSource(h.source.get());
  h.sim.RunUntil(At(1));
  h.fleet->SetDesiredReplicas(0);
  EXPECT_EQ(h.fleet->replica(0).phase(), ReplicaPhase::kDraining);
  h.sim.Run();
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kCompleted);
  EXPECT_EQ(h.records.at(1).e2e.nanos(), 3'000'000'000);
  EXPECT_EQ(h.fleet->replica(0).phase(), ReplicaPhase::kGone);
  EXPECT_DOUBLE_EQ(h.fleet->GpuSeconds(h.sim.Now()), 3.0);
}

TEST(FleetTest, WorkStillRunningAtTheEndOfTheGracePeriodIsAbortedAndCounted) {
  // Grace 120 s; a request needing 500 steps of 1 s. Drained at 10 s -> aborted at 130 s.
  DeploymentSpec d = HandDeployment(8, 2048, 1'000'000, 1'000'000);
  d.lifecycle.drain_grace = SimDuration::Seconds(120);
  Harness h(d, 1);
  h.source = std::make_unique<testing::VectorSource>(std::vector<RequestSpec>{Req(1, 0, 10, 500)});
  h.fleet->AttachSource(h.source.get());
  h.sim.RunUntil(At(10));
  h.fleet->SetDesiredReplicas(0);
  h.sim.Run();
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kAborted);
  EXPECT_EQ(h.records.at(1).e2e.nanos(), 130'000'000'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.aborted, 1);
  EXPECT_EQ(s.completed, 0);
  EXPECT_DOUBLE_EQ(h.fleet->GpuSeconds(h.sim.Now()), 130.0);
}

std::map<int32_t, int> CountByReplica(const Harness& h) {
  std::map<int32_t, int> n;
  for (const auto& [id, r] : h.records) ++n[r.replica];
  return n;
}

std::vector<RequestSpec> Spaced(int n, double every_ms, int32_t output) {
  std::vector<RequestSpec> v;
  for (int i = 0; i < n; ++i) v.push_back(Req(static_cast<uint64_t>(i), i * every_ms, 10, output));
  return v;
}

TEST(FleetTest, AnAdvisedArrivalRateShedsWhatTheTokenBucketCannotTake) {
  // 10 req/s set at t = 0: a full bucket holds one second's worth, 10 tokens. 30 requests at
  // 0.1 s: 10 pass, 20 are rejected. 10 more at 0.6 s: 0.5 s refilled 5 tokens, so 5 pass. One
  // at 10 s finds a full bucket again (capped at 10) and passes: 16 served, 25 rejected.
  Harness h(HandDeployment(256, 100000, 10000000, 1000), 1);
  AdmissionLimits limits;
  limits.max_arrival_rate = 10;
  h.fleet->SetAdmission(limits);
  std::vector<RequestSpec> requests;
  for (int i = 0; i < 30; ++i) requests.push_back(Req(i, 100, 10, 1));
  for (int i = 30; i < 40; ++i) requests.push_back(Req(i, 600, 10, 1));
  requests.push_back(Req(40, 10000, 10, 1));
  h.Run(requests);
  int served = 0, rejected = 0;
  for (const auto& [id, r] : h.records) {
    (r.outcome == RequestOutcome::kRejected ? rejected : served) += 1;
  }
  EXPECT_EQ(served, 16);
  EXPECT_EQ(rejected, 25);
  EXPECT_EQ(h.records.at(9).outcome, RequestOutcome::kCompleted);  // first come, first admitted
  EXPECT_EQ(h.records.at(10).outcome, RequestOutcome::kRejected);
  EXPECT_EQ(h.records.at(40).outcome, RequestOutcome::kCompleted);
  EXPECT_EQ(h.Summary().rejected, 25);
}

TEST(FleetTest, AnAdvisedQueueLimitShedsWhatFindsEveryReplicaFull) {
  // One replica running one sequence at a time (1 s steps), at most 2 waiting. Request 0 at t = 0
  // starts at once; requests 1-4 at 1 ms find it busy: 1 and 2 wait, 3 and 4 find 2 waiting and
  // are rejected. Lifting the limit at 5 s lets request 5 (at 6 s) in whatever waits.
  Harness h(HandDeployment(1, 2048, 100000, 1000000), 1);
  AdmissionLimits limits;
  limits.max_waiting_per_replica = 2;
  h.fleet->SetAdmission(limits);
  std::vector<RequestSpec> requests = {Req(0, 0, 10, 1)};
  for (int i = 1; i < 5; ++i) requests.push_back(Req(i, 1, 10, 1));
  h.source = std::make_unique<testing::VectorSource>(requests);
  h.fleet->AttachSource(h.source.get());
  h.sim.RunUntil(At(5));
  h.fleet->SetAdmission({});
  h.fleet->Inject(Req(5, 5000, 10, 1));
  h.sim.Run();
  h.fleet->FinalizeStats(h.sim.Now());
  for (int i : {0, 1, 2, 5}) EXPECT_EQ(h.records.at(i).outcome, RequestOutcome::kCompleted) << i;
  for (int i : {3, 4}) EXPECT_EQ(h.records.at(i).outcome, RequestOutcome::kRejected) << i;
}

TEST(FleetTest, RoundRobinSplitsEvenly) {
  Harness h(HandDeployment(8, 2048, 100000, 1000), 4, {}, RouterKind::kRoundRobin);
  h.Run(Spaced(400, 1, 2));
  for (const auto& [replica, n] : CountByReplica(h)) EXPECT_EQ(n, 100) << replica;
}

TEST(FleetTest, RandomRouterSpreadsWithinBinomialNoise) {
  // 4000 requests over 4 replicas: each count ~ Binomial(4000, 1/4): mean 1000, sd 27.4; allow
  // 5 sd.
  Harness h(HandDeployment(8, 2048, 100000, 1000), 4, {}, RouterKind::kRandom);
  h.Run(Spaced(4000, 1, 2));
  for (const auto& [replica, n] : CountByReplica(h)) EXPECT_NEAR(n, 1000, 137) << replica;
}

TEST(FleetTest, LeastRequestsAvoidsTheBusyReplica) {
  // Request 0 holds replica 0 for 10 s; the next 99 requests (short, spaced 100 ms) each finish in
  // 2 ms, so least-requests never sends another one to the busy replica.
  Harness h(HandDeployment(8, 2048, 100000, 1000), 2, {}, RouterKind::kLeastRequests);
  std::vector<RequestSpec> v{Req(0, 0, 10, 10000)};
  for (int i = 1; i < 100; ++i) v.push_back(Req(static_cast<uint64_t>(i), i * 100.0, 10, 2));
  h.Run(v);
  const int32_t busy = h.records.at(0).replica;
  for (int i = 1; i < 100; ++i) EXPECT_NE(h.records.at(static_cast<uint64_t>(i)).replica, busy);
}

TEST(FleetTest, PerConnectionRandomPinsRunsOfRequests) {
  // One client connection carrying 10 requests before it reconnects: requests go in runs of 10
  // to one replica.
  FleetOptions o;
  o.deployment = HandDeployment(8, 2048, 100000, 1000);
  o.initial_replicas = 4;
  o.router = RouterOptions{RouterKind::kRandomPerConnection, 1, 10};
  Simulation sim;
  RunStats stats({});
  std::map<uint64_t, int32_t> where;
  stats.set_record_sink([&](const RequestRecord& r) { where[r.id] = r.replica; });
  Fleet fleet(sim, o, &stats);
  testing::VectorSource src(Spaced(100, 1, 2));
  fleet.AttachSource(&src);
  sim.Run();
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(where[i], where[i - i % 10]) << i;
}

TEST(FleetTest, SameSeedSameRunDifferentSeedDifferentRouting) {
  auto run = [](uint64_t seed) {
    FleetOptions o;
    o.deployment = HandDeployment(8, 2048, 100000, 1000, 10, 50);
    o.initial_replicas = 3;
    o.router.kind = RouterKind::kRandom;
    o.seed = seed;
    o.step_noise_cv = 0.1;
    Simulation sim;
    RunStats stats({});
    std::vector<std::pair<int32_t, int64_t>> out;
    stats.set_record_sink([&](const RequestRecord& r) {
      out.push_back({r.replica, r.e2e.nanos()});
    });
    Fleet fleet(sim, o, &stats);
    testing::VectorSource src(Spaced(500, 3, 20));
    fleet.AttachSource(&src);
    sim.Run();
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(FleetTest, WithoutVllmMetricsARunIsTheSameAndItsMetricsStayEmpty) {
  // The twin's what-ifs switch the vLLM-format metrics off: every request record and the run's
  // figures must stay what they are with them on; only the metrics go unfed.
  auto run = [](bool vllm_metrics) {
    FleetOptions o;
    // 4 sequences of up to 130 tokens want 36 blocks of 16; 400 tokens hold 25: preemptions.
    o.deployment = HandDeployment(4, 256, 400, 1000, 10, 50);
    o.initial_replicas = 2;
    o.router.kind = RouterKind::kRandom;
    o.vllm_metrics = vllm_metrics;
    Simulation sim;
    RunStats stats({});
    std::vector<std::tuple<uint64_t, int32_t, int64_t, int64_t, int32_t>> records;
    stats.set_record_sink([&](const RequestRecord& r) {
      records.emplace_back(r.id, r.replica, r.ttft.nanos(), r.e2e.nanos(), r.preemptions);
    });
    Fleet fleet(sim, o, &stats);
    testing::VectorSource src(Spaced(300, 2, 120));  // busy enough to queue and preempt
    fleet.AttachSource(&src);
    sim.Run();
    const RunSummary s = stats.Summarize(0, 0);
    const VllmMetrics& m = fleet.replica(0).metrics();
    return std::make_tuple(records, s.engine_steps, s.preemptions, s.slo_attainment, s.ttft_ms.p90,
                           m.generation_tokens(),
                           m.histogram(VllmHistogram::kTimeToFirstToken).count);
  };
  const auto on = run(true);
  const auto off = run(false);
  EXPECT_EQ(std::get<0>(on), std::get<0>(off));
  EXPECT_EQ(std::get<1>(on), std::get<1>(off));
  EXPECT_EQ(std::get<2>(on), std::get<2>(off));
  EXPECT_GT(std::get<2>(on), 0);  // the load did preempt
  EXPECT_EQ(std::get<3>(on), std::get<3>(off));
  EXPECT_EQ(std::get<4>(on), std::get<4>(off));
  EXPECT_GT(std::get<5>(on), 0);
  EXPECT_GT(std::get<6>(on), 0);
  EXPECT_EQ(std::get<5>(off), 0);
  EXPECT_EQ(std::get<6>(off), 0);
}

TEST(FleetTest, AnAdoptedDecodingRequestRunsOnInvisibleToStatistics) {
  // The twin seeded from an observed replica: a request with prompt 100 that has produced 10 of
  // its 15 tokens holds ceil((100 + 10 - 1) / 16) = 7 blocks and needs 5 more 1 ms steps. A new
  // request (prompt 10, output 1) arriving at t = 0 shares the first step: TTFT 1 ms. Only the new
  // request shows in the statistics.
  Harness h(HandDeployment(8, 2048, 1600, 1000), 1);
  ASSERT_TRUE(h.fleet->AdoptRunning(0, Req(100, 0, 100, 15), 10));
  EXPECT_EQ(h.fleet->replica(0).kv_pool().used_blocks(), 7);
  h.Run({Req(1, 0, 10, 1)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 1'000'000);
  EXPECT_EQ(h.records.count(100), 0u);
  EXPECT_EQ(h.Summary().completed, 1);
  EXPECT_EQ(h.Summary().engine_steps, 5);  // tokens 11..15 of the adopted request
  EXPECT_EQ(h.fleet->replica(0).kv_pool().used_blocks(), 0);
}

TEST(FleetTest, AReplicaReadyAfterADelayTakesTrafficOnlyThen) {
  // Replica 1 becomes Ready at 2 s; round-robin over Ready replicas: before 2 s everything goes to
  // replica 0, afterwards they alternate.
  Harness h(HandDeployment(8, 2048, 100000, 1000), 1);
  EXPECT_EQ(h.fleet->AddReplicaReadyAfter(SimDuration::Seconds(2)), 1);
  EXPECT_EQ(h.fleet->current_replicas(), 2);
  EXPECT_EQ(h.fleet->ready_replicas(), 1);
  h.Run({Req(1, 1000, 10, 1), Req(2, 1500, 10, 1), Req(3, 2500, 10, 1), Req(4, 2600, 10, 1)});
  EXPECT_EQ(h.records.at(1).replica, 0);
  EXPECT_EQ(h.records.at(2).replica, 0);
  EXPECT_NE(h.records.at(3).replica, h.records.at(4).replica);
}

}  // namespace
}  // namespace twinscale::sim
