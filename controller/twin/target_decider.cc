// twinscale's decision chain for one target: see target_decider.h.
#include "controller/twin/target_decider.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/twin/running_engine.h"

namespace twinscale::twin {
namespace {

state::SnapshotOptions SnapshotOptionsFor(const policy::PolicyConfig& config,
                                          absl::Duration stale_after) {
  state::SnapshotOptions o;
  o.stale_after = stale_after;
  o.slo_threshold_seconds = absl::ToDoubleSeconds(config.ttft_threshold);
  o.slo_per_prompt_token_seconds = absl::ToDoubleSeconds(config.ttft_per_prompt_token);
  o.season.period = config.season_period;
  o.season_lead = policy::ForecastHorizon(config);
  o.season_judged_from = config.warmup_expected;
  return o;
}

}  // namespace

TargetDecider::TargetDecider(policy::PolicyConfig config, TwinOptions twin,
                             absl::Duration stale_after, StatedEngineSettings stated)
    : config_(config),
      spec_deployment_(twin.deployment),
      stated_(stated),
      forecaster_(twin),
      snapshots_(SnapshotOptionsFor(config, stale_after)),
      calibrator_(CalibrationOptions{}) {}

void TargetDecider::Reconfigure(policy::PolicyConfig config, TwinOptions twin,
                                absl::Duration stale_after, StatedEngineSettings stated) {
  const CalibrationState kept = calibrator_.state();
  config_ = config;
  spec_deployment_ = twin.deployment;
  stated_ = stated;
  forecaster_ = TwinForecaster(twin);
  snapshots_.set_options(SnapshotOptionsFor(config, stale_after));
  calibrator_ = Calibrator(CalibrationOptions{});
  calibrator_.Restore(kept);
  calibrator_.set_held_speed(held_.speed);
  if (calibrate_) {
    forecaster_.set_speed(kept.speed);
    forecaster_.set_router_random_share(kept.router_random_share);
    forecaster_.set_extra_front_end_seconds(kept.extra_front_end_seconds);
  }
}

void TargetDecider::set_held_twin(HeldTwin held) {
  held_ = held;
  calibrator_.set_held_speed(held.speed);
  ApplyHeldTwin();
}

void TargetDecider::ApplyHeldTwin() {
  if (held_.speed.has_value()) forecaster_.set_speed(*held_.speed);
  if (held_.router_random_share.has_value()) {
    forecaster_.set_router_random_share(std::clamp(*held_.router_random_share, 0.0, 1.0));
  }
}

policy::CalibrationFactors TargetDecider::calibration() const {
  const CalibrationState& s = calibrator_.state();
  return {s.speed.prefill, s.speed.decode, s.updates, s.router_random_share,
          s.extra_front_end_seconds};
}

void TargetDecider::RestoreCalibration(const policy::CalibrationFactors& f) {
  CalibrationState s = calibrator_.state();
  s.speed.prefill = f.prefill_speed;
  s.speed.decode = f.decode_speed;
  s.updates = f.updates;
  s.router_random_share = std::clamp(f.router_random_share, 0.0, 1.0);
  s.extra_front_end_seconds =
      std::isfinite(f.extra_front_end_seconds)
          ? std::clamp(f.extra_front_end_seconds, -policy::kMaxExtraFrontEndSeconds,
                       policy::kMaxExtraFrontEndSeconds)
          : 0.0;
  calibrator_.Restore(s);
  if (calibrate_) {
    forecaster_.set_speed(s.speed);
    forecaster_.set_router_random_share(s.router_random_share);
    forecaster_.set_extra_front_end_seconds(s.extra_front_end_seconds);
  }
}

void TargetDecider::RestoreArrivals(const state::ArrivalBuckets& b) {
  for (size_t i = 0; i < b.size() && i < b.observed_s.size(); ++i) {
    if (!(b.observed_s[i] > 0)) continue;
    snapshots_.SeedArrivals(b.start + b.bucket * static_cast<int64_t>(i),
                            absl::Seconds(b.observed_s[i]), {b.arrivals[i]});
  }
}

void TargetDecider::NoteScaled(absl::Time at, int32_t from, int32_t to) {
  // A count other than the one last known: someone else scaled in between.
  if (known_replicas_.has_value()) policy::RecordScaleEvent(at, *known_replicas_, from, history_);
  policy::RecordScaleEvent(at, from, to, history_);
  known_replicas_ = to;
}

policy::Decision TargetDecider::Decide(const state::ClusterView& view) {
  if (known_replicas_.has_value()) {
    policy::RecordScaleEvent(view.now, *known_replicas_, view.spec_replicas, history_);
  }
  known_replicas_ = view.spec_replicas;
  snapshot_ = snapshots_.Build(view);
  const state::FleetSnapshot& snap = *snapshot_;
  // The engine the pods run, before calibration fits its speed: a twin with the wrong batch or
  // KV limits would be fitted to the wrong engine.
  const RunningEngine running = FollowRunningEngines(spec_deployment_, stated_, snap);
  if (!SameEngine(running.deployment, forecaster_.options().deployment)) {
    TwinOptions o = forecaster_.options();
    o.deployment = running.deployment;
    forecaster_ = TwinForecaster(o);
  }
  if (calibrate_) {
    const CalibrationState& s =
        calibrator_.Update(snap, policy::ObservedQuestion(snap, config_), forecaster_);
    forecaster_.set_speed(s.speed);
    forecaster_.set_router_random_share(s.router_random_share);
    forecaster_.set_extra_front_end_seconds(s.extra_front_end_seconds);
  }
  ApplyHeldTwin();  // over calibration's, and on a forecaster rebuilt since
  prediction_error_ms_.reset();
  if (next_window_p90_ms_.has_value() &&
      snap.workload.ttft_p90_seconds.kind() == state::Input<double>::Kind::kValue) {
    prediction_error_ms_ = *next_window_p90_ms_ - 1000 * snap.workload.ttft_p90_seconds.value();
  }
  policy::Decision d = policy::Recommend(snap, config_, forecaster_, view.now, history_);
  if (!running.differences.empty()) {
    d.reasons.push_back(
        policy::MakeReason(policy::ReasonCode::kEngineFromPods,
                           absl::StrCat("the twin simulates the engine the pods run: ",
                                        absl::StrJoin(running.differences, "; "))));
  }
  if (!snap.engine_args_error.empty()) {
    d.reasons.push_back(policy::MakeReason(
        policy::ReasonCode::kEngineArgsUnreadable,
        absl::StrCat(snap.engine_args_error, " (the twin keeps the spec's engine)")));
  }
  policy::RecordDecision(d, config_, history_);
  // The twin's forecast for the coming window with the fleet as it stands (no change assumed):
  // next time, compared with what the fleet showed, it is the prediction error.
  next_window_p90_ms_.reset();
  if (!d.question.ready.empty() && d.question.arrival_rate > 0) {
    policy::ForecastQuestion next = d.question;
    next.candidate_replicas =
        static_cast<int32_t>(next.ready.size() + next.pending_ready_in.size());
    next.horizon = config_.interval;
    next.judge_from = absl::ZeroDuration();
    const policy::Forecast reading = forecaster_.Reading(next);
    next_window_p90_ms_ = reading.ttft_p90_ms;
    policy::RecordIntervalForecast(view.now, reading, history_);
  }
  return d;
}

absl::StatusOr<ResolvedTarget> TwinDeciderFactory::ResolveAdjusted(
    const api::InferenceAutoscalerSpec& spec) const {
  auto resolved = Resolve(spec, *profiles_);
  if (resolved.ok() && adjust_) adjust_(*resolved);
  return resolved;
}

absl::StatusOr<std::unique_ptr<TargetDecider>> TwinDeciderFactory::CreateTarget(
    const api::InferenceAutoscalerSpec& spec) {
  auto resolved = ResolveAdjusted(spec);
  if (!resolved.ok()) return resolved.status();
  return std::make_unique<TargetDecider>(resolved->policy, resolved->twin, spec.metrics.stale_after,
                                         resolved->stated);
}

absl::StatusOr<std::unique_ptr<policy::Decider>> TwinDeciderFactory::Create(
    const api::InferenceAutoscalerSpec& spec) {
  auto made = CreateTarget(spec);
  if (!made.ok()) return made.status();
  return std::unique_ptr<policy::Decider>(*std::move(made));
}

absl::Status TwinDeciderFactory::Reconfigure(const api::InferenceAutoscalerSpec& spec,
                                             policy::Decider& decider) {
  auto resolved = ResolveAdjusted(spec);
  if (!resolved.ok()) return resolved.status();
  auto* target = dynamic_cast<TargetDecider*>(&decider);
  if (target == nullptr) {
    return absl::InvalidArgumentError("TwinDeciderFactory: not a decider it made");
  }
  target->Reconfigure(resolved->policy, resolved->twin, spec.metrics.stale_after, resolved->stated);
  return absl::OkStatus();
}

}  // namespace twinscale::twin
