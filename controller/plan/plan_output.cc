// `twinscale plan`'s outputs: see plan_output.h.
#include "controller/plan/plan_output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/cli/emitted_policy.h"

namespace twinscale::plan {
namespace {

// Rounded for people: at most `digits` decimals (nlohmann prints the shortest round-trip form);
// null when not finite (a cost with nothing served).
nlohmann::ordered_json Num(double x, int digits = 4) {
  if (!std::isfinite(x)) return nullptr;
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

std::string Money(double x) {
  if (!std::isfinite(x)) return "-";
  return x >= 100 ? absl::StrFormat("%.0f", x) : absl::StrFormat("%.3g", x);
}

std::string Replicas(const Cell& c, int32_t max_replicas) {
  if (!c.searched) return "none";
  if (!c.found) return absl::StrCat(">", max_replicas);
  return c.replicas_fewest < c.replicas
             ? absl::StrCat(c.replicas, " (", c.replicas_fewest, "-", c.replicas, ")")
             : absl::StrCat(c.replicas);
}

std::string Quantity(double x) {
  if (x >= 1e6) return absl::StrFormat("%.2fM", x / 1e6);
  if (x >= 1e4) return absl::StrFormat("%.0fk", x / 1e3);
  if (x >= 100) return absl::StrFormat("%.0f", x);
  return absl::StrFormat("%.1f", x);
}

}  // namespace

nlohmann::ordered_json PlanJson(const PlanResult& plan, std::optional<double> wall_seconds) {
  nlohmann::ordered_json j;
  j["review"] = plan.review;
  j["baseline"] = plan.baseline;
  j["slo"] = {
      {"ttft_ms", Num(absl::ToDoubleMilliseconds(plan.slo.ttft))},
      {"percentile", plan.slo.percentile},
      {"per_prompt_token_ms", Num(absl::ToDoubleMilliseconds(plan.slo.per_prompt_token), 6)},
      {"itl_ms", Num(absl::ToDoubleMilliseconds(plan.slo.itl))},
      {"itl_percentile", plan.slo.itl_percentile}};
  j["seeds"] = plan.seeds;
  j["max_replicas"] = plan.max_replicas;
  nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
  for (const ProfileSummary& p : plan.profiles) {
    profiles.push_back({{"name", p.name},
                        {"deployment", p.deployment.name},
                        {"model", p.deployment.model.name},
                        {"gpu", p.deployment.gpu.name},
                        {"tensor_parallel", p.deployment.tensor_parallel},
                        {"gpu_hour_price", Num(p.gpu_hour_price)},
                        {"ready_after_s", Num(p.ready_after_seconds, 1)}});
  }
  j["profiles"] = profiles;
  nlohmann::ordered_json scenarios = nlohmann::ordered_json::array();
  for (const ScenarioSummary& s : plan.scenarios) {
    scenarios.push_back({{"name", s.name},
                         {"changes", s.changes},
                         {"requests", s.requests},
                         {"span_s", Num(s.span_seconds, 1)},
                         {"mean_rps", Num(s.mean_rps, 2)},
                         {"p95_rps", Num(s.p95_rps, 2)},
                         {"prompt_mean", Num(s.mix.prompt_mean, 1)},
                         {"prompt_computed_mean", Num(s.mix.prompt_computed_mean, 1)},
                         {"output_mean", Num(s.mix.output_mean, 1)}});
  }
  j["scenarios"] = scenarios;
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const Cell& c : plan.cells) {
    nlohmann::ordered_json resources = nlohmann::ordered_json::array();
    for (const ResourceHeadroom& r : c.headroom.rows) {
      resources.push_back({{"resource", std::string(ResourceName(r.resource))},
                           {"unit", std::string(ResourceUnit(r.resource))},
                           {"demand_p95", Num(r.demand, 2)},
                           {"capacity", Num(r.capacity, 2)},
                           {"headroom", Num(r.headroom)},
                           {"risk", std::string(RiskName(r.risk))}});
    }
    cells.push_back({{"scenario", plan.scenarios[c.scenario].name},
                     {"profile", plan.profiles[c.profile].name},
                     {"found", c.found},
                     {"searched", c.searched},
                     {"unreachable_share", Num(c.unreachable_share)},
                     {"replicas", c.replicas},
                     {"replicas_fewest", c.replicas_fewest},
                     {"replicas_per_seed", c.replicas_per_seed},
                     {"attainment",
                      {{"mean", Num(c.attainment_mean)},
                       {"min", Num(c.attainment_min)},
                       {"max", Num(c.attainment_max)}}},
                     {"goodput_rps", Num(c.goodput_rps, 3)},
                     {"goodput_per_gpu_rps", Num(c.goodput_per_gpu_rps, 3)},
                     {"cost_per_hour", Num(c.cost_per_hour, 3)},
                     {"cost_per_1k_successful", Num(c.cost_per_1k_successful, 5)},
                     {"cost_per_million_output_tokens", Num(c.cost_per_million_output_tokens, 4)},
                     {"itl_ms", Num(c.itl_ms, 2)},
                     {"queue_delay_ms", Num(c.queue_delay_ms, 2)},
                     {"prefill_ms_per_token", Num(c.prefill_ms_per_token, 6)},
                     {"per_replica_rps", Num(c.per_replica_rps, 3)},
                     {"warm_reserve", c.warm_reserve},
                     {"headroom",
                      {{"planned_replicas", c.headroom.planned_replicas},
                       {"binding", std::string(ResourceName(c.headroom.binding))},
                       {"resources", resources}}},
                     {"improves", c.improves},
                     {"worsens", c.worsens}});
  }
  j["cells"] = cells;
  j["recommended_profile"] =
      plan.profiles.empty() ? "" : plan.profiles[plan.recommended_profile].name;
  if (wall_seconds.has_value()) j["wall_seconds"] = Num(*wall_seconds, 2);
  return j;
}

std::string PlanTable(const PlanResult& plan) {
  std::string out;
  absl::StrAppendFormat(&out, "capacity review %s\n  baseline: %s\n", plan.review, plan.baseline);
  absl::StrAppendFormat(&out, "  SLO: p%g TTFT <= %s", plan.slo.percentile,
                        absl::FormatDuration(plan.slo.ttft));
  if (plan.slo.per_prompt_token > absl::ZeroDuration()) {
    absl::StrAppend(&out, " + ", absl::FormatDuration(plan.slo.per_prompt_token),
                    " per prompt token");
  }
  if (plan.slo.itl > absl::ZeroDuration()) {
    absl::StrAppendFormat(&out, ", p%g ITL <= %s", plan.slo.itl_percentile,
                          absl::FormatDuration(plan.slo.itl));
  }
  absl::StrAppendFormat(&out, "; %d seeds; replicas fully warm, at most %d\n\n", plan.seeds.size(),
                        plan.max_replicas);

  absl::StrAppendFormat(&out, "%-20s %-28s %10s %9s %9s %9s %9s %7s\n", "SCENARIO", "PROFILE",
                        "REPLICAS", "REQ/S/GPU", "COST/H", "PER 1K OK", "PER M OUT", "RESERVE");
  for (const Cell& c : plan.cells) {
    absl::StrAppendFormat(
        &out, "%-20s %-28s %10s %9.2f %9s %9s %9s %7d\n", plan.scenarios[c.scenario].name,
        plan.profiles[c.profile].name, Replicas(c, plan.max_replicas), c.goodput_per_gpu_rps,
        c.searched ? Money(c.cost_per_hour) : "-", Money(c.cost_per_1k_successful),
        Money(c.cost_per_million_output_tokens), c.warm_reserve);
  }
  for (const Cell& c : plan.cells) {
    if (c.searched) continue;
    absl::StrAppendFormat(&out,
                          "  %s on %s: out of reach, %.1f%% of requests miss their TTFT target "
                          "even alone on an idle replica (the SLO allows %.1f%%)\n",
                          plan.scenarios[c.scenario].name, plan.profiles[c.profile].name,
                          100 * c.unreachable_share, 100 - plan.slo.percentile);
  }
  absl::StrAppend(&out,
                  "\n  REPLICAS: the fewest meeting the SLO under every seed (the single seeds' "
                  "range); RESERVE: replicas kept\n  warm beyond the steady need for rises within "
                  "the warm-up lag; costs per hour, per 1,000 requests within the SLO\n  and per "
                  "million output tokens, at each profile's GPU-hour price.\n");

  if (plan.profiles.empty()) return out;
  const size_t p = static_cast<size_t>(plan.recommended_profile);
  const Cell& base = plan.at(0, p);
  absl::StrAppendFormat(
      &out,
      "\nheadroom per resource on %s (the cheapest per request at the baseline), at %d "
      "replicas: demand at the p95 minute / what the fleet sustains\n",
      plan.profiles[p].name, base.headroom.planned_replicas);
  absl::StrAppendFormat(&out, "%-20s", "SCENARIO");
  for (Resource r : kResources) absl::StrAppendFormat(&out, " %-24s", ResourceName(r));
  absl::StrAppendFormat(&out, " %s\n", "BINDING");
  for (size_t s = 0; s < plan.scenarios.size(); ++s) {
    const Cell& c = plan.at(s, p);
    absl::StrAppendFormat(&out, "%-20s", plan.scenarios[s].name);
    for (const ResourceHeadroom& r : c.headroom.rows) {
      const std::string headroom =
          r.headroom < -1 ? std::string("<-100%") : absl::StrFormat("%+.0f%%", 100 * r.headroom);
      const std::string cellText =
          absl::StrFormat("%s/%s %s %s", Quantity(r.demand), Quantity(r.capacity), headroom,
                          r.risk == Risk::kOkay ? "" : std::string(RiskName(r.risk)));
      absl::StrAppendFormat(&out, " %-24s", cellText);
    }
    absl::StrAppendFormat(&out, " %s\n", ResourceName(c.headroom.binding));
  }
  absl::StrAppendFormat(&out, "\nagainst the baseline, on %s\n", plan.profiles[p].name);
  for (size_t s = 1; s < plan.scenarios.size(); ++s) {
    const Cell& c = plan.at(s, p);
    absl::StrAppendFormat(&out, "  %s (%s)\n    improves: %s\n    worsens:  %s\n",
                          plan.scenarios[s].name, plan.scenarios[s].changes, c.improves, c.worsens);
  }
  return out;
}

absl::StatusOr<std::string> PlanPolicyYaml(const PlanResult& plan, int32_t profile,
                                           const Review& review) {
  if (profile < 0 || static_cast<size_t>(profile) >= plan.profiles.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no profile ", profile));
  }
  const ProfileChoice& choice = review.profiles[static_cast<size_t>(profile)];
  if (choice.model.has_value() || choice.gpu.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--emit-policy: profile ", choice.name,
        " overrides its model or GPU, which an InferenceAutoscaler cannot say (spec.model.profile "
        "names a deployment profile): ship a deployment profile for it, or choose another with "
        "emitProfile"));
  }
  int32_t reserve = 0, most = 0;
  bool all_found = true;
  for (size_t s = 0; s < plan.scenarios.size(); ++s) {
    const Cell& c = plan.at(s, static_cast<size_t>(profile));
    reserve = std::max(reserve, c.warm_reserve);
    most = std::max(most, c.replicas + c.warm_reserve);
    all_found = all_found && c.found;
  }
  cli::EmittedPolicy p;
  p.profile = choice.profile;
  p.tensor_parallel = choice.tensor_parallel;
  p.router = review.router;
  p.min_replicas = std::max(1, reserve);
  p.max_replicas = std::clamp(most, p.min_replicas, std::max(p.min_replicas, plan.max_replicas));
  p.ttft_threshold = plan.slo.ttft;
  p.percentile = plan.slo.percentile;
  p.ttft_per_prompt_token = plan.slo.per_prompt_token;
  p.itl_threshold = plan.slo.itl;
  p.itl_percentile = plan.slo.itl_percentile;
  p.comment.push_back(absl::StrCat("From `twinscale plan ", plan.review, "` on profile ",
                                   choice.name, ": ", plan.scenarios.size(), " scenarios, ",
                                   plan.seeds.size(), " seeds."));
  p.comment.push_back(absl::StrCat(
      "minReplicas: the largest warm reserve of any scenario (", reserve,
      "); maxReplicas: the largest fleet any scenario needs plus its reserve (", most, ")."));
  if (!all_found) {
    p.comment.push_back(absl::StrCat("Some scenario needs more than ", plan.max_replicas,
                                     " replicas: maxReplicas is capped there."));
  }
  return cli::EmittedPolicyYaml(p);
}

}  // namespace twinscale::plan
