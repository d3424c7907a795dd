// Synthetic workloads: see generators.h. The arrival process is a unit-rate renewal process mapped
// through the inverse cumulative rate; the inverse is closed-form for constant and ramp curves and
// a safeguarded Newton iteration (a few steps) for the diurnal curve.
#include "simulator/workload/generators.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "simulator/core/samplers.h"

namespace twinscale::sim {
namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;
constexpr double kInf = std::numeric_limits<double>::infinity();
// The latest arrival a SimTime can hold, with margin for rounding (about 292 years).
constexpr double kMaxArrivalSeconds = 9.0e9;

// Rounds to the nearest integer, then clamps to [lo, hi]; NaN maps to lo. The bounds are integers,
// so rounding before or after the clamp gives the same result.
int32_t RoundClamp(double x, int32_t lo, int32_t hi) {
  if (!(x >= lo)) return lo;
  if (x >= hi) return hi;
  const int64_t v = std::llround(x);
  return static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
}

bool Finite(double x) { return std::isfinite(x); }

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", what));
}

absl::Status ValidateLengths(const LengthDistribution& d, absl::string_view name) {
  const std::string f = std::string(name);
  if (d.min < 1) return Invalid(f + ".min", absl::StrCat("must be >= 1, got ", d.min));
  if (d.max < d.min) {
    return Invalid(f + ".max", absl::StrCat("must be >= ", f, ".min (", d.min, "), got ", d.max));
  }
  switch (d.kind) {
    case LengthDistribution::Kind::kConstant:
      if (!Finite(d.mean)) return Invalid(f + ".mean", "must be finite");
      break;
    case LengthDistribution::Kind::kGaussian:
      if (!Finite(d.mean)) return Invalid(f + ".mean", "must be finite");
      if (!Finite(d.stddev) || d.stddev < 0) {
        return Invalid(f + ".stddev", absl::StrCat("must be finite and >= 0, got ", d.stddev));
      }
      break;
    case LengthDistribution::Kind::kExponential:
      if (!Finite(d.mean) || d.mean <= 0) {
        return Invalid(f + ".mean", absl::StrCat("must be finite and > 0, got ", d.mean));
      }
      break;
    case LengthDistribution::Kind::kEmpirical:
      if (d.empirical.empty()) return Invalid(f + ".empirical", "must not be empty");
      for (size_t i = 0; i < d.empirical.size(); ++i) {
        if (!Finite(d.empirical[i])) {
          return Invalid(absl::StrCat(f, ".empirical[", i, "]"), "must be finite");
        }
      }
      break;
    default:
      return Invalid(f + ".kind", "is not a known length distribution");
  }
  return absl::OkStatus();
}

absl::Status ValidateRate(const RateCurve& c) {
  switch (c.kind) {
    case RateCurve::Kind::kConstant:
      if (!Finite(c.rate) || c.rate <= 0) {
        return Invalid("rate.rate", absl::StrCat("must be finite and > 0, got ", c.rate));
      }
      break;
    case RateCurve::Kind::kRamp:
      if (!Finite(c.rate) || c.rate < 0) {
        return Invalid("rate.rate", absl::StrCat("must be finite and >= 0, got ", c.rate));
      }
      if (!Finite(c.rate_end) || c.rate_end < 0) {
        return Invalid("rate.rate_end", absl::StrCat("must be finite and >= 0, got ", c.rate_end));
      }
      if (c.ramp_duration < SimDuration::Zero()) {
        return Invalid("rate.ramp_duration", "must be >= 0");
      }
      if (c.rate == 0 && c.rate_end == 0) {
        return Invalid("rate.rate_end", "and rate.rate are both 0: the ramp has no arrivals");
      }
      if (c.ramp_duration == SimDuration::Zero() && c.rate_end == 0) {
        return Invalid("rate.rate_end", "must be > 0 when rate.ramp_duration is 0");
      }
      break;
    case RateCurve::Kind::kDiurnal:
      if (!Finite(c.rate) || c.rate <= 0) {
        return Invalid("rate.rate", absl::StrCat("must be finite and > 0, got ", c.rate));
      }
      // amplitude > 1 would make the rate negative for part of each period.
      if (!Finite(c.amplitude) || c.amplitude < 0 || c.amplitude > 1) {
        return Invalid("rate.amplitude", absl::StrCat("must be in [0, 1], got ", c.amplitude));
      }
      if (c.period <= SimDuration::Zero()) return Invalid("rate.period", "must be > 0");
      if (!Finite(c.phase)) return Invalid("rate.phase", "must be finite");
      break;
    default:
      return Invalid("rate.kind", "is not a known rate curve");
  }
  return absl::OkStatus();
}

