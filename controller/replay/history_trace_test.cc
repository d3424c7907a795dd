// The pure half of replay --from-prometheus: series -> per-step arrivals -> synthesised trace (the
// arrivals' own rules: controller/metrics/prometheus_arrivals_test.cc).
// Expected values are worked by hand (Poisson and gamma count statistics, bucket shares).
#include "controller/replay/history_trace.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "simulator/core/rng.h"
#include "simulator/core/samplers.h"

namespace twinscale::replay {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kStep = absl::Seconds(15);

metrics::PromSeries Series(std::map<std::string, std::string> labels,
                           std::vector<std::pair<int, double>> points) {
  metrics::PromSeries s;
  s.labels = std::move(labels);
  for (auto [k, v] : points) s.points.push_back({kStart + kStep * k, v});
  return s;
}

// Per-step counts of a synthesised trace on the history's grid (trace time + shift = history time).
std::vector<double> CountsPerStep(const HistoryTrace& h, int64_t steps) {
  std::vector<double> c(static_cast<size_t>(steps), 0.0);
  for (const sim::RequestSpec& r : h.trace.requests) {
    const double t = (r.arrival.nanos() + h.shift.nanos()) * 1e-9;
    const int64_t k = static_cast<int64_t>(t / absl::ToDoubleSeconds(kStep));
    if (k >= 0 && k < steps) c[static_cast<size_t>(k)] += 1;
  }
  return c;
}

void MeanVar(const std::vector<double>& x, double& mean, double& var) {
  mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size() - 1);
}

TEST(HistogramFromBucketsTest, CumulativeToPerBucketWithMean) {
  const metrics::PromMatrix m = {Series({{"le", "10.0"}}, {{0, 30}}),
                                 Series({{"le", "+Inf"}}, {{0, 100}}),
                                 Series({{"le", "1.0"}}, {{0, 5}})};
  absl::StatusOr<LengthHistogram> h = HistogramFromBuckets(m, 2500);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->upper_bounds, (std::vector<double>{1, 10}));
  EXPECT_EQ(h->counts, (std::vector<double>{5, 25, 70}));
  EXPECT_DOUBLE_EQ(h->mean, 25);
}

