// Synthetic workloads for the twin: token-length distributions, time-varying arrival-rate curves
// and a pull-based RequestSource that draws a request stream from them.
//
// Pure: no I/O, no wall clock, no globals. A SyntheticWorkloadSpec and its seed fully determine the
// stream, on every platform (all sampling goes through simulator/core/samplers.h). Arrival times,
// prompt lengths and output lengths come from three independent Rng streams (Stream::kArrivals,
// kPromptLengths, kOutputLengths), so changing the output-length distribution never moves an
// arrival or a prompt length.
//
// Arrivals: a unit-rate renewal process in "operational time" s (exponential gaps for Poisson;
// gamma gaps with mean 1 and the requested CV for bursty or regular traffic) is mapped onto real
// time through the inverse of the cumulative rate, t = Lambda^-1(s), Lambda(t) = integral_0^t
// rate(u) du. This time change is exact for a non-homogeneous Poisson process and gives a gamma
// process its requested CV locally while honouring the curve, which thinning could not do.
//
// Thread-safety: specs are plain values; a source is not thread-safe (one per run).
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_GENERATORS_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_GENERATORS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "simulator/core/rng.h"
#include "simulator/core/time.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

// A distribution of token counts. Every kind rounds to the nearest integer and then clamps to
// [min, max] (so a Gaussian with a wide stddev piles mass on the bounds, as BLIS's generator does;
// it is not renormalised).
struct LengthDistribution {
  enum class Kind {
    kConstant,     // always round(mean)
    kGaussian,     // Normal(mean, stddev), clamped
    kExponential,  // Exponential with this mean, clamped (the clamp to min >= 1 adds P(X<0.5))
    kEmpirical,    // uniform draw from `empirical` (observed lengths), clamped
  };
  Kind kind = Kind::kConstant;
  double mean = 512;  // constant value, Gaussian or exponential mean
  double stddev = 0;  // Gaussian only; >= 0
  int32_t min = 1;    // clamp bounds, 1 <= min <= max
  int32_t max = 1 << 20;
  std::vector<double> empirical;  // samples for kEmpirical (non-empty, finite)

  // An integer token count in [min, max]. Draws from `rng` except for kConstant, which draws
  // nothing. Precondition: the distribution is valid (ValidateSyntheticWorkload checks it).
  int32_t Sample(Rng& rng) const;
};

// Requests per second as a function of simulated time.
struct RateCurve {
  enum class Kind {
    kConstant,  // `rate` throughout
    kRamp,      // linear from `rate` to `rate_end` over [0, ramp_duration], then `rate_end`
    kDiurnal,   // rate * (1 + amplitude * sin(2*pi*(t/period + phase)))
  };
  Kind kind = Kind::kConstant;
  double rate = 1.0;          // constant rate; ramp start rate; diurnal mean rate (req/s)
  double rate_end = 1.0;      // ramp end rate (req/s)
  SimDuration ramp_duration;  // ramp span; 0 means "rate_end from the start"
  double amplitude = 0.5;     // diurnal relative amplitude, in [0, 1]
  SimDuration period = SimDuration::Seconds(86400);  // diurnal period, > 0
  double phase = 0;  // diurnal phase, in periods (0.25 starts at the peak)

  // The instantaneous rate at `t` (t >= 0), in requests per second.
  double RateAt(SimTime t) const;
  // Lambda(t): the expected number of arrivals in [0, t] (the integral of RateAt).
  double CumulativeAt(SimTime t) const;
  // The inverse of CumulativeAt, in seconds: the smallest t with Lambda(t) >= s. Returns +infinity
  // when the curve never accumulates s arrivals (a ramp that ends at rate 0).
  double InverseCumulativeSeconds(double s) const;
};

enum class ArrivalKind {
  kPoisson,  // exponential gaps in operational time (CV 1)
  kGamma,    // gamma gaps with coefficient of variation `cv` (cv > 1 bursty, < 1 regular)
};

struct SyntheticWorkloadSpec {
  ArrivalKind arrival = ArrivalKind::kPoisson;
  double cv = 1.0;  // gamma inter-arrival coefficient of variation (1 = Poisson); > 0
  RateCurve rate;
  LengthDistribution prompt, output;
  int64_t num_requests = 0;  // stop after this many (0 = no limit)
  SimDuration duration;      // arrivals only in [0, duration) (0 = no limit)
  // At least one of num_requests and duration must be set.
  uint64_t seed = 1;
};

// OK, or InvalidArgument naming the offending field (e.g. "rate.amplitude must be in [0, 1], got
// 1.5"). Checks every number is finite and in range, and that the workload ends.
absl::Status ValidateSyntheticWorkload(const SyntheticWorkloadSpec& spec);

// A source of requests with ids 0, 1, 2, ..., arrivals non-decreasing, the first arrival one
// inter-arrival gap after t = 0. Prefix hashes are left empty. Each Next() allocates nothing (it
// clears, but keeps, the capacity of `out.prefix_hashes`). Returns nullptr if the spec is invalid
// (ValidateSyntheticWorkload says why).
std::unique_ptr<RequestSource> MakeSyntheticSource(const SyntheticWorkloadSpec& spec);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_GENERATORS_H_
