// The shutdown signal; see cancellation.h.
#include "controller/kube/cancellation.h"

#include <utility>

namespace twinscale::kube {

void Cancellation::Cancel() {
  // Callbacks run under the lock so that Unregister() (which takes it) can promise the callback
  // is not running once it returns; they must not re-enter.
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  for (auto& [id, callback] : callbacks_) callback();
  callbacks_.clear();
}

bool Cancellation::IsCancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool Cancellation::WaitFor(absl::Duration d) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&cancelled_), d);
  return !cancelled_;
}

int64_t Cancellation::Register(std::function<void()> on_cancel) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) {
    on_cancel();
    return 0;
  }
  const int64_t id = next_id_++;
  callbacks_.emplace(id, std::move(on_cancel));
  return id;
}

void Cancellation::Unregister(int64_t id) {
  absl::MutexLock lock(&mu_);
  callbacks_.erase(id);
}

ScopedCancelCallback::ScopedCancelCallback(Cancellation* a, Cancellation* b,
                                           std::function<void()> on_cancel)
    : a_(a), b_(b) {
  if (a_ != nullptr) id_a_ = a_->Register(on_cancel);
  if (b_ != nullptr) id_b_ = b_->Register(on_cancel);
}

ScopedCancelCallback::~ScopedCancelCallback() {
  if (a_ != nullptr) a_->Unregister(id_a_);
  if (b_ != nullptr) b_->Unregister(id_b_);
}

}  // namespace twinscale::kube
