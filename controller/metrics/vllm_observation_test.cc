// Tests of ExtractVllmObservation: the real vLLM text in tests/data/fixtures/ (tests run from the
// repo root), the twin's own rendering of hand-chosen values (one engine and a multi-engine pod),
// the older metric names, the model filter, non-vLLM pages and a table of broken pages with why
// each is broken. Expected values are worked by hand in the comments, never captured output.
#include "controller/metrics/vllm_observation.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "controller/metrics/histogram_window.h"
#include "controller/metrics/prometheus_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"
#include "tests/util/vllm_fixture.h"

namespace twinscale::metrics {
namespace {

using ::testing::HasSubstr;

// vLLM's edges (docs/reference.md "vLLM metrics"), written out here rather than taken from the
// twin.
const std::vector<double> kTtftEdges = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                        0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                        20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenLatencyEdges = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kRequestLatencyEdges = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                                  5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                                  60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
// The 1-2-5 ladder up to max_model_len 4096.
const std::vector<double> kLengthEdges4096 = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};

Exposition MustParse(std::string_view text) {
  absl::StatusOr<Exposition> e = ParsePrometheusText(text);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *std::move(e) : Exposition{};
}

absl::StatusOr<PodObservation> Extract(std::string_view text, std::string_view filter = "") {
  return ExtractVllmObservation(MustParse(text), filter);
}

// Cumulative counts over `buckets` buckets (the +Inf one included) as steps: from index i on,
// the count is v, for each (i, v) in `steps` (ascending); 0 before the first step.
std::vector<double> Steps(size_t buckets, std::vector<std::pair<size_t, double>> steps) {
  std::vector<double> c(buckets, 0);
  for (const auto& [from, v] : steps) {
    for (size_t i = from; i < buckets; ++i) c[i] = v;
  }
  return c;
}

void ExpectHistogram(const std::optional<CumulativeHistogram>& got,
                     const std::vector<double>& edges, const std::vector<double>& cumulative,
                     double count, double sum) {
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->upper_bounds, edges);
  EXPECT_EQ(got->cumulative, cumulative);
  EXPECT_EQ(got->count, count);
  if (std::isnan(sum)) {
    EXPECT_TRUE(std::isnan(got->sum)) << got->sum;
  } else {
    EXPECT_DOUBLE_EQ(got->sum, sum);
  }
}

// ---- The real vLLM text -------------------------------------------------------------------------

std::string ReadFixture() {
  std::string text = testutil::ReadVllmFixture();
  EXPECT_FALSE(text.empty()) << "can't read " << testutil::kVllmFixturePath
                             << " (run from the repo root)";
  return text;
}

// The fixture's verbatim blocks (tests/util/vllm_fixture.h).
std::vector<std::string> FixtureBlocks() { return testutil::VllmFixtureBlocks(ReadFixture()); }

