// The twin's arrival process against the closed forms of a rate-modulated Poisson process: with a
// rate multiplier M per interval tau (mean 1, CV c) and Poisson arrivals within, counts over a
// window T that divides tau have mean lambda T and index of dispersion 1 + lambda T c^2; thinning
// each point with probability p keeps the multiplier (the thinned rate is p lambda M), so the same
// holds with p lambda in place of lambda.
#include "controller/twin/fleet_arrival_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace twinscale::twin {
namespace {

struct CountStats {
  double mean = 0;
  double dispersion = 0;  // variance / mean
};

// Arrival counts per `window_s` over [0, end_s) from a source with these parameters.
CountStats Counts(
    double rate, double rate_cv, double share, double window_s, double end_s, uint64_t seed,
    FleetArrivalSource::Thinning thinning = FleetArrivalSource::Thinning::kIndependent,
    double random_share = 0) {
  const LengthSampler lengths(policy::LengthShape{}, 100, 1000);
  std::vector<FleetArrivalSource::Segment> segments;
  if (share < 1) segments.push_back({0.0, share});
  SampledLengths drawn(lengths, lengths, seed);
  FleetArrivalSource source(segments, thinning, RatePath{rate, rate, {}}, end_s, rate_cv, 15.0,
                            drawn, seed, random_share);
  std::vector<double> counts(static_cast<size_t>(end_s / window_s), 0);
  sim::RequestSpec r;
  while (source.Next(r)) {
    const size_t i = static_cast<size_t>(r.arrival.seconds() / window_s);
    if (i < counts.size()) counts[i] += 1;
  }
  CountStats s;
  for (double c : counts) s.mean += c / static_cast<double>(counts.size());
  double var = 0;
  for (double c : counts) var += (c - s.mean) * (c - s.mean) / static_cast<double>(counts.size());
  s.dispersion = var / s.mean;
  return s;
}

TEST(FleetArrivalSourceTest, WithoutModulationItIsPoisson) {
  // 100 req/s for 6,000 s: 400 counts of 15 s, mean 1,500, dispersion 1 (the estimate's relative
  // standard error is sqrt(2 / 400) = 7%).
  const CountStats s = Counts(100, 0, 1, 15, 6000, 3);
  EXPECT_NEAR(s.mean, 1500, 1500 * 0.02);
  EXPECT_NEAR(s.dispersion, 1.0, 0.25);
}

TEST(FleetArrivalSourceTest, ModulatedRateHasTheDispersionOfItsCvAtEveryWindow) {
  struct Case {
    const char* name;
    double window_s;
    double want_dispersion;
  };
  // lambda 100 req/s, CV 0.3 per 15 s interval: 1 + lambda T x 0.09.
  const std::vector<Case> cases = {
      {"at the interval: 1 + 1500 x 0.09", 15, 136},
      {"at a fifth of it: 1 + 300 x 0.09", 3, 28},
      {"at a second: 1 + 100 x 0.09", 1, 10},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CountStats s = Counts(100, 0.3, 1, tc.window_s, 15000, 5);
    EXPECT_NEAR(s.mean, 100 * tc.window_s, 100 * tc.window_s * 0.05);
    EXPECT_NEAR(s.dispersion, tc.want_dispersion, tc.want_dispersion * 0.25);
  }
}

TEST(FleetArrivalSourceTest, ThinningKeepsTheFleetsMultiplier) {
  // A quarter of the fleet's points (one replica of four behind Random routing): mean 375 per
  // 15 s, dispersion 1 + 375 x 0.09 = 34.75. A surge of the fleet is a surge for every replica.
  const CountStats s = Counts(100, 0.3, 0.25, 15, 15000, 7);
  EXPECT_NEAR(s.mean, 375, 375 * 0.05);
  EXPECT_NEAR(s.dispersion, 34.75, 34.75 * 0.25);
}

TEST(FleetArrivalSourceTest, BehindAPartlyBalancingRouterTheSampleGetsBothStreams) {
  // A quarter of the fleet's points at 100 req/s, no modulation, counts per 15 s (mean 375). The
  // share s routed at random is Poisson (dispersion 1); the rest, every 4th of its points, a
  // renewal process with Gamma(4) gaps, whose counts have dispersion 1/4. The two are
  // independent, so the variances add: dispersion s + (1 - s) / 4. The estimate's relative
  // standard error over 1,000 windows is sqrt(2 / 1000) = 4.5%.
  struct Case {
    const char* name;
    double random_share;
    double want_dispersion;
  };
  const std::vector<Case> cases = {
      {"balanced: every 4th point", 0, 0.25},
      {"a share of 1e-12 at random: as good as balanced", 1e-12, 0.25},
      {"half at random: 0.5 + 0.5 / 4", 0.5, 0.625},
      {"all at random: Poisson", 1, 1.0},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const CountStats s = Counts(100, 0, 0.25, 15, 15000, 13,
                                FleetArrivalSource::Thinning::kSystematic, tc.random_share);
    EXPECT_NEAR(s.mean, 375, 375 * 0.02);
    EXPECT_NEAR(s.dispersion, tc.want_dispersion, tc.want_dispersion * 0.15);
  }
}

TEST(FleetArrivalSourceTest, ARateOfNearlyZeroEndsTheStreamAtOnce) {
  // 1e-12 req/s over 300 s: the first point lies about 1e12 s away, past the end. The source says
  // so after the 20 intervals up to the end, instead of walking the 1e11 intervals to the point.
  const LengthSampler lengths(policy::LengthShape{}, 100, 1000);
  SampledLengths drawn(lengths, lengths, 3);
  for (double random_share : {0.0, 0.5}) {
    SCOPED_TRACE(random_share);
    FleetArrivalSource source({{0.0, 0.25}}, FleetArrivalSource::Thinning::kSystematic,
                              RatePath{1e-12, 1e-12, {}}, 300, 0, 15.0, drawn, 3, random_share);
    sim::RequestSpec r;
    EXPECT_FALSE(source.Next(r));
  }
  FleetArrivalSource whole({}, FleetArrivalSource::Thinning::kIndependent, 1e-12, 300, 0, 15.0,
                           drawn, 3);
  sim::RequestSpec r;
  EXPECT_FALSE(whole.Next(r));
}

TEST(FleetArrivalSourceTest, CandidatesShareLengthsRequestByRequest) {
  // Common random numbers: the n-th request has the same lengths whatever share is simulated.
  const LengthSampler lengths(policy::LengthShape{}, 300, 5000);
  SampledLengths all_lengths(lengths, lengths, 9), half_lengths(lengths, lengths, 9);
  FleetArrivalSource all({}, FleetArrivalSource::Thinning::kIndependent, 50, 1000, 0.2, 15,
                         all_lengths, 9);
  FleetArrivalSource half({{0.0, 0.5}}, FleetArrivalSource::Thinning::kIndependent, 50, 1000, 0.2,
                          15, half_lengths, 9);
  sim::RequestSpec a, b;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(all.Next(a));
    ASSERT_TRUE(half.Next(b));
    EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
    EXPECT_EQ(a.output_tokens, b.output_tokens);
  }
}

