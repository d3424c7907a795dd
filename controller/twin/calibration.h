// Calibration: keeps the twin honest about the real fleet's speed. Each decision takes the mean
// inter-token latency the fleet showed over the last window (vLLM's
// inter_token_latency_seconds histogram: sum / count, so a per-token mean) and finds the speed
// factor at which the twin itself, simulating that window's fleet and traffic (the Ready replicas
// as observed, the arrival rate, burstiness and lengths), shows the same mean; then nudges the
// twin's factor toward it: an exponentially weighted average, bounded to [min_factor, max_factor],
// kept across decisions (and, live, in the object's status so it survives a failover).
//
// Why the twin and not a formula. The observed mean is a per-token average of step times, and
// long steps are the ones with prefill chunks in them: where prompts bunch up (bursts, a replica
// that Random routing sent more than its share, an overloaded fleet whose every step is a full
// budget of prefill) the tokens of many sequences wait on the same long steps, so the per-token
// mean sits well above the step time a mean-load formula predicts. A closed form (a mean-load
// prefill share, T0 / (1 - load)) reads that as a slower fleet: on the Azure code trace it settles
// near 0.70 for a truth of 0.80, and on an overloaded fleet it falls to the 0.5 floor, after which
// the twin judges the SLO out of reach and stops scaling up. Matching the twin's own per-token
// mean under the same traffic counts those effects the way the twin will when it forecasts, so
// its errors do not bias the factor (what the twin's arrival model misses still does, in the safe
// direction: a burstier truth looks slower).
//
// One factor, applied to both prefill and decode: the truths this is checked against slow both
// alike (the efficiency perturbation of docs/architecture.md "Truth perturbations"), and
// inter-token latency, which mixes prefill chunks and decodes step by step, constrains their blend.
// Fitting the two separately (docs/architecture.md "The twin", calibrated latency models) needs a
// second observable with a different blend, such as the prefill-time histogram; see calibration.cc.
#ifndef TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
#define TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_

#include <optional>

#include "controller/policy/forecaster.h"
#include "controller/state/fleet_snapshot.h"
#include "controller/twin/twin_forecaster.h"
#include "simulator/model/latency_model.h"

namespace twinscale::twin {

struct CalibrationOptions {
  double smoothing = 0.3;  // weight of the newest observation
  double min_factor = 0.5;
  double max_factor = 1.5;
  // Token gaps the window must hold fleet-wide, else its mean says too little. Not a floor on the
  // running batch: a light fleet's inter-token latency is its small batches' step time, which the
  // speed sets as surely as a busy fleet's (batch-1 decode reads the weights each step), and the
  // twin replays the same light traffic. A floor of one running request per Ready replica would
  // freeze the factor wherever the fleet has room: on the Azure code trace (outputs of about 20-30
  // tokens) a fleet scaled out for a burst would stop calibrating, and a factor a cold start's
  // backlog pulled to 0.50 (the truth: 0.80) would stay there, the twin forecasting only 90% of
  // requests in time even with 48 replicas and holding the fleet at 48 (for 35 minutes of that
  // trace's hour).
  double min_itl_tokens = 200;
  // How long the twin simulates the observed window's fleet to measure its inter-token latency.
  absl::Duration window = absl::Seconds(30);
  // The twin's mean inter-token latency falls with its speed locally as speed^-b: b a little under
  // 1 on a light fleet (fixed per-step costs don't scale), up to 3 or more near saturation (a
  // slower engine also batches more, and each step grows). The fit starts at the current factor
  // and takes secant steps on log(latency) against log(speed), b re-estimated from each pair of
  // speeds far enough apart and kept for the next fit (1 at first): `first_steps` simulations after
  // the first for the first fit, `later_steps` after it, then a last interpolated step that needs
  // no simulation. A bisection to the same precision would take 8 simulations per decision and
  // make the replay 4x slower; the smoothing below averages more noise away than
  // either leaves. Later fits stay within the current factor x/÷ `bracket` (what the smoothed
  // factor can move toward anyway); a fit at the bracket's edge just pulls the factor that way.
  int32_t first_steps = 3;
  int32_t later_steps = 1;
  double bracket = 1.3;
};

struct CalibrationState {
  sim::SpeedFactors speed;  // current factors (1 = the profile's speed)
  int64_t updates = 0;
  std::optional<double> last_observed_ratio;  // the factor this window alone gave, unsmoothed
};

class Calibrator {
 public:
  explicit Calibrator(CalibrationOptions options = {}) : options_(options) {}
  // Folds the snapshot's window into the factors; returns the new state. `observed` is the
  // question for the fleet as observed (policy::ObservedQuestion: Ready replicas, rate,
  // burstiness, lengths); `twin` simulates it. Windows without enough decode traffic, a usable
  // arrival rate or a Ready replica leave the factors as they were.
  const CalibrationState& Update(const state::FleetSnapshot& snapshot,
                                 const policy::ForecastQuestion& observed,
                                 const TwinForecaster& twin);
  const CalibrationState& state() const { return state_; }
  void Restore(const CalibrationState& s) { state_ = s; }

 private:
  CalibrationOptions options_;
  CalibrationState state_;
  double exponent_ = 1;  // the last measured b (see CalibrationOptions)
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
