// Scrape cost, measured (docs/architecture.md "Performance targets"): `twinscale replay` scrapes
// every simulated pod every 15 s through the real path, render -> ParsePrometheusText ->
// ExtractVllmObservation, so at 128 pods x 240 syncs per simulated hour these two functions run
// ~30,000 times per policy. Prints bytes/s and pages/s for parsing and for extraction, on two
// inputs:
//   twin     one replica's page as the twin renders it (sim::VllmMetrics, vLLM 0.11 layout, every
//            histogram observed into several buckets, so no value is a bare "0.0"); ~35 KB.
//   fixture  the verbatim blocks of tests/data/fixtures/vllm_metrics_excerpts.txt (real vLLM text,
//            five short excerpts; one of them is cut off and fails extraction, as it should).
// Run: build/tests/bench/metrics_bench (from anywhere; the fixture path is compiled in).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"
#include "simulator/model/vllm_metrics.h"
#include "tests/util/vllm_fixture.h"

#ifndef TWINSCALE_METRICS_FIXTURE
#define TWINSCALE_METRICS_FIXTURE "tests/data/fixtures/vllm_metrics_excerpts.txt"
#endif

namespace twinscale::metrics {
namespace {

// A replica that has served a few thousand requests of mixed sizes: counters in the thousands,
// every histogram with observations spread over its buckets.
sim::VllmMetrics TwinMetrics() {
  sim::VllmMetricsOptions o;
  o.num_gpu_blocks = 27000;
  sim::VllmMetrics m(o);
  m.SetScheduler(/*running=*/37, /*waiting=*/4, /*kv_cache_usage=*/0.4213);
  m.AddPrefixCache(/*queried_tokens=*/2'345'678, /*hit_tokens=*/876'543);
  m.AddPreemptions(3);
  for (int i = 0; i < 3000; ++i) {
    const double x = 1.0 + (i % 97) / 13.0;  // 1.0 .. 8.4, deterministic spread
    const int64_t prompt = 64 + (i * 37) % 8000;
    const int64_t output = 16 + (i * 53) % 2000;
    m.AddPromptTokens(prompt);
    m.AddGenerationTokens(output);
    m.ObserveTtft(0.02 * x * x);
    m.ObserveInterTokenLatency(0.008 * x, 1 + i % 40);
    using Finished = sim::VllmMetrics::Finished;
    m.ObserveFinished(
        {.e2e = 0.4 * x * x * x,
         .queue = 0.01 * x * x * x,
         .inference = 0.39 * x * x * x,
         .prefill = 0.05 * x,
         .decode = 0.34 * x * x * x,
         .time_per_output_token = 0.009 * x,
         .prompt_tokens = prompt,
         .generation_tokens = output,
         .reason = i % 11 == 0 ? Finished::Reason::kLength : Finished::Reason::kStop});
  }
  return m;
}

std::string TwinPage() { return TwinMetrics().Render(); }

// The verbatim blocks of the fixture, as vllm_observation_test.cc reads them.
std::vector<std::string> FixtureBlocks() {
  std::ifstream in(TWINSCALE_METRICS_FIXTURE, std::ios::binary);
  if (!in.good()) {
    std::fprintf(stderr, "can't open %s\n", TWINSCALE_METRICS_FIXTURE);
    std::abort();
  }
  std::stringstream text;
  text << in.rdbuf();
  return twinscale::testutil::VllmFixtureBlocks(text.str());
}

std::vector<std::string> Pages(const char* input) {
  if (std::string(input) == "twin") return {TwinPage()};
  return FixtureBlocks();
}

void SetRates(benchmark::State& state, const std::vector<std::string>& pages) {
  int64_t bytes = 0;
  for (const std::string& p : pages) bytes += static_cast<int64_t>(p.size());
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["pages_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * static_cast<int64_t>(pages.size())),
      benchmark::Counter::kIsRate);
  state.counters["page_bytes"] = static_cast<double>(bytes) / static_cast<double>(pages.size());
}

void BM_Parse(benchmark::State& state, const char* input) {
  const std::vector<std::string> pages = Pages(input);
  for (auto _ : state) {
    for (const std::string& p : pages) {
      absl::StatusOr<Exposition> e = ParsePrometheusText(p);
      if (!e.ok()) state.SkipWithError("parse failed");
      benchmark::DoNotOptimize(e);
    }
  }
  SetRates(state, pages);
}

// Extraction alone, from pages parsed once outside the loop. Bytes are those of the text the
// expositions came from, so the figure compares with parsing's.
void BM_Extract(benchmark::State& state, const char* input) {
  const std::vector<std::string> pages = Pages(input);
  std::vector<Exposition> parsed;
  for (const std::string& p : pages) {
    absl::StatusOr<Exposition> e = ParsePrometheusText(p);
    if (!e.ok()) std::abort();
    parsed.push_back(*std::move(e));
  }
  for (auto _ : state) {
    for (const Exposition& e : parsed) {
      absl::StatusOr<PodObservation> pod = ExtractVllmObservation(e);
      benchmark::DoNotOptimize(pod);
    }
  }
  SetRates(state, pages);
}

// Reference, not a target: copying a parsed page and freeing the copy, which makes exactly the
// allocations (a name, a label vector and each long label value per sample; a name, help text and
// sample vector per family) any parser returning an Exposition must make. The floor under
// BM_Parse for this API.
void BM_CopyExposition(benchmark::State& state, const char* input) {
  const std::vector<std::string> pages = Pages(input);
  std::vector<Exposition> parsed;
  for (const std::string& p : pages) {
    absl::StatusOr<Exposition> e = ParsePrometheusText(p);
    if (!e.ok()) std::abort();
    parsed.push_back(*std::move(e));
  }
  for (auto _ : state) {
    for (const Exposition& e : parsed) {
      Exposition copy = e;
      benchmark::DoNotOptimize(copy);
    }
  }
  SetRates(state, pages);
}

// The whole scrape path after rendering, as replay runs it.
void BM_ParseAndExtract(benchmark::State& state, const char* input) {
  const std::vector<std::string> pages = Pages(input);
  for (auto _ : state) {
    for (const std::string& p : pages) {
      absl::StatusOr<Exposition> e = ParsePrometheusText(p);
      if (!e.ok()) state.SkipWithError("parse failed");
      absl::StatusOr<PodObservation> pod = ExtractVllmObservation(*e);
      benchmark::DoNotOptimize(pod);
    }
  }
  SetRates(state, pages);
}

// One scrape of a simulated pod exactly as replay does it, rendering included: what the policy
// pays per pod per sync. BM_Render alone is the part that is not parsing or extraction.
void BM_Render(benchmark::State& state) {
  const sim::VllmMetrics m = TwinMetrics();
  int64_t bytes = 0;
  for (auto _ : state) {
    std::string page = m.Render();
    bytes += static_cast<int64_t>(page.size());
    benchmark::DoNotOptimize(page);
  }
  state.SetBytesProcessed(bytes);
  state.counters["pages_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_RenderParseExtract(benchmark::State& state) {
  const sim::VllmMetrics m = TwinMetrics();
  int64_t bytes = 0;
  for (auto _ : state) {
    const std::string page = m.Render();
    bytes += static_cast<int64_t>(page.size());
    absl::StatusOr<Exposition> e = ParsePrometheusText(page);
    if (!e.ok()) state.SkipWithError("parse failed");
    absl::StatusOr<PodObservation> pod = ExtractVllmObservation(*e);
    if (!pod.ok()) state.SkipWithError("extract failed");
    benchmark::DoNotOptimize(pod);
  }
  state.SetBytesProcessed(bytes);
  state.counters["pages_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Parse, twin, "twin");
BENCHMARK_CAPTURE(BM_Extract, twin, "twin");
BENCHMARK_CAPTURE(BM_ParseAndExtract, twin, "twin");
BENCHMARK_CAPTURE(BM_CopyExposition, twin, "twin");
BENCHMARK(BM_Render);
BENCHMARK(BM_RenderParseExtract);
BENCHMARK_CAPTURE(BM_Parse, fixture, "fixture");
BENCHMARK_CAPTURE(BM_Extract, fixture, "fixture");
BENCHMARK_CAPTURE(BM_ParseAndExtract, fixture, "fixture");

}  // namespace
}  // namespace twinscale::metrics

BENCHMARK_MAIN();
