// twinscale's policy in replay: see twinscale_autoscaler.h.
#include "controller/replay/twinscale_autoscaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "controller/policy/replica_search.h"

namespace twinscale::replay {

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, const twin::ResolvedTarget& target,
                                         absl::Duration stale_after, api::Mode mode)
    : name_(std::move(name)),
      decider_(target.policy, target.twin, stale_after, target.stated),
      output_(mode, target.policy.min_replicas, target.policy.max_replicas) {}

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, policy::PolicyConfig config,
                                         twin::TwinOptions twin, api::Mode mode)
    : name_(std::move(name)),
      decider_(config, std::move(twin), absl::Seconds(45)),
      output_(mode, config.min_replicas, config.max_replicas) {}

std::optional<TwinPrediction> TwinscaleAutoscaler::PredictionFor(const policy::Decision& d,
                                                                 int32_t applied) const {
  const policy::ForecastQuestion& q = d.question;
  if (q.arrival_rate <= 0) return std::nullopt;  // a decision that forecast nothing
  const policy::PolicyConfig& c = decider_.config();
  // The size the decision's what-ifs grew or shrank from (recommend.cc's BaseSize): a count at or
  // above it is judged after the warm-up, a smaller one from now.
  const int32_t base = std::clamp(std::max(d.current, 1), c.min_replicas, c.max_replicas);
  const policy::ForecastQuestion asked = policy::CandidateQuestion(
      q, applied, base, static_cast<int32_t>(d.not_counted.size()), /*margin=*/1.0);
  const policy::Forecast f = decider_.forecaster().Reading(asked);
  TwinPrediction p;
  p.judge_from = asked.judge_from;
  p.horizon = asked.horizon;
  p.replicas = applied;
  p.attainment = f.attainment;
  p.ttft_p90_ms = f.ttft_p90_ms;
  p.waiting_at_end = f.waiting_at_horizon;
  p.settled = !calibrate_ || decider_.calibration().updates >= kSettledCalibrationUpdates;
  p.forecast_rps = d.rate_check ? d.rate_check->forecast * d.forecast_margin : q.arrival_rate;
  p.aim_percent = q.percentile;
  p.budget_requests_percent = d.ledger.request_percent();
  p.budget_minutes_percent = d.ledger.minute_percent();
  return p;
}

int32_t TwinscaleAutoscaler::Decide(const ClusterView& view) {
  policy::Decision d = decider_.Decide(view);
  speed_history_.push_back(decider_.forecaster().options().speed.decode);
  prefill_speed_history_.push_back(decider_.forecaster().options().speed.prefill);
  router_random_share_history_.push_back(decider_.forecaster().options().router_random_share);
  prediction_error_ms_.push_back(decider_.last_prediction_error_ms().value_or(std::nan("")));
  last_reason_.clear();
  for (const policy::Reason& r : d.reasons) {
    if (!last_reason_.empty()) last_reason_ += "; ";
    absl::StrAppend(&last_reason_, r.code);
  }
  decisions_.push_back(std::move(d));
  const int32_t decided = decisions_.back().replicas;
  const int32_t applied = output_.Apply(decided, view.spec_replicas, view.now);
  // The driver sets the fleet to `applied` now: that, not the decision, is the scale event.
  decider_.NoteScaled(view.now, view.spec_replicas, applied);
  if (applied != decided) {
    absl::StrAppend(&last_reason_, "; HPA ", output_.last_reason(), " (decided ", decided,
                    ", HPA set ", applied, ")");
  }
  last_prediction_ = PredictionFor(decisions_.back(), applied);
  return applied;
}

sim::AdmissionLimits TwinscaleAutoscaler::Admission() const {
  sim::AdmissionLimits limits;
  if (decisions_.empty() || !decisions_.back().admission.active) return limits;
  const policy::AdmissionAdvice& a = decisions_.back().admission;
  // A rate limit of 0 would mean "none": an advice that the serving fleet holds nothing in time
  // still admits a trickle (one request a second) rather than lifting the limit.
  limits.max_arrival_rate = std::max(1.0, a.max_arrival_rate);
  limits.max_waiting_per_replica = a.max_queue_per_replica;
  return limits;
}

}  // namespace twinscale::replay
