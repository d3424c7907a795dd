// LargestHeldRate: the search behind a decision's advisory admission limit (admission_advice.h) —
// the largest fleet-wide arrival rate the serving replicas hold within the SLO — as a pure helper.
//
// The answer is wanted to within 1/64 of the arriving rate (kAdmissionResolution), below the
// largest rate that holds: six bisection steps over [0, arriving] give that. But the advice is
// asked at every decision while capacity can't keep up, and where it is asked at all (a fleet at
// maxReplicas under a load it can't serve: the Mooncake trace at x8, all hour) a plain bisection
// is 6 of a decision's 8.3 what-ifs, each a whole overloaded fleet. The serving fleet and its
// traffic change little from one decision to the next, so the search starts at the previous
// decision's answer and gallops from there (one resolution step, then twice as far each time) until
// the verdict turns, then bisects to the same resolution: two what-ifs when the answer has not
// moved by a step, and the advice the gateway enforces then stays exactly what it was instead of
// moving with each decision's grid. With no previous answer, or one not below the arriving rate, it
// bisects over [0, arriving]. (On that trace the backlog of 48 overloaded replicas is such that no
// rate is held at all: each decision then asks one what-if, at one step.)
//
// Like the replica searches (replica_search.h) it assumes the verdict is monotone: a rate that
// holds, every lower rate holds. The arriving rate itself is taken not to hold (the advice is
// asked because the fleet misses the SLO at it) and is never asked.
//
// Pure: no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_POLICY_ADMISSION_SEARCH_H_
#define TWINSCALE_CONTROLLER_POLICY_ADMISSION_SEARCH_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"

namespace twinscale::policy {

inline constexpr double kAdmissionResolution = 1.0 / 64;  // of the arriving rate

struct HeldRate {
  double max_arrival_rate = 0;  // req/s; 0 when even the lowest rate asked does not hold
  int32_t evaluations = 0;      // what-ifs asked
};

// `arriving` > 0: the fleet-wide arrival rate now (req/s); `previous`: the previous decision's
// answer, if it advised one (0 included: a fleet so backlogged that no new traffic would be
// served in time, where the search starts at one step); `holds(rate)`: whether the serving fleet
// holds the SLO at that rate.
HeldRate LargestHeldRate(double arriving, std::optional<double> previous,
                         absl::FunctionRef<bool(double)> holds);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_ADMISSION_SEARCH_H_
