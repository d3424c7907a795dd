// Tests of histogram_window.h. Every expected number is worked by hand in the comment beside it;
// the histogram_quantile cases marked "Prometheus" are the ones Prometheus' own test suite
// (promql/promqltest/testdata/histograms.test) evaluates, with the values it expects.
#include "controller/metrics/histogram_window.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"

namespace twinscale::metrics {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A histogram from its edges and cumulative counts (+Inf last); count = the +Inf bucket.
CumulativeHistogram H(std::vector<double> edges, std::vector<double> cumulative, double sum = 0) {
  CumulativeHistogram h;
  h.upper_bounds = std::move(edges);
  h.cumulative = std::move(cumulative);
  h.count = h.cumulative.empty() ? 0 : h.cumulative.back();
  h.sum = sum;
  return h;
}

void ExpectSameNumber(double got, double want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want);
  } else {
    EXPECT_DOUBLE_EQ(got, want);
  }
}

void ExpectHistogram(const CumulativeHistogram& got, const CumulativeHistogram& want) {
  EXPECT_EQ(got.upper_bounds, want.upper_bounds);
  EXPECT_EQ(got.cumulative, want.cumulative);
  EXPECT_EQ(got.count, want.count);
  ExpectSameNumber(got.sum, want.sum);
}

// ---- HistogramQuantile --------------------------------------------------------------------------

struct QuantileCase {
  std::string name;
  double q;
  CumulativeHistogram h;
  double want;
};

