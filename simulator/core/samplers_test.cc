// The project's samplers against their textbook moments, and the determinism of derived streams.
#include "simulator/core/samplers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "simulator/core/rng.h"

namespace twinscale::sim {
namespace {

struct Moments {
  double mean = 0, var = 0;
};
template <typename F>
Moments Measure(int n, F draw) {
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    s += x;
    s2 += x * x;
  }
  Moments m;
  m.mean = s / n;
  m.var = s2 / n - m.mean * m.mean;
  return m;
}

TEST(SamplersTest, ExponentialHasItsMeanAndVariance) {
  Rng rng(1);
  const Moments m = Measure(400000, [&] { return SampleExponential(rng, 2.0); });
  // mean 2, variance 4; standard error of the mean 2 / sqrt(4e5) = 0.0032.
  EXPECT_NEAR(m.mean, 2.0, 0.016);
  EXPECT_NEAR(m.var, 4.0, 0.1);
}

TEST(SamplersTest, NormalHasItsMeanAndVariance) {
  Rng rng(2);
  const Moments m = Measure(400000, [&] { return SampleNormal(rng, 5.0, 3.0); });
  EXPECT_NEAR(m.mean, 5.0, 0.025);
  EXPECT_NEAR(m.var, 9.0, 0.15);
}

TEST(SamplersTest, GammaHasShapeTimesScaleMeanAndShapeTimesScaleSquaredVariance) {
  struct Case {
    const char* name;
    double shape, scale;
  } cases[] = {{"shape < 1 (CV 2)", 0.25, 4.0},
               {"shape 1 (exponential)", 1.0, 1.0},
               {"shape 4 (CV 0.5)", 4.0, 0.25}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Rng rng(3);
    const Moments m = Measure(400000, [&] { return SampleGamma(rng, c.shape, c.scale); });
    const double mean = c.shape * c.scale, var = c.shape * c.scale * c.scale;
    EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(var / 400000));
    EXPECT_NEAR(m.var, var, 0.06 * var);
  }
}

TEST(SamplersTest, LogNormalMedianAndP90AreAsAsked) {
  Rng rng(4);
  std::vector<double> v;
  for (int i = 0; i < 200001; ++i) v.push_back(SampleLogNormalMedianP90(rng, 30.0, 2.0));
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(v[100000], 30.0, 0.5);
  EXPECT_NEAR(v[180000], 60.0, 1.2);
}

TEST(SamplersTest, PoissonCountsHaveMeanEqualToVariance) {
  for (double mean : {0.5, 7.0, 800.0}) {
    Rng rng(5);
    const Moments m =
        Measure(100000, [&] { return static_cast<double>(SamplePoisson(rng, mean)); });
    EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(mean / 100000)) << mean;
    EXPECT_NEAR(m.var, mean, 0.05 * mean) << mean;
  }
}

TEST(RngTest, DerivedStreamsRepeatAndDoNotCollide) {
  Rng a(42, 0, Stream::kArrivals), b(42, 0, Stream::kArrivals), c(42, 0, Stream::kRouter),
      d(42, 1, Stream::kArrivals);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    EXPECT_NE(x, c.NextU64());
    EXPECT_NE(x, d.NextU64());
  }
}

TEST(RngTest, UniformIntIsUnbiased) {
  Rng rng(6);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 300000; ++i) ++counts[rng.UniformInt(3)];
  for (int c : counts) EXPECT_NEAR(c, 100000, 1500);  // sd 258
}

}  // namespace
}  // namespace twinscale::sim
