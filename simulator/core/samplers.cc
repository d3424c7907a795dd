// Samplers: see samplers.h. Only arithmetic from <cmath>, whose results are correctly rounded or
// identical across glibc builds for the functions used here (log, sqrt, cos, exp).
#include "simulator/core/samplers.h"

#include <cmath>
#include <numbers>

namespace twinscale::sim {

double SampleExponential(Rng& rng, double mean) { return -mean * std::log(rng.UniformOpen0()); }

double SampleStandardNormal(Rng& rng) {
  const double u1 = rng.UniformOpen0();
  const double u2 = rng.Uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double SampleNormal(Rng& rng, double mean, double stddev) {
  return mean + stddev * SampleStandardNormal(rng);
}

double SampleLogNormalMedianP90(Rng& rng, double median, double p90_over_median) {
  // p90 = median * exp(1.2815515655 * sigma).
  const double sigma =
      p90_over_median <= 1.0 ? 0.0 : std::log(p90_over_median) / 1.2815515655446004;
  return median * std::exp(sigma * SampleStandardNormal(rng));
}

double SampleGamma(Rng& rng, double shape, double scale) {
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) * U^(1/k).
    const double g = SampleGamma(rng, shape + 1.0, 1.0);
    return scale * g * std::pow(rng.UniformOpen0(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = SampleStandardNormal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.UniformOpen0();
    if (u < 1.0 - 0.0331 * x * x * x * x) return scale * d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

int64_t SamplePoisson(Rng& rng, double mean) {
  if (mean <= 0.0) return 0;
  if (mean > 1e4) {
    const double x = std::floor(SampleNormal(rng, mean, std::sqrt(mean)) + 0.5);
    return x < 0 ? 0 : static_cast<int64_t>(x);
  }
  // Inversion by sequential search from the mode region is overkill here; split large means.
  int64_t total = 0;
  double remaining = mean;
  while (remaining > 0.0) {
    const double m = remaining > 500.0 ? 500.0 : remaining;
    remaining -= m;
    const double limit = std::exp(-m);
    double p = rng.UniformOpen0();
    int64_t k = 0;
    while (p > limit) {
      p *= rng.UniformOpen0();
      ++k;
    }
    total += k;
  }
  return total;
}

}  // namespace twinscale::sim
