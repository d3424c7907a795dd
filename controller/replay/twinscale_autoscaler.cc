// twinscale's policy in replay: see twinscale_autoscaler.h.
#include "controller/replay/twinscale_autoscaler.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace twinscale::replay {

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, policy::PolicyConfig config,
                                         twin::TwinOptions twin)
    : name_(std::move(name)),
      config_(config),
      forecaster_(twin),
      snapshots_(state::SnapshotOptions{absl::Seconds(45),
                                        absl::ToDoubleSeconds(config.ttft_threshold), 20,
                                        absl::Seconds(90)}),
      calibrator_(twin::CalibrationOptions{}) {}

int32_t TwinscaleAutoscaler::Decide(const ClusterView& view) {
  const state::FleetSnapshot snap = snapshots_.Build(view);
  if (calibrate_) {
    forecaster_.set_speed(
        calibrator_.Update(snap, policy::ObservedQuestion(snap, config_), forecaster_).speed);
  }
  speed_history_.push_back(forecaster_.options().speed.decode);
  double error = std::nan("");
  if (next_window_p90_ms_.has_value() &&
      snap.workload.ttft_p90_seconds.kind() == state::Input<double>::Kind::kValue) {
    error = *next_window_p90_ms_ - 1000 * snap.workload.ttft_p90_seconds.value();
  }
  prediction_error_ms_.push_back(error);
  policy::Decision d = policy::Recommend(snap, config_, forecaster_, view.now, history_);
  policy::RecordDecision(d, config_, history_);
  last_reason_.clear();
  for (const policy::Reason& r : d.reasons) {
    if (!last_reason_.empty()) last_reason_ += "; ";
    absl::StrAppend(&last_reason_, r.code);
  }
  // The twin's forecast for the coming window with the fleet as it stands (no change assumed):
  // next time, compared with what the fleet showed, it is the prediction error.
  next_window_p90_ms_.reset();
  if (!d.question.ready.empty() && d.question.arrival_rate > 0) {
    policy::ForecastQuestion next = d.question;
    next.candidate_replicas = static_cast<int32_t>(next.ready.size() + next.pending_ready_in.size());
    next.horizon = config_.interval;
    next.judge_from = absl::ZeroDuration();
    next_window_p90_ms_ = forecaster_.Evaluate(next).ttft_p90_ms;
  }
  decisions_.push_back(std::move(d));
  return decisions_.back().replicas;
}

}  // namespace twinscale::replay
