// The project's own samplers over Rng::Uniform01(), so a seed gives the same draws everywhere
// (std::normal_distribution and friends are implementation-defined). All are plain functions of
// (rng, parameters); none keeps hidden state, so a cached second normal never leaks between runs.
#ifndef TWINSCALE_SIMULATOR_CORE_SAMPLERS_H_
#define TWINSCALE_SIMULATOR_CORE_SAMPLERS_H_

#include "simulator/core/rng.h"

namespace twinscale::sim {

// Exponential with the given mean (> 0).
double SampleExponential(Rng& rng, double mean);
// Standard normal (Box-Muller, one value per call).
double SampleStandardNormal(Rng& rng);
double SampleNormal(Rng& rng, double mean, double stddev);
// Log-normal parameterised by its median and the ratio p90/median (>= 1): how the warm-up figures
// are published ("about 30-90 s").
double SampleLogNormalMedianP90(Rng& rng, double median, double p90_over_median);
// Gamma with shape k > 0 and scale theta > 0 (Marsaglia-Tsang; shape < 1 by the boost trick).
double SampleGamma(Rng& rng, double shape, double scale);
// Poisson-distributed count with the given mean (inversion for small means, normal approximation
// with continuity correction above 1e4, where it is exact to far below sampling noise).
int64_t SamplePoisson(Rng& rng, double mean);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_SAMPLERS_H_