TEST(VllmObservationTest, RealVllmText) {
  const std::vector<std::string> blocks = FixtureBlocks();
  ASSERT_EQ(blocks.size(), 5u);

  {
    SCOPED_TRACE("source 1, excerpt 1: vLLM 0.10 gauges and counters");
    const absl::StatusOr<PodObservation> pod = Extract(blocks[0]);
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 1u);
    const EngineObservation& e = pod->engines[0];
    EXPECT_EQ(e.engine, "0");
    EXPECT_EQ(e.model_name, "zai-org/GLM-4.5");
    EXPECT_EQ(e.kv_cache_usage, 9.75010481363281e-06);
    EXPECT_EQ(e.prefix_cache_queries_total, 32.0);
    // Only the deprecated vllm:gpu_prefix_cache_hits_total is in this excerpt: the fallback.
    EXPECT_EQ(e.prefix_cache_hits_total, 0.0);
    EXPECT_FALSE(e.running.has_value());
    EXPECT_FALSE(e.ttft.has_value());
    EXPECT_FALSE(e.num_gpu_blocks.has_value());
  }
  {
    SCOPED_TRACE("source 1, excerpt 2: a histogram cut off before +Inf and _count");
    const absl::StatusOr<PodObservation> pod = Extract(blocks[1]);
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(pod.status().message()), HasSubstr("vllm:request_generation_tokens"));
    EXPECT_THAT(std::string(pod.status().message()), HasSubstr("neither"));
    // With its +Inf bucket the same text reads: 4 requests, all with 201..500 output tokens.
    const absl::StatusOr<PodObservation> completed =
        Extract(blocks[1] +
                "vllm:request_generation_tokens_bucket{engine=\"0\",le=\"+Inf\","
                "model_name=\"zai-org/GLM-4.5\"} 4.0\n");
    ASSERT_TRUE(completed.ok()) << completed.status();
    ASSERT_EQ(completed->engines.size(), 1u);
    ExpectHistogram(completed->engines[0].generation_tokens,
                    {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}, Steps(12, {{8, 4}}), 4,
                    std::numeric_limits<double>::quiet_NaN());
  }
  {
    SCOPED_TRACE("source 1, excerpt 3: only families twinscale doesn't read");
    const absl::StatusOr<PodObservation> pod = Extract(blocks[2]);
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 1u);  // the engine exists; nothing about it is known
    const EngineObservation& e = pod->engines[0];
    EXPECT_FALSE(e.running.has_value() || e.kv_cache_usage.has_value() ||
                 e.requests_finished_total.has_value() || e.ttft.has_value() ||
                 e.generation_tokens.has_value());
  }
  {
    SCOPED_TRACE("source 2: engine 1 of a data-parallel server, a partial bucket list");
    const absl::StatusOr<PodObservation> pod = Extract(blocks[3]);
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 1u);
    const EngineObservation& e = pod->engines[0];
    EXPECT_EQ(e.engine, "1");
    EXPECT_EQ(e.model_name, "/home/jovyan/qwen3-8b");
    // Edges 15..7680 (the excerpt starts at 15), every bucket 1, no _count: count = +Inf = 1.
    ExpectHistogram(e.decode_time, {15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680},
                    std::vector<double>(13, 1.0), 1, std::numeric_limits<double>::quiet_NaN());
  }
  {
    SCOPED_TRACE("source 3: vLLM's design doc, before the engine label");
    const absl::StatusOr<PodObservation> pod = Extract(blocks[4]);
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 1u);
    const EngineObservation& e = pod->engines[0];
    EXPECT_EQ(e.engine, "");
    EXPECT_EQ(e.model_name, "meta-llama/Llama-3.1-8B-Instruct");
    EXPECT_EQ(e.running, 8.0);
    EXPECT_EQ(e.generation_tokens_total, 27453.0);
    EXPECT_EQ(e.requests_finished_total, 132.0);  // stop 1 + length 131 + abort 0
    // TTFT edges 0.001..0.1 and _count 140, no +Inf sample: +Inf = _count = 140.
    ExpectHistogram(e.ttft, {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1},
                    {0, 0, 0, 13, 97, 123, 138, 140, 140}, 140,
                    std::numeric_limits<double>::quiet_NaN());
    // p90: rank 126 in (0.06, 0.08] (123 < 126 <= 138): 0.06 + 0.02*(126-123)/(138-123) = 0.064.
    EXPECT_DOUBLE_EQ(HistogramQuantile(0.9, *e.ttft), 0.064);
    // A 40 ms SLO is an edge: exactly 97 of 140.
    const Attainment a = ShareAtOrBelow(0.04, *e.ttft);
    EXPECT_TRUE(a.exact);
    EXPECT_DOUBLE_EQ(a.share, 97.0 / 140.0);
    EXPECT_EQ(a.count, 140);
  }
}

// ---- The twin's text ----------------------------------------------------------------------------

sim::VllmMetricsOptions TwinOptions(std::string engine) {
  sim::VllmMetricsOptions o;
  o.engine = std::move(engine);
  o.num_gpu_blocks = 7000;
  o.block_size = 16;
  o.max_model_len = 4096;
  return o;
}

