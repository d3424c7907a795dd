// decisions.jsonl: see decision_log.h.
#include "controller/replay/decision_log.h"

#include <cmath>
#include <cstddef>
#include <optional>

#include "controller/replay/report.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

using nlohmann::ordered_json;

ordered_json ForecastJson(const policy::Forecast& f) {
  ordered_json j;
  j["attainment"] = RoundForPeople(f.attainment, 4);
  j["ttft_p90_ms"] = RoundForPeople(f.ttft_p90_ms, 1);
  j["attainment_se"] = RoundForPeople(f.attainment_se, 4);
  j["meets_slo"] = f.meets_slo;
  j["verdict_clear"] = f.verdict_clear;
  if (f.itl_tokens > 0) j["itl_within"] = RoundForPeople(f.itl_within, 4);  // spec.slo.itl set
  return j;
}

template <typename T>
ordered_json OrNull(const std::optional<T>& v, int digits) {
  return v.has_value() ? ordered_json(RoundForPeople(static_cast<double>(*v), digits))
                       : ordered_json(nullptr);
}

ordered_json CheckJson(const CheckedPrediction& c) {
  ordered_json j;
  j["replicas"] = c.predicted.replicas;
  j["judge_from_s"] = RoundForPeople(absl::ToDoubleSeconds(c.predicted.judge_from), 3);
  j["horizon_s"] = RoundForPeople(absl::ToDoubleSeconds(c.predicted.horizon), 3);
  j["counted"] = c.counted;
  j["cut"] = c.cut;
  j["predicted"] = {{"attainment", RoundForPeople(c.predicted.attainment, 4)},
                    {"ttft_p90_ms", RoundForPeople(c.predicted.ttft_p90_ms, 1)},
                    {"waiting", RoundForPeople(c.predicted.waiting_at_end, 1)}};
  ordered_json observed;
  observed["requests"] = c.requests;
  observed["attainment"] =
      c.requests > 0 ? ordered_json(RoundForPeople(c.observed_attainment, 4)) : nullptr;
  observed["ttft_p90_ms"] = OrNull(c.observed_ttft_p90_ms, 1);
  observed["waiting"] = OrNull(c.observed_waiting, 0);
  j["observed"] = std::move(observed);
  return j;
}

}  // namespace

std::string DecisionLogJsonl(const TwinscaleAutoscaler& autoscaler, absl::Time origin,
                             const std::vector<CheckedPrediction>* checks) {
  return DecisionLogJsonl(
      autoscaler.Name(), autoscaler.decisions(), autoscaler.speed_history(),
      autoscaler.prediction_error_ms(), origin, checks, autoscaler.prefill_speed_history(),
      autoscaler.router_random_share_history(), autoscaler.extra_front_end_history());
}

std::string DecisionLogJsonl(std::string_view policy,
                             const std::vector<policy::Decision>& decisions,
                             const std::vector<double>& speed, const std::vector<double>& error,
                             absl::Time origin, const std::vector<CheckedPrediction>* checks,
                             const std::vector<double>& prefill_speed,
                             const std::vector<double>& router_random_share,
                             const std::vector<double>& extra_front_end_seconds) {
  std::string out;
  size_t next_check = 0;  // both in time order
  for (size_t i = 0; i < decisions.size(); ++i) {
    const policy::Decision& d = decisions[i];
    ordered_json j;
    j["policy"] = policy;
    j["time_s"] = RoundForPeople(absl::ToDoubleSeconds(d.at - origin), 3);
    j["current"] = d.current;
    j["recommendation"] = d.recommendation;
    j["previous_recommendation"] = d.previous_recommendation;
    j["replicas"] = d.replicas;
    j["arrival_rate"] = RoundForPeople(d.question.arrival_rate, 2);
    j["arrival_rate_cv"] = RoundForPeople(d.question.arrival_rate_cv, 4);
    if (!d.question.rate_persistence.empty()) {
      j["arrival_rate_baseline"] = RoundForPeople(d.question.arrival_rate_baseline, 2);
      ordered_json weights = ordered_json::array();
      for (double w : d.question.rate_persistence) weights.push_back(RoundForPeople(w, 3));
      j["rate_persistence"] = std::move(weights);
    }
    if (d.question.prompt_cached_share > 0) {
      j["prompt_cached_share"] = RoundForPeople(d.question.prompt_cached_share, 4);
    }
    j["ready"] = d.question.ready.size();
    j["pending"] = d.question.pending_ready_in.size();
    j["forecasts"] = d.forecasts;
    if (d.forecast_margin != 1) j["forecast_margin"] = RoundForPeople(d.forecast_margin, 3);
    j["aim"] = RoundForPeople(d.question.percentile, 2);
    j["aim_lowered_by"] = RoundForPeople(d.aim_lowered_by, 2);
    if (d.ledger.requests > 0) {
      j["budget"] = {{"requests", RoundForPeople(d.ledger.requests, 0)},
                     {"requests_in_time_percent", RoundForPeople(d.ledger.request_percent(), 3)},
                     {"minutes", d.ledger.minutes},
                     {"minutes_met", d.ledger.minutes_met}};
    }
    j["scale_in_evidence"] = d.scale_in_evidence.size();
    j["forecast_at_current"] = ForecastJson(d.forecast_at_current);
    j["forecast_at_decision"] = ForecastJson(d.forecast_at_decision);
    j["slo_at_risk"] = d.slo_at_risk;
    j["speed"] =
        i < speed.size() ? ordered_json(RoundForPeople(speed[i], 4)) : ordered_json(nullptr);
    if (i < prefill_speed.size()) j["prefill_speed"] = RoundForPeople(prefill_speed[i], 4);
    if (i < router_random_share.size()) {
      j["router_random_share"] = RoundForPeople(router_random_share[i], 4);
    }
    if (i < extra_front_end_seconds.size()) {
      j["extra_front_end_ms"] = RoundForPeople(1000 * extra_front_end_seconds[i], 1);
    }
    j["prediction_error_ms"] = i < error.size() && std::isfinite(error[i])
                                   ? ordered_json(RoundForPeople(error[i], 1))
                                   : ordered_json(nullptr);
    if (checks != nullptr) {
      const absl::Duration at = d.at - origin;
      while (next_check < checks->size() && (*checks)[next_check].predicted.at < at) ++next_check;
      if (next_check < checks->size() && (*checks)[next_check].predicted.at == at) {
        j["twin_check"] = CheckJson((*checks)[next_check]);
      }
    }
    ordered_json reasons = ordered_json::array();
    for (const policy::Reason& r : d.reasons) {
      reasons.push_back({{"code", r.code}, {"message", r.message}});
    }
    j["reasons"] = std::move(reasons);
    out += j.dump();
    out += '\n';
  }
  return out;
}

}  // namespace twinscale::replay