TEST(HistogramQuantileTest, MatchesPrometheus) {
  // le 0.1:10, 0.25:30, 0.5:40, +Inf:40.
  const CumulativeHistogram brief = H({0.1, 0.25, 0.5}, {10, 30, 40, 40});
  // Prometheus' testhistogram at 50m: start="positive" and start="negative".
  const CumulativeHistogram positive = H({0.1, 0.2, 1}, {50, 70, 110, 120});
  const CumulativeHistogram negative = H({-0.2, -0.1, 0.3}, {10, 20, 20, 30});
  // testhistogram3 start="positive" (first edge 0) and testhistogram2 (mid-bucket quantiles).
  const CumulativeHistogram zero_edge = H({0, 0.1, 0.2, 1}, {0, 50, 70, 110, 110});
  const CumulativeHistogram mid = H({0, 2, 4, 6}, {0, 1, 2, 3, 3});
  const std::vector<QuantileCase> cases = {
      // rank 0.9*40 = 36 lies in (0.25, 0.5] (30 < 36 <= 40): 0.25 + 0.25*(36-30)/(40-30) = 0.4.
      {"p90 interpolates inside its bucket", 0.9, brief, 0.4},
      // rank 20 in (0.1, 0.25]: 0.1 + 0.15*(20-10)/(30-10) = 0.175.
      {"p50 interpolates inside its bucket", 0.5, brief, 0.175},
      // rank 4 in the first bucket, whose lower bound is taken as 0: 0.1*4/10 = 0.04.
      {"first bucket interpolates from 0", 0.1, brief, 0.04},
      // rank 40 reaches le=0.5 exactly: 0.25 + 0.25*10/10 = 0.5.
      {"p100 is the edge holding the last observation", 1.0, brief, 0.5},
      // 10 of 50 observations are above 0.5; rank 45 > 40 falls in +Inf: the highest finite edge.
      {"rank in the +Inf bucket gives the highest finite edge", 0.9,
       H({0.1, 0.25, 0.5}, {10, 30, 40, 50}), 0.5},
      // Prometheus: rank 24 in (0, 0.1]: 0.1*24/50 = 0.048.
      {"Prometheus positive q=0.2", 0.2, positive, 0.048},
      // Prometheus: rank 60 in (0.1, 0.2]: 0.1 + 0.1*(60-50)/(70-50) = 0.15.
      {"Prometheus positive q=0.5", 0.5, positive, 0.15},
      // Prometheus: rank 96 in (0.2, 1]: 0.2 + 0.8*(96-70)/(110-70) = 0.72.
      {"Prometheus positive q=0.8", 0.8, positive, 0.72},
      // Prometheus: rank 120 beyond le=1 (110): the +Inf bucket, so 1.
      {"Prometheus positive q=1", 1.0, positive, 1},
      // Prometheus: rank 0, first bucket from 0: 0 + 0.1*0/50 = 0.
      {"Prometheus positive q=0", 0.0, positive, 0},
      // Prometheus: first edge -0.2 <= 0: a quantile in the first bucket is that edge.
      {"Prometheus negative q=0", 0.0, negative, -0.2},
      {"Prometheus negative q=0.2", 0.2, negative, -0.2},
      // Prometheus: rank 15 in (-0.2, -0.1]: -0.2 + 0.1*(15-10)/(20-10) = -0.15.
      {"Prometheus negative q=0.5", 0.5, negative, -0.15},
      // Prometheus: rank 24 > 20 up to le=0.3 (count 20): +Inf bucket, highest finite edge 0.3.
      {"Prometheus negative q=0.8", 0.8, negative, 0.3},
      // Prometheus (testhistogram3): rank 0 in the first bucket, edge 0 <= 0: 0.
      {"Prometheus first edge 0, q=0", 0.0, zero_edge, 0},
      // Prometheus: rank 27.5 in (0, 0.1]: 0.1*27.5/50 = 0.055.
      {"Prometheus first edge 0, q=0.25", 0.25, zero_edge, 0.055},
      // Prometheus: rank 55 in (0.1, 0.2]: 0.1 + 0.1*5/20 = 0.125.
      {"Prometheus first edge 0, q=0.5", 0.5, zero_edge, 0.125},
      // Prometheus: rank 82.5 in (0.2, 1]: 0.2 + 0.8*12.5/40 = 0.45.
      {"Prometheus first edge 0, q=0.75", 0.75, zero_edge, 0.45},
      // Prometheus: rank 110 reaches le=1 (110): 0.2 + 0.8*40/40 = 1.
      {"Prometheus first edge 0, q=1", 1.0, zero_edge, 1},
      // Prometheus (testhistogram2): ranks 0.5, 1.5, 2.5 sit mid-bucket: 1, 3, 5.
      {"Prometheus mid-bucket q=1/6", 1.0 / 6.0, mid, 1},
      {"Prometheus mid-bucket q=1/2", 0.5, mid, 3},
      {"Prometheus mid-bucket q=5/6", 5.0 / 6.0, mid, 5},
      {"q below 0 is -Inf", -0.1, brief, -kInf},
      {"q above 1 is +Inf", 1.01, brief, kInf},
      {"q NaN is NaN", kNaN, brief, kNaN},
      {"no observations is NaN", 0.9, H({0.1, 0.25}, {0, 0, 0}), kNaN},
      {"only the +Inf bucket is NaN (fewer than two buckets)", 0.5, H({}, {5}), kNaN},
      {"malformed (counts don't match edges) is NaN", 0.5, H({0.1, 0.2}, {1, 2}), kNaN},
      // Prometheus' code gives 0 + 0.1*(0/0) here: rank 0 selects the empty first bucket.
      {"q=0 with an empty first bucket is NaN, as Prometheus computes it", 0.0,
       H({0.1, 0.2}, {0, 5, 5}), kNaN},
      // Counts 10, 8, 12, 12 are forced to the envelope 10, 10, 12, 12 (ensureMonotonic): rank
      // 10.8 then lies in (2, 3]: 2 + 1*(10.8-10)/(12-10) = 2.4.
      {"non-monotone counts are forced monotone first", 0.9, H({1, 2, 3}, {10, 8, 12, 12}), 2.4},
      // The brief's histogram with its edges out of order: sorted first, so again 0.4.
      {"edges are sorted first", 0.9, H({0.5, 0.1, 0.25}, {40, 10, 30, 40}), 0.4},
  };
  for (const QuantileCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectSameNumber(HistogramQuantile(c.q, c.h), c.want);
  }
}

