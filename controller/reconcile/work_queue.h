// The reconciler's work queue, with client-go's workqueue semantics: a key (namespace/name) is
// queued at most once however often it is added; a key being processed is never handed to a
// second worker, and if it is added meanwhile it is queued again when the first worker is Done;
// AddAfter schedules a key for later (the per-object interval, retries with back-off). Keys come
// out in the order they became due. Thread-safe; ShutDown wakes every waiting Get.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_WORK_QUEUE_H_
#define TWINSCALE_CONTROLLER_RECONCILE_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace twinscale::reconcile {

class WorkQueue {
 public:
  // `clock` says when delayed keys are due. With a ManualClock, call Poke() after advancing it.
  explicit WorkQueue(const Clock* clock) : clock_(clock) {}
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` now (no-op when it is already queued).
  void Add(const std::string& key);
  // Queues `key` once `delay` has passed; an earlier schedule of the same key wins.
  void AddAfter(const std::string& key, absl::Duration delay);
  // The next due key, waiting for one; nullopt after ShutDown. The caller must call Done(key).
  std::optional<std::string> Get();
  // As Get, but gives up after waiting about `timeout` (nullopt): for loops that also check other
  // things. The wait is counted in slices, not read from the clock (see the .cc).
  std::optional<std::string> GetFor(absl::Duration timeout);
  void Done(const std::string& key);
  // Drops a key's pending schedule (the object was deleted). A worker holding it is unaffected.
  void Forget(const std::string& key);

  void ShutDown();
  bool shutting_down() const;
  // Wakes waiters to re-check delayed keys against the clock.
  void Poke() { cv_.SignalAll(); }
  // Keys queued or scheduled, not counting the ones being processed.
  size_t Len() const;

 private:
  void PromoteDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<std::string> TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled when a key is queued or scheduled, on Poke and on ShutDown
  std::deque<std::string> ready_ ABSL_GUARDED_BY(mu_);
  // In ready_ (or to be re-queued once done: dirty).
  std::set<std::string> queued_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_while_processing_ ABSL_GUARDED_BY(mu_);
  // Delayed keys and when they are due.
  std::map<std::string, absl::Time> scheduled_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace twinscale::reconcile

#endif  // TWINSCALE_CONTROLLER_RECONCILE_WORK_QUEUE_H_
