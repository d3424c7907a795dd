// Request lengths drawn from a histogram of lengths (vLLM's request_prompt_tokens /
// request_generation_tokens buckets): a bucket by its weight, then log-uniform inside it (uniform
// in the first, [0, first edge]), since length densities fall within the wide buckets of vLLM's
// 1-2-5 ladder; the +Inf bucket spans [last edge, 2 x last edge]. Buckets are cut at max_tokens
// (the server's --max-model-len: no longer request exists), one wholly above it dropped and its
// weight spread over the rest by renormalisation. Optionally rescaled so its mean
// is a given (observed) mean; with no usable histogram, an exponential with that mean. Coarse
// buckets keep the spread of the real lengths, which decides the TTFT tail, without inventing the
// exponential's much heavier one.
//
// Shared by the twin's forecaster (controller/twin) and the trace synthesised from a Prometheus
// history (controller/replay/history_trace). Pure; immutable after construction, so one sampler
// may be shared between threads (each with its own Rng).
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_BUCKET_LENGTH_SAMPLER_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_BUCKET_LENGTH_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "simulator/core/rng.h"

namespace twinscale::sim {

class BucketLengthSampler {
 public:
  // `upper_bounds`: the finite edges, ascending; `weights`: per bucket, NOT cumulative, size
  // upper_bounds + 1 (the last is the +Inf bucket); negative or non-finite weights count as 0.
  // `mean` > 0 rescales the bucket shape to that mean (and is the exponential's mean when the
  // histogram is empty or malformed); `mean` <= 0 keeps the bucket shape as it is (and, with no
  // usable histogram, every draw is 1). Draws are rounded to the nearest integer, or with
  // `ceil_to_bucket` rounded up, so that a draw from (lo, hi] stays in the bucket a histogram with
  // inclusive upper edges (Prometheus' le) would count it in; then clamped to [1, max_tokens].
  BucketLengthSampler(const std::vector<double>& upper_bounds, const std::vector<double>& weights,
                      double mean, int32_t max_tokens, bool ceil_to_bucket = false);

  int32_t Sample(Rng& rng) const;
  // A length drawn with probability proportional to the length (what a running request is).
  int32_t SampleLengthBiased(Rng& rng) const;

  bool has_histogram() const { return !buckets_.empty(); }
  // The mean of the bucket shape before rescaling (0 without a histogram).
  double shape_mean() const { return shape_mean_; }

 private:
  struct Bucket {
    double cdf, lo, hi;
  };
  double mean_;
  int32_t max_;
  bool ceil_;
  double scale_ = 1;
  double shape_mean_ = 0;
  std::vector<Bucket> buckets_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_BUCKET_LENGTH_SAMPLER_H_
