// scratch
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "controller/policy/recommend.h"
#include "controller/twin/twin_forecaster.h"
#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/generators.h"

namespace twinscale {
namespace {

sim::DeploymentSpec Deployment() {
  auto reg = sim::ProfileRegistry::LoadEmbedded();
  if (!reg.ok()) std::abort();
  auto d = reg->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  if (!d.ok()) std::abort();
  return *d;
}

policy::ForecastQuestion Question(const sim::DeploymentSpec& d, double rate, int ready) {
  sim::Simulation s;
  sim::RunStats stats({});
  sim::FleetOptions fo;
  fo.deployment = d;
  fo.initial_replicas = ready;
  fo.router.kind = sim::RouterKind::kRandom;
  sim::Fleet fleet(s, fo, &stats);
  sim::SyntheticWorkloadSpec w;
  w.rate.rate = rate;
  w.prompt.kind = sim::LengthDistribution::Kind::kExponential;
  w.prompt.mean = 1155;
  w.output.kind = sim::LengthDistribution::Kind::kExponential;
  w.output.mean = 211;
  w.duration = sim::SimDuration::Seconds(200);
  auto src = sim::MakeSyntheticSource(w);
  fleet.AttachSource(src.get());
  s.RunUntil(sim::SimTime::FromSecondsF(120));
  policy::ForecastQuestion q;
  for (const auto& v : fleet.Replicas()) {
    q.ready.push_back({static_cast<double>(v.waiting), static_cast<double>(v.running), v.kv_usage});
  }
  for (int i = 0; i < 4; ++i) q.pending_ready_in.push_back(absl::Seconds(30 + 5 * i));
  q.arrival_rate = rate;
  q.arrival_cv = 1.5;
  q.prompt_tokens_mean = 1155;
  q.output_tokens_mean = 211;
  q.horizon = absl::Seconds(300);
  q.new_replica_warmup = absl::Seconds(60);
  q.judge_from = absl::Seconds(60);
  return q;
}

void BM_Evaluate(benchmark::State& state) {
  const sim::DeploymentSpec d = Deployment();
  const double rate = static_cast<double>(state.range(0));
  policy::ForecastQuestion q = Question(d, rate, 32);
  q.candidate_replicas = static_cast<int32_t>(state.range(1));
  twin::TwinOptions o;
  o.deployment = d;
  o.router = sim::RouterKind::kRandom;
  o.sample_replicas = static_cast<int32_t>(state.range(2));
  twin::TwinForecaster f(o);
  policy::Forecast r;
  for (auto _ : state) r = f.Evaluate(q);
  state.counters["attainment"] = r.attainment;
  state.counters["requests"] = static_cast<double>(r.requests);
  double run = 0, kv = 0;
  for (auto& x : q.ready) { run += x.running; kv += x.kv_usage; }
  state.counters["running_per_replica"] = run / q.ready.size();
  state.counters["kv"] = kv / q.ready.size();
}
BENCHMARK(BM_Evaluate)
    ->Args({400, 36, 4})->Args({500, 36, 4})->Args({550, 36, 4})->Args({600, 36, 4})
    ->Args({500, 30, 4})->Args({500, 36, 1})->Args({500, 36, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinscale

BENCHMARK_MAIN();
