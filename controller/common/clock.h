// The one place wall time is read. Everything that needs "now" takes a Clock: RealClock in the
// binary, ManualClock in replay and tests, so the same code runs live and offline.
// Thread-safety: RealClock is stateless; ManualClock is safe to read and advance from any thread.
#ifndef TWINSCALE_CONTROLLER_COMMON_CLOCK_H_
#define TWINSCALE_CONTROLLER_COMMON_CLOCK_H_

#include <atomic>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace twinscale {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch()) : nanos_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }
  void Advance(absl::Duration d) { nanos_ += absl::ToInt64Nanoseconds(d); }
  void Set(absl::Time t) { nanos_ = absl::ToUnixNanos(t); }

 private:
  std::atomic<int64_t> nanos_;
};

}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_COMMON_CLOCK_H_
