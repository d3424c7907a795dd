// twinscale's own policy behind replay's Autoscaler interface: each sync runs the controller's
// Reconciler (controller/reconcile/reconciler.h) on a ManualClock set to the sync's time, over the
// simulated cluster behind the controller's seams (simulated_api.h: the object, /scale, the pods
// and their scraped vLLM metrics as the sync's view shows them, and an actuator). The pass reads
// the spec, the target and the pods, decides through the decider the controller's factory builds
// (twin::TwinDeciderFactory: snapshot, calibration, Recommend with the twin), acts and writes
// status, as it would in a cluster. Direct mode's scale changes and victims are the actuator's
// orders; KEDA and HPA modes' are the cluster's HPA arithmetic (mode_output.h) on the metric the
// pass published on its DecisionBoard (the current count, "hold", while its inputs are stale),
// which the decider then sees in the next view, as the live controller does.
#ifndef TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
#define TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/common/clock.h"
#include "controller/outputs/decision_board.h"
#include "controller/policy/recommend.h"
#include "controller/reconcile/reconciler.h"
#include "controller/replay/autoscaler.h"
#include "controller/replay/mode_output.h"
#include "controller/replay/simulated_api.h"
#include "controller/twin/resolve.h"
#include "controller/twin/target_decider.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {

class TwinscaleAutoscaler : public Autoscaler {
 public:
  // A manifest's target as the controller runs it: `object` (api::InferenceAutoscalerObject) is
  // served to the Reconciler, whose decider twin::TwinDeciderFactory builds over `profiles` (which
  // must outlive this), with replay's `adjust` (the run's seed, the compressed day). `mode`, when
  // given, replaces spec.mode; Recommend is replayed as Direct, as if its decisions were acted on.
  // InvalidArgument when the object's spec does not load.
  static absl::StatusOr<std::unique_ptr<TwinscaleAutoscaler>> FromManifest(
      std::string name, nlohmann::json object, const sim::ProfileRegistry* profiles,
      twin::TwinDeciderFactory::Adjust adjust = {}, std::optional<api::Mode> mode = std::nullopt);
  // A decider from parts (tests, benchmarks): staleAfter at its CRD default of 45 s, no engine
  // settings stated, behind an object of `mode` that names no profile of its own.
  TwinscaleAutoscaler(std::string name, policy::PolicyConfig config, twin::TwinOptions twin,
                      api::Mode mode = api::Mode::kDirect);
  ~TwinscaleAutoscaler() override;

  std::string Name() const override { return name_; }
  absl::Duration SyncPeriod() const override { return interval_; }
  // One reconcile pass on `view`; the count the target gets (the view's own when the pass ended
  // before deciding).
  int32_t Decide(const ClusterView& view) override;
  std::vector<std::string> Victims() const override { return victims_; }
  std::string LastReason() const override { return last_reason_; }
  // The last decision's advice while active: max_arrival_rate as the gateway's rate limit and
  // max_queue_per_replica as its limit on each replica's waiting requests.
  sim::AdmissionLimits Admission() const override;
  // The twin's reading (TwinForecaster::Reading: its first batch, the decision's own seed) of the
  // decision's question at the count applied, judged as the policy judges that count
  // (policy::CandidateQuestion): the prediction twin_error.h checks. Settled after
  // kSettledCalibrationUpdates calibration updates, or with calibration off.
  std::optional<TwinPrediction> LastPrediction() const override { return last_prediction_; }
  // Every decision taken, in order (for reports and the decision corpus).
  const std::vector<policy::Decision>& decisions() const { return decisions_; }
  // The calibrated speed factors after each decision, and the prediction error of each window:
  // the twin's p90 TTFT forecast for the window (made at the previous decision, from the fleet
  // as it stood) minus the observed p90 (ms; NaN when unknown).
  const std::vector<double>& speed_history() const { return speed_history_; }
  const std::vector<double>& prefill_speed_history() const { return prefill_speed_history_; }
  const std::vector<double>& extra_front_end_history() const { return extra_front_end_history_; }
  const std::vector<double>& router_random_share_history() const {
    return router_random_share_history_;
  }
  const std::vector<double>& prediction_error_ms() const { return prediction_error_ms_; }
  // The traffic before the replay's first view (the rate curve's earlier days), for the seasonal
  // forecast: `arrivals[i]` over [from + i x step, from + (i + 1) x step). Given to the decider
  // when the first pass builds it.
  void SeedArrivals(absl::Time from, absl::Duration step, const std::vector<double>& arrivals);
  // Calibration on (the default) or off (the profile's speed throughout).
  void set_calibration(bool on);
  // Parts of the twin held at given values (twin::TargetDecider::set_held_twin).
  void set_held_twin(twin::TargetDecider::HeldTwin held);
  // The object's status as the reconciler last wrote it (null before its first write).
  const nlohmann::json& status() const { return api_.status(); }

 private:
  class Deciders;  // the factory's deciders, each wrapped to record its decisions
  TwinscaleAutoscaler(std::string name, nlohmann::json object, std::unique_ptr<Deciders> deciders,
                      absl::Duration interval, int32_t min_replicas, int32_t max_replicas,
                      api::Mode mode);
  std::optional<TwinPrediction> PredictionFor(const twin::TargetDecider& decider,
                                              const policy::Decision& d, int32_t applied) const;

  std::string name_;
  api::Mode mode_;
  absl::Duration interval_;
  ManualClock clock_;
  SimulatedApi api_;
  outputs::DecisionBoard board_;  // what KEDA's scaler and the external metrics API would serve
  std::unique_ptr<Deciders> deciders_;
  std::unique_ptr<reconcile::Reconciler> reconciler_;
  ModeOutput output_;
  std::vector<double> speed_history_;  // the calibrated decode factor after each decision
  std::vector<double> prefill_speed_history_;
  std::vector<double> router_random_share_history_;
  std::vector<double> extra_front_end_history_;  // seconds
  std::vector<double> prediction_error_ms_;
  std::vector<policy::Decision> decisions_;
  std::vector<std::string> victims_;
  std::string last_reason_;
  std::optional<TwinPrediction> last_prediction_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
