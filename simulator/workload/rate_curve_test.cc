// Tests for the rate-curve workload and ServeGen's rate CSV reader, on small hand-made curves
// whose rates and integrals are worked out by hand in the comments.
#include "simulator/workload/rate_curve.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simulator/workload/trace_reader.h"

namespace twinscale::sim {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

RecordedRateCurve Curve(std::vector<double> rates, int64_t window_s = 600) {
  RecordedRateCurve c;
  c.source = "hand";
  c.window = SimDuration::Seconds(window_s);
  c.rates = std::move(rates);
  return c;
}

Trace LengthPairs() {
  Trace t;
  t.source = "pairs";
  const std::pair<int32_t, int32_t> pairs[] = {{100, 10}, {200, 20}, {300, 30}};
  for (const auto& [p, o] : pairs) {
    RequestSpec r;
    r.id = t.requests.size();
    r.prompt_tokens = p;
    r.output_tokens = o;
    r.prefix_hashes = {1, 2};
    t.requests.push_back(r);
  }
  return t;
}

TEST(PlanRateCurve, LinearBetweenWindowCentresFlatBeyond) {
  // Three 600-s windows at 1, 3, 2 req/s: centres at 300, 900 and 1500 s. The rate is 1 up to
  // 300 s, rises to 3 at 900 (2 at 600), falls to 2 at 1500 (2.5 at 1200) and holds 2 to 1800.
  absl::StatusOr<PlayedCurve> p = PlanRateCurve(Curve({1, 3, 2}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  struct Case {
    std::string name;
    double s, want;
  };
  const Case cases[] = {
      {"before the first centre: the first window's rate", 0, 1},
      {"at the first centre", 300, 1},
      {"halfway up to the second centre", 600, 2},
      {"at the second centre", 900, 3},
      {"halfway down to the third", 1200, 2.5},
      {"at the third centre", 1500, 2},
      {"after the last centre: held", 1800, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(p->RateAt(c.s), c.want, 1e-12);
  }
  EXPECT_DOUBLE_EQ(p->span_seconds(), 1800);
  // Integral by trapezoids: 300 x 1 + 600 x 2 + 600 x 2.5 + 300 x 2 = 3,600 requests.
  EXPECT_NEAR(p->Expected(0, 1800), 3600, 1e-9);
  // The first window alone: 300 x 1 + 300 x (1 + 2) / 2 = 750.
  EXPECT_NEAR(p->Expected(0, 600), 750, 1e-9);
}

TEST(PlanRateCurve, StartSpanTimeScaleAndPeakArithmetic) {
  struct Case {
    std::string name;
    RateCurvePlay play;
    double want_span_s, want_rate_at_mid, want_total;
  };
  const Case cases[] = {
      // Curve seconds 600..1200: 2 -> 3 (at 900) -> 2.5; 300 x 2.5 + 300 x 2.75 = 1,575.
      {"a start and a span pick [600 s, 1200 s)",
       {.start = SimDuration::Seconds(600), .span = SimDuration::Seconds(600)},
       600,
       3,
       1575},
      // x0.5: 1800 s play in 900; curve second 900 (rate 3) plays at 450 at rate 6; the count,
      // 3,600, is kept.
      {"time scale 0.5 halves the span, doubles the rate, keeps the count",
       {.time_scale = 0.5},
       900,
       6,
       3600},
      // x0.5 gives a played peak of 6; peak 12 doubles every rate: 7,200 requests.
      {"peak rate rescales the played peak after the time scale",
       {.time_scale = 0.5, .peak_rate = 12},
       900,
       12,
       7200},
      // Peak 1.5 on the uncompressed curve (peak 3): every rate halved, 1,800 requests.
      {"peak rate below the curve's own peak", {.peak_rate = 1.5}, 1800, 1.5, 1800},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PlayedCurve> p = PlanRateCurve(Curve({1, 3, 2}), c.play);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_NEAR(p->span_seconds(), c.want_span_s, 1e-9);
    EXPECT_NEAR(p->RateAt(c.want_span_s / 2), c.want_rate_at_mid, 1e-9);
    EXPECT_NEAR(p->Expected(0, p->span_seconds()), c.want_total, 1e-9);
  }
}

TEST(PlanRateCurve, RejectsBadPlays) {
  struct Case {
    std::string name;
    RecordedRateCurve curve;
    RateCurvePlay play;
  };
  const Case bad[] = {
      {"no windows", Curve({}), {}},
      {"a negative rate", Curve({1, -1}), {}},
      {"a NaN rate", Curve({1, std::nan("")}), {}},
      {"a zero window", Curve({1, 2}, 0), {}},
      {"start past the curve's end (1200 s)", Curve({1, 2}), {.start = SimDuration::Seconds(1200)}},
      {"negative start", Curve({1, 2}), {.start = SimDuration::Seconds(-1)}},
      {"start + span past the end",
       Curve({1, 2}),
       {.start = SimDuration::Seconds(600), .span = SimDuration::Seconds(601)}},
      {"negative span", Curve({1, 2}), {.span = SimDuration::Seconds(-5)}},
      {"zero time scale", Curve({1, 2}), {.time_scale = 0}},
      {"infinite time scale", Curve({1, 2}), {.time_scale = INFINITY}},
      {"negative peak rate", Curve({1, 2}), {.peak_rate = -3}},
      {"a peak rate for a curve that is 0 throughout", Curve({0, 0}), {.peak_rate = 3}},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PlanRateCurve(c.curve, c.play).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(GenerateRateCurveTrace, PerWindowCountsFollowTheCurvesIntegral) {
  // Six 600-s windows at 5, 20, 10, 0, 8, 8 req/s. Per window, by trapezoids between centres:
  //   0: 300 x 5 + 300 x (5 + 12.5) / 2                 = 4,125
  //   1: 300 x (12.5 + 20) / 2 + 300 x (20 + 15) / 2    = 10,125
  //   2: 300 x (15 + 10) / 2 + 300 x (10 + 5) / 2       = 6,000
  //   3: 300 x (5 + 0) / 2 + 300 x (0 + 4) / 2          = 1,350
  //   4: 300 x (4 + 8) / 2 + 300 x 8                    = 4,200
  //   5: 600 x 8                                        = 4,800
  // A window's count is Poisson with that mean: within 4 standard deviations, sqrt(mean), on each
  // of three seeds (a false failure about 6e-5 per window were the seeds random).
  const double want[] = {4125, 10125, 6000, 1350, 4200, 4800};
  absl::StatusOr<PlayedCurve> p = PlanRateCurve(Curve({5, 20, 10, 0, 8, 8}), {});
  ASSERT_TRUE(p.ok()) << p.status();
  for (size_t w = 0; w < 6; ++w) {
    EXPECT_NEAR(p->Expected(600.0 * w, 600.0 * (w + 1)), want[w], 1e-6) << "window " << w;
  }
  for (const uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    absl::StatusOr<Trace> t = GenerateRateCurveTrace(*p, LengthPairs(), seed, "gen");
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<int> n(6, 0);
    for (size_t i = 0; i < t->requests.size(); ++i) {
      const RequestSpec& r = t->requests[i];
      ASSERT_EQ(r.id, i);
      if (i > 0) {
        ASSERT_GE(r.arrival, t->requests[i - 1].arrival);
      }
      ASSERT_GE(r.arrival.nanos(), 0);
      ASSERT_LT(r.arrival.nanos(), 3600 * kSecond);
      ++n[static_cast<size_t>(r.arrival.nanos() / (600 * kSecond))];
    }
    for (size_t w = 0; w < 6; ++w) {
      EXPECT_NEAR(n[w], want[w], 4 * std::sqrt(want[w])) << "window " << w;
    }
  }
}

TEST(GenerateRateCurveTrace, LengthsComeOnlyFromTheTracesPairs) {
  absl::StatusOr<PlayedCurve> p = PlanRateCurve(Curve({2, 2}), {});  // 2,400 requests expected
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Trace> t = GenerateRateCurveTrace(*p, LengthPairs(), 7, "gen");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_GT(t->requests.size(), 2000u);
  std::map<std::pair<int32_t, int32_t>, int> seen;
  for (const RequestSpec& r : t->requests) {
    ++seen[{r.prompt_tokens, r.output_tokens}];
    EXPECT_TRUE(r.prefix_hashes.empty());  // a drawn pair shares no prefix with another
  }
  // Exactly the three pairs, each drawn about a third of the time (Binomial(n, 1/3): standard
  // deviation sqrt(n 2/9), 4 of them).
  ASSERT_EQ(seen.size(), 3u);
  const double n = static_cast<double>(t->requests.size());
  for (const auto& [pair, count] : seen) {
    EXPECT_TRUE(pair.first == 10 * pair.second) << pair.first << "," << pair.second;
    EXPECT_NEAR(count, n / 3, 4 * std::sqrt(n * 2 / 9));
  }
  EXPECT_EQ(GenerateRateCurveTrace(*p, Trace{}, 7, "gen").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GenerateRateCurveTrace, SameSeedSameTraceDifferentSeedDifferent) {
  absl::StatusOr<PlayedCurve> p = PlanRateCurve(Curve({1, 4, 2}), {.time_scale = 0.25});
  ASSERT_TRUE(p.ok());
  auto key = [&](uint64_t seed) {
    absl::StatusOr<Trace> t = GenerateRateCurveTrace(*p, LengthPairs(), seed, "gen");
    EXPECT_TRUE(t.ok());
    std::vector<int64_t> v;
    for (const RequestSpec& r : t->requests) v.push_back(r.arrival.nanos() * 7 + r.prompt_tokens);
    return v;
  };
  EXPECT_EQ(key(3), key(3));
  EXPECT_NE(key(3), key(4));
}

// ---- ParseServeGenRateCsv -------------------------------------------------------------------

TEST(ParseServeGenRateCsv, ReadsWindowsAndRates) {
  const char text[] =
      "\xEF\xBB\xBFwindow_start_s,aggregate_rate_rps,active_clients\r\n"
      "0,212.7800,43\r\n"
      "\r\n"
      "600,179.6983,40\n"
      "1200,0,0\n";
  absl::StatusOr<RecordedRateCurve> c = ParseServeGenRateCsv(text, "sg.csv");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->window, SimDuration::Seconds(600));
  ASSERT_EQ(c->rates.size(), 3u);
  EXPECT_DOUBLE_EQ(c->rates[0], 212.78);
  EXPECT_DOUBLE_EQ(c->rates[1], 179.6983);
  EXPECT_DOUBLE_EQ(c->rates[2], 0);
  EXPECT_EQ(c->source, "sg.csv");
}

TEST(ParseServeGenRateCsv, RefusesMalformedLinesNamingThem) {
  const std::string header = "window_start_s,aggregate_rate_rps,active_clients\n";
  struct Case {
    std::string name, text, want_prefix;
  };
  const Case bad[] = {
      {"empty file", "", "sg.csv: no windows"},
      {"wrong header", "start,rate\n0,1\n600,2\n", "sg.csv:1: "},
      {"a rate that is not a number", header + "0,1\n600,fast,3\n", "sg.csv:3: "},
      {"a negative rate", header + "0,1\n600,-2,3\n", "sg.csv:3: "},
      {"a NaN rate", header + "0,nan,1\n600,2,3\n", "sg.csv:2: "},
      {"one column", header + "0,1\n600\n", "sg.csv:3: "},
      {"a window start that goes backwards", header + "600,1\n0,2\n", "sg.csv:3: "},
      {"a missing window (gap off the grid)", header + "0,1\n600,2\n1800,3\n", "sg.csv:4: "},
      {"a negative window start", header + "-600,1\n0,2\n", "sg.csv:2: "},
      {"only one window: no window length", header + "0,1\n", "sg.csv: need at least two"},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<RecordedRateCurve> r = ParseServeGenRateCsv(c.text, "sg.csv");
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(r.status().message()).rfind(c.want_prefix, 0), 0u) << r.status();
  }
}

TEST(ParseServeGenRateCsv, ReadsTheShippedCurves) {
  // 14 days of 600-s windows: 2,016 each (tests/data/traces/README-style facts from the source).
  for (const char* path : {"tests/data/traces/servegen_language_m-large_aggregate_rate.csv",
                           "tests/data/traces/servegen_language_m-mid_aggregate_rate.csv"}) {
    SCOPED_TRACE(path);
    absl::StatusOr<RecordedRateCurve> c = ReadRateCurveFile(path);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->rates.size(), 2016u);
    EXPECT_EQ(c->window, SimDuration::Seconds(600));
  }
  EXPECT_EQ(ReadRateCurveFile("tests/data/traces/no-such-file.csv").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinscale::sim
