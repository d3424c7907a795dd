// The warm reserve: replicas to keep ready beyond the steady need, so that a rise in traffic is
// served within the SLO while the replicas an autoscaler adds for it are still starting
// (provisioning + loading + warm-up: the profile's `lag`).
//
// The steady need at a rate r is ceil(r / mu) replicas, mu being what one replica serves within
// the SLO. An autoscaler that sizes the fleet for the rate of window i has that fleet until its
// new replicas are ready, `lag` later; over windows i..i+k (k = ceil(lag / window)) the traffic
// can rise to their largest rate. The reserve is the largest shortfall over the trace,
//   max over i of ceil(max(r_i..r_i+k) / mu) - ceil(r_i / mu),
// (0 for a trace that never rises within the lag). A step from r0 to r1 that lasts longer than a
// window needs ceil(r1 / mu) - ceil(r0 / mu).
//
// Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_WARM_RESERVE_H_
#define TWINSCALE_CONTROLLER_PLAN_WARM_RESERVE_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "simulator/workload/trace.h"

namespace twinscale::plan {

struct WarmReserve {
  int32_t replicas = 0;
  size_t at_window = 0;             // the window i where the largest shortfall starts
  double from_rps = 0, to_rps = 0;  // r_i and the largest rate within the lag after it
};

// `rates`: req/s per window of `window`; `per_replica_rps` > 0 (mu). A lag of zero still counts
// the next window: a decision takes one window to see a rate.
WarmReserve WarmReserveFor(const std::vector<double>& rates, absl::Duration window,
                           absl::Duration lag, double per_replica_rps);

// The arrival rate of each whole `window` of `trace` from its first arrival (req/s); a trace
// shorter than one window is one window of its own length.
std::vector<double> WindowRates(const sim::Trace& trace, absl::Duration window);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_WARM_RESERVE_H_
