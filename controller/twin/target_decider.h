// TargetDecider: twinscale's decision chain for one target, the policy::Decider that the live
// reconciler and replay both run. Each decision: the ClusterView becomes a FleetSnapshot
// (state::SnapshotBuilder), the calibrator folds the window's inter-token latency into the twin's
// speed, Recommend asks the twin (TwinForecaster) its what-ifs, and the decision is recorded for
// the stabilization windows; the changes of the target's size (NoteScaled, or seen in the view) are
// recorded for the rate limits. It also forecasts the coming window with the fleet as it stands, so
// the next decision can report the prediction error.
#ifndef TWINSCALE_CONTROLLER_TWIN_TARGET_DECIDER_H_
#define TWINSCALE_CONTROLLER_TWIN_TARGET_DECIDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "controller/policy/decider.h"
#include "controller/policy/recommend.h"
#include "controller/state/fleet_snapshot.h"
#include "controller/twin/calibration.h"
#include "controller/twin/resolve.h"
#include "controller/twin/twin_forecaster.h"

namespace twinscale::twin {

class TargetDecider : public policy::Decider {
 public:
  // `stale_after`: spec.metrics.staleAfter (a pod's scrape older than this is Stale).
  // `stated`: which engine settings the spec states (they win over the pods' flags).
  TargetDecider(policy::PolicyConfig config, TwinOptions twin, absl::Duration stale_after,
                StatedEngineSettings stated = {});

  // A change of view.spec_replicas since the last decision or NoteScaled (someone else scaled) is
  // recorded as a scale event at view.now.
  policy::Decision Decide(const state::ClusterView& view) override;
  void NoteScaled(absl::Time at, int32_t from, int32_t to) override;
  // Arrivals from before the first decision, for the seasonal forecast
  // (state::SnapshotBuilder::SeedArrivals).
  void SeedArrivals(absl::Time from, absl::Duration step, const std::vector<double>& arrivals) {
    snapshots_.SeedArrivals(from, step, arrivals);
  }
  const state::FleetSnapshot* last_snapshot() const override {
    return snapshot_.has_value() ? &*snapshot_ : nullptr;
  }
  policy::CalibrationFactors calibration() const override;
  void RestoreCalibration(const policy::CalibrationFactors& factors) override;
  const state::ArrivalHistory* arrival_history() const override {
    return &snapshots_.arrival_history();
  }
  // Each observed bucket is seeded as its arrivals over its observed seconds from the bucket's
  // start, so a history of the same bucket length comes back as it was.
  void RestoreArrivals(const state::ArrivalBuckets& buckets) override;
  std::optional<double> last_prediction_error_ms() const override { return prediction_error_ms_; }

  // A new spec takes effect at the next decision; the history (windows, previous scrapes) and the
  // calibration are kept, as they describe the fleet, not the spec.
  void Reconfigure(policy::PolicyConfig config, TwinOptions twin, absl::Duration stale_after,
                   StatedEngineSettings stated = {});
  // Calibration off: the profile's speed throughout (replay's --calibrate=false).
  void set_calibration(bool on) { calibrate_ = on; }
  // Parts of the twin held at given values instead of calibrated (replay's --twin-speed and
  // --twin-random-share); calibration, when on, still fits the rest, with the held parts in the
  // twin it fits against. Against a truth whose parameters are known, what the twin answers with
  // them right, apart from how well calibration finds them, or what calibration makes of the
  // rest when one part is right.
  struct HeldTwin {
    std::optional<sim::SpeedFactors> speed;
    std::optional<double> router_random_share;  // in [0, 1]
  };
  void set_held_twin(HeldTwin held);
  bool calibration_on() const { return calibrate_; }
  const policy::PolicyConfig& config() const { return config_; }
  const TwinForecaster& forecaster() const { return forecaster_; }

 private:
  void ApplyHeldTwin();

  policy::PolicyConfig config_;
  sim::DeploymentSpec
      spec_deployment_;  // the spec's; the twin simulates the pods' (running_engine.h)
  StatedEngineSettings stated_;
  TwinForecaster forecaster_;
  state::SnapshotBuilder snapshots_;
  Calibrator calibrator_;
  bool calibrate_ = true;
  HeldTwin held_;
  policy::PolicyHistory history_;
  // The target's replica count as last seen or set (nullopt before the first decision): a view
  // showing another count was scaled by someone else.
  std::optional<int32_t> known_replicas_;
  std::optional<state::FleetSnapshot> snapshot_;
  std::optional<double> next_window_p90_ms_;  // forecast for the window after the last decision
  std::optional<double> prediction_error_ms_;
};

// The binary's DeciderFactory, and replay's: resolves a spec against the profiles (twin::Resolve)
// into a TargetDecider. Replay states its own settings of the run (the seed, the compressed day)
// through `adjust`, applied to every resolved target before the decider is built.
class TwinDeciderFactory : public policy::DeciderFactory {
 public:
  using Adjust = std::function<void(ResolvedTarget&)>;
  // `profiles` must outlive the factory.
  explicit TwinDeciderFactory(const sim::ProfileRegistry* profiles, Adjust adjust = {})
      : profiles_(profiles), adjust_(std::move(adjust)) {}
  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const api::InferenceAutoscalerSpec& spec) override;
  // Create's decider as what it is.
  absl::StatusOr<std::unique_ptr<TargetDecider>> CreateTarget(
      const api::InferenceAutoscalerSpec& spec);
  absl::Status Reconfigure(const api::InferenceAutoscalerSpec& spec,
                           policy::Decider& decider) override;

 private:
  absl::StatusOr<ResolvedTarget> ResolveAdjusted(const api::InferenceAutoscalerSpec& spec) const;

  const sim::ProfileRegistry* profiles_;
  Adjust adjust_;
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_TARGET_DECIDER_H_
