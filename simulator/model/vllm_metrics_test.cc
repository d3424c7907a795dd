// Tests of the twin's vLLM metrics export: number formatting against prometheus_client's rules,
// the text of a hand-worked sequence of observations line by line, determinism, and the
// no-allocation promise of the update path. The same text read back through the controller's
// parser as a scraper would, and held to the expectations real vLLM text meets, is
// tests/integration/vllm_exposition_test.cc: the simulator's own tests use nothing of the
// controller.
#include "simulator/model/vllm_metrics.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/vllm_metrics_sequence.h"

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

using testutil::FeedHandWorkedSequence;
using testutil::VllmTestOptions;

// ---- Number formatting --------------------------------------------------------------------------

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

// ---- The text ----------------------------------------------------------------------------------

TEST(VllmMetricsTest, TextLooksLikeVllmsLineForLine) {
  VllmMetrics m(VllmTestOptions());
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

// ---- Determinism, cost -------------------------------------------------------------------------

TEST(VllmMetricsTest, RenderingIsDeterministic) {
  VllmMetrics a(VllmTestOptions());
  VllmMetrics b(VllmTestOptions());
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
  VllmMetrics m(VllmTestOptions());
  m.ObserveTtft(std::numeric_limits<double>::quiet_NaN());
  m.ObserveInterTokenLatency(0.1, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kTimeToFirstToken).count, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kInterTokenLatency).count, 0);
  EXPECT_EQ(m.histogram(VllmHistogram::kInterTokenLatency).sum, 0.0);
  m.ObserveTtft(1e9);  // beyond the last edge: the +Inf bucket
  EXPECT_EQ(m.histogram(VllmHistogram::kTimeToFirstToken).bucket_counts.back(), 1);
}

TEST(VllmMetricsTest, UpdatesDoNotAllocate) {
  VllmMetrics m(VllmTestOptions());
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
