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
  queue_.push(Entry{at, now_, band_bit | next_seq_++, handler, tag});
}

void Simulation::ScheduleAsIf(SimTime at, SimTime scheduled_at, EventHandler* handler,
                              uint64_t tag) {
  if (at < now_ || at < scheduled_at) {
    std::cerr << "twinscale::sim::Simulation: ScheduleAsIf out of order (now " << now_.nanos()
              << ", as if at " << scheduled_at.nanos() << ", at " << at.nanos() << ")\n";
    std::abort();
  }
  queue_.push(Entry{at, scheduled_at, next_seq_++, handler, tag});
}

void Simulation::FireTop() {
  Entry e = queue_.top();
  queue_.pop();
  now_ = e.at;
  ++events_fired_;
  current_ = Position{true, e.at, (e.seq >> 63) != 0, e.scheduled_at};
  e.handler->OnEvent(e.tag, now_);
  current_.in_event = false;
}

int64_t Simulation::RunUntil(SimTime until) {
  const int64_t before = events_fired_;
  stopped_ = false;
  horizon_ = until;
  while (!queue_.empty() && queue_.top().at <= until && !stopped_) FireTop();
  if (!stopped_ && now_ < until) now_ = until;
  horizon_ = now_;
  return events_fired_ - before;
}

int64_t Simulation::Run() {
  const int64_t before = events_fired_;
  stopped_ = false;
  horizon_ = SimTime::Max();
  while (!queue_.empty() && !stopped_) FireTop();
  horizon_ = now_;
  return events_fired_ - before;
}

}  // namespace twinscale::sim
