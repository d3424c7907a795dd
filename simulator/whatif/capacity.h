// The capacity question: "how many replicas does this workload need so that the TTFT SLO holds at
// its percentile?" Each candidate fleet runs the same arrivals and lengths (common random numbers:
// the source factory is called afresh with the same seed for each), fully ready from the start
// (steady-state capacity; warm-up lag is the policy's business). The answer is monotone in N, so
// the search doubles from `min_replicas` until a fleet meets the SLO, then bisects.
#ifndef TWINSCALE_SIMULATOR_WHATIF_CAPACITY_H_
#define TWINSCALE_SIMULATOR_WHATIF_CAPACITY_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/whatif/simulate.h"

namespace twinscale::sim {

struct CapacityQuestion {
  SimulateOptions base;  // base.fleet.initial_replicas is ignored
  std::function<std::unique_ptr<RequestSource>()> make_source;
  int32_t min_replicas = 1;
  int32_t max_replicas = 512;
  // Called after each candidate ran (for progress output).
  std::function<void(int32_t replicas, const RunSummary&)> on_candidate;
};

struct CapacityCandidate {
  int32_t replicas;
  RunSummary summary;
  bool meets_slo;
};

struct CapacityAnswer {
  int32_t replicas = 0;                  // smallest fleet meeting the SLO
  RunSummary summary;                    // of that fleet
  std::vector<CapacityCandidate> tried;  // in the order tried
};

// Meets the SLO: at least percentile% of all requests (rejected ones count as misses) have TTFT
// within their target.
bool MeetsTtftSlo(const RunSummary& s, const TtftSlo& slo);

// NotFound when even max_replicas misses the SLO (the answer then lists what was tried).
absl::StatusOr<CapacityAnswer> FindReplicas(const CapacityQuestion& question);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WHATIF_CAPACITY_H_
