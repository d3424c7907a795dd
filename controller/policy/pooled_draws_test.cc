// PooledDraws: the inverse-variance pool, worked by hand.
#include "controller/policy/pooled_draws.h"

#include <cmath>
#include <limits>
#include <tuple>

#include "gtest/gtest.h"

namespace twinscale::policy {
namespace {

TEST(PooledDrawsTest, WeighsEachDrawByItsVarianceWorkedByHand) {
  // 0.96 with standard error 0.01 (variance 1e-4, weight 10,000) and 0.94 with 0.02 (4e-4,
  // 2,500), each of 100,000 requests (binomial variances under 4e-7: not binding).
  // Mean (9,600 + 2,350) / 12,500 = 0.956; variance 1 / 12,500 = 8e-5.
  PooledDraws p;
  p.Add(0.96, 0.01, 100000);
  p.Add(0.94, 0.02, 100000);
  EXPECT_EQ(p.draws(), 2);
  EXPECT_EQ(p.requests(), 200000);
  EXPECT_NEAR(p.mean(), 0.956, 1e-12);
  EXPECT_NEAR(p.variance(), 8e-5, 1e-15);
  // 1.96 standard errors are 0.01753: 0.006 above 0.95 is not clear; 0.026 above 0.93 is.
  EXPECT_FALSE(p.Clear(0.95));
  EXPECT_TRUE(p.Clear(0.93));
  EXPECT_TRUE(p.Clear(0.975));  // 0.019 below it
}

TEST(PooledDrawsTest, ADrawWithoutItsOwnNoiseCountsWithTheBinomials) {
  // 0.95 of 1,900 requests, no standard error estimated: 0.95 x 0.05 / 1,900 = 2.5e-5.
  EXPECT_NEAR(DrawVariance(0.95, 0, 1900), 2.5e-5, 1e-15);
  // An estimate below the binomial's is raised to it; one above stands.
  EXPECT_NEAR(DrawVariance(0.95, 0.001, 1900), 2.5e-5, 1e-15);
  EXPECT_NEAR(DrawVariance(0.95, 0.01, 1900), 1e-4, 1e-15);
  // Every request met: the floor, so one such draw cannot take all the weight.
  EXPECT_NEAR(DrawVariance(1.0, 0, 1000000), 1e-8, 1e-20);
  EXPECT_NEAR(DrawVariance(0.5, 0, 0), 0.25, 1e-15);  // no requests: as one
}

TEST(PooledDrawsTest, PoolsOfPoolsEqualThePoolOfTheirDraws) {
  PooledDraws a, b, all;
  for (const auto& [att, se, n] : {std::tuple{0.97, 0.005, 1000}, {0.965, 0.004, 3000}}) {
    a.Add(att, se, n);
    all.Add(att, se, n);
  }
  b.Add(0.975, 0, 1000);
  all.Add(0.975, 0, 1000);
  a.Add(b);
  EXPECT_EQ(a.draws(), 3);
  EXPECT_EQ(a.requests(), 5000);
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  EXPECT_DOUBLE_EQ(a.variance(), all.variance());
}

TEST(PooledDrawsTest, AnEmptyPoolSaysNothing) {
  const PooledDraws p;
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.variance(), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(p.Clear(0.5));
  EXPECT_FALSE(p.Clear(0.0));
}

}  // namespace
}  // namespace twinscale::policy
