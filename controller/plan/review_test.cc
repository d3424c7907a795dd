// Tests of the capacity review parser: the shipped sample reads as the values written in it; each
// baseline kind, each scenario change and the profile labels read as written; a minimal review
// gets review.h's defaults (written out by hand below); and a table of bad reviews, each saying why
// it is bad and the exact "source:LINE: key.path: " its one-line error must start with. Tests run
// from the repo root (ts_cc_test), so deploy/ is found by relative path.
#include "controller/plan/review.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/model/router.h"
#include "simulator/workload/generators.h"

namespace twinscale::plan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Kind = sim::LengthDistribution::Kind;

constexpr char kSample[] = "deploy/samples/plan/capacity-review.yaml";

// kind and one profile (lines 1-3), then `rest` from line 4.
std::string WithoutBaseline(const std::string& rest) {
  return absl::StrCat(
      "kind: CapacityReview\n"                // 1
      "profiles:\n"                           // 2
      "  - {profile: p, gpuHourPrice: 2}\n",  // 3
      rest);
}

// kind and a synthetic baseline (lines 1-3), then `rest` from line 4.
std::string WithoutProfiles(const std::string& rest) {
  return absl::StrCat(
      "kind: CapacityReview\n"      // 1
      "baseline:\n"                 // 2
      "  synthetic: {rate: 10}\n",  // 3
      rest);
}

// A complete minimal review (lines 1-5), then `rest` from line 6.
std::string Minimal(const std::string& rest) {
  return WithoutBaseline(absl::StrCat("baseline:\n  synthetic: {rate: 10}\n", rest));
}

absl::StatusOr<Review> Parse(std::string_view yaml) { return ParseReview(yaml, "r.yaml"); }

// A file under the test's temporary directory holding `text`.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/review_test_", name);
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

// ---- The shipped sample ----------------------------------------------------------------------

TEST(ReviewSample, ParsesToTheValuesWrittenInIt) {
  absl::StatusOr<Review> r = LoadReviewFile(kSample);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source, kSample);
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kTrace);
  EXPECT_EQ(r->baseline.trace.path, "tests/data/traces/AzureLLMInferenceTrace_conv.csv");
  EXPECT_EQ(r->baseline.trace.format, "auto");
  EXPECT_EQ(r->baseline.trace.rate_scale, 20);
  EXPECT_EQ(r->baseline.trace.time_scale, 1);
  EXPECT_EQ(r->baseline.trace.span, absl::Minutes(10));
  EXPECT_EQ(r->slo.ttft, absl::Milliseconds(500));
  EXPECT_EQ(r->slo.per_prompt_token, absl::Microseconds(50));
  EXPECT_EQ(r->slo.percentile, 90);
  EXPECT_EQ(r->slo.itl, absl::ZeroDuration());

  ASSERT_EQ(r->profiles.size(), 3u);
  EXPECT_EQ(r->profiles[0].name, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(r->profiles[0].profile, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(r->profiles[0].gpu_hour_price, 2.5);
  EXPECT_EQ(r->profiles[0].line, 18);
  EXPECT_FALSE(r->profiles[0].gpu.has_value());
  EXPECT_FALSE(r->profiles[0].model.has_value());
  EXPECT_FALSE(r->profiles[0].tensor_parallel.has_value());
  EXPECT_EQ(r->profiles[1].name, "llama-3.1-8b-h200-tp1");
  EXPECT_EQ(r->profiles[1].gpu_hour_price, 3.5);
  EXPECT_EQ(r->profiles[1].line, 20);
  EXPECT_EQ(r->profiles[2].name, "llama-3.1-8b-a100-80g-tp1");
  EXPECT_EQ(r->profiles[2].gpu_hour_price, 1.6);
  EXPECT_EQ(r->profiles[2].line, 22);

  ASSERT_EQ(r->scenarios.size(), 7u);
  const std::vector<Scenario>& s = r->scenarios;
  EXPECT_EQ(s[0].name, "launch-traffic");
  EXPECT_EQ(s[0].line, 25);
  EXPECT_EQ(s[0].rate, 2);
  EXPECT_EQ(s[0].prompt_length, 1);
  EXPECT_EQ(s[1].name, "longer-prompts");
  EXPECT_EQ(s[1].prompt_length, 2);
  EXPECT_EQ(s[1].rate, 1);
  EXPECT_EQ(s[2].name, "chattier-answers");
  EXPECT_EQ(s[2].output_length, 1.5);
  EXPECT_EQ(s[3].name, "long-context-users");
  ASSERT_TRUE(s[3].long_context.has_value());
  EXPECT_EQ(s[3].long_context->share, 0.05);
  EXPECT_EQ(s[3].long_context->prompt_tokens, 32000);
  EXPECT_EQ(s[4].name, "retry-storm");
  ASSERT_TRUE(s[4].retry_spike.has_value());
  EXPECT_EQ(s[4].retry_spike->share, 0.2);
  EXPECT_EQ(s[4].retry_spike->timeout, absl::Seconds(20));
  EXPECT_EQ(s[4].retry_spike->start, absl::Minutes(3));
  EXPECT_EQ(s[4].retry_spike->span, absl::Minutes(3));
  EXPECT_EQ(s[5].name, "cache-miss");
  EXPECT_TRUE(s[5].prefix_cache_miss);
  EXPECT_FALSE(s[4].prefix_cache_miss);
  EXPECT_EQ(s[6].name, "launch-burst");
  EXPECT_EQ(s[6].line, 37);
  ASSERT_TRUE(s[6].burst.has_value());
  EXPECT_EQ(s[6].burst->peak_to_mean, 3);
  EXPECT_EQ(s[6].burst->window, absl::Minutes(2));
  EXPECT_EQ(s[6].burst->at, absl::Minutes(4));
  EXPECT_FALSE(s[6].long_context.has_value());
  EXPECT_FALSE(s[6].retry_spike.has_value());

  EXPECT_EQ(r->seeds, 3);
  EXPECT_EQ(r->seed, 1u);
  EXPECT_EQ(r->max_replicas, 128);
  EXPECT_EQ(r->planned_replicas, 0);
  EXPECT_EQ(r->router, sim::RouterKind::kRandom);
  EXPECT_EQ(r->emit_profile, "");
}

// ---- Defaults --------------------------------------------------------------------------------

TEST(ReviewDefaults, MinimalReviewGetsTheHeadersDefaults) {
  absl::StatusOr<Review> r = Parse(Minimal(""));
  ASSERT_TRUE(r.ok()) << r.status();
  // Expected values from review.h's comments and initializers.
  EXPECT_EQ(r->source, "r.yaml");
  EXPECT_EQ(r->slo.ttft, absl::Milliseconds(500));
  EXPECT_EQ(r->slo.percentile, 90);
  EXPECT_EQ(r->slo.per_prompt_token, absl::ZeroDuration());
  EXPECT_EQ(r->slo.itl, absl::ZeroDuration());
  EXPECT_EQ(r->slo.itl_percentile, 90);
  EXPECT_TRUE(r->scenarios.empty());
  EXPECT_EQ(r->planned_replicas, 0);
  EXPECT_EQ(r->seeds, 3);
  EXPECT_EQ(r->seed, 1u);
  EXPECT_EQ(r->max_replicas, 256);
  EXPECT_EQ(r->router, sim::RouterKind::kRandom);
  EXPECT_EQ(r->emit_profile, "");
  ASSERT_EQ(r->profiles.size(), 1u);
  EXPECT_EQ(r->profiles[0].name, "p");
  EXPECT_EQ(r->profiles[0].profile, "p");
  EXPECT_EQ(r->profiles[0].gpu_hour_price, 2);
  EXPECT_EQ(r->profiles[0].line, 3);
  // The synthetic baseline: rate as given; duration 10 minutes, Poisson arrivals, and lengths of
  // sim::LengthDistribution's defaults (constant 512 tokens in [1, 2^20]).
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kSynthetic);
  const SyntheticBaseline& syn = r->baseline.synthetic;
  EXPECT_EQ(syn.rate, 10);
  EXPECT_EQ(syn.duration, absl::Minutes(10));
  EXPECT_EQ(syn.arrival_cv, 1);
  for (const sim::LengthDistribution* d : {&syn.prompt, &syn.output}) {
    EXPECT_EQ(d->kind, Kind::kConstant);
    EXPECT_EQ(d->mean, 512);
    EXPECT_EQ(d->stddev, 0);
    EXPECT_EQ(d->min, 1);
    EXPECT_EQ(d->max, 1 << 20);
  }
}

