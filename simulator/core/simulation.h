// The discrete-event kernel: one Simulation object per run (no global simulator, unlike ns-3), one
// event queue ordered by (time, band, scheduling time, sequence) so ties fire in the order they
// were scheduled (the scheduling time only matters for ScheduleAsIf: for every other event it grows
// with the sequence), and a clock that never goes backwards. Handlers are plain objects
// implementing EventHandler; an event carries a 64-bit tag the handler interprets (event_tag.h
// packs it). Cancellation is lazy: a handler that no longer wants an event (e.g. a replica's step
// after it was removed) checks its own state and ignores it.
//
// Events at the same instant fire in two bands: ordinary events first (arrivals, step ends,
// lifecycle), then "late" ones (Band::kLate), so an engine woken by an arrival starts its step only
// after every request arriving at that same instant has been queued, as a real engine loop drains
// its input queue before scheduling.
//
// Coalesced engine steps (replica.h) need two more things from the kernel: the horizon of the
// RunUntil in progress (a replica advances several steps in one event only when all of them end by
// then, so that whoever reads it after RunUntil returns sees it exactly as stepping one by one
// would leave it), and ScheduleAsIf, which orders an event among ties as if it had been scheduled
// at another time than now (the start of the last coalesced step). An event handler can also ask
// for the ordering position of the event it runs in (CurrentEvent), to tell which of a replica's
// coalesced step ends come before it.
//
// Thread-safety: none; a Simulation is confined to one thread. Several Simulations may run side by
// side on different threads (what-ifs), since nothing here is shared.
#ifndef TWINSCALE_SIMULATOR_CORE_SIMULATION_H_
#define TWINSCALE_SIMULATOR_CORE_SIMULATION_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "simulator/core/time.h"

namespace twinscale::sim {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void OnEvent(uint64_t tag, SimTime now) = 0;
};

class Simulation {
 public:
  enum class Band : uint8_t { kNormal = 0, kLate = 1 };

  Simulation() = default;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  SimTime Now() const { return now_; }

  // Schedules handler->OnEvent(tag, at). Precondition: at >= Now().
  void Schedule(SimTime at, EventHandler* handler, uint64_t tag, Band band = Band::kNormal);
  void ScheduleAfter(SimDuration d, EventHandler* handler, uint64_t tag) {
    Schedule(now_ + d, handler, tag);
  }
  // Schedules a normal-band event at `at` (>= Now()) that ties with the events at `at` as if it had
  // been scheduled at `scheduled_at` (<= at, earlier or later than Now()): after those scheduled
  // before that instant, before those scheduled after it; among those scheduled at that very
  // instant, in scheduling order.
  void ScheduleAsIf(SimTime at, SimTime scheduled_at, EventHandler* handler, uint64_t tag);

  // Where the event being fired sits in the order: its time, band and scheduling time. Outside an
  // event (between RunUntil calls) `in_event` is false: everything up to Now() has happened.
  struct Position {
    bool in_event = false;
    SimTime at;
    bool late = false;
    SimTime scheduled_at;
  };
  const Position& CurrentEvent() const { return current_; }
  // The time up to which the RunUntil in progress runs (SimTime::Max() in Run()); Now() outside
  // both, so that nothing is advanced past what a caller can observe.
  SimTime Horizon() const { return horizon_; }

  // Runs events with time <= until (inclusive); afterwards Now() == until unless the queue drained
  // earlier, in which case Now() is also advanced to until. Returns the number of events fired.
  int64_t RunUntil(SimTime until);
  // Runs until the queue is empty or Stop() is called by a handler. A replica stopped in the middle
  // of coalesced steps (replica.h) still shows the state of their first step until they end: read
  // replicas after Stop() only with coalescing off.
  int64_t Run();
  void Stop() { stopped_ = true; }

  bool Empty() const { return queue_.empty(); }
  SimTime NextEventTime() const { return queue_.empty() ? SimTime::Max() : queue_.top().at; }
  int64_t events_fired() const { return events_fired_; }

 private:
  struct Entry {
    SimTime at;
    SimTime scheduled_at;
    uint64_t seq;  // band in the top bit, then the scheduling order
    EventHandler* handler;
    uint64_t tag;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.at != b.at) return a.at > b.at;
      if ((a.seq ^ b.seq) >> 63) return a.seq > b.seq;  // bands differ: normal first
      if (a.scheduled_at != b.scheduled_at) return a.scheduled_at > b.scheduled_at;
      return a.seq > b.seq;
    }
  };
  void FireTop();

  SimTime now_ = SimTime::Zero();
  uint64_t next_seq_ = 0;
  int64_t events_fired_ = 0;
  bool stopped_ = false;
  SimTime horizon_ = SimTime::Zero();
  Position current_;
  std::priority_queue<Entry, std::vector<Entry>, Later> queue_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_SIMULATION_H_
