// BucketLengthSampler: shares of a known histogram, the rescaled mean, the fallbacks.
#include "simulator/workload/bucket_length_sampler.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace twinscale::sim {
namespace {

// The share of draws in each bucket of `edges` (le inclusive), the last being +Inf.
std::vector<double> Shares(const BucketLengthSampler& s, const std::vector<double>& edges, int n) {
  Rng rng(7);
  std::vector<double> shares(edges.size() + 1, 0.0);
  for (int i = 0; i < n; ++i) {
    const int32_t x = s.Sample(rng);
    size_t b = 0;
    while (b < edges.size() && x > edges[b]) ++b;
    shares[b] += 1.0 / n;
  }
  return shares;
}

TEST(BucketLengthSamplerTest, KeepsTheBucketSharesWithCeilAndNoRescale) {
  // 1-2-5 ladder; weights chosen by hand, shares = weight / 100.
  const std::vector<double> edges = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
  const std::vector<double> weights = {0, 0, 0, 10, 20, 30, 25, 10, 5, 0, 0};
  const BucketLengthSampler s(edges, weights, /*mean=*/0, 1 << 20, /*ceil_to_bucket=*/true);
  // 40,000 draws: a share's standard error is at most 0.25 points; allow 1 point.
  const std::vector<double> got = Shares(s, edges, 40000);
  for (size_t i = 0; i < weights.size(); ++i) {
    SCOPED_TRACE("bucket " + std::to_string(i));
    EXPECT_NEAR(got[i], weights[i] / 100.0, 0.01);
  }
}

TEST(BucketLengthSamplerTest, RescalesToTheGivenMean) {
  const std::vector<double> edges = {10, 100};
  const std::vector<double> weights = {0, 1, 0};  // log-uniform on (10, 100]: mean 90 / ln 10
  const BucketLengthSampler shape_only(edges, weights, 0, 1 << 20);
  EXPECT_NEAR(shape_only.shape_mean(), 90 / std::log(10.0), 1e-9);
  const BucketLengthSampler s(edges, weights, 60, 1 << 20);
  Rng rng(3);
  double sum = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) sum += s.Sample(rng);
  // Standard deviation of the draws is about 24: the mean's standard error is 0.12.
  EXPECT_NEAR(sum / n, 60, 0.6);
}

TEST(BucketLengthSamplerTest, FallsBackToExponentialWithoutHistogram) {
  const BucketLengthSampler s({}, {}, 200, 1 << 20);
  EXPECT_FALSE(s.has_histogram());
  Rng rng(5);
  double sum = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) sum += s.Sample(rng);
  EXPECT_NEAR(sum / n, 200, 200 * 0.03);  // standard error 1 / sqrt(40000) = 0.5%
  const BucketLengthSampler malformed({10}, {1, 2, 3}, 0, 1 << 20);  // weights != edges + 1
  EXPECT_FALSE(malformed.has_histogram());
  EXPECT_EQ(malformed.Sample(rng), 1);
}

}  // namespace
}  // namespace twinscale::sim