// Hand-chosen values; the expectations in TwinTextRoundTrips follow from these alone.
void FeedKnownValues(sim::VllmMetrics& m) {
  m.SetScheduler(/*running=*/3, /*waiting=*/5, /*kv_cache_usage=*/0.25);
  m.AddPromptTokens(1000);
  m.AddGenerationTokens(200);
  m.AddPreemptions(2);
  m.AddPrefixCache(/*queried_tokens=*/512, /*hit_tokens=*/256);
  m.ObserveTtft(0.05);                   // -> le=0.06 (index 5)
  m.ObserveTtft(0.5);                    // -> le=0.5 (index 9): an edge counts in its own bucket
  m.ObserveTtft(3.0);                    // -> le=5.0 (index 13)
  m.ObserveInterTokenLatency(0.02, 10);  // 10 x 0.02 -> le=0.025 (index 1)
  using Finished = sim::VllmMetrics::Finished;
  m.ObserveFinished({.e2e = 1.2,
                     .queue = 0.1,
                     .inference = 1.1,
                     .prefill = 0.2,
                     .decode = 0.9,
                     .time_per_output_token = 0.018,
                     .prompt_tokens = 100,
                     .generation_tokens = 50,
                     .reason = Finished::Reason::kStop});
  m.ObserveFinished({.e2e = 12,
                     .queue = 2,
                     .inference = 10,
                     .prefill = 1,
                     .decode = 9,
                     .time_per_output_token = 0.05,
                     .prompt_tokens = 3000,
                     .generation_tokens = 700,
                     .reason = Finished::Reason::kLength});
}

TEST(VllmObservationTest, TwinTextRoundTrips) {
  sim::VllmMetrics m(TwinOptions("0"));
  FeedKnownValues(m);
  const absl::StatusOr<PodObservation> pod = Extract(m.Render());
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  const EngineObservation& e = pod->engines[0];
  EXPECT_EQ(e.engine, "0");
  EXPECT_EQ(e.model_name, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(e.running, 3.0);
  EXPECT_EQ(e.waiting, 5.0);
  EXPECT_EQ(e.kv_cache_usage, 0.25);
  EXPECT_EQ(e.prompt_tokens_total, 1000.0);
  EXPECT_EQ(e.generation_tokens_total, 200.0);
  EXPECT_EQ(e.requests_finished_total, 2.0);  // one stop, one length
  EXPECT_EQ(e.preemptions_total, 2.0);
  EXPECT_EQ(e.prefix_cache_queries_total, 512.0);
  EXPECT_EQ(e.prefix_cache_hits_total, 256.0);
  EXPECT_EQ(e.num_gpu_blocks, 7000);
  EXPECT_EQ(e.block_size, 16);

  // 22 edges + +Inf: 1 from le=0.06, 2 from le=0.5, 3 from le=5.0; sum 0.05+0.5+3.0.
  ExpectHistogram(e.ttft, kTtftEdges, Steps(23, {{5, 1}, {9, 2}, {13, 3}}), 3, 3.55);
  // A 0.5 s TTFT SLO sits on an edge: exactly 2 of 3.
  const Attainment a = ShareAtOrBelow(0.5, *e.ttft);
  EXPECT_TRUE(a.exact);
  EXPECT_DOUBLE_EQ(a.share, 2.0 / 3.0);
  ExpectHistogram(e.itl, kTokenLatencyEdges, Steps(20, {{1, 10}}), 10, 0.2);
  // e2e 1.2 -> le=1.5 (index 4), 12 -> le=15 (index 9).
  ExpectHistogram(e.e2e, kRequestLatencyEdges, Steps(22, {{4, 1}, {9, 2}}), 2, 13.2);
  // queue 0.1 -> le=0.3 (index 0), 2 -> le=2.0 (index 5).
  ExpectHistogram(e.queue_time, kRequestLatencyEdges, Steps(22, {{0, 1}, {5, 2}}), 2, 2.1);
  // prefill 0.2 -> le=0.3 (index 0), 1 -> le=1.0 (index 3).
  ExpectHistogram(e.prefill_time, kRequestLatencyEdges, Steps(22, {{0, 1}, {3, 2}}), 2, 1.2);
  // decode 0.9 -> le=1.0 (index 3), 9 -> le=10 (index 8).
  ExpectHistogram(e.decode_time, kRequestLatencyEdges, Steps(22, {{3, 1}, {8, 2}}), 2, 9.9);
  // prompts 100 -> le=100 (index 6), 3000 -> past 2000: +Inf (index 11).
  ExpectHistogram(e.prompt_tokens, kLengthEdges4096, Steps(12, {{6, 1}, {11, 2}}), 2, 3100);
  // outputs 50 -> le=50 (index 5), 700 -> le=1000 (index 9).
  ExpectHistogram(e.generation_tokens, kLengthEdges4096, Steps(12, {{5, 1}, {9, 2}}), 2, 750);
}

TEST(VllmObservationTest, FreshTwinEngine) {
  sim::VllmMetricsOptions o = TwinOptions("0");
  o.num_gpu_blocks = 0;  // rendered "None", as vLLM before its profiling run
  sim::VllmMetrics m(o);
  const absl::StatusOr<PodObservation> pod = Extract(m.Render());
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  const EngineObservation& e = pod->engines[0];
  EXPECT_EQ(e.running, 0.0);
  EXPECT_EQ(e.requests_finished_total, 0.0);
  EXPECT_FALSE(e.num_gpu_blocks.has_value());
  EXPECT_EQ(e.block_size, 16);
  ExpectHistogram(e.ttft, kTtftEdges, std::vector<double>(23, 0.0), 0, 0);
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.9, *e.ttft)));  // no requests: no quantile
}

