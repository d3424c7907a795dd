// Calibration of the twin's speed: see calibration.h.
#include "controller/twin/calibration.h"

#include <algorithm>
#include <cmath>

namespace twinscale::twin {
namespace {

// Moves shorter than this (in log factor) leave the slopes alone: between two factors close
// together a reading's change is mostly the simulation's noise (a shifted step boundary moves a
// mean a little). With the slopes left as they were a step still moves toward the right factors,
// only not all the way; the smoothing converges on the same fixed point.
constexpr double kMinMoveForSlope = 0.05;
// Below this |d log(inter-token latency) / d log(decode factor)| the token gaps do not identify
// the decode factor.
constexpr double kMinDecodeSlope = 0.2;

}  // namespace

void Calibrator::UpdateFrontEnd(const state::WorkloadEstimate& w,
                                const policy::ForecastQuestion& observed,
                                const TwinForecaster& twin) {
  state_.last_observed_front_end.reset();
  if (!w.front_end_seconds.usable() || !(w.front_end_requests >= options_.min_prefill_requests)) {
    return;
  }
  const double front_end = w.front_end_seconds.value();
  // What the profile's model already puts there, for this window's mean prompt.
  const double own = twin.OwnFrontEndSeconds(observed.prompt_tokens_mean);
  const double extra = std::max(-own, front_end - own);
  state_.last_observed_front_end = front_end;
  state_.extra_front_end_seconds +=
      options_.front_end_smoothing * (extra - state_.extra_front_end_seconds);
  ++state_.front_end_updates;
}

const CalibrationState& Calibrator::Update(const state::FleetSnapshot& snap,
                                           const policy::ForecastQuestion& observed,
                                           const TwinForecaster& twin) {
  const state::WorkloadEstimate& w = snap.workload;
  UpdateFrontEnd(w, observed, twin);
  if (!w.itl_mean_seconds.usable() || w.itl_mean_seconds.value() <= 0 ||
      w.itl_tokens < options_.min_itl_tokens || observed.ready.empty() ||
      !(observed.arrival_rate >= 0)) {
    return state_;
  }
  const bool prefill_usable = w.prefill_seconds_per_prompt_token.usable() &&
                              w.prefill_seconds_per_prompt_token.value() > 0 &&
                              w.prefill_requests >= options_.min_prefill_requests;
  state_.last_observed_random_share.reset();
  // The two factors are one until the prefill times disagree with it (calibration.h).
  const bool tied = !apart_;
  const double log_itl_target = std::log(w.itl_mean_seconds.value());
  const double log_prefill_target =
      prefill_usable ? std::log(w.prefill_seconds_per_prompt_token.value()) : 0;

  // The window as the twin should replay it: the Ready replicas as observed, nothing else coming,
  // every request judged (only its latencies are used).
  policy::ForecastQuestion q = observed;
  q.candidate_replicas = static_cast<int32_t>(q.ready.size());
  q.pending_ready_in.clear();
  q.horizon = options_.window;
  q.judge_from = absl::ZeroDuration();
  // The window as it was: at the rate it had, not at the level the forecasts start from (the
  // mean over the intervals since the level last shifted), which lags a ramp, and without the
  // swings from one interval to the next, which the window's own count already is. At the level
  // the factor followed the load on ramps: the twin replayed a rising window too lightly loaded
  // and a falling one too heavily (docs/results.md, "The calibration's reading of the window").
  q.rate_persistence.clear();
  if (w.arrival_rate.usable()) q.arrival_rate = w.arrival_rate.value();
  q.arrival_rate_cv = 0;

  if (held_speed_.has_value()) {  // the speed is given: only the routing share is fitted
    state_.speed = *held_speed_;
    const TwinForecaster::CalibrationReading at =
        twin.CalibrationLatencies(q, *held_speed_, std::nullopt, options_.lead_in);
    if (!(at.itl_mean_seconds > 0)) return state_;
    FitRouting(w, twin, q, *held_speed_, at.queue_mean_seconds);
    ++state_.updates;
    return state_;
  }

  // In logs: x = (log decode, log prefill), each inside its own bracket (calibration.h); outside
  // the bounds the answer is the bound.
  int32_t steps = options_.first_steps;
  double decode = 1.0, prefill = 1.0;
  double dlo = options_.min_factor, dhi = options_.max_factor;
  double plo = options_.min_factor, phi = options_.max_factor;
  if (state_.updates > 0) {
    decode = state_.speed.decode;
    prefill = tied ? decode : state_.speed.prefill;
    dlo = std::max(options_.min_factor, decode / options_.bracket);
    dhi = std::min(options_.max_factor, decode * options_.bracket);
    plo = std::max(options_.min_factor, prefill / options_.bracket);
    phi = std::min(options_.max_factor, prefill * options_.bracket);
    steps = options_.later_steps;
  }
  decode = std::clamp(decode, dlo, dhi);
  prefill = std::clamp(prefill, plo, phi);

  // A reading's residuals: log(twin / observed) for the inter-token latency and, where the
  // prefill factor is fitted, the prefill time.
  struct Residual {
    bool ok = false;
    double itl = 0, prefill = 0;
    bool has_prefill = false;
    double queue = 0;  // the twin's mean queue time, seconds
  };
  auto read = [&](double p, double d) {
    const TwinForecaster::CalibrationReading r =
        twin.CalibrationLatencies(q, tied ? sim::SpeedFactors{d, d} : sim::SpeedFactors{p, d},
                                  std::nullopt, options_.lead_in);
    Residual res;
    if (!(r.itl_mean_seconds > 0)) return res;  // no gaps simulated: nothing to match
    res.ok = true;
    res.queue = r.queue_mean_seconds;
    res.itl = std::log(r.itl_mean_seconds) - log_itl_target;
    if (prefill_usable && r.prefill_seconds_per_prompt_token > 0) {
      res.has_prefill = true;
      res.prefill = std::log(r.prefill_seconds_per_prompt_token) - log_prefill_target;
    }
    return res;
  };
  // The next factors from a reading: a Newton step on the slopes as last measured (slopes_: the
  // derivatives of the two log latencies by the two log factors), the prefill factor held where
  // the reading has no prefill residual. Tied, one factor and one slope.
  auto next = [&](double p, double d, const Residual& r) -> std::pair<double, double> {
    if (tied) {  // the prefill residual is only watched (below)
      const double nd = std::clamp(d * std::exp(-r.itl / tied_slope_), dlo, dhi);
      return {nd, nd};
    }
    // Where the token gaps barely depend on decode speed (every step a full budget of prefill),
    // they cannot tell it: decode holds, and prefill follows its own residual.
    if (slopes_.itl_by_decode > -kMinDecodeSlope) {
      const double xp = r.has_prefill ? -r.prefill / slopes_.prefill_by_prefill : 0;
      return {std::clamp(p * std::exp(xp), plo, phi), d};
    }
    double xd = -r.itl / slopes_.itl_by_decode, xp = 0;
    if (r.has_prefill) {
      const double det = slopes_.itl_by_decode * slopes_.prefill_by_prefill -
                         slopes_.itl_by_prefill * slopes_.prefill_by_decode;
      if (std::abs(det) > 0.05) {
        xd = -(slopes_.prefill_by_prefill * r.itl - slopes_.itl_by_prefill * r.prefill) / det;
        xp = -(slopes_.itl_by_decode * r.prefill - slopes_.prefill_by_decode * r.itl) / det;
      } else {
        xp = -r.prefill / slopes_.prefill_by_prefill;
      }
      if (!std::isfinite(xd) || !std::isfinite(xp)) {
        xd = -r.itl / slopes_.itl_by_decode;
        xp = -r.prefill / slopes_.prefill_by_prefill;
      }
    }
    return {std::clamp(p * std::exp(xp), plo, phi), std::clamp(d * std::exp(xd), dlo, dhi)};
  };

  Residual r = read(prefill, decode);
  if (!r.ok) return state_;
  const double queue_at_share = r.queue;  // at the current factors and share
  if (!tied && !slopes_measured_ && r.has_prefill) {
    // The first fit apart starts from slopes measured, not assumed: each factor moved alone by
    // a tenth (two more simulations, once).
    const double h = 0.1;
    const Residual by_d = read(prefill, decode * std::exp(h));
    const Residual by_p = read(prefill * std::exp(h), decode);
    if (by_d.ok && by_p.ok && by_d.has_prefill && by_p.has_prefill) {
      slopes_.Set((by_d.itl - r.itl) / h, (by_p.itl - r.itl) / h, (by_d.prefill - r.prefill) / h,
                  (by_p.prefill - r.prefill) / h);
      slopes_measured_ = true;
    }
  }
  for (int32_t i = 0; i < steps; ++i) {
    const auto [p, d] = next(prefill, decode, r);
    const double dx_d = std::log(d / decode), dx_p = std::log(p / prefill);
    if (std::abs(dx_d) < 1e-3 && std::abs(dx_p) < 1e-3) break;  // there already
    const Residual n = read(p, d);
    if (!n.ok) break;
    if (tied) {
      if (std::abs(dx_d) >= kMinMoveForSlope) {
        const double b = (n.itl - r.itl) / dx_d;
        if (std::isfinite(b)) tied_slope_ = std::clamp(b, -8.0, -0.25);
      }
    } else if (std::hypot(dx_d, dx_p) >= kMinMoveForSlope) {
      slopes_.Update(dx_d, dx_p, n.itl - r.itl,
                     r.has_prefill && n.has_prefill ? std::optional<double>(n.prefill - r.prefill)
                                                    : std::nullopt);
    }
    decode = d;
    prefill = p;
    r = n;
  }
  const auto [prefill_ratio, decode_ratio] = next(prefill, decode, r);
  // The newest window's weight: one over the windows so far, each older one decayed by
  // 1 - smoothing (calibration.h), so the first windows count alike and later ones settle at
  // `smoothing`.
  speed_windows_ = (1 - options_.smoothing) * speed_windows_ + 1;
  const double a = 1 / speed_windows_;
  auto smooth = [&](double current, double ratio) {
    return std::clamp((1 - a) * current + a * ratio, options_.min_factor, options_.max_factor);
  };
  state_.last_observed_ratio = decode_ratio;  // < 1: the fleet is slower than the profile
  state_.last_observed_prefill_ratio.reset();
  state_.speed.decode = smooth(state_.speed.decode, decode_ratio);
  if (tied) {
    state_.speed.prefill = state_.speed.decode;
    // How far the prefill time is from what the one factor makes of it, beyond how far the
    // inter-token latency is (a factor still settling is off for both alike), smoothed from 0
    // with the factors' weight once the factor has had a few windows: past apart_above either
    // way, the next windows fit the two apart. A window with a backlog says nothing about it.
    const bool backlog =
        snap.total_waiting() > options_.apart_max_waiting_per_replica * observed.ready.size();
    if (r.has_prefill && !backlog && state_.updates >= options_.apart_after) {
      prefill_disagreement_ = (1 - options_.apart_smoothing) * prefill_disagreement_ +
                              options_.apart_smoothing * (r.prefill - r.itl);
      if (std::abs(prefill_disagreement_) > std::log(options_.apart_above)) apart_ = true;
    }
  } else if (r.has_prefill) {
    state_.last_observed_prefill_ratio = prefill_ratio;
    state_.speed.prefill = smooth(state_.speed.prefill, prefill_ratio);
  }
  FitRouting(w, twin, q,
             tied ? sim::SpeedFactors{decode, decode} : sim::SpeedFactors{prefill, decode},
             queue_at_share);
  ++state_.updates;
  return state_;
}

void Calibrator::FitRouting(const state::WorkloadEstimate& w, const TwinForecaster& twin,
                            const policy::ForecastQuestion& q, sim::SpeedFactors speed,
                            double twin_queue) {
  const sim::RouterKind kind = twin.options().router;
  if (kind == sim::RouterKind::kRandom || kind == sim::RouterKind::kRandomPerConnection) return;
  if (!w.queue_mean_seconds.usable() || w.queue_requests < options_.min_prefill_requests) return;
  const double observed = std::max(0.0, w.queue_mean_seconds.value());
  const double share = state_.router_random_share;
  const double n = w.queue_requests;
  const double keep = 1 - options_.share_smoothing;
  CalibrationState::RoutingEvidence& e = state_.routing;
  e.requests = keep * e.requests + n;
  e.observed = keep * e.observed + n * observed;
  e.twin = keep * e.twin + n * twin_queue;
  e.share = keep * e.share + n * share;
  const double observed_mean = e.observed / e.requests;
  const double error = e.twin / e.requests - observed_mean;
  // Queues within the tolerance of each other: the share explains them.
  if (std::abs(error) <=
      std::max(options_.queue_tolerance_seconds, options_.queue_tolerance_share * observed_mean)) {
    state_.last_observed_random_share = share;
    return;
  }
  // One probe a quarter of the way toward more (or less) random routing; the slope is the
  // least-squares line through the probes' moves.
  const double probe = std::clamp(share + (error < 0 ? 0.25 : -0.25), 0.0, 1.0);
  if (probe == share) {
    state_.last_observed_random_share = share;
    return;
  }
  const TwinForecaster::CalibrationReading at =
      twin.CalibrationLatencies(q, speed, probe, options_.lead_in);
  if (!(at.prefill_requests > 0)) return;
  const double moved = probe - share;
  e.slope_moment = keep * e.slope_moment + n * (at.queue_mean_seconds - twin_queue) * moved;
  e.slope_spread = keep * e.slope_spread + n * moved * moved;
  const double slope = e.slope_moment / e.slope_spread;
  // A queue that does not grow with the share says nothing about it (no load to pile up).
  if (!(slope > 0)) return;
  const double fit = std::clamp(e.share / e.requests - error / slope, 0.0, 1.0);
  state_.last_observed_random_share = fit;
  state_.router_random_share = std::clamp(share + options_.share_step * (fit - share), 0.0, 1.0);
}

void Calibrator::Slopes::Set(double itl_d, double itl_p, double prefill_d, double prefill_p) {
  itl_by_decode = itl_d;
  itl_by_prefill = itl_p;
  prefill_by_decode = prefill_d;
  prefill_by_prefill = prefill_p;
  Update(0, 0, 0, std::nullopt);  // only the bounds
}

void Calibrator::Slopes::Update(double dx_d, double dx_p, double d_itl,
                                std::optional<double> d_prefill) {
  // Broyden's rank-one update: the smallest change of the slopes that explains the move.
  const double norm2 = dx_d * dx_d + dx_p * dx_p;
  if (norm2 > 0) {
    const double e_itl = d_itl - (itl_by_decode * dx_d + itl_by_prefill * dx_p);
    itl_by_decode += e_itl * dx_d / norm2;
    itl_by_prefill += e_itl * dx_p / norm2;
    if (d_prefill) {
      const double e_pre = *d_prefill - (prefill_by_decode * dx_d + prefill_by_prefill * dx_p);
      prefill_by_decode += e_pre * dx_d / norm2;
      prefill_by_prefill += e_pre * dx_p / norm2;
    }
  }
  // A faster engine is never slower: the own slopes stay within [-8, -0.25] (decode's in the
  // inter-token latency within [-8, -0.05], so that a weak one shows), the cross ones within
  // [-8, 0]; noise must not turn a step around.
  auto finite_or = [](double v, double fallback) { return std::isfinite(v) ? v : fallback; };
  itl_by_decode = std::clamp(finite_or(itl_by_decode, -1.0), -8.0, -0.05);
  prefill_by_prefill = std::clamp(finite_or(prefill_by_prefill, -1.0), -8.0, -0.25);
  itl_by_prefill = std::clamp(finite_or(itl_by_prefill, 0.0), -8.0, 0.0);
  prefill_by_decode = std::clamp(finite_or(prefill_by_decode, 0.0), -8.0, 0.0);
}

}  // namespace twinscale::twin