TEST(HistogramQuantileTest, PrometheusAggregationExample) {
  // Prometheus' request_duration_seconds at 50m, four instances (le 0.1, 0.2, +Inf):
  //   job1/ins1 10, 30, 40; job1/ins2 20, 50, 60; job2/ins1 30, 40, 60; job2/ins2 40, 70, 90.
  const std::vector<CumulativeHistogram> pods = {
      H({0.1, 0.2}, {10, 30, 40}), H({0.1, 0.2}, {20, 50, 60}), H({0.1, 0.2}, {30, 40, 60}),
      H({0.1, 0.2}, {40, 70, 90})};
  // Per instance p50: ranks 20, 30, 30, 45 -> 0.1+0.1*10/20 = 0.15, 0.1+0.1*10/30 = 0.1333..,
  // 0.1*30/30 = 0.1, 0.1+0.1*5/30 = 0.11666.. (Prometheus' by (job, instance) results).
  const double per_pod[] = {0.15, 0.1 + 0.1 / 3, 0.1, 0.1 + 0.1 / 6};
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, pods[i]), per_pod[i]) << i;
  }
  // Summed: 100, 190, 250; rank 125 in (0.1, 0.2]: 0.1 + 0.1*25/90 = 0.12777.. (Prometheus:
  // histogram_quantile(0.5, sum(rate(request_duration_seconds_bucket[10m])) by (le))).
  const absl::StatusOr<CumulativeHistogram> fleet = SumHistograms(pods);
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, *fleet), 0.1 + 0.1 * 25.0 / 90.0);
  // The average of the four medians is 0.125: close, but not the fleet's median.
  EXPECT_NE((per_pod[0] + per_pod[1] + per_pod[2] + per_pod[3]) / 4,
            HistogramQuantile(0.5, *fleet));
}

// ---- ShareAtOrBelow -----------------------------------------------------------------------------

// vLLM's TTFT histogram (its real edges) holding 1000 requests: cumulative 200 at le=0.1, 600 at
// 0.25, 850 at 0.5, 930 at 0.75, 960 at 1.0, 990 at 2.5, 1000 from 5.0 on; none below 0.1.
CumulativeHistogram VllmTtft1000() {
  const std::map<double, double> at = {{0.1, 200}, {0.25, 600}, {0.5, 850}, {0.75, 930},
                                       {1.0, 960}, {2.5, 990},  {5.0, 1000}};
  CumulativeHistogram h;
  h.upper_bounds.assign(sim::kVllmTtftBuckets.begin(), sim::kVllmTtftBuckets.end());
  double c = 0;
  for (double le : h.upper_bounds) {
    if (const auto it = at.find(le); it != at.end()) c = it->second;
    h.cumulative.push_back(c);
  }
  h.cumulative.push_back(c);
  h.count = c;
  h.sum = 400;
  return h;
}

struct ShareCase {
  std::string name;
  double threshold;
  CumulativeHistogram h;
  double want_share;
  bool want_exact;
};

