// The pure half of the PromQL source: the query it sends, and how Prometheus' raw samples become
// per-pod readings. Prometheus' answer is modelled here by hand (each sample of a page becomes a
// series with the labels Prometheus adds); the source against a real Prometheus is
// tests/e2e/promql_source_e2e_test.cc.
#include "controller/metrics/promql_source.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"
#include "tests/util/observation_compare.h"

namespace twinscale::metrics {
namespace {

// What Prometheus stores of one scrape of `text` at `at`: a series per sample (its name under
// __name__, its labels, and the target's labels), *_created excluded as the query excludes them.
void AddScrape(PromMatrix& m, std::string_view text, absl::Time at,
               const std::map<std::string, std::string>& target_labels) {
  absl::StatusOr<Exposition> e = ParsePrometheusText(text);
  ASSERT_TRUE(e.ok()) << e.status();
  for (const MetricFamily& f : e->families) {
    for (const Sample& s : f.samples) {
      if (absl::EndsWith(s.name, "_created")) continue;
      std::map<std::string, std::string> labels = target_labels;
      labels["__name__"] = s.name;
      for (const auto& [k, v] : s.labels) labels[k] = v;
      bool found = false;
      for (PromSeries& series : m) {
        if (series.labels == labels) {
          series.points.push_back({at, s.value});
          found = true;
        }
      }
      if (!found) m.push_back(PromSeries{labels, {{at, s.value}}});
    }
  }
}

PodObservation Direct(std::string_view text, std::string_view filter = "") {
  absl::StatusOr<Exposition> e = ParsePrometheusText(text);
  EXPECT_TRUE(e.ok()) << e.status();
  absl::StatusOr<PodObservation> o = ExtractVllmObservation(*e, filter);
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *o : PodObservation{};
}

// A busy engine of the twin: every family has data.
sim::VllmMetrics BusyEngine(const std::string& engine, int64_t scale) {
  sim::VllmMetricsOptions o;
  o.engine = engine;
  o.num_gpu_blocks = 7463;
  sim::VllmMetrics m(o);
  m.SetScheduler(3 * scale, 2 * scale, 0.125 * static_cast<double>(scale));
  m.AddPromptTokens(1000 * scale);
  m.AddGenerationTokens(333 * scale);
  m.AddPreemptions(scale);
  m.AddPrefixCache(512 * scale, 128 * scale);
  m.ObserveTtft(0.07);
  m.ObserveTtft(0.3 * static_cast<double>(scale));
  m.ObserveInterTokenLatency(0.02, 5 * scale);
  sim::VllmMetrics::Finished f;
  f.e2e = 2.5;
  f.queue = 0.1;
  f.inference = 2.4;
  f.prefill = 0.2;
  f.decode = 2.2;
  f.time_per_output_token = 0.02;
  f.prompt_tokens = 700;
  f.generation_tokens = 110;
  m.ObserveFinished(f);
  return m;
}

const absl::Time kT0 = absl::FromUnixMillis(1700000000000);

PromqlSourceOptions Options() {
  PromqlSourceOptions o;
  o.url = "http://prom:9090";
  o.lookback = absl::Seconds(45);
  return o;
}

TEST(VllmSamplesQueryTest, SelectsRawVllmSamplesWithTheMatchersAndedIn) {
  absl::StatusOr<std::string> q =
      VllmSamplesQuery({{"namespace", "llm"}, {"job", "a\"b\\c\nd"}}, absl::Seconds(45));
  ASSERT_TRUE(q.ok()) << q.status();
  // Matchers in name order (a std::map), values as PromQL strings with Go's escapes.
  EXPECT_EQ(
      *q,
      R"({__name__=~"vllm:.*",__name__!~".*_created",job="a\"b\\c\nd",namespace="llm"}[45000ms])");
  absl::StatusOr<std::string> none = VllmSamplesQuery({}, absl::Milliseconds(1500));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, R"({__name__=~"vllm:.*",__name__!~".*_created"}[1500ms])");
}

TEST(VllmSamplesQueryTest, RefusesALabelNamePromqlCannotSay) {
  for (const std::string bad : {"app-name", "0abc", "", "a b"}) {
    SCOPED_TRACE(bad);
    const absl::Status s = VllmSamplesQuery({{bad, "x"}}, absl::Seconds(1)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "labelMatchers")) << s;
  }
}

