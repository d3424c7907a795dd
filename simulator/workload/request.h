// A request as the workload describes it: when it arrives at the fleet's front door, how long its
// prompt is, how many tokens it will generate, and (optionally) the chained hashes of its prompt's
// prefix blocks for the prefix cache. The engine's per-request bookkeeping lives in the replica,
// not here. Plain value; no behaviour.
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_REQUEST_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_REQUEST_H_

#include <cstdint>
#include <vector>

#include "simulator/core/time.h"

namespace twinscale::sim {

struct RequestSpec {
  uint64_t id = 0;
  SimTime arrival;            // arrival at the fleet's front end (gateway / Service)
  int32_t prompt_tokens = 1;  // >= 1
  int32_t output_tokens = 1;  // >= 1: the first token comes from the prefill
  // Mooncake-style prefix ids, one per 512-token block of the prompt (empty when unknown).
  std::vector<uint64_t> prefix_hashes;
  // For a replica without a prefix cache: the leading prompt tokens to take as found cached at the
  // request's first admission (whole blocks, short of the last token), where the traffic's reuse
  // is known only as a share, not by prefix ids (the twin: controller/twin/fleet_arrival_source.h).
  // Ignored by a replica with a prefix cache, and after a preemption (the request recomputes).
  int32_t assumed_cached_tokens = 0;
};

// A pull-based source of requests in non-decreasing arrival order, so a run holds only the
// requests in flight, never the whole workload. Next() returns false when the source is exhausted.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual bool Next(RequestSpec& out) = 0;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_REQUEST_H_
