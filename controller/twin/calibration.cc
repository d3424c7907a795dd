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
      w.itl_tokens < options_.min_itl_tokens || observed.ready.empty() ||
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
  q.rate_persistence.clear();  // the window as it was, at its level
  auto itl_at = [&](double speed) {
    return twin.MeanInterTokenLatencySeconds(q, sim::SpeedFactors{speed, speed});
  };
  // Secant steps on log(latency) against log(speed) (calibration.h); outside the bounds the
  // answer is the bound.
  double lo = options_.min_factor, hi = options_.max_factor;
  int32_t steps = options_.first_steps;
  double speed = 1.0;
  if (state_.updates > 0) {
    speed = state_.speed.decode;
    lo = std::max(options_.min_factor, speed / options_.bracket);
    hi = std::min(options_.max_factor, speed * options_.bracket);
    steps = options_.later_steps;
  }
  speed = std::clamp(speed, lo, hi);
  double itl = itl_at(speed);
  if (!(itl > 0)) return state_;  // no gaps simulated: nothing to match
  double& exponent = exponent_;   // b in latency ~ speed^-b, as the last fit measured it
  auto step_from = [&](double s, double latency) {
    return std::clamp(s * std::pow(latency / target, 1 / exponent), lo, hi);
  };
  for (int32_t i = 0; i < steps; ++i) {
    const double next = step_from(speed, itl);
    if (std::abs(std::log(next / speed)) < 1e-3) break;  // there already
    const double next_itl = itl_at(next);
    if (!(next_itl > 0)) break;
    // The slope from two speeds close together is mostly the simulation's noise (a shifted step
    // boundary moves the mean a little): re-estimate it only from speeds 5% or more apart. With
    // the slope left as it was the step still moves toward the right factor, only not all the
    // way; the smoothing converges on the same fixed point.
    if (std::abs(std::log(next / speed)) >= 0.05) {
      const double b = -(std::log(next_itl) - std::log(itl)) / (std::log(next) - std::log(speed));
      if (std::isfinite(b)) exponent = std::clamp(b, 0.25, 8.0);
    }
    speed = next;
    itl = next_itl;
  }
  const double ratio = step_from(speed, itl);  // < 1: the fleet is slower than the profile
  state_.last_observed_ratio = ratio;
  const double a = state_.updates == 0 ? 1.0 : options_.smoothing;
  const double f = std::clamp((1 - a) * state_.speed.decode + a * ratio, options_.min_factor,
                              options_.max_factor);
  state_.speed.decode = state_.speed.prefill = f;
  ++state_.updates;
  return state_;
}

}  // namespace twinscale::twin
