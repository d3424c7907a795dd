// Tests for the synthetic workload generators. Expected values come from closed forms (integrals
// of the rate curves, moments of the distributions), worked in the comments; tolerances are a few
// standard errors from sampling theory, so a correct generator fails with negligible probability
// (and, the seeds being fixed, deterministically passes or fails).
#include "simulator/workload/generators.h"

#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace twinscale::sim {
namespace {

std::vector<RequestSpec> Drain(RequestSource& source) {
  std::vector<RequestSpec> out;
  RequestSpec r;
  while (source.Next(r)) out.push_back(r);
  return out;
}

std::vector<RequestSpec> Generate(const SyntheticWorkloadSpec& spec) {
  std::unique_ptr<RequestSource> source = MakeSyntheticSource(spec);
  EXPECT_NE(source, nullptr) << ValidateSyntheticWorkload(spec);
  if (source == nullptr) return {};
  return Drain(*source);
}

struct Moments {
  double mean = 0, stddev = 0;
};
Moments MomentsOf(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.mean += x;
  m.mean /= static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(ss / static_cast<double>(xs.size() - 1));
  return m;
}

std::vector<double> Gaps(const std::vector<RequestSpec>& rs) {
  std::vector<double> gaps;
  for (size_t i = 1; i < rs.size(); ++i)
    gaps.push_back((rs[i].arrival - rs[i - 1].arrival).seconds());
  return gaps;
}

// Counts arrivals in consecutive windows [i*w, (i+1)*w).
std::vector<int64_t> WindowCounts(const std::vector<RequestSpec>& rs, SimDuration w, int windows) {
  std::vector<int64_t> counts(static_cast<size_t>(windows), 0);
  for (const RequestSpec& r : rs) {
    const int64_t i = r.arrival.nanos() / w.nanos();
    if (i < windows) ++counts[static_cast<size_t>(i)];
  }
  return counts;
}

SimTime At(double seconds) { return SimTime::FromSecondsF(seconds); }

// ---- Arrival counts and gaps ----------------------------------------------------------------

TEST(SyntheticArrivals, PoissonCountOverLongWindowIsRateTimesDuration) {
  // 50 req/s for 2,000 s: N ~ Poisson(100,000), standard deviation sqrt(1e5) = 316.
  SyntheticWorkloadSpec spec;
  spec.rate.rate = 50;
  spec.duration = SimDuration::Seconds(2000);
  spec.seed = 7;
  const std::vector<RequestSpec> rs = Generate(spec);
  EXPECT_NEAR(static_cast<double>(rs.size()), 100'000, 4 * 316);
  for (const RequestSpec& r : rs) ASSERT_LT(r.arrival, SimTime::Zero() + spec.duration);

  // Exponential gaps: mean 1/50 = 0.02 s, CV 1. With n = 1e5 the mean's standard error is
  // 0.02/316 = 6.3e-5 s; the sample CV's is about sqrt((kurtosis 9 - 1)/(4n) + 1/n) = 0.0055.
  const Moments m = MomentsOf(Gaps(rs));
  EXPECT_NEAR(m.mean, 0.02, 5 * 6.3e-5);
  EXPECT_NEAR(m.stddev / m.mean, 1.0, 5 * 0.0055);
}

struct GammaCase {
  std::string name;
  double cv;
};

class GammaArrivals : public testing::TestWithParam<GammaCase> {};

TEST_P(GammaArrivals, GapsHaveRequestedMeanAndCv) {
  const double cv = GetParam().cv;
  constexpr double kRate = 10;  // mean gap 0.1 s
  constexpr int64_t kN = 200'000;
  SyntheticWorkloadSpec spec;
  spec.arrival = ArrivalKind::kGamma;
  spec.cv = cv;
  spec.rate.rate = kRate;
  spec.num_requests = kN;
  spec.seed = 11;
  const std::vector<RequestSpec> rs = Generate(spec);
  ASSERT_EQ(rs.size(), static_cast<size_t>(kN));
  const Moments m = MomentsOf(Gaps(rs));
  const double n = static_cast<double>(kN - 1);
  // Mean gap 1/rate with standard error cv * 0.1 / sqrt(n).
  EXPECT_NEAR(m.mean, 1.0 / kRate, 5 * cv * 0.1 / std::sqrt(n));
  // Sample CV: relative variance ~ (kurtosis - 1)/(4n) + cv^2/n (delta method, ignoring the
  // mean/stddev covariance, which only shrinks it); a gamma with shape 1/cv^2 has kurtosis
  // 3 + 6 cv^2. CV 2: kurtosis 27, sd of the estimate 2 * sqrt(26/8e5 + 4/2e5) = 0.0145;
  // CV 0.5: kurtosis 4.5, sd 0.5 * sqrt(3.5/8e5 + 0.25/2e5) = 0.0012.
  const double kurtosis = 3 + 6 * cv * cv;
  const double cv_sd = cv * std::sqrt((kurtosis - 1) / (4 * n) + cv * cv / n);
  EXPECT_NEAR(m.stddev / m.mean, cv, 6 * cv_sd);
}

INSTANTIATE_TEST_SUITE_P(Cvs, GammaArrivals,
                         testing::Values(GammaCase{"bursty_cv_2", 2.0},
                                         GammaCase{"regular_cv_half", 0.5},
                                         GammaCase{"gamma_cv_1_is_exponential", 1.0},
                                         GammaCase{"very_bursty_cv_4", 4.0}),
                         [](const testing::TestParamInfo<GammaCase>& info) {
                           return info.param.name;
                         });

// ---- Rate curves ----------------------------------------------------------------------------

TEST(RateCurve, RampValuesIntegralAndInverseByHand) {
  // 10 -> 50 req/s over 1,000 s: r(t) = 10 + 0.04 t, then 50.
  RateCurve c;
  c.kind = RateCurve::Kind::kRamp;
  c.rate = 10;
  c.rate_end = 50;
  c.ramp_duration = SimDuration::Seconds(1000);
  EXPECT_DOUBLE_EQ(c.RateAt(At(0)), 10);
  EXPECT_DOUBLE_EQ(c.RateAt(At(500)), 30);
  EXPECT_DOUBLE_EQ(c.RateAt(At(1000)), 50);
  EXPECT_DOUBLE_EQ(c.RateAt(At(1200)), 50);
  // Lambda(1000) = 10*1000 + 0.02*1000^2 = 30,000; Lambda(1500) = 30,000 + 50*500 = 55,000.
  EXPECT_NEAR(c.CumulativeAt(At(1000)), 30'000, 1e-6);
  EXPECT_NEAR(c.CumulativeAt(At(1500)), 55'000, 1e-6);
  EXPECT_NEAR(c.InverseCumulativeSeconds(30'000), 1000, 1e-9);
  EXPECT_NEAR(c.InverseCumulativeSeconds(55'000), 1500, 1e-9);
  // Lambda(t) = 1,200 at t = 100 (10*100 + 0.02*100^2).
  EXPECT_NEAR(c.InverseCumulativeSeconds(1'200), 100, 1e-9);

  // Decreasing 50 -> 10: Lambda(t) = 50 t - 0.02 t^2 = 16,000 at
  // t = (50 - sqrt(2500 - 1280)) / 0.04 = (50 - 34.92850...) / 0.04 = 376.78754 s.
  c.rate = 50;
  c.rate_end = 10;
  EXPECT_NEAR(c.InverseCumulativeSeconds(16'000), 376.78754, 1e-5);
}

TEST(RateCurve, DiurnalValuesByHand) {
  RateCurve c;
  c.kind = RateCurve::Kind::kDiurnal;
  c.rate = 20;
  c.amplitude = 0.5;
  c.period = SimDuration::Seconds(3600);
  // 20 * (1 + 0.5 sin(2 pi t / 3600)): 20 at 0, peak 30 at 900 s, trough 10 at 2,700 s.
  EXPECT_NEAR(c.RateAt(At(0)), 20, 1e-12);
  EXPECT_NEAR(c.RateAt(At(900)), 30, 1e-12);
  EXPECT_NEAR(c.RateAt(At(2700)), 10, 1e-12);
  // A quarter-period phase starts at the peak.
  c.phase = 0.25;
  EXPECT_NEAR(c.RateAt(At(0)), 30, 1e-12);
  c.phase = 0;
  // One whole period holds rate * period = 72,000 arrivals; half of it
  // 20*1800 + 20*0.5*3600/(2 pi) * (cos 0 - cos pi) = 36,000 + 11,459.16 = 47,459.16.
  EXPECT_NEAR(c.CumulativeAt(At(3600)), 72'000, 1e-6);
  EXPECT_NEAR(c.CumulativeAt(At(1800)), 36'000 + 36'000 / std::numbers::pi, 1e-6);
  // The inverse undoes Lambda, also at full amplitude (where the rate touches 0 once per period)
  // and across periods: Lambda(inverse(s)) = s to double precision everywhere, and the time itself
  // to 0.1 us wherever the rate is not near 0. (At the trough of a full-amplitude curve,
  // Lambda(2700 + d) - Lambda(2700) = 20 (2 pi/3600)^2 d^3 / 6 = 1e-5 d^3, below double precision
  // of Lambda ~ 5e4 for |d| < 5 ms: no inverse can resolve t better there, nor needs to.)
  for (double amplitude : {0.0, 0.5, 1.0}) {
    c.amplitude = amplitude;
    for (double t : {0.001, 1.0, 899.5, 2700.0, 3599.9, 3600.0, 12345.678, 86400.25}) {
      SCOPED_TRACE(testing::Message() << "amplitude " << amplitude << " t " << t);
      const double s = c.CumulativeAt(At(t));
      const double back = c.InverseCumulativeSeconds(s);
      EXPECT_NEAR(c.CumulativeAt(SimTime::FromSecondsF(back)), s, 1e-9 * s + 1e-6);
      if (c.RateAt(At(t)) > 1) {
        EXPECT_NEAR(back, t, 1e-7);
      }
    }
  }
}

TEST(RateCurve, RampToZeroStopsTheStream) {
  // 10 -> 0 req/s over 100 s: Lambda(infinity) = 10*100/2 = 500 arrivals in expectation, all
  // before t = 100 s; the stream ends there although the duration allows 1,000 s.
  SyntheticWorkloadSpec spec;
  spec.rate.kind = RateCurve::Kind::kRamp;
  spec.rate.rate = 10;
  spec.rate.rate_end = 0;
  spec.rate.ramp_duration = SimDuration::Seconds(100);
  spec.duration = SimDuration::Seconds(1000);
  EXPECT_EQ(spec.rate.InverseCumulativeSeconds(501), std::numeric_limits<double>::infinity());
  const std::vector<RequestSpec> rs = Generate(spec);
  EXPECT_NEAR(static_cast<double>(rs.size()), 500, 5 * std::sqrt(500.0));
  for (const RequestSpec& r : rs) EXPECT_LE(r.arrival, At(100));
}

struct CurveCase {
  std::string name;
  ArrivalKind arrival;
  double cv;
};

class RampWindows : public testing::TestWithParam<CurveCase> {};

TEST_P(RampWindows, CountsPerWindowMatchTheIntegral) {
  // 10 -> 50 req/s over 1,000 s, then flat, for 1,500 s. Expected count in [a, b] is
  // Lambda(b) - Lambda(a) with Lambda(t) = 10 t + 0.02 t^2 for t <= 1000, 30,000 + 50 (t - 1000)
  // after: [0, 100) holds 1,200; [900, 1000) 1,000 + 0.02*(1e6 - 810,000) = 4,800; each window
  // after 1,000 s holds 5,000; the total is 55,000.
  auto lambda = [](double t) {
    return t <= 1000 ? 10 * t + 0.02 * t * t : 30'000 + 50 * (t - 1000);
  };
  EXPECT_DOUBLE_EQ(lambda(100) - lambda(0), 1200);
  EXPECT_DOUBLE_EQ(lambda(1000) - lambda(900), 4800);
  SyntheticWorkloadSpec spec;
  spec.arrival = GetParam().arrival;
  spec.cv = GetParam().cv;
  spec.rate.kind = RateCurve::Kind::kRamp;
  spec.rate.rate = 10;
  spec.rate.rate_end = 50;
  spec.rate.ramp_duration = SimDuration::Seconds(1000);
  spec.duration = SimDuration::Seconds(1500);
  spec.seed = 3;
  const std::vector<RequestSpec> rs = Generate(spec);
  // A renewal process's count over a window holding E arrivals has variance about cv^2 E.
  const double cv = spec.arrival == ArrivalKind::kPoisson ? 1.0 : spec.cv;
  const std::vector<int64_t> counts = WindowCounts(rs, SimDuration::Seconds(100), 15);
  for (int i = 0; i < 15; ++i) {
    const double expected = lambda(100.0 * (i + 1)) - lambda(100.0 * i);
    SCOPED_TRACE(testing::Message() << "window " << i << " expected " << expected);
    EXPECT_NEAR(static_cast<double>(counts[static_cast<size_t>(i)]), expected,
                5 * cv * std::sqrt(expected));
  }
  EXPECT_NEAR(static_cast<double>(rs.size()), 55'000, 5 * cv * std::sqrt(55'000.0));
}

INSTANTIATE_TEST_SUITE_P(Arrivals, RampWindows,
                         testing::Values(CurveCase{"poisson", ArrivalKind::kPoisson, 1.0},
                                         CurveCase{"gamma_cv_2", ArrivalKind::kGamma, 2.0},
                                         CurveCase{"gamma_cv_half", ArrivalKind::kGamma, 0.5}),
                         [](const testing::TestParamInfo<CurveCase>& info) {
                           return info.param.name;
                         });

struct DiurnalCase {
  std::string name;
  ArrivalKind arrival;
  double cv;
  double amplitude;
};

class DiurnalWindows : public testing::TestWithParam<DiurnalCase> {};

TEST_P(DiurnalWindows, CountsPerWindowMatchTheIntegral) {
  // Mean 20 req/s, period 3,600 s, two periods, 24 windows of 300 s. Expected count in [a, b]:
  // 20 (b - a) + 20 A 3600/(2 pi) (cos(2 pi a/3600) - cos(2 pi b/3600)). For A = 0.5:
  // [0, 300): 6,000 + 5,729.58 * (1 - cos(pi/6)) = 6,767.62; [1800, 2100): 6,000 + 5,729.58 *
  // (cos(pi) - cos(7 pi/6)) = 5,232.38; the total is 20 * 7,200 = 144,000.
  const DiurnalCase& c = GetParam();
  const double amp = c.amplitude;
  auto lambda = [amp](double t) {
    constexpr double kP = 3600;
    return 20 * t +
           20 * amp * kP / (2 * std::numbers::pi) * (1 - std::cos(2 * std::numbers::pi * t / kP));
  };
  if (amp == 0.5) {
    EXPECT_NEAR(lambda(300) - lambda(0), 6767.62, 0.01);
    EXPECT_NEAR(lambda(2100) - lambda(1800), 5232.38, 0.01);
  }
  SyntheticWorkloadSpec spec;
  spec.arrival = c.arrival;
  spec.cv = c.cv;
  spec.rate.kind = RateCurve::Kind::kDiurnal;
  spec.rate.rate = 20;
  spec.rate.amplitude = amp;
  spec.rate.period = SimDuration::Seconds(3600);
  spec.duration = SimDuration::Seconds(7200);
  spec.seed = 5;
  const std::vector<RequestSpec> rs = Generate(spec);
  const double cv = spec.arrival == ArrivalKind::kPoisson ? 1.0 : spec.cv;
  const std::vector<int64_t> counts = WindowCounts(rs, SimDuration::Seconds(300), 24);
  for (int i = 0; i < 24; ++i) {
    const double expected = lambda(300.0 * (i + 1)) - lambda(300.0 * i);
    SCOPED_TRACE(testing::Message() << "window " << i << " expected " << expected);
    // 6 sd: 48 windows x 4 cases, and the cv^2 E count variance is asymptotic.
    EXPECT_NEAR(static_cast<double>(counts[static_cast<size_t>(i)]), expected,
                6 * cv * std::sqrt(expected) + 1);
  }
  EXPECT_NEAR(static_cast<double>(rs.size()), 144'000, 5 * cv * std::sqrt(144'000.0));
}

INSTANTIATE_TEST_SUITE_P(
    Arrivals, DiurnalWindows,
    testing::Values(DiurnalCase{"poisson_half_amplitude", ArrivalKind::kPoisson, 1.0, 0.5},
                    DiurnalCase{"poisson_full_amplitude", ArrivalKind::kPoisson, 1.0, 1.0},
                    DiurnalCase{"gamma_cv_2", ArrivalKind::kGamma, 2.0, 0.5},
                    DiurnalCase{"gamma_cv_half", ArrivalKind::kGamma, 0.5, 0.5}),
    [](const testing::TestParamInfo<DiurnalCase>& info) { return info.param.name; });

// ---- Length distributions ---------------------------------------------------------------------

std::vector<double> Draw(const LengthDistribution& d, int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> xs;
  xs.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int32_t x = d.Sample(rng);
    EXPECT_GE(x, d.min);
    EXPECT_LE(x, d.max);
    xs.push_back(x);
  }
  return xs;
}

TEST(LengthDistribution, ConstantIsExactRoundedAndClamped) {
  struct Case {
    std::string name;
    double mean;
    int32_t min, max;
    int32_t want;
  };
  const Case cases[] = {
      {"plain value", 512, 1, 1 << 20, 512},
      {"rounds to nearest", 3.7, 1, 1 << 20, 4},
      {"clamped to max", 5000, 1, 4096, 4096},
      {"zero clamped to min 1", 0, 1, 100, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LengthDistribution d;
    d.mean = c.mean;
    d.min = c.min;
    d.max = c.max;
    Rng rng(1), untouched(1);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(d.Sample(rng), c.want);
    EXPECT_EQ(rng.NextU64(), untouched.NextU64()) << "a constant must not consume draws";
  }
}

TEST(LengthDistribution, GaussianClampedHasTheClampedNormalMoments) {
  // Normal(100, 100) clamped to [50, 150], i.e. to z in [-0.5, 0.5]. Rounded values are 50 when
  // X < 50.5: P = Phi(-0.495) = 0.31030, and 150 with the same probability by symmetry; the mean
  // stays 100. Variance / sigma^2 = (2 Phi(0.5) - 1) - 2 (0.5) phi(0.5) + 2 (0.5^2) Phi(-0.5)
  // = 0.382925 - 0.352065 + 0.154269 = 0.185128, so the stddev is 100 * 0.43027 = 43.03 (the
  // rounding adds about 0.38/12 to the variance: negligible). n = 100,000: standard errors are
  // 0.0015 for the share, 0.14 for the mean, about 0.1 for the stddev.
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kGaussian;
  d.mean = 100;
  d.stddev = 100;
  d.min = 50;
  d.max = 150;
  const std::vector<double> xs = Draw(d, 100'000, 21);
  const Moments m = MomentsOf(xs);
  EXPECT_NEAR(m.mean, 100, 0.7);
  EXPECT_NEAR(m.stddev, 43.03, 0.5);
  int at_min = 0, at_max = 0;
  for (double x : xs) {
    at_min += x == 50;
    at_max += x == 150;
  }
  EXPECT_NEAR(at_min / 1e5, 0.31030, 0.008);
  EXPECT_NEAR(at_max / 1e5, 0.31030, 0.008);
}

TEST(LengthDistribution, GaussianAwayFromBoundsKeepsMeanAndStddev) {
  // Normal(1000, 200) within [1, 2^20]: clamping at 5 sigma has no visible effect. n = 1e5:
  // standard errors 200/316 = 0.63 (mean) and 200/sqrt(2e5) = 0.45 (stddev).
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kGaussian;
  d.mean = 1000;
  d.stddev = 200;
  const Moments m = MomentsOf(Draw(d, 100'000, 22));
  EXPECT_NEAR(m.mean, 1000, 5 * 0.63);
  EXPECT_NEAR(m.stddev, 200, 5 * 0.45);
}

TEST(LengthDistribution, ExponentialHasItsMean) {
  // round(X) for X ~ Exp(mean 200): E = sum_{k>=1} P(X >= k - 0.5) = 1 / (2 sinh(0.5/200))
  // = 199.9998; clamping 0 up to 1 adds P(X < 0.5) = 1 - e^-0.0025 = 0.0025: E = 200.0023.
  // n = 200,000: standard error 200/447 = 0.45.
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kExponential;
  d.mean = 200;
  const Moments m = MomentsOf(Draw(d, 200'000, 23));
  EXPECT_NEAR(m.mean, 200.0023, 5 * 0.45);
  EXPECT_NEAR(m.stddev, 200, 5 * 0.45 * 2);  // exponential: stddev = mean (kurtosis 9)
}

TEST(LengthDistribution, EmpiricalDrawsOnlyTheGivenValuesUniformly) {
  // Three values, each with probability 1/3: n = 30,000 gives a share standard error of
  // sqrt((1/3)(2/3)/30000) = 0.0027. With max 50 the value 70 is clamped to 50.
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kEmpirical;
  d.empirical = {10, 20, 70};
  std::map<int, int> seen;
  for (double x : Draw(d, 30'000, 24)) ++seen[static_cast<int>(x)];
  ASSERT_EQ(seen.size(), 3u);
  for (int v : {10, 20, 70}) EXPECT_NEAR(seen[v] / 30'000.0, 1.0 / 3, 5 * 0.0027) << v;
  d.max = 50;
  seen.clear();
  for (double x : Draw(d, 3'000, 25)) ++seen[static_cast<int>(x)];
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.count(70), 0u);
  EXPECT_GT(seen[50], 0);
}

// ---- Stream properties --------------------------------------------------------------------------

SyntheticWorkloadSpec SmallSpec(uint64_t seed) {
  SyntheticWorkloadSpec spec;
  spec.arrival = ArrivalKind::kGamma;
  spec.cv = 1.5;
  spec.rate.rate = 100;
  spec.prompt.kind = LengthDistribution::Kind::kGaussian;
  spec.prompt.mean = 1000;
  spec.prompt.stddev = 300;
  spec.output.kind = LengthDistribution::Kind::kExponential;
  spec.output.mean = 200;
  spec.num_requests = 2000;
  spec.seed = seed;
  return spec;
}

bool SameStream(const std::vector<RequestSpec>& a, const std::vector<RequestSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].arrival != b[i].arrival ||
        a[i].prompt_tokens != b[i].prompt_tokens || a[i].output_tokens != b[i].output_tokens) {
      return false;
    }
  }
  return true;
}

TEST(SyntheticSource, SameSeedSameStreamDifferentSeedDifferent) {
  const std::vector<RequestSpec> a = Generate(SmallSpec(42));
  const std::vector<RequestSpec> b = Generate(SmallSpec(42));
  const std::vector<RequestSpec> c = Generate(SmallSpec(43));
  EXPECT_TRUE(SameStream(a, b));
  EXPECT_FALSE(SameStream(a, c));
  int same_arrivals = 0;
  for (size_t i = 0; i < a.size(); ++i) same_arrivals += a[i].arrival == c[i].arrival;
  EXPECT_LT(same_arrivals, 10);
}

TEST(SyntheticSource, LengthStreamsAreIndependentOfEachOtherAndOfArrivals) {
  // Changing the output distribution must not move any arrival or prompt length.
  SyntheticWorkloadSpec other = SmallSpec(42);
  other.output.kind = LengthDistribution::Kind::kGaussian;
  other.output.mean = 50;
  other.output.stddev = 10;
  const std::vector<RequestSpec> a = Generate(SmallSpec(42));
  const std::vector<RequestSpec> b = Generate(other);
  ASSERT_EQ(a.size(), b.size());
  int outputs_differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    outputs_differ += a[i].output_tokens != b[i].output_tokens;
  }
  EXPECT_GT(outputs_differ, 1000);
}

TEST(SyntheticSource, IdsSequentialArrivalsOrderedAndLimitsHonoured) {
  SyntheticWorkloadSpec spec = SmallSpec(9);
  spec.num_requests = 1234;
  std::unique_ptr<RequestSource> source = MakeSyntheticSource(spec);
  ASSERT_NE(source, nullptr);
  RequestSpec r;
  r.prefix_hashes = {1, 2, 3};  // a reused RequestSpec: Next must clear these
  SimTime last;
  uint64_t n = 0;
  while (source->Next(r)) {
    EXPECT_EQ(r.id, n);
    EXPECT_GE(r.arrival, last);
    EXPECT_TRUE(r.prefix_hashes.empty());
    EXPECT_GE(r.prompt_tokens, 1);
    EXPECT_GE(r.output_tokens, 1);
    last = r.arrival;
    ++n;
  }
  EXPECT_EQ(n, 1234u);
  EXPECT_FALSE(source->Next(r)) << "an exhausted source stays exhausted";

  // Both limits: 100 req/s for 5 s is about 500 requests, so a 10,000 cap never binds.
  spec.num_requests = 10'000;
  spec.duration = SimDuration::Seconds(5);
  const std::vector<RequestSpec> rs = Generate(spec);
  EXPECT_NEAR(static_cast<double>(rs.size()), 500, 5 * 1.5 * std::sqrt(500.0));
  for (const RequestSpec& x : rs) EXPECT_LT(x.arrival, At(5));
}

// ---- Validation ---------------------------------------------------------------------------------

TEST(ValidateSyntheticWorkload, RejectsBadFieldsNamingThem) {
  struct Case {
    std::string name;  // why the spec is bad
    void (*mutate)(SyntheticWorkloadSpec&);
    std::string field;  // must appear in the message
  };
  const Case cases[] = {
      {"gamma with cv 0 has no distribution",
       [](auto& s) {
         s.arrival = ArrivalKind::kGamma;
         s.cv = 0;
       },
       "cv"},
      {"constant rate 0 never produces an arrival", [](auto& s) { s.rate.rate = 0; }, "rate.rate"},
      {"negative ramp end rate",
       [](auto& s) {
         s.rate.kind = RateCurve::Kind::kRamp;
         s.rate.rate_end = -1;
       },
       "rate.rate_end"},
      {"ramp from 0 to 0 has no arrivals",
       [](auto& s) {
         s.rate.kind = RateCurve::Kind::kRamp;
         s.rate.rate = 0;
         s.rate.rate_end = 0;
         s.rate.ramp_duration = SimDuration::Seconds(10);
       },
       "rate.rate_end"},
      {"negative ramp duration",
       [](auto& s) {
         s.rate.kind = RateCurve::Kind::kRamp;
         s.rate.ramp_duration = SimDuration::Seconds(-1);
       },
       "rate.ramp_duration"},
      {"diurnal amplitude above 1 makes the rate negative",
       [](auto& s) {
         s.rate.kind = RateCurve::Kind::kDiurnal;
         s.rate.amplitude = 1.5;
       },
       "rate.amplitude"},
      {"diurnal period 0",
       [](auto& s) {
         s.rate.kind = RateCurve::Kind::kDiurnal;
         s.rate.period = SimDuration::Zero();
       },
       "rate.period"},
      {"NaN rate", [](auto& s) { s.rate.rate = std::nan(""); }, "rate.rate"},
      {"prompt min 0 allows empty prompts", [](auto& s) { s.prompt.min = 0; }, "prompt.min"},
      {"output max below min",
       [](auto& s) {
         s.output.min = 10;
         s.output.max = 5;
       },
       "output.max"},
      {"Gaussian with negative stddev",
       [](auto& s) {
         s.prompt.kind = LengthDistribution::Kind::kGaussian;
         s.prompt.stddev = -1;
       },
       "prompt.stddev"},
      {"exponential with mean 0",
       [](auto& s) {
         s.output.kind = LengthDistribution::Kind::kExponential;
         s.output.mean = 0;
       },
       "output.mean"},
      {"empirical with no samples",
       [](auto& s) { s.prompt.kind = LengthDistribution::Kind::kEmpirical; }, "prompt.empirical"},
      {"empirical with a NaN sample",
       [](auto& s) {
         s.prompt.kind = LengthDistribution::Kind::kEmpirical;
         s.prompt.empirical = {1, std::nan("")};
       },
       "prompt.empirical[1]"},
      {"infinite constant length",
       [](auto& s) { s.prompt.mean = std::numeric_limits<double>::infinity(); }, "prompt.mean"},
      {"neither a request limit nor a duration: never ends",
       [](auto& s) {
         s.num_requests = 0;
         s.duration = SimDuration::Zero();
       },
       "num_requests"},
      {"negative request limit", [](auto& s) { s.num_requests = -5; }, "num_requests"},
      {"negative duration", [](auto& s) { s.duration = SimDuration::Seconds(-1); }, "duration"},
  };
  SyntheticWorkloadSpec good;
  good.num_requests = 10;
  ASSERT_TRUE(ValidateSyntheticWorkload(good).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SyntheticWorkloadSpec spec = good;
    c.mutate(spec);
    const absl::Status status = ValidateSyntheticWorkload(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(std::string(status.message()).find(c.field), std::string::npos) << status;
    EXPECT_EQ(MakeSyntheticSource(spec), nullptr);
  }
}

TEST(ValidateSyntheticWorkload, PoissonIgnoresCv) {
  SyntheticWorkloadSpec spec;
  spec.num_requests = 10;
  spec.cv = 0;  // only read for gamma arrivals
  EXPECT_TRUE(ValidateSyntheticWorkload(spec).ok());
}

}  // namespace
}  // namespace twinscale::sim