TEST(VllmObservationTest, TwinMultiEnginePod) {
  // Three data-parallel engines given out of order; RenderPod prints them in that order.
  sim::VllmMetrics e10(TwinOptions("10")), e0(TwinOptions("0")), e2(TwinOptions("2"));
  e10.SetScheduler(10, 1, 0.5);
  e0.SetScheduler(0, 0, 0.0);
  e2.SetScheduler(2, 7, 0.125);
  FeedKnownValues(e2);   // overrides e2's scheduler gauges with 3, 5, 0.25
  e10.ObserveTtft(0.2);  // -> le=0.25 (index 8)
  using Finished = sim::VllmMetrics::Finished;
  e10.ObserveFinished({.e2e = 1, .reason = Finished::Reason::kAbort});
  e10.ObserveFinished({.e2e = 1, .reason = Finished::Reason::kStop});
  e10.ObserveFinished({.e2e = 1, .reason = Finished::Reason::kStop});

  const absl::StatusOr<PodObservation> pod = Extract(sim::RenderPod({&e10, &e0, &e2}));
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 3u);
  // Sorted as numbers: 0, 2, 10.
  EXPECT_EQ(pod->engines[0].engine, "0");
  EXPECT_EQ(pod->engines[1].engine, "2");
  EXPECT_EQ(pod->engines[2].engine, "10");
  EXPECT_EQ(pod->engines[0].running, 0.0);
  EXPECT_EQ(pod->engines[1].running, 3.0);
  EXPECT_EQ(pod->engines[2].running, 10.0);
  EXPECT_EQ(pod->engines[2].kv_cache_usage, 0.5);
  // Engine 10: abort 1 + stop 2 (vLLM prints request_success reason-major across engines).
  EXPECT_EQ(pod->engines[2].requests_finished_total, 3.0);
  EXPECT_EQ(pod->engines[1].requests_finished_total, 2.0);
  EXPECT_EQ(pod->engines[0].requests_finished_total, 0.0);
  ExpectHistogram(pod->engines[2].ttft, kTtftEdges, Steps(23, {{8, 1}}), 1, 0.2);
  ExpectHistogram(pod->engines[1].ttft, kTtftEdges, Steps(23, {{5, 1}, {9, 2}, {13, 3}}), 3, 3.55);
  for (const EngineObservation& e : pod->engines) EXPECT_EQ(e.num_gpu_blocks, 7000);

  // The pod's TTFT is the sum of its engines' (same edges): 4 requests, 3 within 0.5 s.
  const absl::StatusOr<CumulativeHistogram> sum =
      SumHistograms({*pod->engines[0].ttft, *pod->engines[1].ttft, *pod->engines[2].ttft});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(ShareAtOrBelow(0.5, *sum).share, 0.75);
}

