// A shutdown signal shared by the threads that talk to the API server: Cancel() wakes every
// WaitFor() at once and interrupts HTTP requests and watch streams blocked on the network (the
// HTTP code registers a callback that cancels cpprestsdk's own token).
// Thread-safety: every method may be called from any thread.
#ifndef TWINSCALE_CONTROLLER_KUBE_CANCELLATION_H_
#define TWINSCALE_CONTROLLER_KUBE_CANCELLATION_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace twinscale::kube {

class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Idempotent. Runs the registered callbacks (on this thread) the first time.
  void Cancel();
  bool IsCancelled() const;

  // Blocks for `d` (real time), or until Cancel(). Returns false if cancelled (now or before).
  bool WaitFor(absl::Duration d) const;

  // Runs `on_cancel` when Cancel() is called, or at once (on this thread) if it already was.
  // Returns an id for Unregister(). Callbacks must be quick and must not call back into this
  // object.
  int64_t Register(std::function<void()> on_cancel);
  // After Unregister returns, the callback is not running and will never run.
  void Unregister(int64_t id);

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
};

// Registers a callback on each non-null Cancellation for the lifetime of the scope.
class ScopedCancelCallback {
 public:
  ScopedCancelCallback(Cancellation* a, Cancellation* b, std::function<void()> on_cancel);
  ~ScopedCancelCallback();
  ScopedCancelCallback(const ScopedCancelCallback&) = delete;
  ScopedCancelCallback& operator=(const ScopedCancelCallback&) = delete;

 private:
  Cancellation* a_;
  Cancellation* b_;
  int64_t id_a_ = 0, id_b_ = 0;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_CANCELLATION_H_