// Draws gaps of a unit-rate renewal process (mean 1).
class UnitRenewal {
 public:
  UnitRenewal(ArrivalKind kind, double cv)
      : kind_(kind), shape_(1.0 / (cv * cv)), scale_(cv * cv) {}
  double Gap(Rng& rng) const {
    if (kind_ == ArrivalKind::kPoisson) return SampleExponential(rng, 1.0);
    return SampleGamma(rng, shape_, scale_);
  }

 private:
  ArrivalKind kind_;
  double shape_;  // 1/cv^2, so the mean shape*scale is 1 and the CV 1/sqrt(shape) is cv
  double scale_;  // cv^2
};

class SyntheticSource final : public RequestSource {
 public:
  explicit SyntheticSource(const SyntheticWorkloadSpec& spec)
      : spec_(spec),
        renewal_(spec.arrival, spec.cv),
        arrivals_(spec.seed, 0, Stream::kArrivals),
        prompts_(spec.seed, 0, Stream::kPromptLengths),
        outputs_(spec.seed, 0, Stream::kOutputLengths),
        end_seconds_(spec.duration > SimDuration::Zero() ? spec.duration.seconds() : kInf) {}

  bool Next(RequestSpec& out) override {
    if (done_) return false;
    if (spec_.num_requests > 0 && next_id_ >= static_cast<uint64_t>(spec_.num_requests)) {
      done_ = true;
      return false;
    }
    operational_ += renewal_.Gap(arrivals_);
    const double t = spec_.rate.InverseCumulativeSeconds(operational_);
    // Past the duration (or a curve that has stopped producing arrivals): the stream ends.
    if (!(t < end_seconds_) || !(t < kMaxArrivalSeconds)) {
      done_ = true;
      return false;
    }
    SimTime arrival = SimTime::FromSecondsF(t);
    if (spec_.duration > SimDuration::Zero() && arrival.nanos() >= spec_.duration.nanos()) {
      done_ = true;  // t rounded up onto the end of the window
      return false;
    }
    // The iterative inverse is accurate to well under a nanosecond but not exactly monotone in s;
    // keep arrivals non-decreasing regardless.
    if (arrival < last_arrival_) arrival = last_arrival_;
    last_arrival_ = arrival;

    out.id = next_id_++;
    out.arrival = arrival;
    out.prompt_tokens = spec_.prompt.Sample(prompts_);
    out.output_tokens = spec_.output.Sample(outputs_);
    out.prefix_hashes.clear();
    return true;
  }

 private:
  const SyntheticWorkloadSpec spec_;
  const UnitRenewal renewal_;
  Rng arrivals_, prompts_, outputs_;
  const double end_seconds_;
  double operational_ = 0;  // s: arrivals so far in the unit-rate process's time
  SimTime last_arrival_;
  uint64_t next_id_ = 0;
  bool done_ = false;
};

}  // namespace

int32_t LengthDistribution::Sample(Rng& rng) const {
  double x = mean;
  switch (kind) {
    case Kind::kConstant:
      break;
    case Kind::kGaussian:
      x = SampleNormal(rng, mean, stddev);
      break;
    case Kind::kExponential:
      x = SampleExponential(rng, mean);
      break;
    case Kind::kEmpirical:
      if (empirical.empty()) return min;  // invalid; ValidateSyntheticWorkload rejects it
      x = empirical[rng.UniformInt(empirical.size())];
      break;
  }
  return RoundClamp(x, min, max);
}

double RateCurve::RateAt(SimTime t) const {
  const double ts = t.seconds();
  switch (kind) {
    case Kind::kConstant:
      return rate;
    case Kind::kRamp: {
      const double d = ramp_duration.seconds();
      if (ts >= d) return rate_end;
      return rate + (rate_end - rate) * (ts / d);
    }
    case Kind::kDiurnal:
      return rate * (1.0 + amplitude * std::sin(kTwoPi * (ts / period.seconds() + phase)));
  }
  return 0;
}