// ---- Names, filters, grouping -------------------------------------------------------------------

TEST(VllmObservationTest, OlderNames) {
  // A server from before vLLM 0.9 (no engine label) with the old KV gauge and per-token histogram.
  const absl::StatusOr<PodObservation> pod = Extract(
      "# TYPE vllm:gpu_cache_usage_perc gauge\n"
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.42\n"
      "# TYPE vllm:time_per_output_token_seconds histogram\n"
      "vllm:time_per_output_token_seconds_bucket{le=\"0.01\",model_name=\"m\"} 3.0\n"
      "vllm:time_per_output_token_seconds_bucket{le=\"0.025\",model_name=\"m\"} 7.0\n"
      "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 8.0\n"
      "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 8.0\n"
      "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.25\n"
      "# TYPE vllm:gpu_prefix_cache_queries_total counter\n"
      "vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 64.0\n");
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  const EngineObservation& e = pod->engines[0];
  EXPECT_EQ(e.engine, "");
  EXPECT_EQ(e.kv_cache_usage, 0.42);
  EXPECT_EQ(e.prefix_cache_queries_total, 64.0);
  ExpectHistogram(e.itl, {0.01, 0.025}, {3, 7, 8}, 8, 0.25);
}

TEST(VllmObservationTest, CurrentNamesWinOverOlderOnes) {
  // vLLM 0.10 exports both KV gauges; a transitional server might export both ITL histograms.
  const absl::StatusOr<PodObservation> pod = Extract(
      "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.9\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.3\n"
      "vllm:time_per_output_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 1\n"
      "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2\n"
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 5\n"
      "vllm:gpu_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 9\n");
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  EXPECT_EQ(pod->engines[0].kv_cache_usage, 0.3);
  EXPECT_EQ(pod->engines[0].prefix_cache_hits_total, 5.0);
  ExpectHistogram(pod->engines[0].itl, {}, {2}, 2, std::numeric_limits<double>::quiet_NaN());
}

TEST(VllmObservationTest, CounterFamilyDeclaredWithoutTotal) {
  // OpenMetrics-style declaration ("# TYPE x counter", sample x_total): read by sample name.
  const absl::StatusOr<PodObservation> pod = Extract(
      "# TYPE vllm:prompt_tokens counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 17\n");
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  EXPECT_EQ(pod->engines[0].prompt_tokens_total, 17.0);
}

constexpr char kTwoModels[] =
    "vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 1\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"b\"} 2\n"
    "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"100\"} 1.0\n"
    "vllm:cache_config_info{block_size=\"32\",engine=\"1\",num_gpu_blocks=\"200\"} 1.0\n";

TEST(VllmObservationTest, ModelFilter) {
  {
    SCOPED_TRACE("no filter: both engines, cache config attached by engine");
    const absl::StatusOr<PodObservation> pod = Extract(kTwoModels);
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 2u);
    EXPECT_EQ(pod->engines[0].model_name, "a");
    EXPECT_EQ(pod->engines[0].running, 1.0);
    EXPECT_EQ(pod->engines[0].num_gpu_blocks, 100);
    EXPECT_EQ(pod->engines[1].model_name, "b");
    EXPECT_EQ(pod->engines[1].block_size, 32);
  }
  {
    SCOPED_TRACE("filter b: engine 1 only, with its cache config");
    const absl::StatusOr<PodObservation> pod = Extract(kTwoModels, "b");
    ASSERT_TRUE(pod.ok()) << pod.status();
    ASSERT_EQ(pod->engines.size(), 1u);
    EXPECT_EQ(pod->engines[0].engine, "1");
    EXPECT_EQ(pod->engines[0].running, 2.0);
    EXPECT_EQ(pod->engines[0].num_gpu_blocks, 200);
    EXPECT_EQ(pod->engines[0].block_size, 32);
  }
  {
    SCOPED_TRACE("a model this pod doesn't serve: OK, no engines");
    const absl::StatusOr<PodObservation> pod = Extract(kTwoModels, "c");
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_TRUE(pod->engines.empty());
  }
}