TEST(ReviewDefaults, EachBaselineKindsDefaults) {
  absl::StatusOr<Review> trace = Parse(WithoutBaseline("baseline: {trace: {path: t.csv}}\n"));
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->baseline.kind, Baseline::Kind::kTrace);
  EXPECT_EQ(trace->baseline.trace.path, "t.csv");
  EXPECT_EQ(trace->baseline.trace.format, "auto");
  EXPECT_EQ(trace->baseline.trace.rate_scale, 1);
  EXPECT_EQ(trace->baseline.trace.time_scale, 1);
  EXPECT_EQ(trace->baseline.trace.span, absl::ZeroDuration());

  absl::StatusOr<Review> curve =
      Parse(WithoutBaseline("baseline: {rateCurve: {path: c.csv, lengthsFrom: t.csv}}\n"));
  ASSERT_TRUE(curve.ok()) << curve.status();
  EXPECT_EQ(curve->baseline.kind, Baseline::Kind::kRateCurve);
  EXPECT_EQ(curve->baseline.rate_curve.start, absl::ZeroDuration());
  EXPECT_EQ(curve->baseline.rate_curve.span, absl::ZeroDuration());
  EXPECT_EQ(curve->baseline.rate_curve.time_scale, 1);
  EXPECT_EQ(curve->baseline.rate_curve.peak_rate, 0);

  absl::StatusOr<Review> prom =
      Parse(WithoutBaseline("baseline: {prometheus: {url: 'http://prom:9090'}}\n"));
  ASSERT_TRUE(prom.ok()) << prom.status();
  EXPECT_EQ(prom->baseline.kind, Baseline::Kind::kPrometheus);
  EXPECT_EQ(prom->baseline.prometheus.url, "http://prom:9090");
  EXPECT_EQ(prom->baseline.prometheus.selector, "");
  EXPECT_EQ(prom->baseline.prometheus.range, absl::Hours(1));
  EXPECT_EQ(prom->baseline.prometheus.step, absl::Seconds(15));
  EXPECT_EQ(prom->baseline.prometheus.end, "now");
}

