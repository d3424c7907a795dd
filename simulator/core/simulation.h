// The discrete-event kernel: one Simulation object per run (no global simulator, unlike ns-3), one
// event queue ordered by (time, sequence) so ties fire in the order they were scheduled, and a clock
// that never goes backwards. Handlers are plain objects implementing EventHandler; an event carries a
// 64-bit tag the handler interprets. Cancellation is lazy: a handler that no longer wants an event
// (e.g. a replica's step after it was removed) checks its own state and ignores it.
//
// Events at the same instant fire in two bands: ordinary events first (arrivals, step ends, lifecycle),
// then "late" ones (Band::kLate), so an engine woken by an arrival starts its step only after every
// request arriving at that same instant has been queued, as a real engine loop drains its input
// queue before scheduling.
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

  // Runs events with time <= until (inclusive); afterwards Now() == until unless the queue drained
  // earlier, in which case Now() is also advanced to until. Returns the number of events fired.
  int64_t RunUntil(SimTime until);
  // Runs until the queue is empty or Stop() is called by a handler.
  int64_t Run();
  void Stop() { stopped_ = true; }

  bool Empty() const { return queue_.empty(); }
  SimTime NextEventTime() const { return queue_.empty() ? SimTime::Max() : queue_.top().at; }
  int64_t events_fired() const { return events_fired_; }

 private:
  struct Entry {
    SimTime at;
    uint64_t seq;  // band in the top bit, then the scheduling order
    EventHandler* handler;
    uint64_t tag;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.at != b.at) return a.at > b.at;
      return a.seq > b.seq;
    }
  };
  void FireTop();

  SimTime now_ = SimTime::Zero();
  uint64_t next_seq_ = 0;
  int64_t events_fired_ = 0;
  bool stopped_ = false;
  std::priority_queue<Entry, std::vector<Entry>, Later> queue_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_SIMULATION_H_
