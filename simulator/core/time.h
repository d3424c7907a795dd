// Simulated time for the twin: integer nanoseconds, never floating-point seconds as an event key.
//
// SimTime is a point on the simulation's own clock (0 = start of the run); SimDuration is a span.
// Both are strong types over int64 so a time can't be added to a time, and conversion to and from
// absl::Duration happens once, at the boundary (ToAbsl / FromAbsl). Not thread-safe; plain values.
#ifndef TWINSCALE_SIMULATOR_CORE_TIME_H_
#define TWINSCALE_SIMULATOR_CORE_TIME_H_

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

#include "absl/time/time.h"

namespace twinscale::sim {

// std::llround (to the nearest integer, halves away from zero) for |x| < 2^63, inline: the libm
// call was a fifth of the latency model's step time. Exact: for |x| < 2^52 the truncation's
// remainder x - trunc(x) is computed without rounding error, and above that x is an integer.
inline int64_t RoundToNanos(double x) {
  const int64_t i = static_cast<int64_t>(x);  // toward zero
  const double rest = x - static_cast<double>(i);
  // Branch-free: which way a time rounds is a coin toss the branch predictor would lose.
  return i + static_cast<int64_t>(rest >= 0.5) - static_cast<int64_t>(rest <= -0.5);
}

class SimDuration {
 public:
  constexpr SimDuration() = default;
  static constexpr SimDuration Nanos(int64_t ns) { return SimDuration(ns); }
  static constexpr SimDuration Micros(int64_t us) { return SimDuration(us * 1000); }
  static constexpr SimDuration Millis(int64_t ms) { return SimDuration(ms * 1000000); }
  static constexpr SimDuration Seconds(int64_t s) { return SimDuration(s * 1000000000); }
  // Rounds to the nearest nanosecond; used where a model produces a real-valued time.
  static SimDuration FromSecondsF(double s) { return SimDuration(RoundToNanos(s * 1e9)); }
  static SimDuration FromMicrosF(double us) { return SimDuration(RoundToNanos(us * 1e3)); }
  static constexpr SimDuration Zero() { return SimDuration(0); }

  constexpr int64_t nanos() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double millis() const { return static_cast<double>(ns_) * 1e-6; }
  absl::Duration ToAbsl() const { return absl::Nanoseconds(ns_); }
  static SimDuration FromAbsl(absl::Duration d) { return SimDuration(absl::ToInt64Nanoseconds(d)); }

  constexpr auto operator<=>(const SimDuration&) const = default;
  constexpr SimDuration operator+(SimDuration o) const { return SimDuration(ns_ + o.ns_); }
  constexpr SimDuration operator-(SimDuration o) const { return SimDuration(ns_ - o.ns_); }
  constexpr SimDuration operator*(int64_t k) const { return SimDuration(ns_ * k); }
  constexpr SimDuration& operator+=(SimDuration o) {
    ns_ += o.ns_;
    return *this;
  }

 private:
  constexpr explicit SimDuration(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime FromNanos(int64_t ns) { return SimTime(ns); }
  static SimTime FromSecondsF(double s) { return SimTime(RoundToNanos(s * 1e9)); }
  static constexpr SimTime Zero() { return SimTime(0); }
  static constexpr SimTime Max() { return SimTime(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t nanos() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr auto operator<=>(const SimTime&) const = default;
  constexpr SimTime operator+(SimDuration d) const { return SimTime(ns_ + d.nanos()); }
  constexpr SimTime operator-(SimDuration d) const { return SimTime(ns_ - d.nanos()); }
  constexpr SimDuration operator-(SimTime o) const { return SimDuration::Nanos(ns_ - o.ns_); }
  constexpr SimTime& operator+=(SimDuration d) {
    ns_ += d.nanos();
    return *this;
  }

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_TIME_H_
