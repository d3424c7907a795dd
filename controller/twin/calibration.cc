// Calibration of the twin's speed: see calibration.h.
#include "controller/twin/calibration.h"

#include <algorithm>
#include <cmath>

namespace twinscale::twin {

Calibrator::Calibrator(sim::DeploymentSpec deployment, CalibrationOptions options)
    : deployment_(std::move(deployment)),
      options_(options),
      model_(sim::MakeLatencyModel(deployment_, {})) {}

double Calibrator::PredictedStepSeconds(double running, double kv_usage,
                                        double prefills_per_second, double prompt_tokens,
                                        double speed) const {
  const std::unique_ptr<sim::LatencyModel> scaled =
      speed == 1.0 ? nullptr : sim::MakeLatencyModel(deployment_, {speed, speed});
  const sim::LatencyModel& model = scaled ? *scaled : *model_;
  sim::BatchShape decode;
  decode.decode_seqs = static_cast<int64_t>(std::llround(running));
  const double capacity = static_cast<double>(sim::KvCapacityTokens(deployment_));
  decode.decode_context_tokens = static_cast<int64_t>(std::llround(kv_usage * capacity));
  const double t0 = model.StepTime(decode).seconds();  // a step of decodes alone
  if (prefills_per_second <= 0 || prompt_tokens < 1) return t0;
  // A prompt arrives as one chunk (up to the budget) in one step: such steps are compute-bound
  // and much longer than decode-only ones, so averaging the prefill tokens over all steps would
  // understate the mean (max() is convex). With steps back to back, the share of steps carrying
  // a prefill is f = lambda x t_mean, and t_mean = f T1 + (1 - f) T0, so
  // t_mean = T0 / (1 - lambda (T1 - T0)).
  sim::BatchShape mixed = decode;
  const double budget = std::max(1.0, deployment_.engine.max_num_batched_tokens - running);
  const double p = std::min(prompt_tokens, budget);
  const double chunks = std::ceil(prompt_tokens / budget);
  mixed.prefill_seqs = 1;
  mixed.prefill_tokens = static_cast<int64_t>(std::llround(p));
  mixed.prefill_attention_pairs = p * (p + 1) / 2;
  const double t1 = model.StepTime(mixed).seconds();
  const double load = prefills_per_second * chunks * (t1 - t0);
  if (load >= 0.95) return t0 / 0.05;  // saturated by prefills: the model says "very slow"
  return t0 / (1 - load);
}

const CalibrationState& Calibrator::Update(const state::FleetSnapshot& snap) {
  const state::WorkloadEstimate& w = snap.workload;
  if (!w.itl_mean_seconds.usable() || w.itl_mean_seconds.value() <= 0 ||
      w.running_per_ready < options_.min_running || snap.ready() == 0) {
    return state_;
  }
  const double observed = w.itl_mean_seconds.value();
  // Prefill tokens per step: the window's arrivals per Ready replica times their prompt length,
  // spread over the steps the replica ran (one step per observed inter-token interval).
  const double rate = w.arrival_rate.usable() ? w.arrival_rate.value() : 0.0;
  const double prompt = w.prompt_tokens_mean.usable() ? w.prompt_tokens_mean.value() : 0.0;
  // The speed at which the model reproduces the observed mean step: predicted(speed) falls as
  // speed rises, so bisect. (The mean step is not proportional to the speed: prefill-heavy steps
  // amplify a slowdown, which is why the plain ratio predicted(1) / observed would overshoot.)
  const double per_replica = rate / snap.ready();
  auto predicted = [&](double speed) {
    return PredictedStepSeconds(w.running_per_ready, w.kv_usage_mean, per_replica, prompt, speed);
  };
  if (predicted(1.0) <= 0) return state_;
  double lo = options_.min_factor, hi = options_.max_factor;
  for (int i = 0; i < 20; ++i) {
    const double mid = (lo + hi) / 2;
    if (predicted(mid) > observed) {
      lo = mid;  // the model at this speed is still slower than the fleet: speed up
    } else {
      hi = mid;
    }
  }
  const double ratio = (lo + hi) / 2;  // < 1: the fleet is slower than the profile
  state_.last_observed_ratio = ratio;
  const double a = state_.updates == 0 ? 1.0 : options_.smoothing;
  const double f = std::clamp((1 - a) * state_.speed.decode + a * ratio, options_.min_factor,
                              options_.max_factor);
  state_.speed.decode = state_.speed.prefill = f;
  ++state_.updates;
  return state_;
}

}  // namespace twinscale::twin
