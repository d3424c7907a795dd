// The zero-lag oracle: the lower bound of a replay report (DESIGN.md section 8). For every minute
// of the trace it takes the smallest fleet that meets the TTFT SLO for that minute's arrivals as
// if replicas appeared and vanished instantly, and sums those fleets into GPU-hours.
//
// Each minute [60k, 60k + 60) s is simulated on its own, from an empty fleet of N Ready replicas
// (no warm-up, no slow start), with the truth fleet (the deployment perturbed as the replay's
// truth is), its arrivals only, run until they have all left; N meets the SLO when at least
// slo.percentile% of those arrivals meet their TTFT target (rejected ones are misses), as
// sim::MeetsTtftSlo judges a capacity answer. The smallest such N is what sim::FindReplicas would
// return for the minute's requests; the search here gets the same answer more cheaply by starting
// from the previous minute's N (neighbouring minutes need similar fleets): it probes N, then
// gallops down (N-1, N-2, N-4, ...) or up (N+1, N+2, N+4, ...) to the first probe on the other
// side, then bisects. Like FindReplicas it assumes that meeting the SLO is monotone in N, and all
// candidates of a minute share its random numbers (run = the minute's index).
//
// A minute that even max_replicas can't bring to the percentile (a request whose prefill alone
// exceeds the SLO, in a minute with few requests) takes the smallest N reaching the attainment
// max_replicas reaches: more replicas would not help it. A minute without arrivals takes
// min_replicas (the fleet never goes below it; v1alpha1 has no scale to zero). Every minute up to
// the last arrival's counts whole: GPU-hours = sum of N x tensor_parallel x 60 s.
//
// Pure and deterministic for a seed; thread-safe (no shared state).
#ifndef TWINSCALE_CONTROLLER_REPLAY_ORACLE_H_
#define TWINSCALE_CONTROLLER_REPLAY_ORACLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/replay/truth.h"
#include "simulator/model/deployment.h"
#include "simulator/model/router.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/trace.h"

namespace twinscale::replay {

struct OracleOptions {
  int32_t min_replicas = 1;
  int32_t max_replicas = 256;
  sim::RouterKind router = sim::RouterKind::kLeastRequests;  // before Truth::routing
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";
};

struct OracleMinute {
  int32_t replicas = 0;
  int64_t requests = 0;
  double attainment = 1;  // of `replicas` on this minute
  bool meets_slo = true;  // false: even max_replicas couldn't (see above)
};

struct OracleResult {
  double gpu_hours = 0;
  int32_t max_replicas = 0;
  int64_t unmeetable_minutes = 0;
  int64_t simulations = 0;  // candidate runs, for the curious
  std::vector<OracleMinute> minutes;
};

// InvalidArgument for 1 > min_replicas or max_replicas < min_replicas, or a deployment that fails
// sim::ValidateDeployment.
absl::StatusOr<OracleResult> Oracle(const sim::Trace& trace, const sim::DeploymentSpec& deployment,
                                    const Truth& truth, const sim::TtftSlo& slo, uint64_t seed,
                                    const OracleOptions& options = {});

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_ORACLE_H_
