// The twin's vLLM metrics read back through the controller's Prometheus text parser, as a scraper
// of the twin's pods would read them: a hand-worked sequence of observations, value by value;
// the expectations every vLLM page meets (tests/util/vllm_exposition_expectations.h) applied alike
// to real vLLM text (tests/data/fixtures/) and to the twin's, and shown to catch broken pages; a
// pod of two engines; label escaping. Here rather than beside the simulator because it joins the
// simulator's output to the controller's parser.
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/metrics/prometheus_text.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"
#include "tests/util/vllm_exposition_expectations.h"
#include "tests/util/vllm_fixture.h"
#include "tests/util/vllm_metrics_sequence.h"

namespace twinscale::sim {
namespace {

using metrics::Exposition;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::ParsePrometheusText;
using metrics::Sample;
using testutil::ExpectVllmExposition;
using testutil::FeedHandWorkedSequence;
using testutil::VllmExpositionExpectations;
using testutil::VllmTestOptions;

constexpr const char* kModel = testutil::kVllmTestModel;

// ---- Reading a page back ------------------------------------------------------------------------

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

TEST(VllmMetricsTest, HandWorkedSequenceReadsBack) {
  VllmMetrics m(VllmTestOptions());
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

// ---- The same expectations for vLLM's text and the twin's ---------------------------------------

std::string ReadFixture() {
  std::string text = testutil::ReadVllmFixture();
  EXPECT_FALSE(text.empty()) << "can't read " << testutil::kVllmFixturePath
                             << " (run from the repo root)";
  return text;
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
  VllmMetrics fresh(VllmTestOptions());
  ExpectVllmExposition(MustParse(fresh.Render()),
                       {.engine_label = true, .complete = true, .max_model_len = 131072});
  VllmMetrics used(VllmTestOptions());
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

// ---- Pods, escaping -----------------------------------------------------------------------------

TEST(RenderPodTest, TwoEnginesShareOneFamilyEach) {
  VllmMetrics e0(VllmTestOptions("0"));
  VllmMetrics e1(VllmTestOptions("1"));
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
  VllmMetricsOptions o = VllmTestOptions();
  o.model_name = "we\"ird\\model\nname";
  VllmMetrics m(o);
  const std::string text = m.Render();
  EXPECT_NE(text.find("model_name=\"we\\\"ird\\\\model\\nname\""), std::string::npos);
  const Exposition e = MustParse(text);
  EXPECT_EQ(e.Find("vllm:num_requests_running")->samples[0].Label("model_name"), o.model_name);
}

}  // namespace
}  // namespace twinscale::sim