TEST(VllmObservationTest, GroupingInsideAnEngine) {
  const absl::StatusOr<PodObservation> pod = Extract(
      // Two models under one engine label: two observations, both with the engine's cache config.
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"b\"} 4\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"a\"} 3\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"None\"} 1.0\n"
      // Histogram series with an extra label (same edges) are summed: (1, 2) + (3, 5) = (4, 7).
      "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",lora=\"x\",model_name=\"a\"}"
      " 1\n"
      "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",lora=\"x\",model_name="
      "\"a\"}"
      " 2\n"
      "vllm:e2e_request_latency_seconds_sum{engine=\"0\",lora=\"x\",model_name=\"a\"} 2.5\n"
      "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",lora=\"y\",model_name=\"a\"}"
      " 3\n"
      "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",lora=\"y\",model_name="
      "\"a\"}"
      " 5\n"
      "vllm:e2e_request_latency_seconds_sum{engine=\"0\",lora=\"y\",model_name=\"a\"} 6\n"
      // Buckets out of order in the text are sorted by le.
      "vllm:request_queue_time_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"a\"} 2\n"
      "vllm:request_queue_time_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"a\"} 1\n"
      "vllm:request_queue_time_seconds_count{engine=\"0\",model_name=\"a\"} 2\n");
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 2u);
  const EngineObservation& a = pod->engines[0];
  EXPECT_EQ(a.engine, "0");
  EXPECT_EQ(a.model_name, "a");
  EXPECT_EQ(a.waiting, 3.0);
  EXPECT_FALSE(a.num_gpu_blocks.has_value());  // "None"
  EXPECT_EQ(a.block_size, 16);
  ExpectHistogram(a.e2e, {1.0}, {4, 7}, 7, 8.5);
  ExpectHistogram(a.queue_time, {0.3, 0.5}, {1, 2, 2}, 2, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(pod->engines[1].model_name, "b");
  EXPECT_EQ(pod->engines[1].waiting, 4.0);
  EXPECT_EQ(pod->engines[1].block_size, 16);
}

TEST(VllmObservationTest, DeclaredButEmptyPageIsAVllmServer) {
  const absl::StatusOr<PodObservation> pod = Extract(
      "# HELP vllm:num_requests_running Running.\n"
      "# TYPE vllm:num_requests_running gauge\n");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_TRUE(pod->engines.empty());
}

// ---- Not vLLM, or broken ------------------------------------------------------------------------

TEST(VllmObservationTest, NotAVllmServer) {
  struct Case {
    std::string name;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"empty page", ""},
      {"node exporter",
       "# TYPE go_goroutines gauge\ngo_goroutines 12\n"
       "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.5\n"},
      {"a lookalike prefix", "vllm_num_requests_running 3\nvllmx:num_requests_running 3\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<PodObservation> pod = Extract(c.text);
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(pod.status().message()), HasSubstr("not a vLLM server"));
  }
  // Garbage (an HTML error page on the metrics port) never reaches extraction: the parser
  // refuses it with a line number.
  const absl::StatusOr<Exposition> html =
      ParsePrometheusText("<html><body>502 Bad Gateway</body></html>\n");
  ASSERT_FALSE(html.ok());
  EXPECT_THAT(std::string(html.status().message()), HasSubstr("line 1"));
}