TEST(ShareAtOrBelowTest, ExactOnEdgesInterpolatedBetween) {
  const CumulativeHistogram ttft = VllmTtft1000();
  const CumulativeHistogram two = H({1, 2}, {10, 20, 25});
  const std::vector<ShareCase> cases = {
      // SLO 0.5 s is one of vLLM's edges: bucket(le=0.5)/count = 850/1000, no estimate involved.
      {"SLO on a vLLM edge is exact", 0.5, ttft, 0.85, true},
      {"SLO 1 s on an edge", 1.0, ttft, 0.96, true},
      // 0.3 in (0.25, 0.5]: 600 + 250*(0.3-0.25)/(0.5-0.25) = 650 -> 0.65.
      {"SLO between edges interpolates", 0.3, ttft, 0.65, false},
      // 0.6 in (0.5, 0.75]: 850 + 80*(0.1/0.25) = 882 -> 0.882.
      {"SLO 0.6 s interpolates", 0.6, ttft, 0.882, false},
      // 0.0005 in (0, 0.001], which is empty: 0.
      {"below the first edge, empty bucket", 0.0005, ttft, 0, false},
      // 0.5 in (0, 1] holding 10: 10*0.5 = 5 of 25 -> 0.2.
      {"first bucket interpolates from 0", 0.5, two, 0.2, false},
      {"threshold 0 with a positive first edge", 0, two, 0, false},
      {"negative threshold with a positive first edge", -1, two, 0, false},
      // Past le=2 the 5 observations in +Inf have no position: counted as above; 20/25.
      {"past the last finite edge is a lower bound", 3, two, 0.8, false},
      {"+Inf holds everything", kInf, two, 1, true},
      {"NaN threshold", kNaN, two, kNaN, false},
      // Prometheus' testhistogram2: histogram_fraction(0, 3.5) = 0.5833..: (1 + 1*1.5/2)/3.
      {"Prometheus histogram_fraction(0, 3.5)", 3.5, H({0, 2, 4, 6}, {0, 1, 2, 3, 3}), 1.75 / 3,
       false},
      // Prometheus' testhistogram3 positive: histogram_fraction(0, 0.2) = 70/110.
      {"Prometheus histogram_fraction(0, 0.2)", 0.2, H({0, 0.1, 0.2, 1}, {0, 50, 70, 110, 110}),
       70.0 / 110.0, true},
      // First edge -0.2 <= 0: its 10 observations sit at -0.2, so none is <= -0.3.
      {"below a non-positive first edge", -0.3, H({-0.2, -0.1, 0.3}, {10, 20, 20, 30}), 0, false},
      {"on a non-positive first edge", -0.2, H({-0.2, -0.1, 0.3}, {10, 20, 20, 30}), 10.0 / 30,
       true},
      {"no observations: unknown share, still an edge", 0.5, H({0.5, 1}, {0, 0, 0}), kNaN, true},
  };
  for (const ShareCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Attainment a = ShareAtOrBelow(c.threshold, c.h);
    ExpectSameNumber(a.share, c.want_share);
    EXPECT_EQ(a.exact, c.want_exact);
    EXPECT_EQ(a.count, c.h.cumulative.back());
  }
}

TEST(ShareAtOrBelowTest, InvertsHistogramQuantile) {
  const CumulativeHistogram ttft = VllmTtft1000();
  for (double q : {0.1, 0.3, 0.5, 0.7, 0.85, 0.9, 0.95, 0.99}) {
    SCOPED_TRACE(q);
    EXPECT_NEAR(ShareAtOrBelow(HistogramQuantile(q, ttft), ttft).share, q, 1e-12);
  }
}

// ---- HistogramIncrease / CounterIncrease --------------------------------------------------------

TEST(HistogramIncreaseTest, SubtractsBucketsCountAndSum) {
  const CumulativeHistogram before = H({0.1, 0.5}, {2, 5, 6}, 3);
  const CumulativeHistogram after = H({0.1, 0.5}, {4, 10, 12}, 7.5);
  const absl::StatusOr<CumulativeHistogram> d = HistogramIncrease(before, after);
  ASSERT_TRUE(d.ok()) << d.status();
  // 4-2, 10-5, 12-6; sum 7.5-3.
  ExpectHistogram(*d, H({0.1, 0.5}, {2, 5, 6}, 4.5));
  // No new observations: all zero.
  ExpectHistogram(*HistogramIncrease(after, after), H({0.1, 0.5}, {0, 0, 0}, 0));
}