double RateCurve::CumulativeAt(SimTime t) const {
  const double ts = t.seconds();
  switch (kind) {
    case Kind::kConstant:
      return rate * ts;
    case Kind::kRamp: {
      const double d = ramp_duration.seconds();
      if (ts >= d) return 0.5 * (rate + rate_end) * d + rate_end * (ts - d);
      return rate * ts + (rate_end - rate) * ts * ts / (2.0 * d);
    }
    case Kind::kDiurnal: {
      const double p = period.seconds();
      return rate * ts + rate * amplitude * p / kTwoPi *
                             (std::cos(kTwoPi * phase) - std::cos(kTwoPi * (ts / p + phase)));
    }
  }
  return 0;
}

double RateCurve::InverseCumulativeSeconds(double s) const {
  if (!(s > 0)) return 0;
  switch (kind) {
    case Kind::kConstant:
      return rate > 0 ? s / rate : kInf;
    case Kind::kRamp: {
      const double d = ramp_duration.seconds();
      const double in_ramp = 0.5 * (rate + rate_end) * d;
      if (s <= in_ramp && d > 0) {
        // a*T^2 + rate*T - s = 0 with a = (rate_end - rate) / (2d); this form of the root is stable
        // for a of either sign and for a = 0 (the discriminant is rate_end^2 >= 0 at s = in_ramp).
        const double a = (rate_end - rate) / (2.0 * d);
        const double disc = std::max(0.0, rate * rate + 4.0 * a * s);
        const double denom = rate + std::sqrt(disc);
        return denom > 0 ? std::min(d, 2.0 * s / denom) : d;
      }
      if (rate_end <= 0) return kInf;
      return d + (s - in_ramp) / rate_end;
    }
    case Kind::kDiurnal: {
      // Lambda(k*P + T) = k*rate*P + Lambda(T): whole periods first, then solve within one.
      const double p = period.seconds();
      const double per_period = rate * p;
      if (!(per_period > 0)) return kInf;
      const double k = std::floor(s / per_period);
      const double rem = s - k * per_period;
      const double base = std::cos(kTwoPi * phase);
      const double coef = amplitude * p / kTwoPi;
      auto lambda = [&](double x) {  // Lambda(x) / rate, for x in [0, P]
        return x + coef * (base - std::cos(kTwoPi * (x / p + phase)));
      };
      const double target = rem / rate;
      double lo = 0, hi = p, x = std::min(p, target);
      // Newton on a monotone function, falling back to bisection when a step leaves the bracket
      // (near the zero of the rate when amplitude is 1). Stops at 0.01 ns.
      for (int i = 0; i < 100 && hi - lo > 1e-11; ++i) {
        const double f = lambda(x) - target;
        if (f == 0) break;
        if (f > 0) {
          hi = x;
        } else {
          lo = x;
        }
        const double slope = 1.0 + amplitude * std::sin(kTwoPi * (x / p + phase));
        double next = slope > 0 ? x - f / slope : 0.5 * (lo + hi);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (std::abs(next - x) < 1e-11) {
          x = next;
          break;
        }
        x = next;
      }
      return k * p + x;
    }
  }
  return kInf;
}

absl::Status ValidateSyntheticWorkload(const SyntheticWorkloadSpec& spec) {
  if (spec.arrival != ArrivalKind::kPoisson && spec.arrival != ArrivalKind::kGamma) {
    return Invalid("arrival", "is not a known arrival process");
  }
  if (spec.arrival == ArrivalKind::kGamma && (!Finite(spec.cv) || spec.cv <= 0)) {
    return Invalid("cv", absl::StrCat("must be finite and > 0, got ", spec.cv));
  }
  if (absl::Status s = ValidateRate(spec.rate); !s.ok()) return s;
  if (absl::Status s = ValidateLengths(spec.prompt, "prompt"); !s.ok()) return s;
  if (absl::Status s = ValidateLengths(spec.output, "output"); !s.ok()) return s;
  if (spec.num_requests < 0) {
    return Invalid("num_requests", absl::StrCat("must be >= 0, got ", spec.num_requests));
  }
  if (spec.duration < SimDuration::Zero()) return Invalid("duration", "must be >= 0");
  if (spec.num_requests == 0 && spec.duration == SimDuration::Zero()) {
    return Invalid("num_requests", "or duration must be set (> 0): the workload would never end");
  }
  return absl::OkStatus();
}

std::unique_ptr<RequestSource> MakeSyntheticSource(const SyntheticWorkloadSpec& spec) {
  if (!ValidateSyntheticWorkload(spec).ok()) return nullptr;
  return std::make_unique<SyntheticSource>(spec);
}

}  // namespace twinscale::sim
