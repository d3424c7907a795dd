// See bucket_length_sampler.h.
#include "simulator/workload/bucket_length_sampler.h"

#include <algorithm>
#include <cmath>

#include "simulator/core/samplers.h"

namespace twinscale::sim {

BucketLengthSampler::BucketLengthSampler(const std::vector<double>& upper_bounds,
                                         const std::vector<double>& weights, double mean,
                                         int32_t max_tokens, bool ceil_to_bucket)
    : mean_(mean), max_(std::max(1, max_tokens)), ceil_(ceil_to_bucket) {
  double total = 0;
  for (double w : weights) {
    if (std::isfinite(w) && w > 0) total += w;
  }
  if (weights.empty() || !(total > 0) || weights.size() != upper_bounds.size() + 1) return;
  double lo = 0, acc = 0, dist_mean = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    // A bucket is cut at max_tokens (the server refuses longer requests), one wholly above it
    // dropped: on an 8k-context server vLLM's (5000, 10000] bucket holds prompts up to 8k only.
    const double hi =
        std::min(i < upper_bounds.size() ? upper_bounds[i] : 2 * lo, static_cast<double>(max_));
    const double p = std::isfinite(weights[i]) && weights[i] > 0 ? weights[i] / total : 0.0;
    if (p > 0 && hi > lo && std::isfinite(hi)) {
      acc += p;
      buckets_.push_back({acc, lo, hi});
      // Log-uniform inside a bucket (uniform for the first): mean (b - a) / ln(b / a).
      dist_mean += p * (lo > 0 ? (hi - lo) / std::log(hi / lo) : (lo + hi) / 2);
    }
    lo = hi;
  }
  if (buckets_.empty() || dist_mean <= 0 || !(acc > 0)) {
    buckets_.clear();
    return;
  }
  for (Bucket& b : buckets_) b.cdf /= acc;  // the weight of dropped buckets, spread over the rest
  buckets_.back().cdf = 1.0;
  shape_mean_ = dist_mean / acc;
  if (mean_ > 0) scale_ = mean_ / dist_mean;
}

int32_t BucketLengthSampler::Sample(Rng& rng) const {
  double x;
  if (buckets_.empty()) {
    x = mean_ > 0 ? SampleExponential(rng, mean_) : 1.0;
  } else {
    const double u = rng.Uniform01();
    size_t i = 0;
    while (i + 1 < buckets_.size() && buckets_[i].cdf < u) ++i;
    const Bucket& b = buckets_[i];
    const double u2 = rng.Uniform01();
    x = scale_ * (b.lo > 0 ? b.lo * std::pow(b.hi / b.lo, u2) : b.lo + u2 * (b.hi - b.lo));
  }
  // Log-uniform draws exclude lo itself (pow(hi / lo, u2) > 1 unless u2 == 0), so ceil keeps
  // (lo, hi] in its bucket; the edge case u2 == 0 has probability 2^-53.
  const double r = ceil_ ? std::ceil(x - 1e-9) : std::round(x);
  return static_cast<int32_t>(std::clamp(r, 1.0, static_cast<double>(max_)));
}

int32_t BucketLengthSampler::SampleLengthBiased(Rng& rng) const {
  // Rejection from Sample with acceptance x / cap: exact, and cheap for these spreads.
  const double cap = buckets_.empty() ? 10 * std::max(1.0, mean_) : scale_ * buckets_.back().hi;
  for (int i = 0; i < 64; ++i) {
    const int32_t x = Sample(rng);
    if (rng.Uniform01() * cap <= x) return x;
  }
  return Sample(rng);
}

}  // namespace twinscale::sim