TEST(VllmObservationTest, BrokenPages) {
  const std::string kL = "engine=\"0\",model_name=\"m\"";
  auto ttft_bucket = [&](std::string le, std::string v) {
    return "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"" + le +
           "\",model_name=\"m\"} " + v + "\n";
  };
  struct Case {
    std::string why;
    std::string text;
    std::vector<std::string> fragments;  // all must be in the error message
  };
  const std::vector<Case> cases = {
      {"buckets not cumulative: fewer at le=0.25 than at le=0.1",
       ttft_bucket("0.1", "5") + ttft_bucket("0.25", "3") + ttft_bucket("+Inf", "5"),
       {"vllm:time_to_first_token_seconds", "engine \"0\"", "not cumulative"}},
      {"+Inf bucket and _count disagree",
       ttft_bucket("0.1", "1") + ttft_bucket("+Inf", "2") +
           "vllm:time_to_first_token_seconds_count{" + kL + "} 3\n",
       {"vllm:time_to_first_token_seconds", "+Inf bucket 2 != count 3"}},
      {"neither +Inf nor _count: the total is unknown",
       ttft_bucket("0.1", "1"),
       {"vllm:time_to_first_token_seconds", "neither"}},
      {"le is not a number (an undeclared family, which the parser doesn't check)",
       ttft_bucket("fast", "1") + ttft_bucket("+Inf", "1"),
       {"vllm:time_to_first_token_seconds", "le=\"fast\""}},
      {"le=-Inf bounds nothing",
       ttft_bucket("-Inf", "0") + ttft_bucket("+Inf", "1"),
       {"le=\"-Inf\""}},
      {"the same edge twice, spelled differently",
       ttft_bucket("0.1", "1") + ttft_bucket("1e-1", "1") + ttft_bucket("+Inf", "1"),
       {"le=0.1 appears twice"}},
      {"+Inf twice", ttft_bucket("+Inf", "1") + ttft_bucket("+Inf", "1"), {"+Inf", "twice"}},
      {"_count twice",
       ttft_bucket("+Inf", "1") + "vllm:time_to_first_token_seconds_count{" + kL + "} 1\n" +
           "vllm:time_to_first_token_seconds_count{" + kL + "} 1\n",
       {"_count appears twice"}},
      {"a bucket without le",
       "vllm:time_to_first_token_seconds_bucket{" + kL + "} 1\n",
       {"without an le label"}},
      {"negative bucket count",
       ttft_bucket("0.1", "-1") + ttft_bucket("+Inf", "1"),
       {"not a finite non-negative number"}},
      {"a negative gauge",
       "vllm:num_requests_waiting{" + kL + "} -1\n",
       {"vllm:num_requests_waiting", "-1"}},
      {"a NaN counter",
       "vllm:prompt_tokens_total{" + kL + "} NaN\n",
       {"vllm:prompt_tokens_total", "nan"}},
      {"an infinite KV usage",
       "vllm:kv_cache_usage_perc{" + kL + "} +Inf\n",
       {"vllm:kv_cache_usage_perc", "inf"}},
      {"a gauge twice for one engine",
       "vllm:num_requests_running{" + kL + "} 1\nvllm:num_requests_running{" + kL + "} 2\n",
       {"vllm:num_requests_running", "more than one series"}},
      {"the same counter series twice",
       "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 1\n"
       "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 1\n",
       {"vllm:request_success_total", "the same series twice"}},
      {"series of one engine with different edges",
       "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",lora=\"x\","
       "model_name=\"m\"} 1\n"
       "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",lora=\"x\","
       "model_name=\"m\"} 1\n"
       "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"2.0\",lora=\"y\","
       "model_name=\"m\"} 1\n"
       "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",lora=\"y\","
       "model_name=\"m\"} 1\n",
       {"vllm:e2e_request_latency_seconds", "different bucket edges"}},
      {"num_gpu_blocks not an integer",
       "vllm:num_requests_running{" + kL +
           "} 1\n"
           "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"lots\"} 1\n",
       {"vllm:cache_config_info", "num_gpu_blocks=\"lots\""}},
      {"cache config twice for one engine",
       "vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"1\"} 1\n"
       "vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"2\"} 1\n",
       {"vllm:cache_config_info", "more than one series"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const absl::StatusOr<PodObservation> pod = Extract(c.text);
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument) << pod.status();
    for (const std::string& f : c.fragments) {
      EXPECT_THAT(std::string(pod.status().message()), HasSubstr(f));
    }
  }
}

TEST(VllmObservationTest, BrokenFamilyOfAnotherModelIsNotRead) {
  // The filter skips other models' samples before they are checked.
  const absl::StatusOr<PodObservation> pod = Extract(
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"other\"} -1\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1\n",
      "m");
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->engines.size(), 1u);
  EXPECT_EQ(pod->engines[0].waiting, 1.0);
}

}  // namespace
}  // namespace twinscale::metrics
