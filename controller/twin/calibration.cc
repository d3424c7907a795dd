// Calibration of the twin's speed: see calibration.h.
#include "controller/twin/calibration.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace twinscale::twin {

Calibrator::Calibrator(sim::DeploymentSpec deployment, CalibrationOptions options)
    : deployment_(std::move(deployment)),
      options_(options),
      model_(sim::MakeLatencyModel(deployment_, {})) {}

double Calibrator::PredictedStepSeconds(double running, double kv_usage,
                                        double prefills_per_second,
                                        const std::vector<std::pair<double, double>>& prompts,
                                        double speed) const {
  const std::unique_ptr<sim::LatencyModel> scaled =
      speed == 1.0 ? nullptr : sim::MakeLatencyModel(deployment_, {speed, speed});
  const sim::LatencyModel& model = scaled ? *scaled : *model_;
  sim::BatchShape decode;
  decode.decode_seqs = static_cast<int64_t>(std::llround(running));
  const double capacity = static_cast<double>(sim::KvCapacityTokens(deployment_));
  decode.decode_context_tokens = static_cast<int64_t>(std::llround(kv_usage * capacity));
  const double t0 = model.StepTime(decode).seconds();  // a step of decodes alone
  if (prefills_per_second <= 0 || prompts.empty()) return t0;
  // A prompt arrives in chunks of up to the budget, each in its own step: such steps are
  // compute-bound and much longer than decode-only ones, and longer still for long prompts
  // (attention is quadratic), so the extra time is averaged over the prompt-length distribution,
  // never computed at the mean length (max() and the square are convex). With steps back to back,
  // the share of time in prefill steps is lambda x E[extra], and t_mean = T0 / (1 - that).
  const double budget = std::max(1.0, deployment_.engine.max_num_batched_tokens - running);
  double extra = 0;  // expected seconds a prompt adds beyond decode-only steps
  for (const auto& [tokens, weight] : prompts) {
    double left = std::max(1.0, tokens), prefix = 0;
    while (left > 0) {
      const double c = std::min(left, budget);
      sim::BatchShape mixed = decode;
      mixed.prefill_seqs = 1;
      mixed.prefill_tokens = static_cast<int64_t>(std::llround(c));
      mixed.prefill_context_tokens = static_cast<int64_t>(std::llround(prefix));
      mixed.prefill_attention_pairs = c * (prefix + (c + 1) / 2);
      extra += weight * (model.StepTime(mixed).seconds() - t0);
      left -= c;
      prefix += c;
    }
  }
  const double load = prefills_per_second * extra;
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
  // Prompt lengths as observed (bucket midpoints rescaled to the observed mean), else the mean.
  std::vector<std::pair<double, double>> prompts;
  if (w.prompt_lengths && w.prompt_lengths->count > 0 && prompt > 0) {
    const metrics::CumulativeHistogram& h = *w.prompt_lengths;
    double prev = 0, lo = 0, mid_mean = 0;
    for (size_t i = 0; i < h.cumulative.size(); ++i) {
      const double hi = i < h.upper_bounds.size() ? h.upper_bounds[i] : 2 * lo;
      const double wgt = std::max(0.0, h.cumulative[i] - prev) / h.count;
      prev = h.cumulative[i];
      if (wgt > 0) {
        prompts.push_back({(lo + hi) / 2, wgt});
        mid_mean += wgt * (lo + hi) / 2;
      }
      lo = hi;
    }
    if (mid_mean > 0) {
      for (auto& p : prompts) p.first *= prompt / mid_mean;
    }
  }
  if (prompts.empty() && prompt > 0) prompts.push_back({prompt, 1.0});
  auto predicted = [&](double speed) {
    return PredictedStepSeconds(w.running_per_ready, w.kv_usage_mean, per_replica, prompts, speed);
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
