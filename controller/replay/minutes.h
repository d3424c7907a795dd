// How a replay counts a trace's minutes for the target's share of minutes, in the policies'
// summaries (replay_driver.h) and in the oracles (oracle.h) alike: minute k holds the arrivals of
// [60k, 60k + 60) s from the first, and the trace's last minute, which its last arrival ends,
// weighs the part of it the trace covers. Pure.
#ifndef TWINSCALE_CONTROLLER_REPLAY_MINUTES_H_
#define TWINSCALE_CONTROLLER_REPLAY_MINUTES_H_

#include <cstdint>

#include "simulator/core/time.h"

namespace twinscale::replay {

inline constexpr sim::SimDuration kReplayMinute = sim::SimDuration::Seconds(60);

// The minute holding an arrival at `t` (from the trace's first arrival).
inline int64_t MinuteOf(sim::SimTime t) { return t.nanos() / kReplayMinute.nanos(); }

// The weight of the minute holding the trace's last arrival: the seconds from that minute's start
// to the last arrival, rounded up to a whole second, over 60; 0 when the last arrival opens the
// minute. A last "minute" of 22 seconds is about a third of a minute of traffic, not a whole one.
// Rounded up because a trace runs on past its last arrival: a day played from a rate curve whose
// last arrival comes 20 ms before the day's end covers its last minute whole (weight 1), where
// 0.9997 would turn 171 minutes met of 180 (the 95% a target asks, to the minute) into a miss.
inline double LastMinuteWeight(sim::SimTime last_arrival) {
  const int64_t into = last_arrival.nanos() - MinuteOf(last_arrival) * kReplayMinute.nanos();
  const int64_t second = sim::SimDuration::Seconds(1).nanos();
  const int64_t seconds = (into + second - 1) / second;
  return static_cast<double>(seconds) / 60.0;
}

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_MINUTES_H_
