// Capped exponential backoff; see backoff.h.
#include "controller/kube/backoff.h"

#include <algorithm>
#include <cmath>

namespace twinscale::kube {

absl::Duration Backoff::Next() {
  const double factor = std::max(1.0, policy_.factor);
  // Grow in floating point only up to the cap (factor^n overflows quickly otherwise).
  absl::Duration base = policy_.initial;
  for (int64_t i = 0; i < failures_ && base < policy_.max; ++i) base = base * factor;
  base = std::min(base, policy_.max);
  ++failures_;
  const double jitter = std::clamp(policy_.jitter, 0.0, 1.0);
  const double spread = jitter > 0 ? absl::Uniform(random_, 1.0 - jitter, 1.0 + jitter) : 1.0;
  return std::min(base * spread, policy_.max);
}

}  // namespace twinscale::kube
