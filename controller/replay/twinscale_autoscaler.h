// twinscale's own policy behind replay's Autoscaler interface: each sync hands the scraped view to
// twin::TargetDecider — the same decision chain the live reconciler runs (snapshot, calibration,
// Recommend with the twin as forecaster) — passes the decision through the spec's mode (KEDA and
// HPA: the cluster's HPA arithmetic on the published metric) and keeps the record replay reports.
#ifndef TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
#define TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_

#include <optional>
#include <string>
#include <vector>

#include "controller/policy/recommend.h"
#include "controller/replay/autoscaler.h"
#include "controller/replay/mode_output.h"
#include "controller/twin/resolve.h"
#include "controller/twin/target_decider.h"

namespace twinscale::replay {

class TwinscaleAutoscaler : public Autoscaler {
 public:
  // A manifest's target as the controller runs it: the decider built from the resolved spec with
  // the same arguments twin::TwinDeciderFactory gives it (spec.metrics.staleAfter, the engine
  // settings the spec states). `mode`: how decisions reach the target (mode_output.h); Recommend
  // is replayed as Direct, as if its decisions were acted on.
  TwinscaleAutoscaler(std::string name, const twin::ResolvedTarget& target,
                      absl::Duration stale_after, api::Mode mode);
  // A decider from parts (tests, benchmarks): staleAfter at its CRD default of 45 s, no engine
  // settings stated.
  TwinscaleAutoscaler(std::string name, policy::PolicyConfig config, twin::TwinOptions twin,
                      api::Mode mode = api::Mode::kDirect);
  std::string Name() const override { return name_; }
  absl::Duration SyncPeriod() const override { return decider_.config().interval; }
  int32_t Decide(const ClusterView& view) override;
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
  // The calibrated speed factor after each decision, and the prediction error of each window:
  // the twin's p90 TTFT forecast for the window (made at the previous decision, from the fleet
  // as it stood) minus the observed p90 (ms; NaN when unknown).
  const std::vector<double>& speed_history() const { return speed_history_; }
  const std::vector<double>& prefill_speed_history() const { return prefill_speed_history_; }
  const std::vector<double>& router_random_share_history() const {
    return router_random_share_history_;
  }
  const std::vector<double>& prediction_error_ms() const { return prediction_error_ms_; }
  // The traffic before the replay's first view (the rate curve's earlier days), for the seasonal
  // forecast: `arrivals[i]` over [from + i x step, from + (i + 1) x step).
  void SeedArrivals(absl::Time from, absl::Duration step, const std::vector<double>& arrivals) {
    decider_.SeedArrivals(from, step, arrivals);
  }
  void set_calibration(bool on) {
    calibrate_ = on;
    decider_.set_calibration(on);
  }

 private:
  std::optional<TwinPrediction> PredictionFor(const policy::Decision& d, int32_t applied) const;

  std::string name_;
  twin::TargetDecider decider_;
  ModeOutput output_;
  std::vector<double> speed_history_;  // the calibrated decode factor after each decision
  std::vector<double> prefill_speed_history_;
  std::vector<double> router_random_share_history_;
  std::vector<double> prediction_error_ms_;
  std::vector<policy::Decision> decisions_;
  std::string last_reason_;
  bool calibrate_ = true;
  std::optional<TwinPrediction> last_prediction_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
