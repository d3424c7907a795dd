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

TEST(BucketLengthSamplerTest, CutsTheBucketsAtTheServersMaximumLength) {
  // An 8k-context server: half the prompts in (2000, 5000], half in (5000, 10000], which holds
  // nothing above 8192. Log-uniform on the cut bucket (5000, 8192]: P(x > 7437) =
  // ln(8192 / 7437) / ln(8192 / 5000) = 0.1956, and its mean (8192 - 5000) / ln(8192 / 5000) =
  // 6465.3; uncut, (5000, 10000] would put 0.428 of the bucket above 7437 and some above 8192.
  const std::vector<double> edges = {1000, 2000, 5000, 10000};
  const std::vector<double> weights = {0, 0, 1, 1, 0};
  const BucketLengthSampler s(edges, weights, /*mean=*/0, /*max_tokens=*/8192);
  const double low = 3000 / std::log(2.5);  // (2000, 5000]
  const double high = 3192 / std::log(8192.0 / 5000.0);
  EXPECT_NEAR(s.shape_mean(), (low + high) / 2, 1e-6);
  Rng rng(11);
  const int n = 40000;
  int above_cut = 0, above_7437 = 0, in_top = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t x = s.Sample(rng);
    above_cut += x > 8192;
    in_top += x > 5000;
    above_7437 += x > 7437;
  }
  EXPECT_EQ(above_cut, 0);
  EXPECT_NEAR(static_cast<double>(in_top) / n, 0.5, 0.01);  // the bucket keeps its share
  // 0.5 x 0.1956 = 0.0978; standard error 0.0015.
  EXPECT_NEAR(static_cast<double>(above_7437) / n, 0.0978, 0.006);
}

TEST(BucketLengthSamplerTest, ABucketWhollyAboveTheMaximumLengthGivesItsWeightToTheRest) {
  // Weight 1 at (0, 10], 1 at (10, 100] and 2 in +Inf (100, 200]; max_tokens 100 drops +Inf, so
  // the two kept buckets share the draws evenly (shares 1/2, not 1/4 and 3/4).
  const std::vector<double> edges = {10, 100};
  const BucketLengthSampler s(edges, {1, 1, 2}, 0, /*max_tokens=*/100, /*ceil_to_bucket=*/true);
  const std::vector<double> got = Shares(s, edges, 40000);
  EXPECT_NEAR(got[0], 0.5, 0.01);
  EXPECT_NEAR(got[1], 0.5, 0.01);
  EXPECT_EQ(got[2], 0.0);
  EXPECT_NEAR(s.shape_mean(), (5 + 90 / std::log(10.0)) / 2, 1e-9);
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