TEST(ReviewDefaults, NullSectionsReadAsEmpty) {
  // "slo:" and "scenarios:" with nothing under them: the defaults, and no scenarios.
  absl::StatusOr<Review> r = Parse(Minimal("slo:\nscenarios:\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->slo.ttft, absl::Milliseconds(500));
  EXPECT_TRUE(r->scenarios.empty());
}

// ---- Each part as written --------------------------------------------------------------------

TEST(ReviewBaseline, TraceWithEveryKey) {
  absl::StatusOr<Review> r = Parse(WithoutBaseline(
      "baseline:\n  trace: {path: /data/m.jsonl, format: Mooncake, rateScale: 1000, timeScale: "
      "0.5, span: 1h30m}\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const TraceBaseline& t = r->baseline.trace;
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kTrace);
  EXPECT_EQ(t.path, "/data/m.jsonl");
  EXPECT_EQ(t.format, "Mooncake");  // as written; sim::ParseTraceFormat takes any case
  EXPECT_EQ(t.rate_scale, 1000);    // the upper bound is allowed
  EXPECT_EQ(t.time_scale, 0.5);
  EXPECT_EQ(t.span, absl::Minutes(90));
}

TEST(ReviewBaseline, EveryTraceFormatName) {
  for (const char* format : {"auto", "azure", "mooncake", "burstgpt", "AZURE", "BurstGPT"}) {
    SCOPED_TRACE(format);
    absl::StatusOr<Review> r = Parse(
        WithoutBaseline(absl::StrCat("baseline: {trace: {path: t.csv, format: ", format, "}}\n")));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->baseline.trace.format, format);
  }
}

TEST(ReviewBaseline, RateCurveWithEveryKey) {
  absl::StatusOr<Review> r = Parse(WithoutBaseline(
      "baseline:\n  rateCurve:\n    path: curve.csv\n    lengthsFrom: conv.csv\n    start: 72h\n"
      "    span: 1h\n    timeScale: 2\n    peakRate: 55.5\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const RateCurveBaseline& c = r->baseline.rate_curve;
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kRateCurve);
  EXPECT_EQ(c.path, "curve.csv");
  EXPECT_EQ(c.lengths_from, "conv.csv");
  EXPECT_EQ(c.start, absl::Hours(72));
  EXPECT_EQ(c.span, absl::Hours(1));
  EXPECT_EQ(c.time_scale, 2);
  EXPECT_EQ(c.peak_rate, 55.5);
}

TEST(ReviewBaseline, PrometheusWithEveryKey) {
  absl::StatusOr<Review> r = Parse(WithoutBaseline(
      "baseline:\n  prometheus:\n    url: https://prom.example:9090\n"
      "    selector: '{namespace=\"llm\", job=\"vllm\"}'\n    range: 6h\n    step: 30s\n"
      "    end: 2025-06-01T12:00:00Z\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const PrometheusBaseline& p = r->baseline.prometheus;
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kPrometheus);
  EXPECT_EQ(p.url, "https://prom.example:9090");
  EXPECT_EQ(p.selector, "{namespace=\"llm\", job=\"vllm\"}");
  EXPECT_EQ(p.range, absl::Hours(6));
  EXPECT_EQ(p.step, absl::Seconds(30));
  EXPECT_EQ(p.end, "2025-06-01T12:00:00Z");
  // An offset and fractional seconds are RFC 3339 too.
  absl::StatusOr<Review> offset = Parse(WithoutBaseline(
      "baseline: {prometheus: {url: 'http://p', end: '2025-06-01T12:00:00.5+02:00'}}\n"));
  ASSERT_TRUE(offset.ok()) << offset.status();
  EXPECT_EQ(offset->baseline.prometheus.end, "2025-06-01T12:00:00.5+02:00");
}

TEST(ReviewBaseline, SyntheticWithEveryKey) {
  absl::StatusOr<Review> r = Parse(WithoutBaseline(
      "baseline:\n  synthetic:\n    rate: 40\n    duration: 5m\n    arrivalCv: 2.5\n"
      "    prompt: {mean: 1000, stddev: 300, min: 16, max: 131072}\n"
      "    output: {mean: 200, distribution: exponential, max: 4096}\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  const SyntheticBaseline& s = r->baseline.synthetic;
  EXPECT_EQ(r->baseline.kind, Baseline::Kind::kSynthetic);
  EXPECT_EQ(s.rate, 40);
  EXPECT_EQ(s.duration, absl::Minutes(5));
  EXPECT_EQ(s.arrival_cv, 2.5);
  EXPECT_EQ(s.prompt.kind, Kind::kGaussian);  // auto, with a stddev
  EXPECT_EQ(s.prompt.mean, 1000);
  EXPECT_EQ(s.prompt.stddev, 300);
  EXPECT_EQ(s.prompt.min, 16);
  EXPECT_EQ(s.prompt.max, 131072);
  EXPECT_EQ(s.output.kind, Kind::kExponential);
  EXPECT_EQ(s.output.mean, 200);
  EXPECT_EQ(s.output.stddev, 0);
  EXPECT_EQ(s.output.min, 1);
  EXPECT_EQ(s.output.max, 4096);
}

TEST(ReviewBaseline, LengthDistributionKinds) {
  struct Case {
    std::string name;
    std::string length;
    Kind want;
  };
  const std::vector<Case> cases = {
      {"auto without a stddev is constant", "{mean: 100}", Kind::kConstant},
      {"auto with stddev 0 is constant", "{mean: 100, stddev: 0}", Kind::kConstant},
      {"auto with a stddev is gaussian", "{mean: 100, stddev: 1}", Kind::kGaussian},
      {"auto written out", "{mean: 100, distribution: auto}", Kind::kConstant},
      {"constant", "{mean: 100, distribution: constant}", Kind::kConstant},
      {"gaussian with no stddev is still gaussian", "{mean: 100, distribution: gaussian}",
       Kind::kGaussian},
      {"gaussian with a stddev", "{mean: 100, stddev: 20, distribution: gaussian}",
       Kind::kGaussian},
      {"exponential", "{mean: 100, distribution: exponential}", Kind::kExponential},
      {"names are read in any case", "{mean: 100, distribution: Exponential}", Kind::kExponential},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Review> r = Parse(WithoutBaseline(
        absl::StrCat("baseline: {synthetic: {rate: 1, prompt: ", c.length, "}}\n")));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->baseline.synthetic.prompt.kind, c.want);
    EXPECT_EQ(r->baseline.synthetic.prompt.mean, 100);
  }
}

TEST(ReviewSlo, EveryKey) {
  absl::StatusOr<Review> r = Parse(Minimal(
      "slo: {ttft: 250ms, percentile: 99.5, perPromptToken: 100us, itl: 50ms, itlPercentile: "
      "100}\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->slo.ttft, absl::Milliseconds(250));
  EXPECT_EQ(r->slo.percentile, 99.5);
  EXPECT_EQ(r->slo.per_prompt_token, absl::Microseconds(100));
  EXPECT_EQ(r->slo.itl, absl::Milliseconds(50));
  EXPECT_EQ(r->slo.itl_percentile, 100);
}

TEST(ReviewProfiles, LabelsAndOverrides) {
  absl::StatusOr<Review> r = Parse(WithoutProfiles(
      "profiles:\n"                                                                       // 4
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2.5}\n"                     // 5
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpu: a100-80g, gpuHourPrice: 1.6}\n"      // 6
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, tensorParallel: 2, gpuHourPrice: 2.5}\n"  // 7
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpu: h200, tensorParallel: 4,\n"          // 8
      "     gpuHourPrice: 3.5}\n"                                                         // 9
      "  - profile: llama-3.1-8b-h100-sxm-tp1\n"                                          // 10
      "    model: llama-3.1-70b\n"                                                        // 11
      "    gpu: a100-80g\n"                                                               // 12
      "    gpuHourPrice: 1.6\n"                                                           // 13
      "    name: a100\n"));                                                               // 14
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->profiles.size(), 5u);
  const std::vector<ProfileChoice>& p = r->profiles;
  EXPECT_EQ(p[0].name, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(p[0].line, 5);
  EXPECT_EQ(p[1].name, "llama-3.1-8b-h100-sxm-tp1-a100-80g");
  EXPECT_EQ(p[1].gpu, "a100-80g");
  EXPECT_EQ(p[1].gpu_hour_price, 1.6);
  EXPECT_EQ(p[1].line, 6);
  EXPECT_EQ(p[2].name, "llama-3.1-8b-h100-sxm-tp1-tp2");
  EXPECT_EQ(p[2].tensor_parallel, 2);
  EXPECT_FALSE(p[2].gpu.has_value());
  EXPECT_EQ(p[3].name, "llama-3.1-8b-h100-sxm-tp1-h200-tp4");
  EXPECT_EQ(p[3].gpu, "h200");
  EXPECT_EQ(p[3].tensor_parallel, 4);
  EXPECT_EQ(p[3].line, 8);
  EXPECT_EQ(p[4].name, "a100");
  EXPECT_EQ(p[4].profile, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(p[4].model, "llama-3.1-70b");
  EXPECT_EQ(p[4].gpu, "a100-80g");
  EXPECT_EQ(p[4].line, 10);
}

TEST(ReviewProfiles, EmitProfileNamesALabel) {
  absl::StatusOr<Review> r = Parse(WithoutProfiles(
      "profiles:\n  - {profile: p, gpuHourPrice: 1}\n  - {profile: p, gpu: a100-80g, "
      "gpuHourPrice: 1}\nemitProfile: p-a100-80g\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->emit_profile, "p-a100-80g");
}

TEST(ReviewScenarios, EveryChange) {
  absl::StatusOr<Review> r =
      Parse(Minimal("scenarios:\n"                                                          // 6
                    "  - name: everything\n"                                                // 7
                    "    rate: 1000\n"                                                      // 8
                    "    promptLength: 0.5\n"                                               // 9
                    "    outputLength: 100\n"                                               // 10
                    "    longContext: {share: 1, promptTokens: 128000}\n"                   // 11
                    "    retrySpike: {share: 0.5, timeout: 45s, start: 1m, span: 2m}\n"     // 12
                    "    prefixCacheMiss: false\n"                                          // 13
                    "    burst: {peakToMean: 1.5, window: 30s, at: 90s}\n"                  // 14
                    "  - {name: spike-defaults, retrySpike: {share: 0.1}, burst: {}}\n"));  // 15
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->scenarios.size(), 2u);
  const Scenario& a = r->scenarios[0];
  EXPECT_EQ(a.name, "everything");
  EXPECT_EQ(a.line, 7);
  EXPECT_EQ(a.rate, 1000);
  EXPECT_EQ(a.prompt_length, 0.5);
  EXPECT_EQ(a.output_length, 100);
  ASSERT_TRUE(a.long_context.has_value());
  EXPECT_EQ(a.long_context->share, 1);
  EXPECT_EQ(a.long_context->prompt_tokens, 128000);
  ASSERT_TRUE(a.retry_spike.has_value());
  EXPECT_EQ(a.retry_spike->share, 0.5);
  EXPECT_EQ(a.retry_spike->timeout, absl::Seconds(45));
  EXPECT_EQ(a.retry_spike->start, absl::Minutes(1));
  EXPECT_EQ(a.retry_spike->span, absl::Minutes(2));
  EXPECT_FALSE(a.prefix_cache_miss);
  ASSERT_TRUE(a.burst.has_value());
  EXPECT_EQ(a.burst->peak_to_mean, 1.5);
  EXPECT_EQ(a.burst->window, absl::Seconds(30));
  EXPECT_EQ(a.burst->at, absl::Seconds(90));
  // A retry spike and a burst with only what they need get review.h's defaults.
  const Scenario& b = r->scenarios[1];
  EXPECT_EQ(b.line, 15);
  ASSERT_TRUE(b.retry_spike.has_value());
  EXPECT_EQ(b.retry_spike->timeout, absl::Seconds(30));
  EXPECT_EQ(b.retry_spike->start, absl::ZeroDuration());
  EXPECT_EQ(b.retry_spike->span, absl::ZeroDuration());
  ASSERT_TRUE(b.burst.has_value());
  EXPECT_EQ(b.burst->peak_to_mean, 2);
  EXPECT_EQ(b.burst->window, absl::Minutes(2));
  EXPECT_EQ(b.burst->at, absl::ZeroDuration());
  EXPECT_EQ(b.rate, 1);
  EXPECT_FALSE(b.long_context.has_value());
}

TEST(ReviewTopLevel, EveryKey) {
  absl::StatusOr<Review> r = Parse(
      Minimal("plannedReplicas: 12\nseeds: 10\nseed: 18446744073709551615\nmaxReplicas: 4096\n"
              "router: least-requests\nemitProfile: p\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->planned_replicas, 12);
  EXPECT_EQ(r->seeds, 10);
  EXPECT_EQ(r->seed, 18446744073709551615u);
  EXPECT_EQ(r->max_replicas, 4096);
  EXPECT_EQ(r->router, sim::RouterKind::kLeastRequests);
  EXPECT_EQ(r->emit_profile, "p");
}

TEST(ReviewTopLevel, ValuesAsYamlWritesThem) {
  struct Case {
    std::string name;
    std::string lines;
    void (*check)(const Review&);
  };
  const std::vector<Case> cases = {
      {"a whole number written 3.0", "seeds: 3.0", [](const Review& r) { EXPECT_EQ(r.seeds, 3); }},
      {"an exponent", "scenarios: [{name: a, rate: 1e3}]",
       [](const Review& r) { EXPECT_EQ(r.scenarios[0].rate, 1000); }},
      {"True is a boolean in YAML 1.2's core schema",
       "scenarios: [{name: a, prefixCacheMiss: True}]",
       [](const Review& r) { EXPECT_TRUE(r.scenarios[0].prefix_cache_miss); }},
      {"a quoted kind and router", "router: 'prefix-aware'",
       [](const Review& r) { EXPECT_EQ(r.router, sim::RouterKind::kPrefixAware); }},
      {"an empty emitProfile is the cheapest", "emitProfile: ''",
       [](const Review& r) { EXPECT_EQ(r.emit_profile, ""); }},
      {"a scenario name that reads as a number is a string", "scenarios: [{name: 2025}]",
       [](const Review& r) { EXPECT_EQ(r.scenarios[0].name, "2025"); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Review> r = Parse(Minimal(absl::StrCat(c.lines, "\n")));
    ASSERT_TRUE(r.ok()) << r.status();
    c.check(*r);
  }
}

TEST(ReviewDocuments, CommentsAndDocumentMarkersAroundTheReview) {
  absl::StatusOr<Review> r =
      Parse(absl::StrCat("# a review\n---\n", Minimal("seeds: 5\n"), "...\n# the end\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->seeds, 5);
}

TEST(ReviewDocuments, LinesCountFromTheFileNotTheDocument) {
  // Two empty documents (comments only) before the review: its line 6 is the file's line 10.
  absl::StatusOr<Review> r = Parse(absl::StrCat("# one\n---\n# two\n---\n", Minimal("seeds: 0\n")));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), StartsWith("r.yaml:10: seeds: ")) << r.status();
}

// ---- Bad input -------------------------------------------------------------------------------

struct BadCase {
  std::string name;    // why the input is bad
  std::string yaml;    // a whole review
  std::string prefix;  // the error's start: "bad.yaml:LINE: key.path: "
  std::string want;    // a substring of the rest: the complaint
};

std::vector<BadCase> BadCases() {
  const auto base = [](const std::string& baseline) {
    return WithoutBaseline(absl::StrCat("baseline:\n  ", baseline, "\n"));  // baseline on line 5
  };
  const auto top = [](const std::string& lines) { return Minimal(absl::StrCat(lines, "\n")); };
  const auto scenario = [](const std::string& keys) {  // the second scenario on line 8
    return Minimal(absl::StrCat("scenarios:\n  - name: a\n  - {name: b, ", keys, "}\n"));
  };
  const auto profile = [](const std::string& entry) {  // the second profile on line 6
    return WithoutProfiles(
        absl::StrCat("profiles:\n  - {profile: p, gpuHourPrice: 1}\n  - ", entry, "\n"));
  };
  return {
      // The document.
      {"an empty file", "", "bad.yaml: ", "the file is empty"},
      {"only comments", "# nothing here\n\n", "bad.yaml: ", "the file is empty"},
      {"a sequence, not a mapping", "- kind: CapacityReview\n",
       "bad.yaml:1: ", "a review is a mapping"},
      {"a scalar, not a mapping", "hello\n", "bad.yaml:1: ", "got \"hello\""},
      {"two documents", Minimal("---\nkind: CapacityReview\n"),
       "bad.yaml:7: ", "one YAML document"},
      {"kind missing", "baseline: {synthetic: {rate: 1}}\n",
       "bad.yaml:1: kind: ", "required: a review file says kind: CapacityReview"},
      {"kind of another file: said before its unknown keys",
       "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n",
       "bad.yaml:2: kind: ", "must be CapacityReview, got \"InferenceAutoscaler\""},
      {"kind in the wrong case", "kind: capacityreview\n",
       "bad.yaml:1: kind: ", "must be CapacityReview"},
      {"duplicate top-level key", Minimal("seeds: 2\nseeds: 3\n"),
       "bad.yaml:7: seeds: ", "duplicate key (first given on line 6)"},
      {"a key that is not a name", Minimal("[a, b]: 1\n"),
       "bad.yaml:6: ", "a key must be a name, got a sequence"},

      // Unknown keys, at every level.
      {"unknown top-level key, near a known one", top("sedes: 3"),
       "bad.yaml:6: sedes: ", "unknown key (did you mean \"seeds\"?)"},
      {"unknown top-level key, far from any", top("apiVersion: v1"),
       "bad.yaml:6: apiVersion: ", "unknown key (want one of kind, baseline, slo,"},
      {"unknown short key: no guess two edits away (foo is not slo)", top("foo: 1"),
       "bad.yaml:6: foo: ", "unknown key (want one of kind, baseline,"},
      {"unknown baseline kind", base("traces: {path: t.csv}"),
       "bad.yaml:5: baseline.traces: ", "unknown key (did you mean \"trace\"?)"},
      {"unknown key in trace", base("trace: {path: t.csv, rate_scale: 2}"),
       "bad.yaml:5: baseline.trace.rate_scale: ", "unknown key (did you mean \"rateScale\"?)"},
      {"unknown key in rateCurve", base("rateCurve: {path: c, lengthsFrom: t, peak: 3}"),
       "bad.yaml:5: baseline.rateCurve.peak: ", "unknown key"},
      {"unknown key in prometheus", base("prometheus: {url: 'http://p', query: up}"),
       "bad.yaml:5: baseline.prometheus.query: ", "unknown key"},
      {"unknown key in synthetic", base("synthetic: {rate: 1, cv: 2}"),
       "bad.yaml:5: baseline.synthetic.cv: ", "unknown key"},
      {"unknown key in a length", base("synthetic: {rate: 1, output: {mean: 9, avg: 9}}"),
       "bad.yaml:5: baseline.synthetic.output.avg: ", "unknown key"},
      {"unknown key in slo", top("slo:\n  ttft: 1s\n  ttf: 2s"),
       "bad.yaml:8: slo.ttf: ", "unknown key (did you mean \"ttft\"?)"},
      {"unknown key in a profile", profile("{profile: q, gpuHourPrice: 1, tp: 2}"),
       "bad.yaml:6: profiles[1].tp: ", "unknown key"},
      {"unknown key in a scenario", scenario("rates: 2"),
       "bad.yaml:8: scenarios[1].rates: ", "unknown key (did you mean \"rate\"?)"},
      {"unknown key in longContext", scenario("longContext: {share: 0.1, tokens: 9}"),
       "bad.yaml:8: scenarios[1].longContext.tokens: ", "unknown key"},
      {"unknown key in retrySpike", scenario("retrySpike: {share: 0.1, delay: 5s}"),
       "bad.yaml:8: scenarios[1].retrySpike.delay: ", "unknown key"},
      {"unknown key in burst", scenario("burst: {peak: 3}"),
       "bad.yaml:8: scenarios[1].burst.peak: ", "unknown key"},
      {"duplicate key in a scenario", scenario("rate: 2, rate: 3"),
       "bad.yaml:8: scenarios[1].rate: ", "duplicate key"},

      // The baseline.
      {"no baseline", WithoutBaseline(""),
       "bad.yaml:1: baseline: ", "required: one of trace, rateCurve, prometheus or synthetic"},
      {"an empty baseline", WithoutBaseline("baseline: {}\n"),
       "bad.yaml:4: baseline: ", "give one of trace, rateCurve, prometheus or synthetic"},
      {"two baseline kinds at once",
       WithoutBaseline("baseline:\n  trace: {path: t.csv}\n  synthetic: {rate: 3}\n"),
       "bad.yaml:6: baseline.synthetic: ",
       "one baseline, and baseline.trace is given too (line 5)"},
      {"baseline is a string", WithoutBaseline("baseline: t.csv\n"),
       "bad.yaml:4: baseline: ", "must be a mapping"},
      {"trace without a path", base("trace: {rateScale: 2}"),
       "bad.yaml:5: baseline.trace.path: ", "required"},
      {"trace path empty", base("trace: {path: ''}"),
       "bad.yaml:5: baseline.trace.path: ", "must not be empty"},
      {"trace format unknown", base("trace: {path: t, format: csv}"),
       "bad.yaml:5: baseline.trace.format: ",
       "unknown trace format \"csv\" (want auto, azure, mooncake or burstgpt)"},
      {"trace rateScale 0", base("trace: {path: t, rateScale: 0}"),
       "bad.yaml:5: baseline.trace.rateScale: ", "must be in (0, 1000], got 0"},
      {"trace rateScale over 1000", base("trace: {path: t, rateScale: 1000.5}"),
       "bad.yaml:5: baseline.trace.rateScale: ", "must be in (0, 1000], got 1000.5"},
      {"trace timeScale 0", base("trace: {path: t, timeScale: 0}"),
       "bad.yaml:5: baseline.trace.timeScale: ", "must be > 0, got 0"},
      {"trace timeScale infinite", base("trace: {path: t, timeScale: .inf}"),
       "bad.yaml:5: baseline.trace.timeScale: ", "must be a finite number, got .inf"},
      {"trace span negative", base("trace: {path: t, span: -1s}"),
       "bad.yaml:5: baseline.trace.span: ", "must be at least 0, got -1s"},
      {"rateCurve without lengthsFrom", base("rateCurve: {path: c.csv}"),
       "bad.yaml:5: baseline.rateCurve.lengthsFrom: ", "required"},
      {"rateCurve without path", base("rateCurve: {lengthsFrom: t.csv}"),
       "bad.yaml:5: baseline.rateCurve.path: ", "required"},
      {"rateCurve start negative", base("rateCurve: {path: c, lengthsFrom: t, start: -1h}"),
       "bad.yaml:5: baseline.rateCurve.start: ", "must be at least 0, got -1h"},
      {"rateCurve span negative", base("rateCurve: {path: c, lengthsFrom: t, span: -5m}"),
       "bad.yaml:5: baseline.rateCurve.span: ", "must be at least 0, got -5m"},
      {"rateCurve timeScale negative", base("rateCurve: {path: c, lengthsFrom: t, timeScale: -1}"),
       "bad.yaml:5: baseline.rateCurve.timeScale: ", "must be > 0, got -1"},
      {"rateCurve peakRate negative", base("rateCurve: {path: c, lengthsFrom: t, peakRate: -2}"),
       "bad.yaml:5: baseline.rateCurve.peakRate: ", "must be >= 0, got -2"},
      {"prometheus without a url", base("prometheus: {range: 1h}"),
       "bad.yaml:5: baseline.prometheus.url: ", "required"},
      {"prometheus url of another scheme", base("prometheus: {url: 'ftp://p:9090'}"),
       "bad.yaml:5: baseline.prometheus.url: ",
       "must start with http:// or https:// and name a host, got \"ftp://p:9090\""},
      {"prometheus url with no host", base("prometheus: {url: 'https://'}"),
       "bad.yaml:5: baseline.prometheus.url: ", "must start with http:// or https://"},
      {"prometheus selector without braces", base("prometheus: {url: 'http://p', selector: job=x}"),
       "bad.yaml:5: baseline.prometheus.selector: ", "must be a label selector in braces"},
      {"prometheus selector not closed", base("prometheus: {url: 'http://p', selector: '{job=x'}"),
       "bad.yaml:5: baseline.prometheus.selector: ", "got \"{job=x\""},
      {"prometheus range 0", base("prometheus: {url: 'http://p', range: 0s}"),
       "bad.yaml:5: baseline.prometheus.range: ", "must be longer than 0, got 0s"},
      {"prometheus step 0", base("prometheus: {url: 'http://p', step: 0s}"),
       "bad.yaml:5: baseline.prometheus.step: ", "must be longer than 0, got 0s"},
      {"prometheus end neither now nor RFC 3339", base("prometheus: {url: 'http://p', end: today}"),
       "bad.yaml:5: baseline.prometheus.end: ",
       "must be now or an RFC 3339 time such as 2025-06-01T12:00:00Z, got \"today\""},
      {"prometheus end a date without a time",
       base("prometheus: {url: 'http://p', end: '2025-06-01'}"),
       "bad.yaml:5: baseline.prometheus.end: ", "RFC 3339"},
      {"synthetic without a rate", base("synthetic: {duration: 1m}"),
       "bad.yaml:5: baseline.synthetic.rate: ", "required"},
      {"synthetic rate 0", base("synthetic: {rate: 0}"),
       "bad.yaml:5: baseline.synthetic.rate: ", "must be > 0, got 0"},
      {"synthetic rate NaN", base("synthetic: {rate: .nan}"),
       "bad.yaml:5: baseline.synthetic.rate: ", "must be a finite number, got .nan"},
      {"synthetic rate infinite, spelt inf", base("synthetic: {rate: inf}"),
       "bad.yaml:5: baseline.synthetic.rate: ", "must be a finite number, got inf"},
      {"synthetic rate too large for a double", base("synthetic: {rate: 1e999}"),
       "bad.yaml:5: baseline.synthetic.rate: ", "must be a finite number, got 1e999"},
      {"synthetic duration 0", base("synthetic: {rate: 1, duration: 0s}"),
       "bad.yaml:5: baseline.synthetic.duration: ", "must be longer than 0, got 0s"},
      {"synthetic arrivalCv 0", base("synthetic: {rate: 1, arrivalCv: 0}"),
       "bad.yaml:5: baseline.synthetic.arrivalCv: ", "must be > 0, got 0"},
      {"prompt mean below 1", base("synthetic: {rate: 1, prompt: {mean: 0.5}}"),
       "bad.yaml:5: baseline.synthetic.prompt.mean: ", "must be >= 1, got 0.5"},
      {"prompt stddev negative", base("synthetic: {rate: 1, prompt: {stddev: -3}}"),
       "bad.yaml:5: baseline.synthetic.prompt.stddev: ", "must be >= 0, got -3"},
      {"output min 0", base("synthetic: {rate: 1, output: {min: 0}}"),
       "bad.yaml:5: baseline.synthetic.output.min: ", "must be in [1, 2147483647], got 0"},
      {"output max below min", base("synthetic: {rate: 1, output: {min: 64, max: 32}}"),
       "bad.yaml:5: baseline.synthetic.output.max: ", "must be >= min (64), got 32"},
      {"output min above the default max", base("synthetic: {rate: 1, output: {min: 2000000}}"),
       "bad.yaml:5: baseline.synthetic.output.min: ", "must be <= max (1048576, the default)"},
      {"output min not a whole number", base("synthetic: {rate: 1, output: {min: 1.5}}"),
       "bad.yaml:5: baseline.synthetic.output.min: ", "must be a whole number, got 1.5"},
      {"unknown distribution", base("synthetic: {rate: 1, prompt: {distribution: uniform}}"),
       "bad.yaml:5: baseline.synthetic.prompt.distribution: ",
       "must be auto, constant, gaussian or exponential, got \"uniform\""},
      {"a stddev a constant distribution would ignore",
       base("synthetic: {rate: 1, prompt: {stddev: 5, distribution: constant}}"),
       "bad.yaml:5: baseline.synthetic.prompt.stddev: ", "only a gaussian distribution"},

      // The SLO.
      {"slo ttft 0", top("slo: {ttft: 0ms}"),
       "bad.yaml:6: slo.ttft: ", "must be longer than 0, got 0ms"},
      {"slo percentile 0", top("slo: {percentile: 0}"),
       "bad.yaml:6: slo.percentile: ", "must be in (0, 100], got 0"},
      {"slo percentile over 100", top("slo:\n  percentile: 100.1"),
       "bad.yaml:7: slo.percentile: ", "must be in (0, 100], got 100.1"},
      {"slo perPromptToken negative", top("slo: {perPromptToken: -1ms}"),
       "bad.yaml:6: slo.perPromptToken: ", "must be at least 0, got -1ms"},
      {"slo itl negative", top("slo: {itl: -5ms}"),
       "bad.yaml:6: slo.itl: ", "must be at least 0, got -5ms"},
      {"slo itlPercentile 0", top("slo: {itlPercentile: 0}"),
       "bad.yaml:6: slo.itlPercentile: ", "must be in (0, 100], got 0"},
      {"slo is a list", top("slo: [1s]"), "bad.yaml:6: slo: ", "must be a mapping"},

      // Durations.
      {"a duration with no unit", top("slo: {ttft: 500}"), "bad.yaml:6: slo.ttft: ",
       "must be a duration with a unit, such as 90s, 2m or 1h30m; got 500"},
      {"a duration of 0 with no unit", base("trace: {path: t, span: 0}"),
       "bad.yaml:5: baseline.trace.span: ", "must be a duration with a unit"},
      {"a duration in words", top("slo: {ttft: half a second}"), "bad.yaml:6: slo.ttft: ",
       "must be a duration such as 500ms, 90s, 2m or 1h30m, got \"half a second\""},
      {"a duration longer than a year", base("trace: {path: t, span: 9000h}"),
       "bad.yaml:5: baseline.trace.span: ", "must be at most a year (8760h), got 9000h"},
      {"an infinite duration", base("trace: {path: t, span: inf}"),
       "bad.yaml:5: baseline.trace.span: ", "must be a duration"},

      // Types.
      {"a number quoted is a string", top("seeds: '3'"),
       "bad.yaml:6: seeds: ", "must be a number, got the string \"3\""},
      {"a number that is a word", top("maxReplicas: many"),
       "bad.yaml:6: maxReplicas: ", "must be a number, got \"many\""},
      {"a number that is a list", top("seeds: [3]"),
       "bad.yaml:6: seeds: ", "must be a number, got a sequence"},
      {"a key with no value", top("seeds:"),
       "bad.yaml:6: seeds: ", "needs a value (a number), or leave the key out for the default"},
      {"a boolean that is yes", scenario("prefixCacheMiss: yes"),
       "bad.yaml:8: scenarios[1].prefixCacheMiss: ", "must be true or false, got \"yes\""},
      {"a boolean quoted", scenario("prefixCacheMiss: 'true'"),
       "bad.yaml:8: scenarios[1].prefixCacheMiss: ", "must be true or false"},
      {"a string that is a mapping", top("router: {kind: random}"),
       "bad.yaml:6: router: ", "must be a string, got a mapping"},

      // Profiles.
      {"no profiles", WithoutProfiles(""), "bad.yaml:1: profiles: ", "required"},
      {"an empty list of profiles", WithoutProfiles("profiles: []\n"),
       "bad.yaml:4: profiles: ", "give at least one deployment profile"},
      {"profiles a mapping", WithoutProfiles("profiles: {profile: p}\n"),
       "bad.yaml:4: profiles: ", "must be a list"},
      {"a profile that is a string", profile("llama"),
       "bad.yaml:6: profiles[1]: ", "must be a mapping"},
      {"a profile without its name", profile("{gpuHourPrice: 1}"),
       "bad.yaml:6: profiles[1].profile: ", "required"},
      {"a profile without a price", profile("{profile: q}"),
       "bad.yaml:6: profiles[1].gpuHourPrice: ", "required"},
      {"a profile's price 0", profile("{profile: q, gpuHourPrice: 0}"),
       "bad.yaml:6: profiles[1].gpuHourPrice: ", "must be > 0, got 0"},
      {"a profile's price negative", profile("{profile: q, gpuHourPrice: -1.5}"),
       "bad.yaml:6: profiles[1].gpuHourPrice: ", "must be > 0, got -1.5"},
      {"tensorParallel 0", profile("{profile: q, gpuHourPrice: 1, tensorParallel: 0}"),
       "bad.yaml:6: profiles[1].tensorParallel: ", "must be in [1, 2147483647], got 0"},
      {"tensorParallel fractional", profile("{profile: q, gpuHourPrice: 1, tensorParallel: 1.5}"),
       "bad.yaml:6: profiles[1].tensorParallel: ", "must be a whole number, got 1.5"},
      {"an empty gpu override", profile("{profile: q, gpuHourPrice: 1, gpu: ''}"),
       "bad.yaml:6: profiles[1].gpu: ", "must not be empty"},
      {"an empty name", profile("{profile: q, gpuHourPrice: 1, name: ''}"),
       "bad.yaml:6: profiles[1].name: ", "must not be empty"},
      {"two profiles with the same label", profile("{profile: p, gpuHourPrice: 2}"),
       "bad.yaml:6: profiles[1]: ",
       "the label \"p\" is also profiles[0]'s (line 5); give one of them a name:"},
      {"a name that is another entry's derived label",
       profile("{profile: x, gpuHourPrice: 2, name: p}"),
       "bad.yaml:6: profiles[1]: ", "the label \"p\" is also profiles[0]'s"},
      {"emitProfile naming no profile", top("emitProfile: q"),
       "bad.yaml:6: emitProfile: ", "\"q\" is not one of the profiles' labels (p)"},

      // Scenarios.
      {"scenarios a mapping", top("scenarios: {name: a}"),
       "bad.yaml:6: scenarios: ", "must be a list"},
      {"a scenario without a name", top("scenarios:\n  - name: a\n  - rate: 2"),
       "bad.yaml:8: scenarios[1].name: ", "required"},
      {"a scenario called baseline", top("scenarios:\n  - name: baseline"),
       "bad.yaml:7: scenarios[0].name: ", "\"baseline\" is the name of the table's first row"},
      {"a scenario called Baseline: the same row name to a reader",
       top("scenarios:\n  - name: Baseline"),
       "bad.yaml:7: scenarios[0].name: ", "is the name of the table's first row"},
      {"two scenarios with one name", top("scenarios:\n  - name: a\n  - {name: b}\n  - name: a"),
       "bad.yaml:9: scenarios[2].name: ",
       "\"a\" is also the name of scenarios[0] (line 7); names must be unique"},
      {"scenario rate 0", scenario("rate: 0"),
       "bad.yaml:8: scenarios[1].rate: ", "must be in (0, 1000], got 0"},
      {"scenario rate over 1000", scenario("rate: 1001"),
       "bad.yaml:8: scenarios[1].rate: ", "must be in (0, 1000], got 1001"},
      {"promptLength 0", scenario("promptLength: 0"),
       "bad.yaml:8: scenarios[1].promptLength: ", "must be in (0, 100], got 0"},
      {"promptLength over 100", scenario("promptLength: 101"),
       "bad.yaml:8: scenarios[1].promptLength: ", "must be in (0, 100], got 101"},
      {"outputLength negative", scenario("outputLength: -1"),
       "bad.yaml:8: scenarios[1].outputLength: ", "must be in (0, 100], got -1"},
      {"outputLength over 100", scenario("outputLength: 100.5"),
       "bad.yaml:8: scenarios[1].outputLength: ", "must be in (0, 100], got 100.5"},
      {"longContext without a share", scenario("longContext: {promptTokens: 9}"),
       "bad.yaml:8: scenarios[1].longContext.share: ", "required"},
      {"longContext without promptTokens", scenario("longContext: {share: 0.1}"),
       "bad.yaml:8: scenarios[1].longContext.promptTokens: ", "required"},
      {"longContext share 0", scenario("longContext: {share: 0, promptTokens: 9}"),
       "bad.yaml:8: scenarios[1].longContext.share: ", "must be in (0, 1], got 0"},
      {"longContext share over 1", scenario("longContext: {share: 1.5, promptTokens: 9}"),
       "bad.yaml:8: scenarios[1].longContext.share: ", "must be in (0, 1], got 1.5"},
      {"longContext promptTokens 0", scenario("longContext: {share: 0.5, promptTokens: 0}"),
       "bad.yaml:8: scenarios[1].longContext.promptTokens: ", "got 0"},
      {"retrySpike without a share", scenario("retrySpike: {timeout: 5s}"),
       "bad.yaml:8: scenarios[1].retrySpike.share: ", "required"},
      {"retrySpike share 0", scenario("retrySpike: {share: 0}"),
       "bad.yaml:8: scenarios[1].retrySpike.share: ", "must be in (0, 1], got 0"},
      {"retrySpike timeout 0", scenario("retrySpike: {share: 0.1, timeout: 0s}"),
       "bad.yaml:8: scenarios[1].retrySpike.timeout: ", "must be longer than 0, got 0s"},
      {"retrySpike start negative", scenario("retrySpike: {share: 0.1, start: -1s}"),
       "bad.yaml:8: scenarios[1].retrySpike.start: ", "must be at least 0, got -1s"},
      {"retrySpike span negative", scenario("retrySpike: {share: 0.1, span: -1m}"),
       "bad.yaml:8: scenarios[1].retrySpike.span: ", "must be at least 0, got -1m"},
      {"burst peakToMean 1: no burst at all", scenario("burst: {peakToMean: 1}"),
       "bad.yaml:8: scenarios[1].burst.peakToMean: ", "must be > 1, got 1"},
      {"burst peakToMean below 1", scenario("burst: {peakToMean: 0.5}"),
       "bad.yaml:8: scenarios[1].burst.peakToMean: ", "must be > 1, got 0.5"},
      {"burst window 0", scenario("burst: {window: 0s}"),
       "bad.yaml:8: scenarios[1].burst.window: ", "must be longer than 0, got 0s"},
      {"burst at negative", scenario("burst: {at: -2m}"),
       "bad.yaml:8: scenarios[1].burst.at: ", "must be at least 0, got -2m"},
      {"burst a number", scenario("burst: 3"),
       "bad.yaml:8: scenarios[1].burst: ", "must be a mapping (key: value lines), got \"3\""},

      // The rest of the top level.
      {"plannedReplicas negative", top("plannedReplicas: -1"),
       "bad.yaml:6: plannedReplicas: ", "must be in [0, 2147483647], got -1"},
      {"seeds 0", top("seeds: 0"), "bad.yaml:6: seeds: ", "must be in [1, 10], got 0"},
      {"seeds 11", top("seeds: 11"), "bad.yaml:6: seeds: ", "must be in [1, 10], got 11"},
      {"seed negative", top("seed: -1"),
       "bad.yaml:6: seed: ", "must be a whole number in [0, 18446744073709551615], got \"-1\""},
      {"seed past 2^64", top("seed: 18446744073709551616"),
       "bad.yaml:6: seed: ", "must be a whole number in [0, 18446744073709551615]"},
      {"maxReplicas 0", top("maxReplicas: 0"),
       "bad.yaml:6: maxReplicas: ", "must be in [1, 4096], got 0"},
      {"maxReplicas 4097", top("maxReplicas: 4097"),
       "bad.yaml:6: maxReplicas: ", "must be in [1, 4096], got 4097"},
      {"unknown router", top("router: fastest"), "bad.yaml:6: router: ",
       "unknown router \"fastest\" (want one of: random, random-per-connection"},

      // YAML itself.
      {"YAML syntax error: a second colon", Minimal("seeds: 3: 4\n"),
       "bad.yaml:6:", "YAML syntax error: illegal map value"},
  };
}

TEST(ReviewBadInput, EachRowNamesTheLineAndTheKey) {
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Review> got = ParseReview(c.yaml, "bad.yaml");
    ASSERT_FALSE(got.ok()) << "accepted:\n" << c.yaml;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(got.status().message());
    EXPECT_THAT(message, StartsWith(c.prefix)) << "input:\n" << c.yaml;
    EXPECT_THAT(message.substr(std::min(message.size(), c.prefix.size())), HasSubstr(c.want))
        << "input:\n"
        << c.yaml;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  }
}

TEST(ReviewBadInput, SyntaxErrorsGiveLineAndColumn) {
  // The flow mapping opened on line 6 is never closed. yaml-cpp reports where it gave up: the
  // message must carry a 1-based line inside the document (6 or 7) and a column.
  const std::string yaml = Minimal("slo: {ttft: 1s\nseeds: 3\n");
  absl::StatusOr<Review> got = ParseReview(yaml, "s.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(got.status().message());
  ASSERT_EQ(message.rfind("s.yaml:", 0), 0u) << message;
  size_t pos = 7;
  const int line = std::stoi(message.substr(pos), &pos);
  EXPECT_GE(line, 6) << message;
  EXPECT_LE(line, 7) << message;
  ASSERT_EQ(message[7 + pos], ':') << message;
  EXPECT_GE(std::stoi(message.substr(8 + pos)), 1) << message;
  EXPECT_THAT(message, HasSubstr("YAML syntax error")) << message;
}

TEST(ReviewBadInput, TabIndentationIsASyntaxErrorWithItsLine) {
  absl::StatusOr<Review> got = Parse(Minimal("slo:\n\tttft: 1s\n"));
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), StartsWith("r.yaml:7:"));
}

TEST(ReviewBadInput, DeepNestingIsRefusedWithItsPlace) {
  // yaml-cpp refuses nesting deeper than its limit (a few thousand levels) as a "bad file"; the
  // message says what is wrong instead, with a line and column: where yaml-cpp stopped, on the
  // brackets' line 6 or at the end of the text after it.
  const std::string yaml = Minimal(absl::StrCat("slo: ", std::string(5000, '['), "\n"));
  absl::StatusOr<Review> got = Parse(yaml);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()),
              ::testing::AnyOf(StartsWith("r.yaml:6:"), StartsWith("r.yaml:7:")));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("YAML nested too deeply"));
}

TEST(ReviewLimits, AtMostMaxScenarios) {
  const auto with = [](int n) {
    std::string list = "scenarios:\n";
    for (int i = 0; i < n; ++i) absl::StrAppend(&list, "  - {name: s", i, ", rate: 2}\n");
    return Minimal(list);
  };
  absl::StatusOr<Review> at_limit = Parse(with(kMaxScenarios));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->scenarios.size(), 64u);
  absl::StatusOr<Review> over = Parse(with(kMaxScenarios + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(over.status().message()),
              StartsWith("r.yaml:6: scenarios: at most 64 scenarios"));
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("got 65"));
}

TEST(ReviewLimits, AtMostMaxProfiles) {
  const auto with = [](int n) {
    std::string list = "profiles:\n";
    for (int i = 0; i < n; ++i)
      absl::StrAppend(&list, "  - {profile: p", i, ", gpuHourPrice: 1}\n");
    return WithoutProfiles(list);
  };
  absl::StatusOr<Review> at_limit = Parse(with(kMaxProfiles));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->profiles.size(), 8u);
  absl::StatusOr<Review> over = Parse(with(kMaxProfiles + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(std::string(over.status().message()),
              StartsWith("r.yaml:4: profiles: at most 8 profiles"));
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("got 9"));
}

TEST(ReviewLimits, TextOverTheLimitIsRefusedBeforeParsing) {
  // An unclosed flow sequence: were it parsed, the error would be a syntax error.
  const std::string big(kMaxReviewBytes + 1, '[');
  absl::StatusOr<Review> got = ParseReview(big, "big.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "big.yaml: 1048577 bytes; a review file holds at most 1048576 (is this the right "
            "file?)");
}

// ---- Files -----------------------------------------------------------------------------------

TEST(ReviewFile, MissingFileIsNotFound) {
  absl::StatusOr<Review> got = LoadReviewFile("no/such/review.yaml");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("no/such/review.yaml"));
}

TEST(ReviewFile, DirectoryIsNotAReview) {
  absl::StatusOr<Review> got = LoadReviewFile("deploy/samples");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("is a directory"));
}

TEST(ReviewFile, FileOverTheLimitIsRefusedBeforeParsing) {
  const std::string path = WriteTemp("big.yaml", std::string(kMaxReviewBytes + 1, '['));
  absl::StatusOr<Review> got = LoadReviewFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(got.status().message());
  EXPECT_THAT(message, StartsWith(absl::StrCat(path, ": 1048577 bytes")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("YAML")));
}

TEST(ReviewFile, FileAtTheLimitIsParsed) {
  // A valid review padded with a comment to exactly kMaxReviewBytes.
  std::string text = Minimal("seeds: 4\n# ");
  text.append(kMaxReviewBytes - text.size() - 1, 'x');
  text += '\n';
  ASSERT_EQ(text.size(), static_cast<size_t>(kMaxReviewBytes));
  const std::string path = WriteTemp("limit.yaml", text);
  absl::StatusOr<Review> got = LoadReviewFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->seeds, 4);
  EXPECT_EQ(got->source, path);
}

TEST(ReviewFile, ErrorsNameTheFile) {
  const std::string path = WriteTemp("bad.yaml", Minimal("seeds: 20\n"));
  absl::StatusOr<Review> got = LoadReviewFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), absl::StrCat(path, ":6: seeds: must be in [1, 10], got 20"));
}

}  // namespace
}  // namespace twinscale::plan
