// Step coalescing (replica.h) changes nothing but the number of events: every workload here runs
// twice, with ReplicaOptions::coalesce_steps on and off, and everything observable must be equal
// to the nanosecond and to the last bit: every request's record (first token, finish, scheduling,
// preemptions, replica, outcome), the run's summary, and at every observation point (where replay
// scrapes, scales and reads the fleet) each replica's phase, queues, KV usage, step count and
// rendered vLLM metrics. The workloads cover what ends or cuts a run of coalesced steps: chat-like
// lengths, long prompts with chunked prefill and prefix caching, KV pressure with preemptions,
// arrivals reaching a busy engine with and without a front-end delay, a fleet scaling out and in
// (slow starts, drains cut short by their deadline, admission limits changed), and the twin's way
// of starting from an observed fleet.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/model/run_stats.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/generators.h"
#include "simulator/workload/trace.h"
#include "simulator/workload/trace_reader.h"
#include "tests/util/engine_test_util.h"

namespace twinscale::sim {
namespace {

DeploymentSpec H100() {
  absl::StatusOr<ProfileRegistry> reg = ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(reg.ok()) << reg.status();
  absl::StatusOr<DeploymentSpec> d = reg->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  EXPECT_TRUE(d.ok()) << d.status();
  return *d;
}

std::string Hex(double v) { return absl::StrFormat("%a", v); }

std::string Describe(const RequestRecord& r) {
  return absl::StrCat("id=", r.id, " replica=", r.replica, " outcome=", static_cast<int>(r.outcome),
                      " arrival=", r.arrival.nanos(), " ttft=", r.ttft.nanos(),
                      " e2e=", r.e2e.nanos(), " sched=", r.scheduling_delay.nanos(),
                      " prompt=", r.prompt_tokens, " output=", r.output_tokens,
                      " preemptions=", r.preemptions);
}

std::string Describe(const LatencySummary& l) {
  return absl::StrCat(l.count, "/", Hex(l.mean), "/", Hex(l.p50), "/", Hex(l.p90), "/", Hex(l.p99));
}

std::string Describe(const RunSummary& s) {
  return absl::StrCat(
      "injected=", s.injected, " completed=", s.completed, " rejected=", s.rejected,
      " aborted=", s.aborted, " queued=", s.queued_at_end, " running=", s.running_at_end,
      " secs=", Hex(s.simulated_seconds), " rps=", Hex(s.throughput_rps),
      " otps=", Hex(s.output_tokens_per_s), " ttft=", Describe(s.ttft_ms),
      " itl=", Describe(s.itl_ms), " e2e=", Describe(s.e2e_ms),
      " sched=", Describe(s.scheduling_delay_ms), " preemptions=", s.preemptions,
      " kv_peak=", Hex(s.kv_peak_utilization), " slo=", Hex(s.slo_attainment),
      " judged=", s.judged_requests, "/", Hex(s.judged_attainment),
      " itl_judged=", s.judged_itl_tokens, "/", s.judged_itl_over, " goodput=", Hex(s.goodput_rps),
      " gpu_h=", Hex(s.gpu_hours), " steps=", s.engine_steps, " seq_steps=", s.sequence_steps,
      " out=", s.output_tokens, " prompt_computed=", s.prompt_tokens_computed,
      " prefix=", s.prefix_cache_queried_tokens, "/", s.prefix_cache_hit_tokens);
}

struct Scenario {
  FleetOptions fleet;
  TtftSlo slo;
  StatsDetail detail = StatsDetail::kFull;
  SimDuration judge_from_after = SimDuration::Zero();
  SimDuration itl_threshold = SimDuration::Zero();
  std::function<std::unique_ptr<RequestSource>()> source;
  // Called once before the run (the twin seeding a fleet) and at every observation.
  std::function<void(Fleet&)> setup;
  std::function<void(Fleet&, SimTime)> at_observation;
  SimDuration observe_every = SimDuration::Seconds(5);
  SimTime observe_until = SimTime::FromSecondsF(60);
};

struct Observed {
  std::map<uint64_t, std::string> records;
  std::vector<std::string> snapshots;
  std::string summary;
  int64_t events = 0;
};

std::string Snapshot(const Fleet& fleet, const RunStats& stats, SimTime now) {
  std::string out = absl::StrCat("t=", now.nanos(), " desired=", fleet.desired_replicas(),
                                 " gateway=", fleet.gateway_queue(), "\n");
  for (int32_t i = 0; i < fleet.replica_count_ever(); ++i) {
    const Replica& r = fleet.replica(i);
    absl::StrAppend(&out, "replica ", i, " phase=", static_cast<int>(r.phase()),
                    " waiting=", r.num_waiting(), " running=", r.num_running(),
                    " transit=", r.num_in_transit(), " kv=", Hex(r.kv_usage()),
                    " free=", r.kv_pool().free_blocks(), " steps=", r.steps(), " busy=", r.busy(),
                    "\n", r.metrics().Render());
  }
  absl::StrAppend(&out, Describe(stats.Summarize(fleet.waiting(), fleet.running())), "\n");
  return out;
}

Observed Run(const Scenario& sc, bool coalesce) {
  Observed o;
  Simulation sim;
  RunStats stats(sc.slo, sc.detail);
  stats.set_record_sink([&o](const RequestRecord& r) { o.records[r.id] = Describe(r); });
  stats.set_judge_from(SimTime::Zero() + sc.judge_from_after);
  stats.set_itl_threshold(sc.itl_threshold);
  FleetOptions fo = sc.fleet;
  fo.coalesce_steps = coalesce;
  Fleet fleet(sim, fo, &stats);
  if (sc.setup) sc.setup(fleet);
  std::unique_ptr<RequestSource> source = sc.source();
  fleet.AttachSource(source.get());
  for (SimTime t = SimTime::Zero() + sc.observe_every; t <= sc.observe_until;
       t = t + sc.observe_every) {
    o.events += sim.RunUntil(t);
    o.snapshots.push_back(Snapshot(fleet, stats, sim.Now()));
    if (sc.at_observation) sc.at_observation(fleet, sim.Now());
  }
  o.events += sim.Run();
  fleet.FinalizeStats(sim.Now());
  o.snapshots.push_back(Snapshot(fleet, stats, sim.Now()));
  o.summary = Describe(stats.Summarize(fleet.waiting() + fleet.gateway_queue(), fleet.running()));
  return o;
}

// Runs the scenario both ways, expects identical observations, and returns the coalesced run's.
Observed ExpectIdentical(const Scenario& sc) {
  const Observed one = Run(sc, /*coalesce=*/false);
  const Observed co = Run(sc, /*coalesce=*/true);
  EXPECT_EQ(one.summary, co.summary);
  EXPECT_EQ(one.records.size(), co.records.size());
  int mismatches = 0;
  for (const auto& [id, rec] : one.records) {
    const auto it = co.records.find(id);
    if (it == co.records.end() || it->second != rec) {
      if (++mismatches <= 5) {
        ADD_FAILURE() << "request " << id << "\n  one by one: " << rec
                      << "\n  coalesced:  " << (it == co.records.end() ? "missing" : it->second);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(one.snapshots.size(), co.snapshots.size());
  for (size_t i = 0; i < std::min(one.snapshots.size(), co.snapshots.size()); ++i) {
    if (one.snapshots[i] != co.snapshots[i]) {
      // The first line that differs, not pages of metrics.
      size_t a = 0;
      while (a < one.snapshots[i].size() && one.snapshots[i][a] == co.snapshots[i][a]) ++a;
      const size_t from = one.snapshots[i].rfind('\n', a) == std::string::npos
                              ? 0
                              : one.snapshots[i].rfind('\n', a) + 1;
      ADD_FAILURE() << "observation " << i << " differs:\n  one by one: "
                    << one.snapshots[i].substr(from, one.snapshots[i].find('\n', a) - from)
                    << "\n  coalesced:  "
                    << co.snapshots[i].substr(from, co.snapshots[i].find('\n', a) - from);
      break;
    }
  }
  std::printf("events: one by one %lld, coalesced %lld\n", static_cast<long long>(one.events),
              static_cast<long long>(co.events));
  // The comparison means something only if steps were coalesced.
  EXPECT_LT(co.events, one.events);
  return co;
}

SyntheticWorkloadSpec ChatWorkload(double rate, int64_t n, uint64_t seed) {
  SyntheticWorkloadSpec w;
  w.arrival = ArrivalKind::kGamma;
  w.cv = 2.0;
  w.rate.rate = rate;
  w.prompt.kind = LengthDistribution::Kind::kExponential;
  w.prompt.mean = 1000;
  w.prompt.max = 8000;
  w.output.kind = LengthDistribution::Kind::kExponential;
  w.output.mean = 250;
  w.output.max = 2000;
  w.num_requests = n;
  w.seed = seed;
  return w;
}

std::function<std::unique_ptr<RequestSource>()> Synthetic(SyntheticWorkloadSpec w) {
  return [w] { return MakeSyntheticSource(w); };
}

std::function<std::unique_ptr<RequestSource>()> MooncakeHead(size_t n, double time_scale) {
  TraceReadOptions ro;
  absl::StatusOr<Trace> t =
      ReadTraceFile("tests/data/traces/mooncake_conversation_trace.jsonl", ro);
  EXPECT_TRUE(t.ok()) << t.status();
  Trace head;
  head.requests.assign(t->requests.begin(), t->requests.begin() + static_cast<std::ptrdiff_t>(n));
  absl::StatusOr<Trace> scaled = ScaleTime(head, time_scale);
  EXPECT_TRUE(scaled.ok()) << scaled.status();
  auto shared = std::make_shared<const Trace>(*std::move(scaled));
  return [shared] { return MakeTraceSource(shared); };
}

TEST(StepCoalescingTest, ChatLikeTrafficWithStepNoise) {
  Scenario sc;
  sc.fleet.deployment = H100();
  sc.fleet.initial_replicas = 4;
  sc.fleet.step_noise_cv = 0.1;
  sc.fleet.seed = 3;
  sc.source = Synthetic(ChatWorkload(50, 3000, 3));
  const Observed o = ExpectIdentical(sc);
  EXPECT_FALSE(o.records.empty());
}

TEST(StepCoalescingTest, LongPromptsWithChunkedPrefillAndPrefixCaching) {
  // The first 600 Mooncake conversations, twice as fast, on two replicas behind the prefix-aware
  // router: prompts of 12k tokens on average in chunks of 8,192, cache hits on earlier turns.
  Scenario sc;
  sc.fleet.deployment = H100();
  sc.fleet.deployment.engine.max_num_batched_tokens = 8192;
  sc.fleet.initial_replicas = 2;
  sc.fleet.router.kind = RouterKind::kPrefixAware;
  sc.fleet.step_noise_cv = 0.1;
  sc.source = MooncakeHead(600, 0.5);
  sc.slo.threshold = SimDuration::Millis(250);
  sc.slo.per_prompt_token = SimDuration::Micros(100);
  sc.observe_every = SimDuration::Seconds(15);
  sc.observe_until = SimTime::FromSecondsF(180);
  ExpectIdentical(sc);
}

TEST(StepCoalescingTest, LongPromptsWithAPrefillThresholdAndFirstChunkAdmission) {
  // Several prefills side by side (long_prefill_token_threshold) and admission on the first chunk's
  // blocks only, on a small cache: partial prefills run out of blocks and preempt.
  Scenario sc;
  sc.fleet.deployment = H100();
  sc.fleet.deployment.engine.max_num_batched_tokens = 8192;
  sc.fleet.deployment.engine.long_prefill_token_threshold = 2048;
  sc.fleet.deployment.engine.reserve_full_prompt = false;
  sc.fleet.deployment.engine.kv_capacity_tokens_override = 400'000;
  sc.fleet.initial_replicas = 2;
  sc.fleet.router.kind = RouterKind::kPrefixAware;
  sc.source = MooncakeHead(400, 0.5);
  sc.observe_every = SimDuration::Seconds(15);
  sc.observe_until = SimTime::FromSecondsF(150);
  const Observed co = ExpectIdentical(sc);
  EXPECT_EQ(co.summary.find("preemptions=0 "), std::string::npos) << co.summary;
}

TEST(StepCoalescingTest, KvPressureWithPreemptions) {
  // A cache of 40k tokens under long outputs: decodes run out of blocks and preempt (recompute),
  // and the waiting queue's head is refused step after step.
  Scenario sc;
  sc.fleet.deployment = H100();
  sc.fleet.deployment.engine.kv_capacity_tokens_override = 40'000;
  sc.fleet.deployment.engine.reserve_full_prompt = false;
  sc.fleet.initial_replicas = 2;
  sc.fleet.step_noise_cv = 0.05;
  SyntheticWorkloadSpec w = ChatWorkload(12, 800, 11);
  w.output.mean = 800;
  w.output.max = 6000;
  sc.source = Synthetic(w);
  sc.observe_every = SimDuration::Seconds(10);
  const Observed co = ExpectIdentical(sc);
  EXPECT_EQ(co.summary.find("preemptions=0 "), std::string::npos) << co.summary;
}

TEST(StepCoalescingTest, ArrivalsWithoutFrontEndDelayAndAGatewayLimit) {
  // A hand-set linear model with no front-end delay: an arrival enters a busy engine's waiting
  // queue inside the fleet's arrival event; with an in-flight limit, requests wait at the gateway
  // and enter when another replica finishes one (inside that replica's step end).
  Scenario sc;
  sc.fleet.deployment =
      testing::HandDeployment(32, 2048, 400'000, 4013.7, 0.173, 31.9, 0, 0, 211.3);
  sc.fleet.initial_replicas = 3;
  sc.fleet.router.kind = RouterKind::kLeastRequests;
  sc.fleet.admission.max_in_flight_per_replica = 24;
  SyntheticWorkloadSpec w = ChatWorkload(40, 2500, 5);
  sc.source = Synthetic(w);
  sc.at_observation = [](Fleet& f, SimTime now) {
    if (now == SimTime::FromSecondsF(30)) {
      AdmissionLimits a;
      a.max_in_flight_per_replica = 24;
      a.max_gateway_queue = 40;
      a.max_waiting_per_replica = 6;
      f.SetAdmission(a);
    }
  };
  ExpectIdentical(sc);
}

TEST(StepCoalescingTest, AFleetScalingOutAndInWithDrainsCutShort) {
  // Two replicas scaled to 5, then 3, then 1, at observations (as replay scales); new replicas
  // start slow; drains get 4 s, so busy replicas are aborted in the middle of their steps. An
  // arrival-rate limit sheds for a while.
  Scenario sc;
  sc.fleet.deployment = H100();
  LifecycleSpec& lc = sc.fleet.deployment.lifecycle;
  lc.provisioning = {SimDuration::Seconds(3), 1.5};
  lc.loading = {SimDuration::Seconds(8), 1.3};
  lc.warming_up = {SimDuration::Seconds(4), 1.2};
  lc.slow_period = SimDuration::Seconds(20);
  lc.slow_factor = 1.7;
  lc.drain_grace = SimDuration::Seconds(4);
  sc.fleet.initial_replicas = 2;
  sc.fleet.step_noise_cv = 0.1;
  sc.fleet.router.kind = RouterKind::kRandomPerConnection;
  SyntheticWorkloadSpec w = ChatWorkload(35, 4000, 17);
  w.rate.kind = RateCurve::Kind::kRamp;
  w.rate.rate = 10;
  w.rate.rate_end = 60;
  w.rate.ramp_duration = SimDuration::Seconds(60);
  sc.source = Synthetic(w);
  sc.at_observation = [](Fleet& f, SimTime now) {
    const double t = now.seconds();
    if (t == 10) f.SetDesiredReplicas(5);
    if (t == 55) f.SetDesiredReplicas(3);
    if (t == 75) f.SetDesiredReplicas(1);
    if (t == 80) {
      AdmissionLimits a;
      a.max_arrival_rate = 20;
      f.SetAdmission(a);
    }
    if (t == 95) f.SetAdmission({});
  };
  sc.observe_until = SimTime::FromSecondsF(120);
  const Observed co = ExpectIdentical(sc);
  EXPECT_EQ(co.summary.find("aborted=0 "), std::string::npos) << co.summary;
}

TEST(StepCoalescingTest, TheTwinsWhatIfFromAnObservedFleet) {
  // As the twin asks a what-if: replicas seeded with running and queued requests, one of them
  // serving only after 12 s (with work adopted while warming: its slow start begins in the middle
  // of a run of steps), SLO-only statistics judged from 5 s with an ITL objective, no vLLM
  // metrics, and a horizon read in between.
  Scenario sc;
  sc.fleet.deployment = H100();
  sc.fleet.initial_replicas = 0;
  sc.fleet.vllm_metrics = false;
  sc.detail = StatsDetail::kSloOnly;
  sc.judge_from_after = SimDuration::Seconds(5);
  sc.itl_threshold = SimDuration::Millis(30);
  sc.setup = [](Fleet& f) {
    f.AddReplicaReadyAfter(SimDuration::Zero());
    f.AddReplicaReadyAfter(SimDuration::Zero());
    f.AddReplicaReadyAfter(SimDuration::Seconds(12));
    uint64_t id = 1ULL << 40;
    for (int32_t r = 0; r < 3; ++r) {
      for (int32_t j = 0; j < 20 + 7 * r; ++j) {
        RequestSpec q;
        q.id = id++;
        q.prompt_tokens = 700 + 37 * j;
        q.output_tokens = 300 + 53 * j + 11 * r;
        f.AdoptRunning(r, q, 1 + (j * 29) % 250);
      }
      for (int32_t j = 0; j < 3; ++j) {
        RequestSpec q;
        q.id = id++;
        q.prompt_tokens = 2000 + 100 * j;
        q.output_tokens = 150;
        f.InjectTo(r, q);
      }
    }
  };
  sc.source = Synthetic(ChatWorkload(25, 1500, 23));
  sc.observe_every = SimDuration::Seconds(4);
  sc.observe_until = SimTime::FromSecondsF(48);
  ExpectIdentical(sc);
}

}  // namespace
}  // namespace twinscale::sim
