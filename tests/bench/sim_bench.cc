// Simulator speed and memory, measured (docs/architecture.md "Performance targets"): 16 replicas of
// llama-3.1-8b on h100-sxm (roofline, the default deployment profile) at 70% of the twin's own
// saturation rate, 512/512 tokens, Poisson arrivals. Target: at least 50,000 simulated requests per
// wall second on one core. Prints requests/s and sequence-steps/s as counters, plus bytes of heap
// per in-flight request from a separate burst run, and per replica with nothing in flight.
//
// The saturation rate is measured, not assumed: one replica under a backlog far beyond its
// capacity, throughput over the second half of the run.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>

#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/simulate.h"
#include "simulator/workload/generators.h"

namespace twinscale::sim {
namespace {

DeploymentSpec DefaultDeployment() {
  auto reg = ProfileRegistry::LoadEmbedded();
  if (!reg.ok()) {
    std::fprintf(stderr, "profiles: %s\n", std::string(reg.status().message()).c_str());
    std::abort();
  }
  auto d = reg->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  if (!d.ok()) std::abort();
  return *d;
}

SyntheticWorkloadSpec Workload(double rate, int64_t n, uint64_t seed) {
  SyntheticWorkloadSpec w;
  w.arrival = ArrivalKind::kPoisson;
  w.rate.rate = rate;
  w.prompt.mean = 512;
  w.output.mean = 512;
  w.num_requests = n;
  w.seed = seed;
  return w;
}

// Requests per second one replica completes when it always has a backlog.
double SaturationRate(const DeploymentSpec& d) {
  static double cached = 0;
  if (cached > 0) return cached;
  SimulateOptions o;
  o.fleet.deployment = d;
  o.fleet.initial_replicas = 1;
  o.hard_stop = SimTime::FromSecondsF(600);
  // 100 req/s for 600 s is far beyond one replica: the queue never empties.
  std::vector<SimTime> finish;
  o.record_sink = [&](const RequestRecord& r) { finish.push_back(r.arrival + r.e2e); };
  auto src = MakeSyntheticSource(Workload(100.0, 60000, 99));
  Simulate(o, *src);
  int64_t late = 0;
  for (SimTime t : finish) late += t >= SimTime::FromSecondsF(300) ? 1 : 0;
  cached = static_cast<double>(late) / 300.0;
  return cached;
}

void Fleet16At70PercentOfSaturation(benchmark::State& state, bool coalesce_steps) {
  const DeploymentSpec d = DefaultDeployment();
  const double sat = SaturationRate(d);
  const double rate = 0.7 * 16 * sat;
  const int64_t n = state.range(0);
  int64_t requests = 0, seq_steps = 0, engine_steps = 0;
  double ttft_p90 = 0, attainment = 0;
  uint64_t seed = 1;
  for (auto _ : state) {
    SimulateOptions o;
    o.fleet.deployment = d;
    o.fleet.initial_replicas = 16;
    o.fleet.router.kind = RouterKind::kRandom;
    o.fleet.coalesce_steps = coalesce_steps;
    o.fleet.seed = seed;
    auto src = MakeSyntheticSource(Workload(rate, n, seed++));
    SimulateResult r = Simulate(o, *src);
    requests += r.summary.completed;
    seq_steps += r.summary.sequence_steps;
    engine_steps += r.summary.engine_steps;
    ttft_p90 = r.summary.ttft_ms.p90;
    attainment = r.summary.slo_attainment;
  }
  state.counters["saturation_rps_per_replica"] = sat;
  state.counters["offered_rps"] = rate;
  state.counters["sim_requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["sequence_steps_per_s"] =
      benchmark::Counter(static_cast<double>(seq_steps), benchmark::Counter::kIsRate);
  state.counters["engine_steps_per_s"] =
      benchmark::Counter(static_cast<double>(engine_steps), benchmark::Counter::kIsRate);
  state.counters["ttft_p90_ms"] = ttft_p90;
  state.counters["slo_attainment"] = attainment;
}
void BM_Fleet16At70PercentOfSaturation(benchmark::State& state) {
  Fleet16At70PercentOfSaturation(state, /*coalesce_steps=*/true);
}
BENCHMARK(BM_Fleet16At70PercentOfSaturation)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The same, stepping one event per engine step (ReplicaOptions::coalesce_steps off): the same
// results, for comparison.
void BM_Fleet16At70PercentOfSaturationOneByOne(benchmark::State& state) {
  Fleet16At70PercentOfSaturation(state, /*coalesce_steps=*/false);
}
BENCHMARK(BM_Fleet16At70PercentOfSaturationOneByOne)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Heap bytes per request in flight: a burst of `n` requests lands at once on 16 replicas, so all
// of them are inside the engines (waiting or running) when the heap is measured.
void BM_MemoryPerInFlightRequest(benchmark::State& state) {
  const DeploymentSpec d = DefaultDeployment();
  const int64_t n = state.range(0);
  double bytes_per_request = 0;
  int64_t in_flight = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<RequestSpec> burst(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      burst[static_cast<size_t>(i)].id = static_cast<uint64_t>(i);
      burst[static_cast<size_t>(i)].prompt_tokens = 512;
      burst[static_cast<size_t>(i)].output_tokens = 512;
    }
    state.ResumeTiming();
    Simulation sim;
    RunStats stats({});
    FleetOptions o;
    o.deployment = d;
    o.initial_replicas = 16;
    const size_t before = mallinfo2().uordblks;
    {
      Fleet fleet(sim, o, &stats);
      for (const RequestSpec& r : burst) fleet.Inject(r);
      sim.RunUntil(SimTime::Zero());
      in_flight = fleet.in_flight();
      const size_t after = mallinfo2().uordblks;
      bytes_per_request = static_cast<double>(after - before) / static_cast<double>(in_flight);
    }
  }
  state.counters["in_flight"] = static_cast<double>(in_flight);
  state.counters["heap_bytes_per_in_flight_request"] = bytes_per_request;
}
BENCHMARK(BM_MemoryPerInFlightRequest)->Arg(200000)->Iterations(1)->Unit(benchmark::kMillisecond);

// Heap bytes a simulated replica holds with nothing in flight, per replica and per KV block: the
// figure the CLI's run limits estimate from (controller/cli/run_budget.h: 40 bytes a block plus
// 64 KiB). Argument: 0 for Llama-3.1-8B on an H100 (28,275 blocks), 1 on an H200.
void BM_HeapPerReplica(benchmark::State& state) {
  DeploymentSpec d = DefaultDeployment();
  if (state.range(0) == 1) {
    auto reg = ProfileRegistry::LoadEmbedded();
    auto h200 = reg.ok() ? reg->Resolve("llama-3.1-8b-h200-tp1", {}) : reg.status();
    if (!h200.ok()) std::abort();
    d = *h200;
  }
  constexpr int32_t kReplicas = 200;
  double per_replica = 0;
  for (auto _ : state) {
    Simulation sim;
    RunStats stats({});
    FleetOptions o;
    o.deployment = d;
    o.initial_replicas = kReplicas;
    // In-use heap: arena chunks plus mmap'd ones (a replica's large tables are mmap'd).
    const auto heap = [] { return mallinfo2().uordblks + mallinfo2().hblkhd; };
    const size_t before = heap();
    Fleet fleet(sim, o, &stats);
    per_replica = static_cast<double>(heap() - before) / kReplicas;
  }
  state.counters["heap_bytes_per_replica"] = per_replica;
  state.counters["kv_blocks"] = static_cast<double>(KvCapacityBlocks(d));
  state.counters["heap_bytes_per_kv_block"] =
      per_replica / static_cast<double>(KvCapacityBlocks(d));
}
BENCHMARK(BM_HeapPerReplica)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

// Cost of one engine step against the batch size (docs/architecture.md "The twin": it must not
// grow with the batch). One replica kept full at max_num_seqs sequences (a backlog of short-prompt,
// long-output requests; KV capacity raised so memory never binds): wall nanoseconds per engine step
// should stay flat from 16 to 1024 running sequences. Outputs are so long that no request finishes:
// per-request work (admission, completion, O(log n) each) is excluded, leaving the per-step
// bookkeeping.
void BM_StepCostVsBatchSize(benchmark::State& state) {
  DeploymentSpec d = DefaultDeployment();
  d.engine.max_num_seqs = static_cast<int32_t>(state.range(0));
  d.engine.kv_capacity_tokens_override = 50'000'000;
  // Requests as long as the outputs below are admitted (vLLM refuses one longer than its
  // max_model_len before it reaches the engine).
  d.engine.max_model_len = 4'000'000;
  // A constant 10 ms step (linear model, b1 = b2 = 0) so every batch size runs the same number of
  // steps (30,000 in 300 simulated seconds) and only the engine's bookkeeping is timed.
  d.latency_model = LatencyModelKind::kLinear;
  d.linear = LinearCoefficients{10000, 0, 0, 0, 0, 0};
  int64_t steps = 0, seq_steps = 0;
  for (auto _ : state) {
    SimulateOptions o;
    o.fleet.deployment = d;
    o.fleet.initial_replicas = 1;
    o.hard_stop = SimTime::FromSecondsF(300);
    SyntheticWorkloadSpec w = Workload(1000.0, 2 * state.range(0), 5);
    w.prompt.mean = 16;
    w.output.mean = 1000000;
    w.output.max = 1 << 21;  // nothing finishes: only steady decode steps are timed
    auto src = MakeSyntheticSource(w);
    SimulateResult r = Simulate(o, *src);
    steps += r.summary.engine_steps;
    seq_steps += r.summary.sequence_steps;
  }
  state.counters["mean_batch"] = static_cast<double>(seq_steps) / static_cast<double>(steps);
  state.counters["ns_per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_StepCostVsBatchSize)
    ->Arg(16)
    ->Arg(128)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace twinscale::sim

BENCHMARK_MAIN();