TEST(HistogramFromBucketsTest, RejectsMalformedBuckets) {
  struct Case {
    std::string name;  // why the row is bad
    metrics::PromMatrix m;
  };
  const std::vector<Case> cases = {
      {"no +Inf bucket: the total is unknown", {Series({{"le", "10"}}, {{0, 3}})}},
      {"le is not a number",
       {Series({{"le", "ten"}}, {{0, 3}}), Series({{"le", "+Inf"}}, {{0, 3}})}},
      {"a series without le (not summed by le)", {Series({{"pod", "a"}}, {{0, 3}})}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(HistogramFromBuckets(c.m, 0).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(SmoothedRatesTest, CentredWindowCutAtTheEnds) {
  // 5-step window (75 s at 15 s): the middle averages 5 steps, the ends 3 and 4.
  const std::vector<double> a = {15, 30, 45, 60, 75, 90, 105};
  const std::vector<double> r = SmoothedRates(a, kStep, absl::Seconds(75));
  ASSERT_EQ(r.size(), a.size());
  EXPECT_DOUBLE_EQ(r[0], (15 + 30 + 45) / 3.0 / 15);
  EXPECT_DOUBLE_EQ(r[1], (15 + 30 + 45 + 60) / 4.0 / 15);
  EXPECT_DOUBLE_EQ(r[3], (30 + 45 + 60 + 75 + 90) / 5.0 / 15);
}

TEST(DispersionToCvTest, SquareRootClamped) {
  EXPECT_DOUBLE_EQ(DispersionToCv(1), 1);
  EXPECT_DOUBLE_EQ(DispersionToCv(4), 2);
  EXPECT_DOUBLE_EQ(DispersionToCv(0.01), 0.2);
  EXPECT_DOUBLE_EQ(DispersionToCv(100), 4);
  EXPECT_DOUBLE_EQ(DispersionToCv(std::nan("")), 1);
}

// A history whose per-step counts are Poisson(100): a constant rate of 100 / 15 s.
FleetHistory PoissonHistory(int steps, double mean, double multiplier) {
  FleetHistory h;
  h.start = kStart;
  h.step = kStep;
  sim::Rng rng(11);
  for (int i = 0; i < steps; ++i) {
    h.arrivals.push_back(multiplier * sim::SamplePoisson(rng, mean / multiplier));
  }
  h.prompt = {{10, 100, 1000}, {0, 50, 50, 0}, 0};
  h.output = {{10, 100, 1000}, {100, 0, 0, 0}, 0};
  return h;
}

TEST(SynthesizeTraceTest, ConstantPoissonRateGivesPoissonCounts) {
  // Counts per step of a Poisson process: mean = variance = rate x step = 100. The history's counts
  // are Poisson(100), so the Allan estimate is about 1 (standard error about sqrt(3 / n) = 4% for
  // n = 2000) and the CV about 1. The synthesised counts have mean 100 (within 0.5: 5 standard
  // errors of a mean over 2000 steps) and variance / mean about 1 plus the smoothed curve's own
  // noise (1/21 over a 21-step window): 1.05, tolerance 15% for the variance's 3% standard error.
  const int steps = 2000;
  const FleetHistory h = PoissonHistory(steps, 100, 1);
  SynthesisOptions o;
  o.seed = 3;
  absl::StatusOr<HistoryTrace> t = SynthesizeTrace(h, o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->dispersion, 1.0, 0.15);
  EXPECT_NEAR(t->cv, 1.0, 0.08);
  double mean, var;
  MeanVar(CountsPerStep(*t, steps - 1), mean, var);
  EXPECT_NEAR(mean, 100, 0.5);
  EXPECT_NEAR(var / mean, 1.05, 0.15);
}

TEST(SynthesizeTraceTest, OverdispersedCountsGiveGammaGapsOfThatCv) {
  // Counts 4 x Poisson(25): mean 100, variance 16 x 25 = 400, index of dispersion 4, so CV 2. A
  // gamma renewal process with CV 2 has counts with variance / mean -> CV^2 = 4 over windows of
  // many gaps (100 per step here), less a boundary term of order CV^2 / count: allow 20%.
  const int steps = 2000;
  const FleetHistory h = PoissonHistory(steps, 100, 4);
  SynthesisOptions o;
  absl::StatusOr<HistoryTrace> t = SynthesizeTrace(h, o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NEAR(t->cv, 2.0, 0.15);
  double mean, var;
  MeanVar(CountsPerStep(*t, steps - 1), mean, var);
  EXPECT_NEAR(mean, 100, 2);
  EXPECT_NEAR(var / mean, 4.0, 0.8);
}

TEST(SynthesizeTraceTest, LengthsFollowTheHistograms) {
  // Prompt: half in (10, 100], half in (100, 1000]; output: all in [1, 10]. Means rescaled off.
  const FleetHistory h = PoissonHistory(400, 100, 1);
  SynthesisOptions o;
  o.match_means = false;
  absl::StatusOr<HistoryTrace> t = SynthesizeTrace(h, o);
  ASSERT_TRUE(t.ok()) << t.status();
  double low = 0, n = 0;
  for (const sim::RequestSpec& r : t->trace.requests) {
    ASSERT_GE(r.prompt_tokens, 11);
    ASSERT_LE(r.prompt_tokens, 1000);
    ASSERT_LE(r.output_tokens, 10);
    low += r.prompt_tokens <= 100;
    n += 1;
  }
  EXPECT_NEAR(low / n, 0.5, 0.01);  // 40,000 draws: standard error 0.25 points
}

TEST(SynthesizeTraceTest, DeterministicForASeedAndFollowsTheCurve) {
  FleetHistory h = PoissonHistory(200, 60, 1);
  for (int i = 100; i < 200; ++i) h.arrivals[i] = 0;  // traffic stops halfway
  SynthesisOptions o;
  o.smoothing = kStep;  // no smoothing: the curve stops where the history does
  absl::StatusOr<HistoryTrace> a = SynthesizeTrace(h, o), b = SynthesizeTrace(h, o);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->trace.requests.size(), b->trace.requests.size());
  for (size_t i = 0; i < a->trace.requests.size(); ++i) {
    ASSERT_EQ(a->trace.requests[i].arrival, b->trace.requests[i].arrival);
    ASSERT_EQ(a->trace.requests[i].prompt_tokens, b->trace.requests[i].prompt_tokens);
  }
  const double last = (a->trace.requests.back().arrival.nanos() + a->shift.nanos()) * 1e-9;
  EXPECT_LE(last, 100 * 15.0);
  o.seed = 2;
  absl::StatusOr<HistoryTrace> c = SynthesizeTrace(h, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->trace.requests[5].arrival, a->trace.requests[5].arrival);
}

TEST(SynthesizeTraceTest, RejectsAnEmptyHistory) {
  FleetHistory h;
  h.step = kStep;
  h.arrivals = {0, 0, 0};
  EXPECT_EQ(SynthesizeTrace(h, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FetchFleetHistoryTest, AsksTheDocumentedQueriesAndAddsInFlightChanges) {
  std::vector<std::string> asked;
  const QueryFn fake = [&](const metrics::RangeQuery& q) -> absl::StatusOr<metrics::PromMatrix> {
    asked.push_back(q.promql);
    if (q.promql == "vllm:request_prompt_tokens_count{model_name=\"m\"}") {
      EXPECT_EQ(q.start, kStart);
      return metrics::PromMatrix{Series({{"pod", "a"}}, {{0, 0}, {1, 10}, {2, 20}, {3, 30}})};
    }
    if (absl::StrContains(q.promql, "num_requests_waiting")) {
      return metrics::PromMatrix{Series({}, {{0, 0}, {1, 5}, {2, 5}, {3, 0}})};
    }
    if (absl::StrContains(q.promql, "num_requests_running")) return metrics::PromMatrix{};
    if (absl::StrContains(q.promql, "_bucket")) {
      EXPECT_EQ(q.start, q.end);
      EXPECT_TRUE(absl::StrContains(q.promql, "[45s]")) << q.promql;
      metrics::PromSeries a = Series({{"le", "100"}}, {{3, 10}}),
                          b = Series({{"le", "+Inf"}}, {{3, 30}});
      return metrics::PromMatrix{a, b};
    }
    metrics::PromSeries sum = Series({}, {{3, 3000}});
    return metrics::PromMatrix{sum};
  };
  HistoryQueryOptions o;
  o.selector = "{model_name=\"m\"}";
  o.end = kStart + kStep * 3;
  o.range = absl::Seconds(45);
  absl::StatusOr<FleetHistory> h = FetchFleetHistory(fake, o);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->start, kStart);
  // finished 10, 10, 10 plus in flight +5, 0, -5.
  EXPECT_EQ(h->arrivals, (std::vector<double>{15, 10, 5}));
  EXPECT_EQ(h->prompt.counts, (std::vector<double>{10, 20}));
  EXPECT_DOUBLE_EQ(h->output.mean, 100);
  EXPECT_EQ(asked.size(), 8u);
}

TEST(FetchFleetHistoryTest, ErrorsNameTheFlag) {
  const QueryFn none = [](const metrics::RangeQuery&) -> absl::StatusOr<metrics::PromMatrix> {
    return metrics::PromMatrix{};
  };
  struct Case {
    std::string name;
    HistoryQueryOptions o;
    absl::StatusCode code;
    std::string mentions;
  };
  HistoryQueryOptions good;
  good.end = kStart;
  std::vector<Case> cases;
  cases.push_back(
      {"selector without braces", good, absl::StatusCode::kInvalidArgument, "--selector"});
  cases.back().o.selector = "model_name=\"m\"";
  cases.push_back({"zero step", good, absl::StatusCode::kInvalidArgument, "--step"});
  cases.back().o.step = absl::ZeroDuration();
  cases.push_back(
      {"range shorter than two steps", good, absl::StatusCode::kInvalidArgument, "--range"});
  cases.back().o.range = absl::Seconds(20);
  cases.push_back({"nothing matches", good, absl::StatusCode::kNotFound, "--selector"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = FetchFleetHistory(none, c.o).status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.mentions)) << s;
  }
}

}  // namespace
}  // namespace twinscale::replay
