// A de-duplicating work queue with delayed adds: see work_queue.h.
#include "controller/reconcile/work_queue.h"

#include <algorithm>

namespace twinscale::reconcile {

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  scheduled_.erase(key);
  if (processing_.count(key) != 0) {
    dirty_while_processing_.insert(key);
    return;
  }
  if (queued_.insert(key).second) ready_.push_back(key);
  cv_.Signal();
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  if (delay <= absl::ZeroDuration()) {
    Add(key);
    return;
  }
  absl::MutexLock lock(&mu_);
  if (shutdown_ || queued_.count(key) != 0) return;
  const absl::Time due = clock_->Now() + delay;
  auto [it, inserted] = scheduled_.emplace(key, due);
  if (!inserted && due < it->second) it->second = due;
  cv_.SignalAll();
}

void WorkQueue::PromoteDueLocked() {
  const absl::Time now = clock_->Now();
  // Due keys in due order (ties by key, so the order is deterministic).
  std::multimap<absl::Time, std::string> due;
  for (auto it = scheduled_.begin(); it != scheduled_.end();) {
    if (it->second <= now) {
      due.emplace(it->second, it->first);
      it = scheduled_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [t, key] : due) {
    if (processing_.count(key) != 0) {
      dirty_while_processing_.insert(key);
    } else if (queued_.insert(key).second) {
      ready_.push_back(key);
    }
  }
}

std::optional<std::string> WorkQueue::TakeLocked() {
  if (ready_.empty()) return std::nullopt;
  std::string key = std::move(ready_.front());
  ready_.pop_front();
  queued_.erase(key);
  processing_.insert(key);
  return key;
}

std::optional<std::string> WorkQueue::GetFor(absl::Duration timeout) {
  // The timeout is spent in waiting slices rather than measured on the clock: with a ManualClock
  // nobody may advance time while a worker waits, and the wait must still end.
  absl::Duration remaining = timeout;
  absl::MutexLock lock(&mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked();
    if (auto key = TakeLocked()) return key;
    if (remaining <= absl::ZeroDuration()) return std::nullopt;
    absl::Duration slice = std::min(remaining, absl::Milliseconds(200));
    const absl::Time now = clock_->Now();
    for (const auto& [key, due] : scheduled_) slice = std::min(slice, due - now);
    slice = std::max(slice, absl::Milliseconds(1));
    cv_.WaitWithTimeout(&mu_, slice);
    remaining -= slice;
  }
}

std::optional<std::string> WorkQueue::Get() {
  while (true) {
    if (auto key = GetFor(absl::Hours(1))) return key;
    if (shutting_down()) return std::nullopt;
  }
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_while_processing_.erase(key) != 0 && !shutdown_) {
    if (queued_.insert(key).second) ready_.push_back(key);
    cv_.Signal();
  }
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  scheduled_.erase(key);
  dirty_while_processing_.erase(key);
  if (queued_.erase(key) != 0) {
    for (auto it = ready_.begin(); it != ready_.end(); ++it) {
      if (*it == key) {
        ready_.erase(it);
        break;
      }
    }
  }
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  cv_.SignalAll();
}

bool WorkQueue::shutting_down() const {
  absl::MutexLock lock(&mu_);
  return shutdown_;
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return ready_.size() + scheduled_.size();
}

}  // namespace twinscale::reconcile
