// Pooling independent draws of one attainment: see pooled_draws.h.
#include "controller/policy/pooled_draws.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace twinscale::policy {

double DrawVariance(double attainment, double attainment_se, int64_t requests) {
  const double a = std::clamp(attainment, 0.0, 1.0);
  const double binomial = a * (1 - a) / static_cast<double>(std::max<int64_t>(1, requests));
  return std::max({attainment_se * attainment_se, binomial, 1e-8});
}

void PooledDraws::Add(double attainment, double attainment_se, int64_t requests) {
  const double w = 1 / DrawVariance(attainment, attainment_se, requests);
  weight_sum_ += w;
  weighted_attainment_ += w * attainment;
  requests_ += requests;
  ++draws_;
}

void PooledDraws::Add(const PooledDraws& other) {
  weight_sum_ += other.weight_sum_;
  weighted_attainment_ += other.weighted_attainment_;
  requests_ += other.requests_;
  draws_ += other.draws_;
}

double PooledDraws::mean() const {
  return weight_sum_ > 0 ? weighted_attainment_ / weight_sum_ : 1.0;
}

double PooledDraws::variance() const {
  return weight_sum_ > 0 ? 1 / weight_sum_ : std::numeric_limits<double>::infinity();
}

double PooledDraws::se() const { return std::sqrt(variance()); }

bool PooledDraws::Clear(double target) const {
  return !empty() && std::abs(mean() - target) >= kPooledVerdictZ * se();
}

}  // namespace twinscale::policy
