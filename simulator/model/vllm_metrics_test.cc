// Tests of the twin's vLLM metrics export: number formatting against prometheus_client's rules,
// a hand-worked sequence of observations read back through the controller's parser (as a scraper
// would), the same expectations applied to real vLLM text and to the twin's text, multi-engine
// pods, label escaping, determinism, and the no-allocation promise of the update path.
#include "simulator/model/vllm_metrics.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/metrics/prometheus_text.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_exposition_expectations.h"
#include "tests/util/vllm_fixture.h"

// Counts heap allocations, to check that the update path allocates nothing. Counting is switched
// on only around the code under test. (GCC 12 flags malloc/free inside replacement operators
// new/delete as mismatched once they are inlined; the pairing is the standard's own.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_count_allocations.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  std::abort();  // no exceptions in this project; running out of memory in a test is fatal
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace twinscale::sim {
namespace {

using metrics::Exposition;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::ParsePrometheusText;
using metrics::Sample;

constexpr char kModel[] = "meta-llama/Llama-3.1-8B-Instruct";
constexpr char kFixturePath[] = "tests/data/fixtures/vllm_metrics_excerpts.txt";

// ---- Number formatting
// ---------------------------------------------------------------------------

struct FormatCase {
  std::string name;
  double value;
  std::string want;  // worked out from Python's repr() and prometheus_client's floatToGoString
};

TEST(FormatPrometheusClientFloatTest, MatchesPrometheusClient) {
  const std::vector<FormatCase> cases = {
      {"zero gets .0", 0.0, "0.0"},
      {"negative zero keeps its sign", -0.0, "-0.0"},
      {"one", 1.0, "1.0"},
      {"bucket edge 0.001", 0.001, "0.001"},
      {"bucket edge 0.1", 0.1, "0.1"},
      {"bucket edge 2560", 2560.0, "2560.0"},
      {"kv usage from the fixture", 9.75010481363281e-06, "9.75010481363281e-06"},
      {"created time from the fixture", 1753795326.9352946, "1.7537953269352946e+09"},
      {"created time with a shorter repr, from the fixture", 1753795326.935825,
       "1.753795326935825e+09"},
      {"default created time", 1.7e9, "1.7e+09"},
      {"counter from the fixture", 27453.0, "27453.0"},
      {"six integer digits stay fixed", 100000.0, "100000.0"},
      {"seven integer digits switch to an exponent", 1000000.0, "1e+06"},
      {"exponent form keeps the digits", 1234567.0, "1.234567e+06"},
      {"seen in a real vLLM scrape", 630469280.0, "6.3046928e+08"},
      {"exponent >= 10 keeps prometheus_client's e+0NN quirk", 1.2345e15, "1.2345e+015"},
      {"Python's own exponent from 1e16 on", 1e16, "1e+16"},
      {"small fixed", 0.0001, "0.0001"},
      {"small exponent", 0.00001, "1e-05"},
      {"negatives are not converted", -1234567.0, "-1234567.0"},
      {"shortest round-trip digits", 0.1 + 0.2, "0.30000000000000004"},
      {"large", 1.5e300, "1.5e+300"},
      {"smallest subnormal", 5e-324, "5e-324"},
      {"+Inf", std::numeric_limits<double>::infinity(), "+Inf"},
      {"-Inf", -std::numeric_limits<double>::infinity(), "-Inf"},
      {"NaN", std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
  for (const FormatCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatPrometheusClientFloat(c.value), c.want);
  }
}

TEST(PythonFloatReprTest, MatchesPythonRepr) {
  EXPECT_EQ(PythonFloatRepr(0.9), "0.9");
  EXPECT_EQ(PythonFloatRepr(0.92), "0.92");
  EXPECT_EQ(PythonFloatRepr(123.456), "123.456");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(1234567.0), "1234567.0");
  EXPECT_EQ(PythonFloatRepr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(PythonFloatRepr(1e100), "1e+100");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(VllmOneTwoFiveBucketsTest, BuildsVllmsLadder) {
  // vLLM's docstring: build_1_2_5_buckets(100) == [1, 2, 5, 10, 20, 50, 100].
  EXPECT_EQ(VllmOneTwoFiveBuckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(VllmOneTwoFiveBuckets(0), std::vector<double>{});
  EXPECT_EQ(VllmOneTwoFiveBuckets(1), std::vector<double>{1});
  EXPECT_EQ(VllmOneTwoFiveBuckets(4), (std::vector<double>{1, 2}));
  // 131072: decades 1..10^4 give 15 edges, then 100000 (200000 is past the top).
  const std::vector<double> ladder = VllmOneTwoFiveBuckets(131072);
  ASSERT_EQ(ladder.size(), 16u);
  EXPECT_EQ(ladder.back(), 100000.0);
}

// ---- Reading a page back
// -------------------------------------------------------------------------

Exposition MustParse(const std::string& text) {
  absl::StatusOr<Exposition> got = ParsePrometheusText(text);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *std::move(got) : Exposition{};
}

// The value of the only sample named `name` carrying all of `labels`; nullopt if none, a test
// failure if several.
std::optional<double> Value(const Exposition& e, std::string_view name,
                            const std::vector<std::pair<std::string, std::string>>& labels = {}) {
  std::optional<double> found;
  for (const MetricFamily& f : e.families) {
    for (const Sample& s : f.samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && s.HasLabel(k) && s.Label(k) == v;
      if (!match) continue;
      EXPECT_FALSE(found.has_value()) << "several samples match " << name;
      found = s.value;
    }
  }
  return found;
}

// The cumulative bucket counts of `family` for engine `engine`, in text order.
std::vector<double> Buckets(const Exposition& e, std::string_view family,
                            std::string_view engine = "0") {
  std::vector<double> out;
  const MetricFamily* f = e.Find(family);
  EXPECT_NE(f, nullptr) << family;
  if (f == nullptr) return out;
  for (const Sample& s : f->samples) {
    if (s.name == std::string(family) + "_bucket" && s.Label("engine") == engine) {
      out.push_back(s.value);
    }
  }
  return out;
}

VllmMetricsOptions TestOptions(std::string engine = "0") {
  VllmMetricsOptions o;
  o.model_name = kModel;
  o.engine = std::move(engine);
  o.num_gpu_blocks = 28000;
  o.block_size = 16;
  o.gpu_memory_utilization = 0.9;
  o.max_model_len = 131072;
  o.created_unix_seconds = 1.7e9;
  return o;
}

// The hand-worked sequence (expected values in HandWorkedSequenceReadsBack).
void FeedHandWorkedSequence(VllmMetrics& m) {
  m.SetScheduler(/*running=*/3, /*waiting=*/2, /*kv_cache_usage=*/0.25);
  m.AddPromptTokens(1500);
  m.AddPromptTokens(700);
  m.AddGenerationTokens(96 + 2048);
  m.AddPreemptions(1);
  m.AddPrefixCache(2048, 512);
  m.AddPrefixCache(1024, 0);
  for (double ttft : {0.03, 0.3, 0.3, 1.2}) m.ObserveTtft(ttft);
  m.ObserveInterTokenLatency(0.02, 30);
  m.ObserveInterTokenLatency(0.025, 10);  // exactly on an edge: le is inclusive
  m.ObserveInterTokenLatency(0.06, 5);
  m.ObserveFinished({.e2e = 2.0,  // exactly on the 2.0 edge
                     .queue = 0.1,
                     .inference = 1.9,
                     .prefill = 0.2,
                     .decode = 1.7,
                     .time_per_output_token = 1.7 / 95,
                     .prompt_tokens = 1500,
                     .generation_tokens = 96,
                     .reason = VllmMetrics::Finished::Reason::kStop});
  m.ObserveFinished({.e2e = 12.0,
                     .queue = 4.0,
                     .inference = 8.0,
                     .prefill = 0.5,  // exactly on the 0.5 edge
                     .decode = 7.5,
                     .time_per_output_token = 7.5 / 2047,
                     .prompt_tokens = 700,
                     .generation_tokens = 2048,
                     .reason = VllmMetrics::Finished::Reason::kLength});
}

TEST(VllmMetricsTest, HandWorkedSequenceReadsBack) {
  VllmMetrics m(TestOptions());
  FeedHandWorkedSequence(m);
  const Exposition e = MustParse(m.Render());
  const std::vector<std::pair<std::string, std::string>> engine0 = {{"engine", "0"},
                                                                    {"model_name", kModel}};

  EXPECT_EQ(Value(e, "vllm:num_requests_running", engine0), 3.0);
  EXPECT_EQ(Value(e, "vllm:num_requests_waiting", engine0), 2.0);
  EXPECT_EQ(Value(e, "vllm:kv_cache_usage_perc", engine0), 0.25);
  EXPECT_EQ(Value(e, "vllm:gpu_cache_usage_perc", engine0), 0.25);  // same value, older name
  EXPECT_EQ(Value(e, "vllm:prompt_tokens_total"), 2200.0);          // 1500 + 700
  EXPECT_EQ(Value(e, "vllm:generation_tokens_total"), 2144.0);      // 96 + 2048
  EXPECT_EQ(Value(e, "vllm:num_preemptions_total"), 1.0);
  EXPECT_EQ(Value(e, "vllm:prefix_cache_queries_total"), 3072.0);  // 2048 + 1024
  EXPECT_EQ(Value(e, "vllm:prefix_cache_hits_total"), 512.0);
  EXPECT_EQ(Value(e, "vllm:prompt_tokens_created"), 1.7e9);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "stop"}}), 1.0);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "length"}}), 1.0);
  EXPECT_EQ(Value(e, "vllm:request_success_total", {{"finished_reason", "abort"}}), 0.0);

  // TTFT 0.03, 0.3, 0.3, 1.2 over le = 0.001 0.005 0.01 0.02 | 0.04 0.06 0.08 0.1 0.25 | 0.5 0.75
  // 1.0 | 2.5 ... 2560 +Inf: 0.03 first counts at 0.04, the two 0.3s at 0.5, 1.2 at 2.5.
  EXPECT_EQ(
      Buckets(e, "vllm:time_to_first_token_seconds"),
      (std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1, 1, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}));
  EXPECT_EQ(Value(e, "vllm:time_to_first_token_seconds_count"), 4.0);
  EXPECT_NEAR(*Value(e, "vllm:time_to_first_token_seconds_sum"), 1.83, 1e-12);

  // ITL: 30 x 0.02 and 10 x 0.025 land at le=0.025 (the latter exactly on it), 5 x 0.06 at 0.075.
  // le = 0.01 0.025 0.05 0.075 ... 80 +Inf.
  EXPECT_EQ(Buckets(e, "vllm:inter_token_latency_seconds"),
            (std::vector<double>{0,  40, 40, 45, 45, 45, 45, 45, 45, 45,
                                 45, 45, 45, 45, 45, 45, 45, 45, 45, 45}));
  EXPECT_EQ(Value(e, "vllm:inter_token_latency_seconds_count"), 45.0);
  EXPECT_NEAR(*Value(e, "vllm:inter_token_latency_seconds_sum"), 0.6 + 0.25 + 0.3, 1e-12);

  // Request latencies, le = 0.3 0.5 0.8 1.0 1.5 2.0 2.5 5.0 10 15 20 ... 7680 +Inf (22 buckets).
  // e2e 2.0 (on the 2.0 edge) and 12.0 (at 15).
  const std::vector<double> e2e = Buckets(e, "vllm:e2e_request_latency_seconds");
  ASSERT_EQ(e2e.size(), 22u);
  EXPECT_EQ(e2e[4], 0.0);  // le=1.5
  EXPECT_EQ(e2e[5], 1.0);  // le=2.0
  EXPECT_EQ(e2e[8], 1.0);  // le=10.0
  EXPECT_EQ(e2e[9], 2.0);  // le=15.0
  EXPECT_EQ(Value(e, "vllm:e2e_request_latency_seconds_sum"), 14.0);
  // Queue 0.1 (at 0.3) and 4.0 (at 5.0).
  const std::vector<double> queue = Buckets(e, "vllm:request_queue_time_seconds");
  EXPECT_EQ(queue[0], 1.0);
  EXPECT_EQ(queue[6], 1.0);  // le=2.5
  EXPECT_EQ(queue[7], 2.0);  // le=5.0
  // Prefill 0.2 (at 0.3) and 0.5 (on the 0.5 edge).
  const std::vector<double> prefill = Buckets(e, "vllm:request_prefill_time_seconds");
  EXPECT_EQ(prefill[0], 1.0);
  EXPECT_EQ(prefill[1], 2.0);
  // Decode 1.7 (at 2.0) and 7.5 (at 10); inference 1.9 (at 2.0) and 8.0 (at 10).
  for (const char* family :
       {"vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds"}) {
    SCOPED_TRACE(family);
    const std::vector<double> b = Buckets(e, family);
    EXPECT_EQ(b[4], 0.0);  // le=1.5
    EXPECT_EQ(b[5], 1.0);  // le=2.0
    EXPECT_EQ(b[7], 1.0);  // le=5.0
    EXPECT_EQ(b[8], 2.0);  // le=10.0
  }
  // Mean TPOT 1.7/95 = 0.0179 (at 0.025) and 7.5/2047 = 0.00366 (at 0.01).
  const std::vector<double> tpot = Buckets(e, "vllm:request_time_per_output_token_seconds");
  EXPECT_EQ(tpot[0], 1.0);
  EXPECT_EQ(tpot[1], 2.0);

  // Token ladders 1 2 5 10 20 50 100 200 500 1000 2000 5000 ... 100000 +Inf (17 buckets).
  // Prompts 1500 (at 2000) and 700 (at 1000); outputs 96 (at 100) and 2048 (at 5000).
  const std::vector<double> prompt = Buckets(e, "vllm:request_prompt_tokens");
  ASSERT_EQ(prompt.size(), 17u);
  EXPECT_EQ(prompt[8], 0.0);   // le=500
  EXPECT_EQ(prompt[9], 1.0);   // le=1000
  EXPECT_EQ(prompt[10], 2.0);  // le=2000
  EXPECT_EQ(Value(e, "vllm:request_prompt_tokens_sum"), 2200.0);
  const std::vector<double> gen = Buckets(e, "vllm:request_generation_tokens");
  EXPECT_EQ(gen[5], 0.0);   // le=50
  EXPECT_EQ(gen[6], 1.0);   // le=100
  EXPECT_EQ(gen[10], 1.0);  // le=2000
  EXPECT_EQ(gen[11], 2.0);  // le=5000
  EXPECT_EQ(Value(e, "vllm:request_generation_tokens_count"), 2.0);

  // The cache config, as vLLM's CacheConfig prints it (no model_name label).
  const MetricFamily* config = e.Find("vllm:cache_config_info");
  ASSERT_NE(config, nullptr);
  ASSERT_EQ(config->samples.size(), 1u);
  EXPECT_EQ(config->samples[0].Label("num_gpu_blocks"), "28000");
  EXPECT_EQ(config->samples[0].Label("block_size"), "16");
  EXPECT_EQ(config->samples[0].Label("gpu_memory_utilization"), "0.9");
  EXPECT_EQ(config->samples[0].Label("enable_prefix_caching"), "True");
  EXPECT_EQ(config->samples[0].Label("engine"), "0");
  EXPECT_FALSE(config->samples[0].HasLabel("model_name"));

  // The accessors agree with the text.
  EXPECT_EQ(m.running(), 3);
  EXPECT_EQ(m.waiting(), 2);
  EXPECT_EQ(m.kv_cache_usage(), 0.25);
  EXPECT_EQ(m.requests_finished(VllmMetrics::Finished::Reason::kLength), 1);
  const VllmHistogramView ttft = m.histogram(VllmHistogram::kTimeToFirstToken);
  EXPECT_EQ(ttft.count, 4);
  ASSERT_EQ(ttft.bucket_counts.size(), kVllmTtftBuckets.size() + 1);
  EXPECT_EQ(ttft.bucket_counts[4], 1);   // 0.03 in (0.02, 0.04]
  EXPECT_EQ(ttft.bucket_counts[9], 2);   // the 0.3s in (0.25, 0.5]
  EXPECT_EQ(ttft.bucket_counts[12], 1);  // 1.2 in (1.0, 2.5]
}

