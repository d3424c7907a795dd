// twinscale's scaling decision: see recommend.h for the rules.
#include "controller/policy/recommend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/admission_search.h"
#include "controller/policy/fleet_sizing.h"
#include "controller/policy/hpa_algorithm.h"
#include "controller/policy/replica_search.h"

namespace twinscale::policy {
namespace {

using state::PodView;

// The twin's random numbers for the decision at `now`: the same for every candidate size (common
// random numbers), another at each decision. With one seed throughout, every decision re-drew the
// same arrivals and lengths, so a draw's error persisted for the whole run: on the Azure
// conversation trace at x40 one seed's twin saw 23 replicas keep 99% of requests, another's 96.5%
// at 25. Drawn afresh, the errors average out over the stabilization window. (SplitMix64's
// finalizer over the seed and the decision's second: deterministic for a given seed and clock.)
uint64_t DecisionSeed(uint64_t seed, absl::Time now) {
  uint64_t x = seed ^ (static_cast<uint64_t>(absl::ToUnixSeconds(now)) * 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// What the forecasts must show before the record moves the aim: the share of requests the target
// asks for, at least the SLO's percentile plus the minimum headroom, at most 99.5%.
double FullAim(const PolicyConfig& c) {
  return std::min(99.5, std::max(c.target_requests, c.percentile + c.min_forecast_headroom));
}

// The size the searches start from and the scale-in draws are kept for: the current one, at least
// 1, within the configured bounds.
int32_t BaseSize(int32_t current, const PolicyConfig& c) {
  return std::clamp(std::max(current, 1), c.min_replicas, c.max_replicas);
}

LengthShape ShapeOf(const std::optional<metrics::CumulativeHistogram>& h) {
  LengthShape s;
  if (!h || h->count <= 0 || h->cumulative.size() != h->upper_bounds.size() + 1) return s;
  s.upper_bounds = h->upper_bounds;
  double prev = 0;
  for (double c : h->cumulative) {
    s.weights.push_back(std::max(0.0, c - prev));
    prev = c;
  }
  return s;
}

// The forecast question for the observed fleet, without the candidate size; the starting pods it
// leaves out of capacity go to `not_counted_pods`.
ForecastQuestion BaseQuestion(const state::FleetSnapshot& snap, const PolicyConfig& c,
                              absl::Time now, std::vector<Reason>& reasons, int32_t& not_counted,
                              std::vector<NotCountedPod>& not_counted_pods) {
  ForecastQuestion q;
  not_counted = 0;
  not_counted_pods.clear();
  for (const state::ReplicaState& r : snap.replicas) {
    if (r.stage == PodView::Stage::kReady) {
      q.ready.push_back({r.waiting, r.running, r.kv_usage});
    } else if (r.stage == PodView::Stage::kPending || r.stage == PodView::Stage::kLoading ||
               r.stage == PodView::Stage::kWarmingUp) {
      if (r.unschedulable || r.age > c.warmup_p99) {
        ++not_counted;
        not_counted_pods.push_back({r.name, r.age, r.unschedulable});
        continue;
      }
      const absl::Duration remaining = std::max(c.warmup_expected - r.age, c.interval / 2);
      q.pending_ready_in.push_back(remaining);
    }
  }
  if (not_counted > 0) {
    reasons.push_back({"PendingNotCounted",
                       absl::StrFormat("%d starting pod(s) are unschedulable or older than the "
                                       "p99 warm-up (%s) and no longer count as capacity",
                                       not_counted, absl::FormatDuration(c.warmup_p99))});
  }
  const state::WorkloadEstimate& w = snap.workload;
  // The twin draws each interval's rate around the recent level with the measured swing
  // (arrival_rate_cv); the last interval alone is one such swing, and starting from it would
  // count it twice: a burst would be forecast to continue at its peak and be swung on top of that.
  q.arrival_rate = !w.arrival_rate.usable()   ? 0.0
                   : w.arrival_rate_level > 0 ? w.arrival_rate_level
                                              : w.arrival_rate.value();
  // A rate that swings by more than its mean from one interval to the next is a measurement
  // artefact (a handful of requests per interval), not a shape the twin can use: capped at 1.
  q.arrival_rate_cv = std::clamp(w.rate_cv, 0.0, 1.0);
  q.rate_interval = w.rate_interval;
  if (q.arrival_rate > 0 && w.arrival_rate_baseline > 0 && !w.rate_persistence.empty()) {
    q.arrival_rate_baseline = w.arrival_rate_baseline;
    q.rate_persistence = w.rate_persistence;
  }
  if (q.arrival_rate > 0) q.rate_season = w.rate_season;
  q.prompt_tokens_mean =
      w.prompt_tokens_mean.usable() ? w.prompt_tokens_mean.value() : c.default_prompt_tokens;
  q.output_tokens_mean =
      w.output_tokens_mean.usable() ? w.output_tokens_mean.value() : c.default_output_tokens;
  q.prompt_shape = ShapeOf(w.prompt_lengths);
  q.output_shape = ShapeOf(w.output_lengths);
  q.new_replica_warmup = c.warmup_expected;
  // Long enough after the warm-up to judge the new fleet on a minute or more of traffic.
  q.horizon = ForecastHorizon(c);
  q.ttft_threshold = c.ttft_threshold;
  q.ttft_per_prompt_token = c.ttft_per_prompt_token;
  q.percentile = FullAim(c);
  q.itl_threshold = c.itl_threshold;
  q.itl_percentile = c.itl_percentile;
  q.seed = DecisionSeed(c.seed, now);
  return q;
}

// When the ITL objective is what `f` misses: "; ITL: 71.2% of output tokens within 100ms (SLO:
// 90%)", else "".
std::string ItlNote(const Forecast& f, const PolicyConfig& c) {
  if (f.itl_met || c.itl_threshold <= absl::ZeroDuration()) return "";
  return absl::StrFormat("; ITL: %.1f%% of output tokens within %s (SLO: %.0f%%)",
                         100 * f.itl_within, absl::FormatDuration(c.itl_threshold),
                         c.itl_percentile);
}

// The mean rate the question's path forecasts over [from, horizon), second by second (0 when the
// span is empty): the persistence weights apply only with a baseline, as the twin applies them;
// the seasonal ratios always.
double MeanForecastRate(const ForecastQuestion& q, absl::Duration from) {
  const absl::Duration step = std::max(absl::Seconds(1), q.rate_interval);
  const bool path = !q.rate_persistence.empty() && q.arrival_rate_baseline > 0;
  const std::vector<double> no_weights;
  double sum = 0;
  int32_t n = 0;
  for (absl::Duration t = from; t < q.horizon; t += absl::Seconds(1)) {
    absl::Duration within;  // IDivDuration needs somewhere to put the remainder
    const int64_t k = 1 + absl::IDivDuration(t, step, &within);
    sum += std::max(0.0,
                    path ? RateAhead(q.arrival_rate, q.arrival_rate_baseline, q.rate_persistence,
                                     q.rate_season, k)
                         : RateAhead(q.arrival_rate, q.arrival_rate, no_weights, q.rate_season, k));
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

}  // namespace

BudgetOnRecord BudgetAt(const PolicyHistory& history, const PolicyConfig& c, absl::Time now) {
  BudgetOnRecord b;
  b.ledger = LedgerOf(history.served, now, c.target_window, c.interval, c.percentile);
  b.recent = LedgerOf(history.served, now, c.surplus_window, c.interval, c.percentile);
  BudgetRules rules = c.budget;
  rules.target_requests = c.target_requests;
  const double aim = FullAim(c);
  rules.max_lower = std::max(0.0, aim - (c.percentile + c.min_forecast_headroom));
  rules.max_raise = std::clamp(99.5 - aim, 0.0, std::max(0.0, c.budget.max_raise));
  rules.min_record = std::min(c.budget.min_record, c.surplus_window);
  b.shift = AimShiftFor(b.recent, rules);
  return b;
}

ForecastQuestion ObservedQuestion(const state::FleetSnapshot& snapshot,
                                  const PolicyConfig& config) {
  std::vector<Reason> reasons;
  int32_t not_counted = 0;
  std::vector<NotCountedPod> not_counted_pods;
  return BaseQuestion(snapshot, config, snapshot.at, reasons, not_counted, not_counted_pods);
}

Decision Recommend(const state::FleetSnapshot& snap, const PolicyConfig& c,
                   const Forecaster& forecaster, absl::Time now, const PolicyHistory& history) {
  Decision d;
  d.at = now;
  const int32_t current = std::clamp(snap.spec_replicas, 0, 1 << 20);
  d.current = current;
  int32_t stuck = 0;  // starting pods that no longer count: they hold a slot, not capacity
  ForecastQuestion q = BaseQuestion(snap, c, now, d.reasons, stuck, d.not_counted);
  d.warmup_deadline = c.warmup_p99;
  if (snap.workload.ttft_window && snap.workload.ttft_attainment.usable()) {
    d.served_requests = std::max(0.0, snap.workload.ttft_window->count);
    d.served_met = d.served_requests * std::clamp(snap.workload.ttft_attainment.value(), 0.0, 1.0);
  }
  const int32_t base = BaseSize(current, c);

  // No usable arrival rate: nothing to forecast with. Hold (and never scale in).
  if (!snap.workload.arrival_rate.usable()) {
    d.recommendation = d.replicas = std::clamp(current, c.min_replicas, c.max_replicas);
    d.reasons.push_back({"InputsStale", absl::StrFormat("holding at %d: %s", d.replicas,
                                                        snap.workload.arrival_rate.why_stale())});
    d.question = q;
    d.question.candidate_replicas = d.replicas;
    return d;
  }

  // The forecast, checked: the mean rate of this decision's rate path over its judged span (from
  // the warm-up to the horizon), for later decisions to compare with what came; and the margin
  // the recent checks ask for.
  {
    if (const double mean = MeanForecastRate(q, c.warmup_expected); mean > 0) {
      d.rate_check = RateCheck{now + c.warmup_expected, now + q.horizon, mean};
    }
    const double seconds = absl::ToDoubleSeconds(snap.workload.rate_interval);
    if (seconds > 0) {
      d.arrivals_seen =
          ArrivalWindow{snap.at, seconds, snap.workload.arrival_rate.value() * seconds};
    }
    // The season's part of the forecast, said where it moves the rate over the judged span.
    if (!q.rate_season.empty()) {
      ForecastQuestion level_only = q;
      level_only.rate_season.clear();
      const double with = MeanForecastRate(q, c.warmup_expected);
      const double without = MeanForecastRate(level_only, c.warmup_expected);
      if (without > 0 && std::abs(with / without - 1) >= 0.01) {
        const state::SeasonSkill::Score& skill = snap.workload.season_skill;
        d.reasons.push_back(
            {"SeasonalForecast",
             absl::StrFormat("on the days before, the rate moved by %+.1f%% from the level's "
                             "window to the span judged (%s to %s ahead): forecasting %.1f req/s "
                             "there (over the last %d checks the season's forecasts erred by "
                             "%.1f%%, the level's alone by %.1f%%)",
                             100 * (with / without - 1), absl::FormatDuration(c.warmup_expected),
                             absl::FormatDuration(q.horizon), with, skill.checks,
                             100 * skill.seasonal_error, 100 * skill.level_error)});
      }
    }
    if (c.forecast_error_window > absl::ZeroDuration()) {
      const std::vector<double> ratios =
          ForecastRatios(history.rate_checks, history.arrivals, now - c.forecast_error_window);
      const double m = ShortfallMargin(ratios, c.forecast_error_min_checks, c.forecast_error_cap);
      if (m > 1) {
        d.forecast_margin = m;
        q.arrival_rate *= m;
        q.arrival_rate_baseline *= m;
        d.reasons.push_back(
            {"ForecastMargin",
             absl::StrFormat("the last %zu checks of the rate forecast all saw more arrivals "
                             "than forecast, the least by %.1f%%: asking the twin about %.1f "
                             "req/s",
                             ratios.size(), 100 * (m - 1), q.arrival_rate)});
      }
    }
  }

  // The SLO budget's record moves the aim: down by a surplus, up by a shortfall.
  const BudgetOnRecord budget = BudgetAt(history, c, now);
  d.ledger = budget.ledger;
  if (const double lowered = budget.shift.lowered_by - budget.shift.raised_by; lowered != 0) {
    q.percentile -= lowered;
    d.aim_lowered_by = lowered;
    const BudgetLedger& l = budget.recent;
    d.reasons.push_back(
        {BudgetReasonCode(budget.shift.state),
         absl::StrFormat("over the last %s the fleet served %.2f%% of %.0f requests within the "
                         "TTFT threshold, and %d of %d minutes at p%g (target: %g%% and %g%%): "
                         "aiming the forecasts at %.1f%%",
                         absl::FormatDuration(absl::Trunc(l.record, absl::Seconds(1))),
                         l.request_percent(), l.requests, l.minutes_met, l.minutes, c.percentile,
                         c.target_requests, c.target_minutes, q.percentile)});
  }

  const double n_ready = std::max<double>(1, snap.ready());
  const double queue_per_replica = snap.total_waiting() / n_ready;
  const double kv = snap.max_kv_usage();
  const bool over_limits =
      queue_per_replica > c.queue_depth_per_replica || kv > c.kv_cache_utilization;

  // The what-ifs (fleet_sizing.h): keeping or adding capacity is judged after the warm-up (before
  // it, the fleet already ordered is all there is); removing capacity is judged from now, at the
  // safety margin, and only on fresh inputs with the fleet under both limits. The searches start
  // at the previous recommendation.
  SizingBounds bounds;
  bounds.base = base;
  bounds.min_replicas = c.min_replicas;
  bounds.max_replicas = c.max_replicas;
  bounds.not_counted = stuck;
  bounds.safety_margin = c.safety_margin;
  bounds.scale_in_allowed = !snap.stale && !over_limits;
  bounds.hint = history.recommendations.empty() ? 0 : history.recommendations.back().second;
  bounds.slo_percentile = c.percentile;
  bounds.miss_seen_at_base = history.last_missed_at == base;
  for (const PolicyHistory::MarginDraw& m : history.margin_draws) {
    if (m.base == base && m.safety_margin == c.safety_margin &&
        m.ttft_threshold == c.ttft_threshold &&
        m.ttft_per_prompt_token == c.ttft_per_prompt_token && m.not_counted == stuck &&
        now - m.at <= c.scale_down.stabilization_window && m.at < now) {
      bounds.scale_in_evidence.push_back(m.forecast);
    }
  }
  d.previous_recommendation = bounds.hint;
  const Sizing sizing = SizeFleet(q, forecaster, bounds);
  int32_t pooled_at_answer = 0;
  for (const Sizing::Asked& a : sizing.asked) {
    if (a.margin >= 1.0) continue;
    d.scale_in_forecasts.push_back(
        {a.replicas, a.own.attainment, a.own.attainment_se, a.own.requests, q.arrival_rate});
    if (a.replicas == sizing.replicas) pooled_at_answer = a.pooled;
  }
  d.scale_in_evidence = bounds.scale_in_evidence;
  d.forecasts += sizing.evaluations;
  d.missed_at = sizing.missed_at_base ? base : 0;
  d.forecast_at_current = sizing.at_base;
  if (sizing.slo_unattainable) {
    const double cap = sizing.keep_ceiling.value_or(0);
    // Two things no added replica helps: prompts too long to prefill within the threshold, and a
    // backlog already queued on the Ready replicas (a new replica takes only new arrivals). Name
    // the backlog when there is one (at least one request per Ready replica), else the prompts.
    double queued = 0;
    for (const ReplicaStart& r : q.ready) queued += r.waiting;
    const std::string cause =
        queued >= std::max<double>(1.0, static_cast<double>(q.ready.size()))
            ? absl::StrFormat(
                  "%.0f requests are already queued on the %d Ready replicas, and new "
                  "replicas take only new arrivals; long prompts may add to it",
                  queued, static_cast<int32_t>(q.ready.size()))
            : std::string(
                  "the rest are too long to prefill in time; consider "
                  "slo.ttft.perPromptToken");
    d.reasons.push_back(
        {"SloUnattainable",
         absl::StrFormat("even %d idle replicas keep only %.1f%% of requests within the TTFT SLO "
                         "(%s): aiming at %.1f%%",
                         c.max_replicas, cap + 1.0, cause, std::max(0.0, cap))});
    d.slo_at_risk = true;
  }
  int32_t recommendation = sizing.replicas;
  switch (sizing.outcome) {
    case Sizing::Outcome::kMaxInsufficient:
      d.slo_at_risk = true;
      d.reasons.push_back(
          {"MaxReplicasInsufficient",
           absl::StrFormat("even maxReplicas=%d misses the TTFT SLO: forecast attainment %.1f%% "
                           "< %.0f%% at %.1f req/s%s",
                           c.max_replicas, 100 * d.forecast_at_current.attainment, c.percentile,
                           q.arrival_rate,
                           ItlNote(d.forecast_at_current, c) +
                               (sizing.ceiling_overloaded
                                    ? absl::StrFormat("; requests would wait %.0f ms on average "
                                                      "to be scheduled even there: the load "
                                                      "exceeds what maxReplicas serve",
                                                      sizing.ceiling_delay_ms)
                                    : std::string()))});
      break;
    case Sizing::Outcome::kScaleUp:
      d.reasons.push_back(
          {"ForecastMissesSlo",
           absl::StrCat(
               absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                               "TTFT SLO (aim %.1f%%) at %.1f req/s over %s; %d replicas reach "
                               "%.1f%%",
                               base, 100 * d.forecast_at_current.attainment, sizing.keep_percentile,
                               q.arrival_rate, absl::FormatDuration(q.horizon), sizing.replicas,
                               100 * sizing.at_answer.attainment),
               sizing.shallow_step
                   ? absl::StrFormat(" (a shallow miss, above the SLO's %.0f%%, seen twice: one "
                                     "replica at a time)",
                                     c.percentile)
                   : std::string(),
               ItlNote(d.forecast_at_current, c))});
      break;
    case Sizing::Outcome::kScaleIn:
      d.reasons.push_back(
          {"ScaleInSafe",
           absl::StrFormat(
               "the twin shows %.1f%% of requests within %.0f%% of their slack "
               "(target %.1f%%) with %d replicas (%.1f req/s)%s",
               100 * sizing.at_answer.attainment, 100 * c.safety_margin, sizing.scale_in_percentile,
               sizing.replicas, q.arrival_rate,
               pooled_at_answer > 0
                   ? absl::StrFormat(", with %d earlier decisions' forecasts", pooled_at_answer)
                   : std::string())});
      break;
    case Sizing::Outcome::kHold:
      if (sizing.miss_within_noise) {
        d.reasons.push_back(
            {"MissWithinNoise",
             absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                             "TTFT SLO (aim %.1f%%), short by less than its own noise (standard "
                             "error %.1f points): holding",
                             base, 100 * d.forecast_at_current.attainment, sizing.keep_percentile,
                             100 * d.forecast_at_current.attainment_se)});
      }
      if (sizing.miss_unconfirmed) {
        d.reasons.push_back(
            {"MissUnconfirmed",
             absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                             "TTFT SLO (aim %.1f%%, SLO %.0f%%): a first miss above the SLO "
                             "itself, holding until the next decision's draw confirms it",
                             base, 100 * d.forecast_at_current.attainment, sizing.keep_percentile,
                             c.percentile)});
      }
      if (c.enforce_limits_on_scale_up && over_limits) {
        recommendation = std::min(c.max_replicas, base + 1);
        d.reasons.push_back(
            {"LimitsExceeded",
             absl::StrFormat("queue %.1f/replica (limit %.1f), KV %.0f%% (limit %.0f%%)",
                             queue_per_replica, c.queue_depth_per_replica, 100 * kv,
                             100 * c.kv_cache_utilization)});
      } else if (snap.stale) {
        d.reasons.push_back({"ScaleInFrozen", "inputs are stale: " + snap.stale_reason});
      } else if (over_limits) {
        d.reasons.push_back(
            {"ScaleInBlockedByLimits",
             absl::StrFormat("queue %.1f/replica (limit %.1f) or KV %.0f%% (limit %.0f%%) too "
                             "high to scale in",
                             queue_per_replica, c.queue_depth_per_replica, 100 * kv,
                             100 * c.kv_cache_utilization)});
      } else if (sizing.miss_within_noise || sizing.miss_unconfirmed) {
        // said above
      } else if (base > c.min_replicas) {
        d.reasons.push_back({"Steady", absl::StrFormat("%d replicas meet the SLO; %d would not at "
                                                       "the %.0f%% safety margin",
                                                       base, base - 1, 100 * c.safety_margin)});
      } else {
        d.reasons.push_back({"Steady", absl::StrFormat("%d replicas meet the SLO", base)});
      }
      break;
  }
  d.recommendation = recommendation;

  // Stabilization (the HPA's): scale-down takes the max of the recommendations within its window,
  // scale-up the min within its own; so a scale-in happens only after the whole window agreed.
  int32_t desired = recommendation;
  if (recommendation < base) {
    for (const auto& [t, r] : history.recommendations) {
      if (now - t <= c.scale_down.stabilization_window) desired = std::max(desired, r);
    }
    // Conservative where the HPA is not: a window not yet observed in full (a fresh start, a
    // restart) counts as recommending the current size, so scale-in waits it out.
    const absl::Duration window = c.scale_down.stabilization_window;
    const bool covered =
        window <= absl::ZeroDuration() ||
        (!history.recommendations.empty() && now - history.recommendations.front().first >= window);
    if (!covered) desired = base;
    if (desired > recommendation) {
      d.reasons.push_back({"ScaleDownStabilized",
                           absl::StrFormat("waiting out the %s scale-down window (holding %d)",
                                           absl::FormatDuration(c.scale_down.stabilization_window),
                                           std::min(desired, base))});
    }
    desired = std::min(desired, base);
  } else if (recommendation > base) {
    for (const auto& [t, r] : history.recommendations) {
      if (now - t <= c.scale_up.stabilization_window) desired = std::min(desired, r);
    }
    desired = std::max(desired, base);
  }
  // Rate limits, as the HPA computes them from the scale events within each policy's period.
  if (desired > current && current > 0) {
    const int32_t limit = c.scale_up.select == api::SelectPolicy::kDisabled
                              ? current
                              : HpaScaleUpLimit(current, history.scale_events, c.scale_up, now);
    if (desired > limit) {
      d.reasons.push_back(
          {"ScaleUpLimit",
           absl::StrFormat("scale-up policies allow %d now (want %d)", limit, desired)});
      desired = std::max(current, limit);
    }
  } else if (desired < current) {
    const int32_t limit = c.scale_down.select == api::SelectPolicy::kDisabled
                              ? current
                              : HpaScaleDownLimit(current, history.scale_events, c.scale_down, now);
    if (desired < limit) {
      d.reasons.push_back(
          {"ScaleDownLimit",
           absl::StrFormat("scale-down policies allow %d now (want %d)", limit, desired)});
      desired = std::min(current, limit);
    }
  }
  if (snap.stale) desired = std::max(desired, current);  // stale inputs never scale in
  d.replicas = std::clamp(desired, c.min_replicas, c.max_replicas);

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

  // Advisory admission: what the fleet serving now holds, while capacity can't keep up.
  if (c.admission_enabled && d.slo_at_risk && !q.ready.empty()) {
    ForecastQuestion now_q = q;
    now_q.candidate_replicas = static_cast<int32_t>(q.ready.size());
    now_q.pending_ready_in.clear();
    const HeldRate held =
        LargestHeldRate(q.arrival_rate, history.last_admission_rate, [&](double rate) {
          now_q.arrival_rate = rate;
          return forecaster.Evaluate(now_q).meets_slo;
        });
    d.forecasts += held.evaluations;
    const double lo = held.max_arrival_rate;
    d.admission.active = true;
    d.admission.max_arrival_rate = lo;
    d.admission.max_queue_per_replica = static_cast<int32_t>(std::ceil(c.queue_depth_per_replica));
    if (c.admission_max_queue_per_replica.has_value()) {
      d.admission.max_queue_per_replica =
          std::min(d.admission.max_queue_per_replica, *c.admission_max_queue_per_replica);
    }
    d.reasons.push_back({"AdmissionAdvised",
                         absl::StrFormat("the %zu serving replicas hold about %.1f req/s within "
                                         "the SLO (arriving: %.1f)",
                                         q.ready.size(), lo, q.arrival_rate)});
  }
  return d;
}

void RecordDecision(const Decision& d, const PolicyConfig& c, PolicyHistory& h) {
  h.recommendations.emplace_back(d.at, d.recommendation);
  h.last_missed_at = d.missed_at;
  h.last_admission_rate =
      d.admission.active ? std::optional<double>(d.admission.max_arrival_rate) : std::nullopt;
  absl::Duration keep =
      std::max(c.scale_down.stabilization_window, c.scale_up.stabilization_window);
  for (const auto& p : c.scale_up.policies) keep = std::max(keep, p.period);
  for (const auto& p : c.scale_down.policies) keep = std::max(keep, p.period);
  while (!h.recommendations.empty() && d.at - h.recommendations.front().first > keep) {
    h.recommendations.pop_front();
  }
  while (!h.scale_events.empty() && d.at - h.scale_events.front().first > keep) {
    h.scale_events.pop_front();
  }
  if (d.served_requests > 0) h.served.push_back({d.at, d.served_requests, d.served_met});
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

void RecordScaleEvent(absl::Time at, int32_t from, int32_t to, PolicyHistory& h) {
  if (from == to) return;
  h.scale_events.emplace_back(at, to - from);
  h.margin_draws.clear();
}

}  // namespace twinscale::policy