TEST(ReadingsFromSamplesTest, ReadsEachPodAsTheScraperWouldFromItsNewestScrape) {
  // Pod a: two engines in one page; pod b: one engine. Two scrapes each, 15 s apart, the engines
  // busier in the second; the reading must be the second one exactly.
  sim::VllmMetrics a0 = BusyEngine("0", 1), a1 = BusyEngine("1", 2), b0 = BusyEngine("0", 3);
  const std::string a_first = sim::RenderPod({&a0, &a1});
  const std::string b_first = b0.Render();
  sim::VllmMetrics a0_later = BusyEngine("0", 4), a1_later = BusyEngine("1", 5);
  sim::VllmMetrics b0_later = BusyEngine("0", 6);
  const std::string a_second = sim::RenderPod({&a0_later, &a1_later});
  const std::string b_second = b0_later.Render();
  PromMatrix m;
  const std::map<std::string, std::string> ta = {
      {"job", "vllm"}, {"instance", "10.0.0.1:8000"}, {"pod", "a"}, {"namespace", "llm"}};
  const std::map<std::string, std::string> tb = {
      {"job", "vllm"}, {"instance", "10.0.0.2:8000"}, {"pod", "b"}, {"namespace", "llm"}};
  AddScrape(m, a_first, kT0, ta);
  AddScrape(m, b_first, kT0 + absl::Milliseconds(300), tb);
  AddScrape(m, a_second, kT0 + absl::Seconds(15), ta);
  AddScrape(m, b_second, kT0 + absl::Milliseconds(15300), tb);

  const std::vector<PodTarget> pods = {{"b", "10.0.0.2", 8000, "/metrics"},
                                       {"a", "10.0.0.1", 8000, "/metrics"}};
  const std::vector<PodResult> got = ReadingsFromSamples(m, pods, Options(), "Prometheus at X");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].pod, "b");
  ASSERT_TRUE(got[0].reading.ok()) << got[0].reading.status();
  EXPECT_EQ(got[0].reading->scraped_at, kT0 + absl::Milliseconds(15300));
  testutil::ExpectSameObservation(got[0].reading->observation, Direct(b_second));
  EXPECT_EQ(got[1].pod, "a");
  ASSERT_TRUE(got[1].reading.ok()) << got[1].reading.status();
  EXPECT_EQ(got[1].reading->scraped_at, kT0 + absl::Seconds(15));
  ASSERT_EQ(got[1].reading->observation.engines.size(), 2u);
  testutil::ExpectSameObservation(got[1].reading->observation, Direct(a_second));
  // The hand-worked values of engine "1" (scale 5): 15 running, 10 waiting, 5000 prompt tokens.
  const EngineObservation& e1 = got[1].reading->observation.engines[1];
  EXPECT_EQ(e1.engine, "1");
  EXPECT_EQ(e1.running, 15);
  EXPECT_EQ(e1.waiting, 10);
  EXPECT_EQ(e1.prompt_tokens_total, 5000);
  EXPECT_EQ(e1.num_gpu_blocks, 7463);
}

TEST(ReadingsFromSamplesTest, AModelFilterKeepsOneServedModel) {
  const std::string text =
      "vllm:num_requests_running{engine=\"0\",model_name=\"m1\"} 4\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m2\"} 9\n";
  PromMatrix m;
  AddScrape(m, text, kT0, {{"pod", "p"}, {"job", "j"}, {"instance", "i"}});
  PromqlSourceOptions o = Options();
  o.model_name_filter = "m2";
  const std::vector<PodResult> got = ReadingsFromSamples(m, {{"p", "10.0.0.9"}}, o, "P");
  ASSERT_TRUE(got[0].reading.ok()) << got[0].reading.status();
  ASSERT_EQ(got[0].reading->observation.engines.size(), 1u);
  EXPECT_EQ(got[0].reading->observation.engines[0].model_name, "m2");
  EXPECT_EQ(got[0].reading->observation.engines[0].running, 9);
}

TEST(ReadingsFromSamplesTest, ASeriesAbsentFromTheNewestScrapeIsNotRead) {
  // The older scrape had a waiting gauge the newer one lacks: the reading is of one scrape only.
  PromMatrix m;
  const std::map<std::string, std::string> t = {{"pod", "p"}, {"job", "j"}, {"instance", "i"}};
  AddScrape(m,
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n"
            "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7\n",
            kT0, t);
  AddScrape(m, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n",
            kT0 + absl::Seconds(1), t);
  const std::vector<PodResult> got = ReadingsFromSamples(m, {{"p", "10.0.0.9"}}, Options(), "P");
  ASSERT_TRUE(got[0].reading.ok()) << got[0].reading.status();
  EXPECT_EQ(got[0].reading->observation.engines[0].running, 2);
  EXPECT_FALSE(got[0].reading->observation.engines[0].waiting.has_value());
}

