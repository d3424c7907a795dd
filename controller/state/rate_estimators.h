// The arrival-rate estimators behind a snapshot's workload (fleet_snapshot.h's WorkloadEstimate)
// and a Prometheus history's (controller/replay/history_trace.h): from per-interval arrival counts,
// their burstiness (AllanDispersion), the rate's level (LevelOf) and how long a departure from it
// lasts (RatePersistence). Pure functions of the counts: no state, no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_STATE_RATE_ESTIMATORS_H_
#define TWINSCALE_CONTROLLER_STATE_RATE_ESTIMATORS_H_

#include <cstdint>
#include <deque>
#include <vector>

namespace twinscale::state {

// The index of dispersion (variance / mean) of successive per-interval arrival counts, estimated
// from successive differences (an Allan-variance estimate): for Poisson counts
// E[(c_i - c_{i-1})^2] = 2 x mean whatever the slow trend, so a ramp in the rate is not mistaken
// for burstiness within an interval. Poisson: 1; a renewal process with gap CV c: about c^2 over
// intervals much longer than a gap. Unclamped; 1 when there are fewer than 2 counts or their mean
// is not positive. Used for live snapshots (fleet_snapshot.h) and for a Prometheus history
// (controller/replay/history_trace).
double AllanDispersion(const std::vector<double>& counts);

// The level of the arrival rate behind per-interval `counts` (oldest first; `window_s` their
// lengths): the mean over the newest `level_intervals` (capped at max_intervals and the history),
// unless the newest short_intervals depart from the intervals before them (within the span) by more
// than shift_z standard errors, where each interval's count has variance dispersion x its mean:
// then the level shifted and restarts at those short_intervals. The caller keeps `intervals` and
// passes it + 1 with the next count, so the level grows back to max_intervals after a shift.
struct RateLevel {
  double rate = 0;        // requests per second; 0 without counts
  int32_t intervals = 0;  // the newest intervals averaged
  bool shifted = false;
};
RateLevel LevelOf(const std::deque<double>& counts, const std::deque<double>& window_s,
                  int32_t level_intervals, int32_t short_intervals, int32_t max_intervals,
                  double dispersion, double shift_z);

// How much of the rate's departure from its baseline lasts, k intervals ahead, on this traffic:
// for each k in 1..max_lag, the least-squares weight b_k in
//   rate[t + k] - baseline(t) = b_k x (recent(t) - baseline(t)),
// fitted over the history `counts` (oldest first; `window_s` their lengths), where recent(t) is the
// mean rate over the short_intervals ending at t (the span over which LevelOf finds a shift) and
// baseline(t) the mean over the baseline_intervals ending at t. Clamped to [0, 1]. Empty when
// fewer than min_pairs pairs fit the shortest lag or the departures are all zero (the level then
// holds: forecaster.h). A lag with fewer than min_pairs pairs takes the previous lag's weight.
// Why: a shift the level test found is a burst or a new level, and only the history tells which.
// On the Azure code trace at x20 a minute's burst is gone within the warm-up (the weights: about
// 0.4, 0.2, 0.2, then 0-0.08 at the fourth 15 s interval and 0 from the fifth on), and forecasting
// it to last sizes the fleet for a peak that is over before the new replicas are Ready: on one
// such minute (replay seed 2) that takes a fleet from 19 to 31 replicas, held for the
// stabilization window after it. On traffic that steps or ramps, the departure lasts and the
// weights stay near 1. A departure the weights call brief still reaches the twin for the intervals
// it lasts, and a level that holds becomes the baseline within its 5 minutes.
std::vector<double> RatePersistence(const std::deque<double>& counts,
                                    const std::deque<double>& window_s, int32_t short_intervals,
                                    int32_t baseline_intervals, int32_t max_lag, int32_t min_pairs);

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_RATE_ESTIMATORS_H_
