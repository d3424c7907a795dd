// The fleet sized on the twin, and what the sizing says: see size_on_twin.h.
#include "controller/policy/size_on_twin.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/minute_check.h"

namespace twinscale::policy {
namespace {

// When the ITL objective is what `f` misses: "; ITL: 71.2% of output tokens within 100ms (SLO:
// 90%)", else "".
std::string ItlNote(const Forecast& f, const PolicyConfig& c) {
  if (f.itl_met || c.itl_threshold <= absl::ZeroDuration()) return "";
  return absl::StrFormat("; ITL: %.1f%% of output tokens within %s (SLO: %.0f%%)",
                         100 * f.itl_within, absl::FormatDuration(c.itl_threshold),
                         c.itl_percentile);
}

}  // namespace

int32_t BaseSize(int32_t current, const PolicyConfig& c) {
  return std::clamp(std::max(current, 1), c.min_replicas, c.max_replicas);
}

FleetLoad LoadOf(const state::FleetSnapshot& snap, const PolicyConfig& c) {
  FleetLoad load;
  const double n_ready = std::max<double>(1, snap.ready());
  load.queue_per_replica = snap.total_waiting() / n_ready;
  load.kv_usage = snap.max_kv_usage();
  load.over_limits =
      load.queue_per_replica > c.queue_depth_per_replica || load.kv_usage > c.kv_cache_utilization;
  return load;
}

SizingBounds BoundsFor(const state::FleetSnapshot& snap, const PolicyConfig& c,
                       const PolicyHistory& history, int32_t base, int32_t stuck,
                       const FleetLoad& load, absl::Time now) {
  SizingBounds bounds;
  bounds.base = base;
  bounds.min_replicas = c.min_replicas;
  bounds.max_replicas = c.max_replicas;
  bounds.not_counted = stuck;
  bounds.safety_margin = c.safety_margin;
  const std::optional<MinuteCheck> minute = CheckLastMinute(
      history.interval_checks, now, c.minute_check_window, c.interval, c.percentile);
  bounds.miss_observed = minute && minute->missed;
  bounds.scale_in_allowed = !snap.stale && !load.over_limits && !bounds.miss_observed;
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
  return bounds;
}

SizingVerdict ReadSizing(const Sizing& sizing, const ForecastQuestion& q, const PolicyConfig& c,
                         const FleetLoad& load, bool stale, const std::string& stale_reason,
                         int32_t base, int32_t pooled_at_answer) {
  SizingVerdict v;
  v.recommendation = sizing.replicas;
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
    v.reasons.push_back(MakeReason(
        ReasonCode::kSloUnattainable,
        absl::StrFormat("even %d idle replicas keep only %.1f%% of requests within the TTFT SLO "
                        "(%s): aiming at %.1f%%",
                        c.max_replicas, cap + 1.0, cause, std::max(0.0, cap))));
    v.slo_at_risk = true;
  }
  switch (sizing.outcome) {
    case Sizing::Outcome::kMaxInsufficient:
      v.slo_at_risk = true;
      v.reasons.push_back(MakeReason(
          ReasonCode::kMaxReplicasInsufficient,
          absl::StrFormat("even maxReplicas=%d misses the TTFT SLO: forecast attainment %.1f%% "
                          "< %.0f%% at %.1f req/s%s",
                          c.max_replicas, 100 * sizing.at_base.attainment, c.percentile,
                          q.arrival_rate,
                          ItlNote(sizing.at_base, c) +
                              (sizing.ceiling_overloaded
                                   ? absl::StrFormat("; requests would wait %.0f ms on average "
                                                     "to be scheduled even there: the load "
                                                     "exceeds what maxReplicas serve",
                                                     sizing.ceiling_delay_ms)
                                   : std::string()))));
      break;
    case Sizing::Outcome::kScaleUp:
      v.reasons.push_back(MakeReason(
          ReasonCode::kForecastMissesSlo,
          absl::StrCat(
              absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                              "TTFT SLO (aim %.1f%%) at %.1f req/s over %s; %d replicas reach "
                              "%.1f%%",
                              base, 100 * sizing.at_base.attainment, sizing.keep_percentile,
                              q.arrival_rate, absl::FormatDuration(q.horizon), sizing.replicas,
                              100 * sizing.at_answer.attainment),
              sizing.shallow_step
                  ? absl::StrFormat(" (a shallow miss, above the SLO's %.0f%%, seen twice: one "
                                    "replica at a time)",
                                    c.percentile)
                  : std::string(),
              sizing.rise_on_record && !sizing.miss_observed
                  ? " (confirmed by arrivals above the rate forecast, check after check, with "
                    "no minutes to spare on record)"
                  : "",
              ItlNote(sizing.at_base, c))));
      break;
    case Sizing::Outcome::kScaleIn:
      v.reasons.push_back(MakeReason(
          ReasonCode::kScaleInSafe,
          absl::StrFormat(
              "the twin shows %.1f%% of requests within %.0f%% of their slack "
              "(target %.1f%%) with %d replicas (%.1f req/s)%s",
              100 * sizing.at_answer.attainment, 100 * c.safety_margin, sizing.scale_in_percentile,
              sizing.replicas, q.arrival_rate,
              pooled_at_answer > 0
                  ? absl::StrFormat(", with %d earlier decisions' forecasts", pooled_at_answer)
                  : std::string())));
      break;
    case Sizing::Outcome::kHold:
      if (sizing.miss_within_noise) {
        v.reasons.push_back(MakeReason(
            ReasonCode::kMissWithinNoise,
            absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                            "TTFT SLO (aim %.1f%%), short by less than its own noise (standard "
                            "error %.1f points): holding",
                            base, 100 * sizing.at_base.attainment, sizing.keep_percentile,
                            100 * sizing.at_base.attainment_se)));
      }
      if (sizing.miss_unconfirmed) {
        v.reasons.push_back(MakeReason(
            ReasonCode::kMissUnconfirmed,
            absl::StrFormat("at %d replicas the twin forecasts %.1f%% of requests within the "
                            "TTFT SLO (aim %.1f%%, SLO %.0f%%): a first miss above the SLO "
                            "itself, holding until the next decision's draw confirms it",
                            base, 100 * sizing.at_base.attainment, sizing.keep_percentile,
                            c.percentile)));
      }
      if (c.enforce_limits_on_scale_up && load.over_limits) {
        v.recommendation = std::min(c.max_replicas, base + 1);
        v.reasons.push_back(
            MakeReason(ReasonCode::kLimitsExceeded,
                       absl::StrFormat("queue %.1f/replica (limit %.1f), KV %.0f%% (limit %.0f%%)",
                                       load.queue_per_replica, c.queue_depth_per_replica,
                                       100 * load.kv_usage, 100 * c.kv_cache_utilization)));
      } else if (stale) {
        v.reasons.push_back(
            MakeReason(ReasonCode::kScaleInFrozen, "inputs are stale: " + stale_reason));
      } else if (load.over_limits) {
        v.reasons.push_back(MakeReason(
            ReasonCode::kScaleInBlockedByLimits,
            absl::StrFormat("queue %.1f/replica (limit %.1f) or KV %.0f%% (limit %.0f%%) too "
                            "high to scale in",
                            load.queue_per_replica, c.queue_depth_per_replica, 100 * load.kv_usage,
                            100 * c.kv_cache_utilization)));
      } else if (sizing.miss_within_noise || sizing.miss_unconfirmed || sizing.miss_observed) {
        // said above, or by the aim's MinuteMissed
      } else if (base > c.min_replicas) {
        v.reasons.push_back(MakeReason(ReasonCode::kSteady,
                                       absl::StrFormat("%d replicas meet the SLO; %d would not at "
                                                       "the %.0f%% safety margin",
                                                       base, base - 1, 100 * c.safety_margin)));
      } else {
        v.reasons.push_back(
            MakeReason(ReasonCode::kSteady, absl::StrFormat("%d replicas meet the SLO", base)));
      }
      break;
  }
  return v;
}

SizedFleet SizeOnTwin(const ForecastQuestion& q, const state::FleetSnapshot& snap,
                      const PolicyConfig& c, const PolicyHistory& history,
                      const Forecaster& forecaster, int32_t base, int32_t stuck,
                      bool rise_on_record, absl::Time now) {
  SizedFleet out;
  const FleetLoad load = LoadOf(snap, c);
  out.bounds = BoundsFor(snap, c, history, base, stuck, load, now);
  out.bounds.rise_on_record = rise_on_record;
  out.sizing = SizeFleet(q, forecaster, out.bounds);
  int32_t pooled_at_answer = 0;
  for (const Sizing::Asked& a : out.sizing.asked) {
    if (a.margin >= 1.0) continue;
    out.scale_in_forecasts.push_back(
        {a.replicas, a.own.attainment, a.own.attainment_se, a.own.requests, q.arrival_rate});
    if (a.replicas == out.sizing.replicas) pooled_at_answer = a.pooled;
  }
  out.verdict =
      ReadSizing(out.sizing, q, c, load, snap.stale, snap.stale_reason, base, pooled_at_answer);
  return out;
}

}  // namespace twinscale::policy