TEST(ReadingsFromSamplesTest, WithoutAPodLabelTheInstanceNamesThePod) {
  PromMatrix m;
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n", kT0,
            {{"job", "static"}, {"instance", "127.0.0.12:9400"}});
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 5\n", kT0,
            {{"job", "static"}, {"instance", "[fd00::7]:8000"}});
  const std::vector<PodResult> got = ReadingsFromSamples(
      m, {{"v6", "fd00::7", 8000, "/metrics"}, {"v4", "127.0.0.12", 9400, "/metrics"}}, Options(),
      "P");
  ASSERT_TRUE(got[0].reading.ok()) << got[0].reading.status();
  EXPECT_EQ(got[0].reading->observation.engines[0].waiting, 5);
  ASSERT_TRUE(got[1].reading.ok()) << got[1].reading.status();
  EXPECT_EQ(got[1].reading->observation.engines[0].waiting, 3);
}

TEST(ReadingsFromSamplesTest, AConfigurablePodLabel) {
  PromMatrix m;
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n", kT0,
            {{"kubernetes_pod_name", "p"}, {"instance", "x"}});
  PromqlSourceOptions o = Options();
  o.pod_label = "kubernetes_pod_name";
  const std::vector<PodResult> got = ReadingsFromSamples(m, {{"p", "10.0.0.1"}}, o, "P");
  ASSERT_TRUE(got[0].reading.ok()) << got[0].reading.status();
  EXPECT_EQ(got[0].reading->observation.engines[0].waiting, 3);
}

TEST(ReadingsFromSamplesTest, PerPodErrorsNameThePodAndTheSource) {
  PromMatrix m;
  // "two": scraped by two jobs in the same instant (each one's counters would be summed).
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n", kT0,
            {{"pod", "two"}, {"job", "a"}, {"instance", "i"}});
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3\n", kT0,
            {{"pod", "two"}, {"job", "b"}, {"instance", "i"}});
  // "neg": a gauge that can't be (the extractor's rule).
  AddScrape(m, "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} -1\n", kT0,
            {{"pod", "neg"}, {"job", "a"}, {"instance", "j"}});
  const std::vector<PodResult> got =
      ReadingsFromSamples(m, {{"missing", "10.0.0.1"}, {"two", "10.0.0.2"}, {"neg", "10.0.0.3"}},
                          Options(), "Prometheus at http://prom:9090");
  ASSERT_EQ(got.size(), 3u);
  const absl::Status missing = got[0].reading.status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnavailable) << missing;
  EXPECT_TRUE(
      absl::StrContains(missing.message(), "pod missing via Prometheus at http://prom:9090"))
      << missing;
  EXPECT_TRUE(absl::StrContains(missing.message(), "no fresh samples")) << missing;
  EXPECT_TRUE(absl::StrContains(missing.message(), "45s")) << missing;
  const absl::Status two = got[1].reading.status();
  EXPECT_EQ(two.code(), absl::StatusCode::kInvalidArgument) << two;
  EXPECT_TRUE(absl::StrContains(two.message(), "several targets")) << two;
  const absl::Status neg = got[2].reading.status();
  EXPECT_EQ(neg.code(), absl::StatusCode::kInvalidArgument) << neg;
  EXPECT_TRUE(absl::StrContains(neg.message(), "pod neg")) << neg;
}

TEST(PromqlSourceTest, PrometheusDownFailsTheWholeReadNamingTheUrl) {
  ManualClock clock(kT0);
  PromqlSourceOptions o = Options();
  o.url = "http://127.0.0.1:1";  // nothing listens on port 1: refused at once
  PromqlSource source(clock, o);
  const absl::Status s = source.Read({{"p", "10.0.0.1"}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "http://127.0.0.1:1")) << s;
}

TEST(PromqlSourceTest, ABadMatcherOrPodLabelIsInvalidArgumentBeforeAnyQuery) {
  ManualClock clock(kT0);
  PromqlSourceOptions o = Options();
  o.url = "http://127.0.0.1:1";
  o.label_matchers = {{"app-name", "x"}};
  EXPECT_EQ(PromqlSource(clock, o).Read({}).status().code(), absl::StatusCode::kInvalidArgument);
  o.label_matchers = {};
  o.pod_label = "pod name";
  EXPECT_EQ(PromqlSource(clock, o).Read({}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinscale::metrics
