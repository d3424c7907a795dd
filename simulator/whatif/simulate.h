// Runs one fleet against one workload until every request has left (or a hard stop), and returns
// what it measured. The building block of `twinscale simulate`, of the capacity search and of the
// policy's what-if questions. Pure: no I/O, no wall clock (progress is reported through a callback
// in simulated time; the caller decides what to do with wall time).
#ifndef TWINSCALE_SIMULATOR_WHATIF_SIMULATE_H_
#define TWINSCALE_SIMULATOR_WHATIF_SIMULATE_H_

#include <cstdint>
#include <functional>

#include "simulator/core/time.h"
#include "simulator/model/fleet.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

struct SimulateOptions {
  FleetOptions fleet;
  TtftSlo slo;
  // > 0: count the output tokens that come more than this after the token before
  // (RunSummary::judged_itl_over), for an inter-token latency objective.
  SimDuration itl_threshold = SimDuration::Zero();
  // Stop here even if work remains (what is left is reported as queued/running). Max = drain all.
  SimTime hard_stop = SimTime::Max();
  // Called about every `progress_every` of simulated time with the current simulated time.
  std::function<void(SimTime)> progress;
  SimDuration progress_every = SimDuration::Seconds(10);
  // Per-request records, on demand.
  std::function<void(const RequestRecord&)> record_sink;
};

struct SimulateResult {
  RunSummary summary;
  int64_t events = 0;
  int64_t peak_in_flight = 0;  // requests inside the fleet (replicas + gateway) at the worst moment
  SimTime end;
};

SimulateResult Simulate(const SimulateOptions& options, RequestSource& source);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WHATIF_SIMULATE_H_
