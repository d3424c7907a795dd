// Calibration of the twin's speed: see calibration.h.
//
// A second factor would come from vllm:request_prefill_time_seconds (first scheduled to first
// token: the steps that computed the prompt, decodes and other prompts included) matched the
// same way, the two fits alternated until both hold; left for when a truth differs from the
// profile in prefill and decode unequally.
#include "controller/twin/calibration.h"

#include <algorithm>
#include <cmath>

namespace twinscale::twin {

const CalibrationState& Calibrator::Update(const state::FleetSnapshot& snap,
                                           const policy::ForecastQuestion& observed,
                                           const TwinForecaster& twin) {
  const state::WorkloadEstimate& w = snap.workload;
  if (!w.itl_mean_seconds.usable() || w.itl_mean_seconds.value() <= 0 ||
      w.running_per_ready < options_.min_running || observed.ready.empty() ||
      !(observed.arrival_rate >= 0)) {
    return state_;
  }
  const double target = w.itl_mean_seconds.value();
  // The window as the twin should replay it: the Ready replicas as observed, nothing else coming,
  // every request judged (only its inter-token latency is used).
  policy::ForecastQuestion q = observed;
  q.candidate_replicas = static_cast<int32_t>(q.ready.size());
  q.pending_ready_in.clear();
  q.horizon = options_.window;
  q.judge_from = absl::ZeroDuration();
  auto itl_at = [&](double speed) {
    return twin.MeanInterTokenLatencySeconds(q, sim::SpeedFactors{speed, speed});
  };
  // The twin's mean falls as the speed rises: bisect the log of the speed. Outside the bounds
  // the answer is the bound.
  double lo = options_.min_factor, hi = options_.max_factor;
  int32_t steps = options_.bisections;
  if (state_.updates > 0) {
    const double f = state_.speed.decode;
    lo = std::max(options_.min_factor, f / options_.bracket);
    hi = std::min(options_.max_factor, f * options_.bracket);
    steps = std::max(1, options_.bisections - 2);
  }
  if (!(itl_at(lo) > 0)) return state_;  // no gaps simulated: nothing to match
  for (int32_t i = 0; i < steps; ++i) {
    const double mid = std::sqrt(lo * hi);
    if (itl_at(mid) > target) {
      lo = mid;  // the twin at this speed is still slower than the fleet: speed up
    } else {
      hi = mid;
    }
  }
  const double ratio = std::sqrt(lo * hi);  // < 1: the fleet is slower than the profile
  state_.last_observed_ratio = ratio;
  const double a = state_.updates == 0 ? 1.0 : options_.smoothing;
  const double f = std::clamp((1 - a) * state_.speed.decode + a * ratio, options_.min_factor,
                              options_.max_factor);
  state_.speed.decode = state_.speed.prefill = f;
  ++state_.updates;
  return state_;
}

}  // namespace twinscale::twin
