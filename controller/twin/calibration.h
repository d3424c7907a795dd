// Calibration: keeps the twin honest about the real fleet's speed. Each decision compares the
// inter-token latency the fleet actually showed over the last window with what the twin's latency
// model predicts for the same load, finds the speed factor at which the model reproduces it (the mean running batch per Ready replica, its context from the
// observed KV use, and the prompts arriving per replica, each a compute-bound step), and nudges the
// twin's speed factor toward it: an exponentially weighted average, bounded to
// [min_factor, max_factor], kept across decisions (and, live, in the object's status so it
// survives a failover).
//
// One factor, applied to both prefill and decode, is a deliberate simplification: a step that mixes
// prefill chunks and decodes is what inter-token latency measures, and the two fitted slopes of
// DESIGN.md section 4(c) need the prefill-time histogram against prompt length, which a later
// revision will add. The prediction error (the twin's p90 TTFT forecast for the window vs the
// observed p90) is reported beside it.
#ifndef TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
#define TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_

#include <optional>
#include <utility>
#include <vector>

#include "controller/state/fleet_snapshot.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"

namespace twinscale::twin {

struct CalibrationOptions {
  double smoothing = 0.3;   // weight of the newest observation
  double min_factor = 0.5;
  double max_factor = 1.5;
  double min_running = 1;   // below this the ITL says little about batch speed
};

struct CalibrationState {
  sim::SpeedFactors speed;  // current factors (1 = the profile's speed)
  int64_t updates = 0;
  std::optional<double> last_observed_ratio;  // predicted / observed step time, unsmoothed
};

class Calibrator {
 public:
  Calibrator(sim::DeploymentSpec deployment, CalibrationOptions options = {});
  // Folds the snapshot's window into the factors; returns the new state. Windows without enough
  // decode traffic leave the factors as they were.
  const CalibrationState& Update(const state::FleetSnapshot& snapshot);
  const CalibrationState& state() const { return state_; }
  void Restore(const CalibrationState& s) { state_ = s; }

  // The mean step time the model at `speed` predicts for a replica holding `running` decoding
  // sequences at `kv_usage`, taking `prefills_per_second` prompts whose lengths are distributed as
  // `prompts` ((tokens, probability) pairs), in seconds.
  double PredictedStepSeconds(double running, double kv_usage, double prefills_per_second,
                              const std::vector<std::pair<double, double>>& prompts,
                              double speed = 1.0) const;

 private:
  sim::DeploymentSpec deployment_;
  CalibrationOptions options_;
  std::unique_ptr<sim::LatencyModel> model_;
  CalibrationState state_;
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
