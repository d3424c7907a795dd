// Event kernel: see simulation.h.
#include "simulator/core/simulation.h"

#include <cassert>
#include <cstdlib>
#include <iostream>

namespace twinscale::sim {

void Simulation::Schedule(SimTime at, EventHandler* handler, uint64_t tag, Band band) {
  if (at < now_) {
    // Time never goes backwards: a model bug, not an input error, so fail loudly in every build.
    std::cerr << "twinscale::sim::Simulation: event scheduled in the past (" << at.nanos() << " < "
              << now_.nanos() << ")\n";
    std::abort();
  }
  const uint64_t band_bit = band == Band::kLate ? (1ULL << 63) : 0;
  queue_.push(Entry{at, band_bit | next_seq_++, handler, tag});
}

void Simulation::FireTop() {
  Entry e = queue_.top();
  queue_.pop();
  now_ = e.at;
  ++events_fired_;
  e.handler->OnEvent(e.tag, now_);
}

int64_t Simulation::RunUntil(SimTime until) {
  const int64_t before = events_fired_;
  stopped_ = false;
  while (!queue_.empty() && queue_.top().at <= until && !stopped_) FireTop();
  if (!stopped_ && now_ < until) now_ = until;
  return events_fired_ - before;
}

int64_t Simulation::Run() {
  const int64_t before = events_fired_;
  stopped_ = false;
  while (!queue_.empty() && !stopped_) FireTop();
  return events_fired_ - before;
}

}  // namespace twinscale::sim
