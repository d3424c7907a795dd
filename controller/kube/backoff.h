// Capped exponential backoff with jitter, for retrying the API server after a failure: the n-th
// consecutive failure waits about initial x factor^(n-1), never more than max, each wait spread
// by +-jitter so that many controllers restarting together don't hammer the server in step.
// Thread-compatible (one per retry loop).
#ifndef TWINSCALE_CONTROLLER_KUBE_BACKOFF_H_
#define TWINSCALE_CONTROLLER_KUBE_BACKOFF_H_

#include <cstdint>

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace twinscale::kube {

struct BackoffPolicy {
  absl::Duration initial = absl::Seconds(1);
  absl::Duration max = absl::Seconds(30);
  double factor = 2.0;  // >= 1
  double jitter = 0.2;  // each wait is uniform in [d x (1 - jitter), d x (1 + jitter)], <= max
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}) : policy_(policy) {}

  // The wait before the next attempt, and counts one more failure.
  absl::Duration Next();
  // After a success: the next failure waits `initial` again.
  void Reset() { failures_ = 0; }
  int64_t failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  int64_t failures_ = 0;
  absl::BitGen random_;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_BACKOFF_H_