TEST(RatePathTest, TheLevelRevertsToTheBaselineByTheWeights) {
  // A burst to 80 req/s on a baseline of 50, weights 0.5, 0.25, 0: 65, 57.5, then 50 on.
  const RatePath path{80, 50, {0.5, 0.25, 0}};
  EXPECT_DOUBLE_EQ(path.At(1), 65);
  EXPECT_DOUBLE_EQ(path.At(2), 57.5);
  EXPECT_DOUBLE_EQ(path.At(3), 50);
  EXPECT_DOUBLE_EQ(path.At(9), 50);
  // A dip reverts upward the same way; the last weight stands for every later interval.
  const RatePath dip{20, 50, {0.8, 0.4}};
  EXPECT_DOUBLE_EQ(dip.At(1), 26);
  EXPECT_DOUBLE_EQ(dip.At(5), 38);
  // No weights: the level holds.
  EXPECT_DOUBLE_EQ((RatePath{80, 50, {}}).At(4), 80);
}

TEST(RatePathTest, TheSeasonScalesThePathIntervalByInterval) {
  // The burst above on a season of 1, 1.2, 1.5: 65 x 1, 57.5 x 1.2, 50 x 1.5, and the last ratio
  // stands for every later interval.
  const RatePath path{80, 50, {0.5, 0.25, 0}, {1.0, 1.2, 1.5}};
  EXPECT_DOUBLE_EQ(path.At(1), 65);
  EXPECT_DOUBLE_EQ(path.At(2), 69);
  EXPECT_DOUBLE_EQ(path.At(3), 75);
  EXPECT_DOUBLE_EQ(path.At(7), 75);
  // A season without persistence weights scales the level.
  const RatePath level{80, 80, {}, {0.5, 2.0}};
  EXPECT_DOUBLE_EQ(level.At(1), 40);
  EXPECT_DOUBLE_EQ(level.At(4), 160);
}

// The mean arrival counts of the first three 15 s intervals of `path`, over `runs` seeds.
std::vector<double> MeanCounts(const RatePath& path, int runs) {
  const LengthSampler lengths(policy::LengthShape{}, 100, 1000);
  std::vector<double> mean(3, 0);
  for (int seed = 1; seed <= runs; ++seed) {
    SampledLengths drawn(lengths, lengths, seed);
    FleetArrivalSource source({}, FleetArrivalSource::Thinning::kIndependent, path, 45, 0, 15.0,
                              drawn, seed);
    sim::RequestSpec r;
    while (source.Next(r)) mean[static_cast<size_t>(r.arrival.seconds() / 15)] += 1.0 / runs;
  }
  return mean;
}

