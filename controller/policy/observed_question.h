// The decision's first stage: the observed fleet as the twin's question. The Ready replicas'
// states, the starting pods that still count as capacity (with their remaining warm-up), the
// arrival rate's level and path, its burstiness and the lengths, the horizon and the SLO, aimed at
// the target's share of requests before the record moves it (aim.h). Every what-if of a decision
// starts from it; calibration replays it. Pure.
//
// A starting pod counts as future capacity with its remaining warm-up (E[T - age | T > age],
// approximated as max(expected - age, interval / 2)) until it is Unschedulable or older than the
// p99 warm-up; then it holds a slot of spec.replicas but no capacity (PendingNotCounted).
#ifndef TWINSCALE_CONTROLLER_POLICY_OBSERVED_QUESTION_H_
#define TWINSCALE_CONTROLLER_POLICY_OBSERVED_QUESTION_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/reason.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

struct ObservedFleet {
  ForecastQuestion question;               // no candidate size yet
  std::vector<NotCountedPod> not_counted;  // starting pods left out of capacity
  std::vector<Reason> reasons;             // PendingNotCounted when there are any
};
ObservedFleet ObserveFleet(const state::FleetSnapshot& snapshot, const PolicyConfig& config,
                           absl::Time now);

// ObserveFleet's question alone, at the snapshot's time.
ForecastQuestion ObservedQuestion(const state::FleetSnapshot& snapshot, const PolicyConfig& config);

// What the forecasts must show before the record moves the aim: the share of requests the target
// asks for, at least the SLO's percentile plus the minimum headroom, at most 99.5%.
double FullAim(const PolicyConfig& config);

// The twin's random numbers for the decision at `now`: the same for every candidate size (common
// random numbers), another at each decision, so a draw's error does not persist from one
// decision to the next. Deterministic for a given seed and clock.
uint64_t DecisionSeed(uint64_t seed, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_OBSERVED_QUESTION_H_
