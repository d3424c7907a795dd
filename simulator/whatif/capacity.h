// The capacity question: "how many replicas does this workload need so that the TTFT SLO holds at
// its percentile?" (and, when asked, the inter-token latency objective). Each candidate fleet runs
// the same arrivals and lengths (common random numbers: the source factory is called afresh with
// the same seed for each), fully ready from the start (steady-state capacity; warm-up lag is the
// policy's business). The answer is monotone in N, so the search doubles from `min_replicas` (or
// halves from a start that meets) until it brackets the answer, then bisects.
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
  // Where the search begins (0: min_replicas): a fleet there that meets the SLO is followed by
  // halving down to a miss, one that misses by doubling up, then bisection. A good guess (the
  // arithmetic capacity, an earlier answer) saves the runs of tiny, hopelessly overloaded fleets,
  // which cost the most: their backlogs take longest to drain.
  int32_t start_replicas = 0;
  // An inter-token latency objective besides the TTFT SLO: at least this percentage of output
  // tokens (0: none) come within base.itl_threshold of the token before.
  double itl_percentile = 0;
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
// The question's objective: the TTFT SLO and, with itl_percentile > 0, the ITL objective (a run
// that produced no output token meets it).
bool MeetsObjective(const RunSummary& s, const CapacityQuestion& q);

// NotFound when even max_replicas misses the SLO (the answer then lists what was tried).
absl::StatusOr<CapacityAnswer> FindReplicas(const CapacityQuestion& question);

// The question under several seeds, because one seed's answer can sit on a cliff (10 replicas
// meeting the SLO under one draw of arrivals and missing it under the next).
struct SeededCapacityAnswer {
  int32_t replicas = 0;  // the smallest fleet meeting the SLO under every seed
  int32_t fewest = 0;    // the smallest single-seed answer (the spread is fewest..replicas)
  std::vector<uint64_t> seeds;
  std::vector<CapacityAnswer> per_seed;  // each seed's own search
  std::vector<RunSummary> at_answer;     // each seed's run at `replicas`
  std::vector<RunSummary> one_fewer;     // each seed's run at `replicas - 1` (empty at the minimum)
};

// Runs FindReplicas once per seed (`make_source(seed)` and the fleet's seed both set from it),
// then the largest single-seed answer under every seed, one replica more while any seed misses
// there (the SLO is monotone in the fleet for one seed, not guaranteed across the draws of
// step noise). NotFound as FindReplicas; InvalidArgument for no seeds.
absl::StatusOr<SeededCapacityAnswer> FindReplicasOverSeeds(
    const CapacityQuestion& question, const std::vector<uint64_t>& seeds,
    const std::function<std::unique_ptr<RequestSource>(uint64_t seed)>& make_source);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WHATIF_CAPACITY_H_