TEST(HistogramIncreaseTest, ResetsCountFromZero) {
  const CumulativeHistogram before = H({0.1, 0.5}, {40, 90, 100}, 30);
  struct Case {
    std::string name;
    CumulativeHistogram after;
  };
  const std::vector<Case> cases = {
      // The pod restarted and has served 2 requests since: everything went down.
      {"pod restart: every bucket went down", H({0.1, 0.5}, {1, 1, 2}, 0.3)},
      // Only le=0.1 went down (40 -> 30): still a restart.
      {"one bucket went down", H({0.1, 0.5}, {30, 95, 110}, 40)},
      // Every bucket grew, but le=0.5 by 15 and +Inf by only 8: impossible without a restart
      // (a new observation <= 0.5 is also counted in +Inf).
      {"hidden restart: growth not cumulative", H({0.1, 0.5}, {50, 105, 108}, 35)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<CumulativeHistogram> d = HistogramIncrease(before, c.after);
    ASSERT_TRUE(d.ok()) << d.status();
    ExpectHistogram(*d, c.after);  // as increase(): the new value is the increase
  }
}

TEST(HistogramIncreaseTest, RejectsBadInput) {
  const CumulativeHistogram good = H({0.1, 0.5}, {1, 2, 3});
  struct Case {
    std::string name;
    CumulativeHistogram before, after;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"different edges", good, H({0.1, 1.0}, {1, 2, 3}), "layouts differ"},
      {"different number of edges", good, H({0.1}, {1, 3}), "layouts differ"},
      {"before not cumulative", H({0.1, 0.5}, {2, 1, 3}), good, "before: buckets not cumulative"},
      {"after's +Inf != count", good,
       [] {
         CumulativeHistogram h = H({0.1, 0.5}, {1, 2, 3});
         h.count = 4;
         return h;
       }(),
       "after: +Inf bucket 3 != count 4"},
      {"counts without +Inf", good, H({0.1, 0.5}, {1, 2}), "after: 2 cumulative counts for 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<CumulativeHistogram> d = HistogramIncrease(c.before, c.after);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.fragment));
  }
}

TEST(CounterIncreaseTest, LikePrometheusIncrease) {
  struct Case {
    std::string name;
    double before, after, want;
  };
  const std::vector<Case> cases = {
      {"grew", 10, 15, 5},
      {"unchanged", 7, 7, 0},
      {"reset: counts from 0 again", 15, 3, 3},
      {"reset to 0", 15, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(CounterIncrease(c.before, c.after), c.want);
  }
}

// ---- SumHistograms: the fleet's quantile --------------------------------------------------------

TEST(SumHistogramsTest, FleetQuantileIsTheSumsNotTheAverageOfQuantiles) {
  // le 0.1, 0.5, 1, 2.5, +Inf. Pod A is busy and slow: 900 requests, 450 in (0.5, 1] and 450 in
  // (1, 2.5]. Pod B is idle and fast: 100 requests, all <= 0.1.
  const CumulativeHistogram a = H({0.1, 0.5, 1, 2.5}, {0, 0, 450, 900, 900}, 1400);
  const CumulativeHistogram b = H({0.1, 0.5, 1, 2.5}, {100, 100, 100, 100, 100}, 5);
  // Pod A p90: rank 810 in (1, 2.5]: 1 + 1.5*(810-450)/(900-450) = 2.2.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.9, a), 2.2);
  // Pod B p90: rank 90 in (0, 0.1]: 0.1*90/100 = 0.09.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.9, b), 0.09);

  const absl::StatusOr<CumulativeHistogram> fleet = SumHistograms({a, b});
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  ExpectHistogram(*fleet, H({0.1, 0.5, 1, 2.5}, {100, 100, 550, 1000, 1000}, 1405));
  // Fleet p90: rank 900 in (1, 2.5]: 1 + 1.5*(900-550)/(1000-550) = 1 + 1.5*7/9 = 2.1666..
  const double fleet_p90 = HistogramQuantile(0.9, *fleet);
  EXPECT_DOUBLE_EQ(fleet_p90, 1 + 1.5 * 7.0 / 9.0);
  // Averaging the pods' p90s says (2.2 + 0.09)/2 = 1.145 s: a 2 s SLO would look met at p90,
  // while 10% of the fleet's requests took more than 2.17 s. Even weighted by requests
  // (0.9*2.2 + 0.1*0.09 = 1.989) it stays under 2 s. Both are wrong; the sum's quantile is not.
  const double averaged = (HistogramQuantile(0.9, a) + HistogramQuantile(0.9, b)) / 2;
  EXPECT_DOUBLE_EQ(averaged, 1.145);
  EXPECT_LT(averaged, 2.0);
  EXPECT_GT(fleet_p90, 2.0);
  // Attainment of the 2 s SLO from the sum: (550 + 450*(1/1.5))/1000 = 0.85 < 0.9.
  EXPECT_DOUBLE_EQ(ShareAtOrBelow(2.0, *fleet).share, 0.85);
}

TEST(SumHistogramsTest, RejectsBadInput) {
  const CumulativeHistogram good = H({0.1, 0.5}, {1, 2, 3});
  for (const auto& [name, parts, fragment] :
       std::vector<std::tuple<std::string, std::vector<CumulativeHistogram>, std::string>>{
           {"nothing to sum", {}, "no histograms"},
           {"different edges", {good, H({0.1, 1.0}, {1, 2, 3})}, "layouts differ"},
           {"a part not cumulative", {good, H({0.1, 0.5}, {3, 2, 3})}, "part 1: buckets not"},
       }) {
    SCOPED_TRACE(name);
    const absl::StatusOr<CumulativeHistogram> s = SumHistograms(parts);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(fragment));
  }
}

// ---- HistogramWindow ----------------------------------------------------------------------------

absl::Time T(int seconds) { return absl::FromUnixSeconds(1'700'000'000 + seconds); }

TEST(HistogramWindowTest, EmptyAndSingleSample) {
  HistogramWindow w(absl::Seconds(60));
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(w.oldest(), absl::InfinitePast());
  EXPECT_EQ(w.newest(), absl::InfinitePast());
  EXPECT_FALSE(w.Increase().has_value());
  ASSERT_TRUE(w.Add(T(0), H({0.5}, {1, 2})).ok());
  EXPECT_FALSE(w.Increase().has_value());  // one scrape says nothing about a window
  EXPECT_EQ(w.oldest(), T(0));
  EXPECT_EQ(w.newest(), T(0));
}

TEST(HistogramWindowTest, PodRestartMidWindowKeepsEveryStep) {
  // Scrapes every 15 s of a TTFT histogram (le 0.5, 1, +Inf) and sums; the pod restarts between
  // t=15 and t=30.
  HistogramWindow w(absl::Seconds(60));
  ASSERT_TRUE(w.Add(T(0), H({0.5, 1}, {60, 90, 100}, 50)).ok());
  ASSERT_TRUE(w.Add(T(15), H({0.5, 1}, {70, 110, 130}, 65)).ok());
  ASSERT_TRUE(w.Add(T(30), H({0.5, 1}, {5, 10, 12}, 6)).ok());
  ASSERT_TRUE(w.Add(T(45), H({0.5, 1}, {20, 30, 40}, 20)).ok());
  // Steps: (10, 20, 30; sum 15), restart -> (5, 10, 12; sum 6), (15, 20, 28; sum 14).
  // Total (30, 50, 70), sum 35.
  std::optional<CumulativeHistogram> inc = w.Increase();
  ASSERT_TRUE(inc.has_value());
  ExpectHistogram(*inc, H({0.5, 1}, {30, 50, 70}, 35));
  // End to end, the restart hides the 30 requests served before it: (20, 30, 40).
  ExpectHistogram(*HistogramIncrease(H({0.5, 1}, {60, 90, 100}, 50), H({0.5, 1}, {20, 30, 40}, 20)),
                  H({0.5, 1}, {20, 30, 40}, 20));

  // t=60: the window [0, 60] still holds t=0. t=75: [15, 75], t=0 leaves.
  ASSERT_TRUE(w.Add(T(60), H({0.5, 1}, {30, 45, 55}, 30)).ok());
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.oldest(), T(0));
  ASSERT_TRUE(w.Add(T(75), H({0.5, 1}, {40, 55, 65}, 35)).ok());
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.oldest(), T(15));
  EXPECT_EQ(w.newest(), T(75));
  // From t=15: restart (5, 10, 12; 6) + (15, 20, 28; 14) + (10, 15, 15; 10) + (10, 10, 10; 5)
  // = (40, 55, 65), sum 35.
  inc = w.Increase();
  ASSERT_TRUE(inc.has_value());
  ExpectHistogram(*inc, H({0.5, 1}, {40, 55, 65}, 35));
}

TEST(HistogramWindowTest, TimeOrderAndRepeatedScrapes) {
  HistogramWindow w(absl::Seconds(60));
  ASSERT_TRUE(w.Add(T(0), H({0.5}, {1, 2})).ok());
  ASSERT_TRUE(w.Add(T(15), H({0.5}, {2, 4})).ok());
  // Time went backwards for this series: refused, window unchanged.
  const absl::Status back = w.Add(T(10), H({0.5}, {3, 5}));
  EXPECT_EQ(back.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(back.message()), HasSubstr("older than the newest"));
  EXPECT_EQ(w.size(), 2u);
  // A second scrape at t=15 replaces the first: increase (2-1, 5-2) = (1, 3).
  ASSERT_TRUE(w.Add(T(15), H({0.5}, {2, 5})).ok());
  EXPECT_EQ(w.size(), 2u);
  ExpectHistogram(*w.Increase(), H({0.5}, {1, 3}));
}

TEST(HistogramWindowTest, RejectsInvalidAndRestartsOnNewLayout) {
  HistogramWindow w(absl::Seconds(60));
  ASSERT_TRUE(w.Add(T(0), H({0.5}, {1, 2})).ok());
  ASSERT_TRUE(w.Add(T(15), H({0.5}, {2, 4})).ok());
  const absl::Status bad = w.Add(T(30), H({0.5}, {5, 4}));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("histogram: buckets not cumulative"));
  EXPECT_EQ(w.size(), 2u);
  // The server came back with other edges: the old history can't be compared; start afresh.
  ASSERT_TRUE(w.Add(T(30), H({0.25, 0.5}, {1, 1, 1})).ok());
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(w.oldest(), T(30));
  EXPECT_FALSE(w.Increase().has_value());
}