TEST(FleetArrivalSourceTest, EachIntervalArrivesAtItsPathsRate) {
  // Poisson at 65, 57.5, then 50 req/s per 15 s interval: over 400 runs the mean counts of the
  // first three intervals are 975, 862.5 and 750 (standard error sqrt(975 / 400) = 1.6).
  const std::vector<double> mean = MeanCounts(RatePath{80, 50, {0.5, 0.25, 0}}, 400);
  EXPECT_NEAR(mean[0], 975, 8);
  EXPECT_NEAR(mean[1], 862.5, 8);
  EXPECT_NEAR(mean[2], 750, 8);
}

TEST(FleetArrivalSourceTest, ASeasonalRampArrivesAsForecast) {
  // A level of 100 req/s on a season rising 1, 1.5, 2 per 15 s interval: mean counts 1,500, 2,250
  // and 3,000 over 200 runs (standard error sqrt(3000 / 200) = 3.9).
  const std::vector<double> mean = MeanCounts(RatePath{100, 100, {}, {1.0, 1.5, 2.0}}, 200);
  EXPECT_NEAR(mean[0], 1500, 16);
  EXPECT_NEAR(mean[1], 2250, 20);
  EXPECT_NEAR(mean[2], 3000, 24);
}

// The requests a source emits with an assumed prefix hit, and the prompt tokens they assume.
struct Reuse {
  int64_t requests = 0, hits = 0;
  double prompt_tokens = 0, assumed_tokens = 0;
  std::vector<uint64_t> hit_ids;
};

Reuse ReuseOf(double cached_share, uint64_t seed, uint64_t arrival_seed) {
  const LengthSampler lengths(policy::LengthShape{}, 2000, 100000);
  SampledLengths drawn(lengths, lengths, arrival_seed);
  FleetArrivalSource source({}, FleetArrivalSource::Thinning::kIndependent, RatePath{100, 100, {}},
                            100, 0, 15.0, drawn, arrival_seed);
  source.SetPrefixReuse(cached_share, seed);
  Reuse out;
  sim::RequestSpec r;
  while (source.Next(r)) {
    ++out.requests;
    out.prompt_tokens += r.prompt_tokens;
    if (r.assumed_cached_tokens > 0) {
      ++out.hits;
      out.assumed_tokens += r.assumed_cached_tokens;
      out.hit_ids.push_back(r.id);
      EXPECT_EQ(r.assumed_cached_tokens, r.prompt_tokens);  // the whole prompt, or nothing
    }
  }
  return out;
}

TEST(FleetArrivalSourceTest, AReusedShareOfPromptTokensIsThatShareOfWholePrompts) {
  // 100 req/s for 100 s: about 10,000 requests. At a share of 0.3 each finds its whole prompt
  // cached with probability 0.3, independently of its length: hits within 4 binomial standard
  // deviations (sqrt(10,000 x 0.21) = 46) of 3,000, and the tokens' share close to 0.3 too.
  const Reuse r = ReuseOf(0.3, 7, 1);
  ASSERT_GT(r.requests, 9000);
  const double n = static_cast<double>(r.requests);
  EXPECT_NEAR(static_cast<double>(r.hits), 0.3 * n, 4 * std::sqrt(n * 0.3 * 0.7));
  EXPECT_NEAR(r.assumed_tokens / r.prompt_tokens, 0.3, 0.03);
  // No share, no hits; a share of 1, every request.
  EXPECT_EQ(ReuseOf(0, 7, 1).hits, 0);
  EXPECT_EQ(ReuseOf(1, 7, 1).hits, ReuseOf(1, 7, 1).requests);
}

TEST(FleetArrivalSourceTest, TheSameRequestsHitForTheSameSeedWhateverTheArrivals) {
  // Common random numbers: which requests hit depends on the reuse seed and the request's index
  // only, so two candidates of one decision (different arrivals, different fleets) see the same
  // i-th request hit; another seed picks others.
  const Reuse a = ReuseOf(0.3, 7, 1);
  const Reuse b = ReuseOf(0.3, 7, 2);
  const Reuse c = ReuseOf(0.3, 8, 1);
  const size_t n = std::min(a.hit_ids.size(), b.hit_ids.size()) / 2;
  ASSERT_GT(n, 1000u);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(a.hit_ids[i], b.hit_ids[i]) << i;
  size_t same = 0;
  for (size_t i = 0; i < n && i < c.hit_ids.size(); ++i) same += a.hit_ids[i] == c.hit_ids[i];
  EXPECT_LT(same, n / 2);
}

}  // namespace
}  // namespace twinscale::twin