TEST(VllmMetricsTest, TextLooksLikeVllmsLineForLine) {
  VllmMetrics m(TestOptions());
  FeedHandWorkedSequence(m);
  const std::string text = m.Render();
  const std::string labels = "{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}";
  // The page opens as vLLM's does.
  EXPECT_EQ(text.substr(0, text.find("vllm:num_requests_waiting")),
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running" +
                labels + " 3.0\n# HELP ");
  for (const std::string& line : {
           "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total" + labels +
               " 2200.0\n# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
               "# TYPE vllm:prompt_tokens_created gauge\nvllm:prompt_tokens_created" +
               labels + " 1.7e+09\n",
           std::string("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name="
                       "\"meta-llama/Llama-3.1-8B-Instruct\"} 3.0\n"),
           std::string("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\","
                       "model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 4.0\n"
                       "vllm:time_to_first_token_seconds_count") +
               labels + " 4.0\n",
           std::string("vllm:request_success_total{engine=\"0\",finished_reason=\"length\","
                       "model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 1.0\n"),
           std::string("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"100000.0\","
                       "model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 2.0\n"),
           std::string("# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent "
                       "usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.\n"),
           std::string("vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\","
                       "calculate_kv_scales=\"False\",cpu_offload_gb=\"0\","
                       "enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\","
                       "is_attention_free=\"False\",num_cpu_blocks=\"None\","
                       "num_gpu_blocks=\"28000\",num_gpu_blocks_override=\"None\","
                       "prefix_caching_hash_algo=\"sha256\",sliding_window=\"None\"} 1.0\n"),
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing:\n" << line;
  }
  EXPECT_EQ(text.back(), '\n');
}

// ---- The same expectations for vLLM's text and the twin's ---------------------------------------

std::string ReadFixture() {
  std::ifstream in(kFixturePath, std::ios::binary);
  EXPECT_TRUE(in.good()) << "can't open " << kFixturePath << " (run from the repo root)";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fixture's verbatim blocks (tests/util/vllm_fixture.h).
std::vector<std::string> FixtureBlocks() { return testutil::VllmFixtureBlocks(ReadFixture()); }

TEST(VllmExpositionExpectationsTest, RealVllmTextMeetsThem) {
  const std::vector<std::string> blocks = FixtureBlocks();
  // Source 1 (three excerpts of a v0.10.0 scrape), source 2 (engine 1 of a data-parallel server),
  // source 3 (vLLM's design doc, from before the engine label).
  ASSERT_EQ(blocks.size(), 5u);
  for (size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE("fixture block " + std::to_string(i + 1));
    ExpectVllmExposition(MustParse(blocks[i]), {.engine_label = i < 4, .complete = false});
  }
}

TEST(VllmExpositionExpectationsTest, TwinTextMeetsThem) {
  VllmMetrics fresh(TestOptions());
  ExpectVllmExposition(MustParse(fresh.Render()),
                       {.engine_label = true, .complete = true, .max_model_len = 131072});
  VllmMetrics used(TestOptions());
  FeedHandWorkedSequence(used);
  ExpectVllmExposition(MustParse(used.Render()),
                       {.engine_label = true, .complete = true, .max_model_len = 131072});
  VllmMetrics small(VllmMetricsOptions{.max_model_len = 4096});
  ExpectVllmExposition(MustParse(small.Render()),
                       {.engine_label = true, .complete = true, .max_model_len = 4096});
}

// The failures the checker reports for `e`, captured instead of failing this test.
std::vector<std::string> CheckerFailures(const Exposition& e, const VllmExpositionExpectations& w) {
  testing::TestPartResultArray results;
  {
    testing::ScopedFakeTestPartResultReporter reporter(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    ExpectVllmExposition(e, w);
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) out.push_back(results.GetTestPartResult(i).message());
  return out;
}

TEST(VllmExpositionExpectationsTest, TheyCatchBrokenPages) {
  // The checker must have teeth: each page breaks one rule, named by a fragment of the failure.
  const std::string kL = "engine=\"0\",model_name=\"m\"";
  struct Broken {
    std::string why;
    std::string text;
    std::string failure;
  };
  const std::vector<Broken> broken = {
      {"buckets not cumulative",
       "# TYPE vllm:request_params_n histogram\n"
       "vllm:request_params_n_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 2.0\n"
       "vllm:request_params_n_bucket{engine=\"0\",le=\"2.0\",model_name=\"m\"} 1.0\n",
       "cumulative"},
      {"+Inf bucket differs from _count",
       "# TYPE vllm:request_params_n histogram\n"
       "vllm:request_params_n_bucket{engine=\"0\",le=\"20.0\",model_name=\"m\"} 1.0\n"
       "vllm:request_params_n_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 1.0\n"
       "vllm:request_params_n_count{" +
           kL + "} 2.0\n",
       "+Inf bucket != _count"},
      {"an edge vLLM doesn't have",
       "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"m\"} 1\n",
       "not one of vLLM's edges"},
      {"an edge missing in the middle",
       "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.001\",model_name=\"m\"} 1\n"
       "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.01\",model_name=\"m\"} 1\n",
       "differs from vLLM's list"},
      {"le printed as Go would, not as prometheus_client does",
       "vllm:request_params_n_bucket{engine=\"0\",le=\"1\",model_name=\"m\"} 1.0\n",
       "prometheus_client prints"},
      {"no engine label", "vllm:num_requests_running{model_name=\"m\"} 1.0\n", "no engine"},
      {"labels not sorted", "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 1.0\n",
       "not sorted"},
      {"counter family without _total",
       "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens{" + kL + "} 1.0\n", "_total"},
      {"KV usage as a percentage", "vllm:kv_cache_usage_perc{" + kL + "} 42.0\n", "42"},
      {"a page missing families is not complete", "vllm:num_requests_running{" + kL + "} 1.0\n",
       "missing family vllm:time_to_first_token_seconds"},
  };
  for (const Broken& b : broken) {
    SCOPED_TRACE(b.why);
    const std::vector<std::string> failures =
        CheckerFailures(MustParse(b.text), {.engine_label = true,
                                            .complete = b.why.find("complete") != std::string::npos,
                                            .max_model_len = 100});
    ASSERT_FALSE(failures.empty());
    bool named = false;
    for (const std::string& f : failures) named = named || f.find(b.failure) != std::string::npos;
    EXPECT_TRUE(named) << "no failure mentions \"" << b.failure << "\"; first: " << failures[0];
  }
}

// ---- Pods, escaping, determinism, cost ----------------------------------------------------------

TEST(RenderPodTest, TwoEnginesShareOneFamilyEach) {
  VllmMetrics e0(TestOptions("0"));
  VllmMetrics e1(TestOptions("1"));
  FeedHandWorkedSequence(e0);
  e1.SetScheduler(7, 0, 0.5);
  e1.ObserveTtft(0.07);
  e1.ObserveFinished({.e2e = 1.0, .reason = VllmMetrics::Finished::Reason::kAbort});

  const Exposition pod = MustParse(RenderPod({&e0, &e1}));
  const Exposition single = MustParse(e0.Render());
  ASSERT_EQ(pod.families.size(), single.families.size());
  for (size_t i = 0; i < pod.families.size(); ++i) {
    const MetricFamily& f = pod.families[i];
    SCOPED_TRACE(f.name);
    EXPECT_EQ(f.name, single.families[i].name);  // one family per name, in the same order
    EXPECT_EQ(f.samples.size(), 2 * single.families[i].samples.size());
    int engine0 = 0;
    int engine1 = 0;
    for (const Sample& s : f.samples) {
      engine0 += s.Label("engine") == "0";
      engine1 += s.Label("engine") == "1";
    }
    EXPECT_EQ(engine0, engine1);
    EXPECT_GT(engine0, 0);
  }
  EXPECT_EQ(Value(pod, "vllm:num_requests_running", {{"engine", "0"}}), 3.0);
  EXPECT_EQ(Value(pod, "vllm:num_requests_running", {{"engine", "1"}}), 7.0);
  EXPECT_EQ(Value(pod, "vllm:time_to_first_token_seconds_count", {{"engine", "1"}}), 1.0);
  EXPECT_EQ(Buckets(pod, "vllm:time_to_first_token_seconds", "1")[5], 0.0);  // le=0.06
  EXPECT_EQ(Buckets(pod, "vllm:time_to_first_token_seconds", "1")[6], 1.0);  // le=0.08
  EXPECT_EQ(
      Value(pod, "vllm:request_success_total", {{"engine", "1"}, {"finished_reason", "abort"}}),
      1.0);
  // vLLM creates request_success children reason-major: stop/0, stop/1, length/0, ...
  const MetricFamily* success = pod.Find("vllm:request_success_total");
  ASSERT_NE(success, nullptr);
  ASSERT_EQ(success->samples.size(), 6u);
  EXPECT_EQ(success->samples[0].Label("finished_reason"), "stop");
  EXPECT_EQ(success->samples[1].Label("finished_reason"), "stop");
  EXPECT_EQ(success->samples[1].Label("engine"), "1");
  EXPECT_EQ(success->samples[2].Label("finished_reason"), "length");

  ExpectVllmExposition(pod, {.engine_label = true, .complete = true, .max_model_len = 131072});
  EXPECT_EQ(RenderPod({}), "");
  EXPECT_EQ(RenderPod({nullptr, &e0}), e0.Render());
}

TEST(VllmMetricsTest, ModelNameIsEscapedAndReadsBack) {
  VllmMetricsOptions o = TestOptions();
  o.model_name = "we\"ird\\model\nname";
  VllmMetrics m(o);
  const std::string text = m.Render();
  EXPECT_NE(text.find("model_name=\"we\\\"ird\\\\model\\nname\""), std::string::npos);
  const Exposition e = MustParse(text);
  EXPECT_EQ(e.Find("vllm:num_requests_running")->samples[0].Label("model_name"), o.model_name);
}

TEST(VllmMetricsTest, RenderingIsDeterministic) {
  VllmMetrics a(TestOptions());
  VllmMetrics b(TestOptions());
  FeedHandWorkedSequence(a);
  FeedHandWorkedSequence(b);
  EXPECT_EQ(a.Render(), b.Render());
  EXPECT_EQ(a.Render(), a.Render());
  std::string appended = "prefix\n";
  a.RenderTo(appended);
  EXPECT_EQ(appended, "prefix\n" + a.Render());
  VllmMetrics copy = a;  // copies are independent and render the same
  EXPECT_EQ(copy.Render(), a.Render());
  copy.AddPreemptions(1);
  EXPECT_NE(copy.Render(), a.Render());
}

TEST(VllmMetricsTest, NegativeCountsAndNaNAreIgnored) {
  VllmMetrics m(TestOptions());
  m.ObserveTtft(std::numeric_limits<double>::quiet_NaN());
  m.ObserveInterTokenLatency(0.1, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kTimeToFirstToken).count, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kInterTokenLatency).count, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kInterTokenLatency).sum, 0.0);
  m.ObserveTtft(1e9);  // beyond the last edge: the +Inf bucket
  EXPECT_EQ(m.histogram(VllmHistogram::kTimeToFirstToken).bucket_counts.back(), 1);
}

TEST(VllmMetricsTest, UpdatesDoNotAllocate) {
  VllmMetrics m(TestOptions());
  g_allocations = 0;
  g_count_allocations = true;
  for (int i = 0; i < 1000; ++i) {
    m.SetScheduler(i % 7, i % 3, 0.001 * i);
    m.AddPromptTokens(512);
    m.AddGenerationTokens(64);
    m.AddPreemptions(i % 100 == 0);
    m.AddPrefixCache(512, 128);
    m.ObserveTtft(0.001 * i);
    m.ObserveInterTokenLatency(0.02, 64);
    m.ObserveFinished({.e2e = 1.0 * i,
                       .queue = 0.1,
                       .inference = 0.9,
                       .prefill = 0.1,
                       .decode = 0.8,
                       .time_per_output_token = 0.02,
                       .prompt_tokens = i,
                       .generation_tokens = 64});
  }
  g_count_allocations = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kE2eRequestLatency).count, 1000);
}

}  // namespace
}  // namespace twinscale::sim