TEST(HistogramWindowTest, NonPositiveWindowKeepsOnlyTheNewest) {
  HistogramWindow w(absl::ZeroDuration());
  ASSERT_TRUE(w.Add(T(0), H({0.5}, {1, 2})).ok());
  ASSERT_TRUE(w.Add(T(15), H({0.5}, {2, 4})).ok());
  EXPECT_EQ(w.size(), 1u);
  EXPECT_FALSE(w.Increase().has_value());
}

// ---- CounterWindow ------------------------------------------------------------------------------

TEST(CounterWindowTest, IncreaseAndRateAcrossARestart) {
  CounterWindow w(absl::Seconds(60));
  EXPECT_FALSE(w.Increase().has_value());
  EXPECT_FALSE(w.Rate().has_value());
  ASSERT_TRUE(w.Add(T(0), 100).ok());
  EXPECT_FALSE(w.Rate().has_value());
  ASSERT_TRUE(w.Add(T(15), 130).ok());
  ASSERT_TRUE(w.Add(T(30), 12).ok());  // restarted
  ASSERT_TRUE(w.Add(T(45), 40).ok());
  // 30 + 12 + 28 = 70 over 45 s.
  EXPECT_EQ(*w.Increase(), 70);
  EXPECT_DOUBLE_EQ(*w.Rate(), 70.0 / 45.0);
  // t=75 drops t=0 (window [15, 75]): 12 + 28 + 20 + 10 = 70 over 60 s.
  ASSERT_TRUE(w.Add(T(60), 60).ok());
  ASSERT_TRUE(w.Add(T(75), 70).ok());
  EXPECT_EQ(w.oldest(), T(15));
  EXPECT_EQ(*w.Increase(), 70);
  EXPECT_DOUBLE_EQ(*w.Rate(), 70.0 / 60.0);
}

TEST(CounterWindowTest, RejectsBadSamples) {
  CounterWindow w(absl::Seconds(60));
  ASSERT_TRUE(w.Add(T(10), 5).ok());
  for (const auto& [name, at, value] : std::vector<std::tuple<std::string, absl::Time, double>>{
           {"NaN", T(20), kNaN},
           {"negative", T(20), -1},
           {"infinite", T(20), kInf},
           {"older than the newest", T(5), 6},
       }) {
    SCOPED_TRACE(name);
    EXPECT_EQ(w.Add(at, value).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(w.size(), 1u);
  ASSERT_TRUE(w.Add(T(10), 7).ok());  // same time: replaces
  EXPECT_EQ(w.size(), 1u);
  ASSERT_TRUE(w.Add(T(20), 9).ok());
  EXPECT_EQ(*w.Increase(), 2);
}

}  // namespace
}  // namespace twinscale::metrics
