// twinscale's scaling decision: see recommend.h for the chain of stages.
#include "controller/policy/recommend.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "controller/policy/admission_advice.h"
#include "controller/policy/aim.h"
#include "controller/policy/fleet_sizing.h"
#include "controller/policy/forecast_stage.h"
#include "controller/policy/observed_question.h"
#include "controller/policy/rate_limit.h"
#include "controller/policy/replica_search.h"
#include "controller/policy/size_on_twin.h"
#include "controller/policy/stabilize.h"

namespace twinscale::policy {
namespace {

void Append(std::vector<Reason>& to, std::vector<Reason> from) {
  for (Reason& r : from) to.push_back(std::move(r));
}

}  // namespace

Decision Recommend(const state::FleetSnapshot& snap, const PolicyConfig& c,
                   const Forecaster& forecaster, absl::Time now, const PolicyHistory& history) {
  Decision d;
  d.at = now;
  const int32_t current = std::clamp(snap.spec_replicas, 0, 1 << 20);
  d.current = current;

  // 1. The observed fleet as the twin's question.
  ObservedFleet observed = ObserveFleet(snap, c, now);
  Append(d.reasons, std::move(observed.reasons));
  d.not_counted = std::move(observed.not_counted);
  // Starting pods that no longer count: they hold a slot, not capacity.
  const int32_t stuck = static_cast<int32_t>(d.not_counted.size());
  d.warmup_deadline = c.warmup_p99;
  if (snap.workload.ttft_window && snap.workload.ttft_attainment.usable()) {
    d.served_requests = std::max(0.0, snap.workload.ttft_window->count);
    d.served_met = d.served_requests * std::clamp(snap.workload.ttft_attainment.value(), 0.0, 1.0);
  }
  const int32_t base = BaseSize(current, c);

  // No usable arrival rate: nothing to forecast with. Hold (and never scale in).
  if (!snap.workload.arrival_rate.usable()) {
    d.recommendation = d.replicas = std::clamp(current, c.min_replicas, c.max_replicas);
    d.reasons.push_back(MakeReason(
        ReasonCode::kInputsStale,
        absl::StrFormat("holding at %d: %s", d.replicas, snap.workload.arrival_rate.why_stale())));
    d.question = std::move(observed.question);
    d.question.candidate_replicas = d.replicas;
    return d;
  }

  // 2. The forecast of the judged span, checked.
  ForecastAhead ahead = ForecastTheSpan(std::move(observed.question), snap, c, history, now);
  d.rate_check = ahead.rate_check;
  d.arrivals_seen = ahead.arrivals_seen;
  d.forecast_margin = ahead.margin;
  Append(d.reasons, std::move(ahead.reasons));
  ForecastQuestion q = std::move(ahead.question);

  // 3. The aim, moved by the record.
  Aim aim = AimAt(history, c, now);
  d.ledger = aim.budget.ledger;
  if (aim.lowered_by != 0) {
    q.percentile -= aim.lowered_by;
    d.aim_lowered_by = aim.lowered_by;
  }
  d.aim_optimism_raise = aim.optimism_raise;
  Append(d.reasons, std::move(aim.reasons));

  // 4. The fleet sized on the twin.
  const bool rise_on_record =
      ahead.margin > 1 && !MinutesToSpare(aim.budget.ledger, aim.budget.recent, c.target_minutes);
  SizedFleet sized = SizeOnTwin(q, snap, c, history, forecaster, base, stuck, rise_on_record, now);
  const Sizing& sizing = sized.sizing;
  d.previous_recommendation = sized.bounds.hint;
  d.scale_in_forecasts = std::move(sized.scale_in_forecasts);
  d.scale_in_evidence = sized.bounds.scale_in_evidence;
  d.forecasts += sizing.evaluations;
  d.missed_at = sizing.missed_at_base ? base : 0;
  d.forecast_at_current = sizing.at_base;
  if (sized.verdict.slo_at_risk) d.slo_at_risk = true;
  Append(d.reasons, std::move(sized.verdict.reasons));
  d.recommendation = sized.verdict.recommendation;

  // 5. The stabilization windows; 6. the rate limits. Stale inputs never scale in.
  const int32_t clearly_safe =
      MayScaleInEarly(q, c, aim.budget.ledger, aim.budget.recent) ? sizing.clearly_safe : 0;
  const bool lasts = LastsThroughWarmup(q, c);
  Stabilized stable =
      Stabilize(d.recommendation, base,
                ScaledToTheRateNow(
                    HeldRecommendations(history.recommendations, history.raised_at, lasts, c, now),
                    history.recommendation_rates, q.arrival_rate, lasts),
                c, now, clearly_safe);
  if (stable.reason) d.reasons.push_back(std::move(*stable.reason));
  // twinscale's own scale-down rate follows a fall in the load at once only where levels last.
  const std::optional<int32_t> fall_floor =
      lasts ? FallFloor(current, history.scale_events, history.recommendation_rates, q.arrival_rate)
            : std::nullopt;
  RateLimited limited =
      LimitRate(stable.replicas, current, history.scale_events, c, fall_floor, now);
  if (limited.reason) d.reasons.push_back(std::move(*limited.reason));
  int32_t desired = limited.replicas;
  if (snap.stale) desired = std::max(desired, current);
  d.replicas = std::clamp(desired, c.min_replicas, c.max_replicas);

  // What the decision expects of the fleet it leaves.
  ForecastQuestion final_q = q;
  final_q.candidate_replicas = std::max(1, d.replicas - stuck);
  d.question = final_q;
  if (std::optional<Forecast> f = sizing.Find(d.replicas, 1.0)) {
    d.forecast_at_decision = *f;
  } else if (sizing.base_implied && d.replicas >= sizing.replicas) {
    // Held above a size that meets the SLO at the margin (a scale-in waiting out its window):
    // it meets the SLO too; the smaller fleet's forecast is a lower bound.
    d.forecast_at_decision = sizing.at_answer;
  } else {
    ++d.forecasts;
    ForecastQuestion x = CandidateQuestion(q, d.replicas, base, stuck, 1.0);
    x.percentile = sizing.keep_percentile;
    d.forecast_at_decision = forecaster.Evaluate(x);
  }
  // At risk on a clear miss only: one within the forecast's noise is held, not reported.
  if (!d.forecast_at_decision.meets_slo && d.forecast_at_decision.verdict_clear) {
    d.slo_at_risk = true;
  }

  // 7. Advisory admission: what the fleet serving now holds, while capacity can't keep up.
  AdmissionOutcome admission =
      AdviseAdmission(q, c, d.slo_at_risk, history.last_admission_rate, forecaster);
  d.forecasts += admission.evaluations;
  if (admission.advice.active) d.admission = admission.advice;
  if (admission.reason) d.reasons.push_back(std::move(*admission.reason));
  return d;
}

void RecordDecision(const Decision& d, const PolicyConfig& c, PolicyHistory& h) {
  h.recommendations.emplace_back(d.at, d.recommendation);
  if (d.aim_optimism_raise > 0) h.raised_at.push_back(d.at);
  h.recommendation_rates.emplace_back(
      d.at, HasReason(d.reasons, ReasonCode::kInputsStale) ? 0.0 : d.question.arrival_rate);
  h.last_missed_at = d.missed_at;
  h.last_admission_rate =
      d.admission.active ? std::optional<double>(d.admission.max_arrival_rate) : std::nullopt;
  absl::Duration keep =
      std::max(c.scale_down.stabilization_window, c.scale_up.stabilization_window);
  for (const auto& p : c.scale_up.policies) keep = std::max(keep, p.period);
  for (const auto& p : c.scale_down.policies) keep = std::max(keep, p.period);
  if (c.scale_down.policies.empty()) {  // twinscale's own rate
    for (const auto& p : api::TwinscaleScaleDownPolicies()) keep = std::max(keep, p.period);
  }
  while (!h.recommendations.empty() && d.at - h.recommendations.front().first > keep) {
    h.recommendations.pop_front();
  }
  while (!h.raised_at.empty() && d.at - h.raised_at.front() > keep) h.raised_at.pop_front();
  while (!h.recommendation_rates.empty() && d.at - h.recommendation_rates.front().first > keep) {
    h.recommendation_rates.pop_front();
  }
  while (!h.scale_events.empty() && d.at - h.scale_events.front().first > keep) {
    h.scale_events.pop_front();
  }
  if (d.served_requests > 0) h.served.push_back({d.at, d.served_requests, d.served_met});
  // The interval the last forecast was for, checked (a forecast older than two intervals is for
  // a span this decision's record does not match).
  if (h.interval_forecast && d.served_requests > 0 && d.at > h.interval_forecast->at &&
      d.at - h.interval_forecast->at <= 2 * c.interval) {
    h.interval_checks.push_back({d.at, d.served_requests, h.interval_forecast->attainment,
                                 h.interval_forecast->se, d.served_met / d.served_requests});
  }
  h.interval_forecast.reset();
  while (!h.interval_checks.empty() &&
         d.at - h.interval_checks.front().at >= c.minute_check_window) {
    h.interval_checks.pop_front();
  }
  if (d.rate_check) h.rate_checks.push_back(*d.rate_check);
  if (d.arrivals_seen && (h.arrivals.empty() || d.arrivals_seen->end - h.arrivals.back().end >=
                                                    absl::Seconds(d.arrivals_seen->seconds / 2))) {
    h.arrivals.push_back(*d.arrivals_seen);
  }
  // Checks whose span ended more than the window ago, and arrivals older than any open check.
  while (!h.rate_checks.empty() && d.at - h.rate_checks.front().to > c.forecast_error_window) {
    h.rate_checks.pop_front();
  }
  const absl::Time oldest = h.rate_checks.empty() ? d.at : h.rate_checks.front().from;
  while (!h.arrivals.empty() && h.arrivals.front().end < oldest) h.arrivals.pop_front();
  const absl::Duration keep_served = std::max(c.target_window, c.surplus_window);
  while (!h.served.empty() && d.at - h.served.front().at >= keep_served) h.served.pop_front();
  // Draws at another size say nothing of the scale-in questions the next decisions ask (a change
  // of size drops them all: RecordScaleEvent).
  const int32_t base = BaseSize(d.current, c);
  std::erase_if(h.margin_draws, [&](const PolicyHistory::MarginDraw& m) {
    return m.base != base || d.at - m.at > c.scale_down.stabilization_window;
  });
  for (const MarginForecast& f : d.scale_in_forecasts) {
    h.margin_draws.push_back({d.at, base, c.safety_margin, c.ttft_threshold,
                              c.ttft_per_prompt_token, f,
                              static_cast<int32_t>(d.not_counted.size())});
  }
}

void RecordIntervalForecast(absl::Time at, const Forecast& f, PolicyHistory& h) {
  h.interval_forecast = IntervalForecast{at, f.attainment, f.attainment_se};
}

void RecordScaleEvent(absl::Time at, int32_t from, int32_t to, PolicyHistory& h) {
  if (from == to) return;
  h.scale_events.emplace_back(at, to - from);
  h.margin_draws.clear();
}

}  // namespace twinscale::policy
