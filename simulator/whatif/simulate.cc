// One simulated run: see simulate.h.
#include "simulator/whatif/simulate.h"

#include <algorithm>

#include "simulator/core/simulation.h"

namespace twinscale::sim {

SimulateResult Simulate(const SimulateOptions& options, RequestSource& source) {
  Simulation sim;
  RunStats stats(options.slo);
  if (options.record_sink) stats.set_record_sink(options.record_sink);
  if (options.itl_threshold > SimDuration::Zero()) stats.set_itl_threshold(options.itl_threshold);
  Fleet fleet(sim, options.fleet, &stats);
  fleet.AttachSource(&source);

  SimulateResult result;
  // Run in slices so progress and the in-flight peak can be sampled without touching the hot path.
  const SimDuration slice = options.progress_every > SimDuration::Zero() ? options.progress_every
                                                                         : SimDuration::Seconds(10);
  SimTime next = SimTime::Zero() + slice;
  while (!sim.Empty()) {
    const SimTime until = std::min(next, options.hard_stop);
    result.events += sim.RunUntil(std::min(until, sim.NextEventTime() > until ? until : until));
    result.peak_in_flight =
        std::max(result.peak_in_flight, fleet.in_flight() + fleet.gateway_queue());
    if (options.progress) options.progress(sim.Now());
    if (sim.Now() >= options.hard_stop) break;
    next = next + slice;
    // Skip idle stretches quickly.
    if (!sim.Empty() && sim.NextEventTime() > next) {
      const int64_t skip = (sim.NextEventTime() - next).nanos() / slice.nanos();
      next = next + slice * skip;
    }
  }
  result.end = sim.Now();
  fleet.FinalizeStats(result.end);
  result.summary = stats.Summarize(fleet.waiting() + fleet.gateway_queue(), fleet.running());
  return result;
}

}  // namespace twinscale::sim
