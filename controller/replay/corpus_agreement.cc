// Fast vs exact decisions on the decision corpus: see corpus_agreement.h.
#include "controller/replay/corpus_agreement.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/replica_search.h"
#include "simulator/model/router.h"

namespace twinscale::replay {

EntryDecision DecideEntry(const CorpusEntry& e, const policy::Forecaster& forecaster) {
  EntryDecision out;
  const policy::ForecastQuestion& q = e.question;
  const int32_t base = std::clamp(std::max(e.current, 1), e.min_replicas, e.max_replicas);
  // The attainment targets, capped below what maxReplicas could reach, at the threshold and at
  // the scale-in margin.
  auto ceiling_at = [&](double margin) {
    ++out.evaluations;
    return policy::CeilingTarget(
        forecaster.Evaluate(policy::CeilingQuestion(q, e.max_replicas, margin)));
  };
  const double full_cap = ceiling_at(1.0);
  const double keep_percentile = std::max(0.0, std::min(q.percentile, full_cap));
  const double scale_in_percentile = std::max(
      0.0, std::min(q.percentile, e.safety_margin < 1.0 ? ceiling_at(e.safety_margin) : full_cap));
  // As Recommend does: a size asked about at a margin is asked once.
  std::vector<std::pair<std::pair<int32_t, double>, policy::Forecast>> asked;
  auto evaluate = [&](int32_t n, double margin) {
    for (const auto& [key, f] : asked) {
      if (key.first == n && key.second == margin) return f;
    }
    ++out.evaluations;
    policy::ForecastQuestion x = policy::CandidateQuestion(q, n, base, e.not_counted, margin);
    x.percentile = margin < 1.0 ? scale_in_percentile : keep_percentile;
    asked.push_back({{n, margin}, forecaster.Evaluate(x)});
    return asked.back().second;
  };
  if (!evaluate(base, 1.0).meets_slo) {
    const policy::ReplicaSearch up =
        policy::SearchUp(base, e.max_replicas, [&](int32_t n) { return evaluate(n, 1.0); });
    out.replicas = up.met ? up.replicas : e.max_replicas;
    return out;
  }
  out.replicas = base;
  if (!e.scale_in_allowed || base <= e.min_replicas) return out;
  const policy::ReplicaSearch down = policy::SearchDown(
      e.min_replicas, base, [&](int32_t n) { return evaluate(n, e.safety_margin); });
  out.replicas = down.replicas;
  return out;
}

absl::StatusOr<twin::TwinOptions> TwinFor(const CorpusEntry& e,
                                          const sim::ProfileRegistry& profiles,
                                          const twin::TwinOptions& base) {
  absl::StatusOr<sim::DeploymentSpec> d = profiles.Resolve(e.profile, {});
  if (!d.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("profile: ", d.status().message()));
  }
  absl::StatusOr<sim::RouterKind> router = sim::ParseRouterKind(e.router);
  if (!router.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("router: ", router.status().message()));
  }
  twin::TwinOptions o = base;
  o.deployment = *d;
  o.router = *router;
  o.speed.prefill = e.speed;
  o.speed.decode = e.speed;
  return o;
}

absl::StatusOr<AgreementReport> CheckAgreement(const std::vector<CorpusEntry>& entries,
                                               const sim::ProfileRegistry& profiles,
                                               const AgreementOptions& options) {
  AgreementReport r;
  double abs_sum = 0, sum = 0, evals = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const CorpusEntry& e = entries[i];
    absl::StatusOr<twin::TwinOptions> fast_options = TwinFor(e, profiles, options.fast);
    if (!fast_options.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", i, ": ", fast_options.status().message()));
    }
    absl::StatusOr<twin::TwinOptions> exact_options = TwinFor(e, profiles, options.exact);
    if (!exact_options.ok()) return exact_options.status();
    const twin::TwinForecaster fast(*fast_options), exact(*exact_options);
    const EntryDecision f = DecideEntry(e, fast);
    const EntryDecision x = DecideEntry(e, exact);
    EntryAgreement a;
    a.index = i;
    a.fast = f.replicas;
    a.exact = x.replicas;
    a.fast_evaluations = f.evaluations;
    a.exact_evaluations = x.evaluations;
    a.recorded = e.recommended;
    const int32_t diff = a.fast - a.exact;
    r.within_one += std::abs(diff) <= 1 ? 1 : 0;
    r.equal += diff == 0 ? 1 : 0;
    r.max_abs_difference = std::max(r.max_abs_difference, std::abs(diff));
    abs_sum += std::abs(diff);
    sum += diff;
    evals += f.evaluations;
    r.entries.push_back(a);
  }
  const double n = std::max<double>(1, static_cast<double>(entries.size()));
  r.within_one_share = entries.empty() ? 1.0 : static_cast<double>(r.within_one) / n;
  r.mean_abs_difference = abs_sum / n;
  r.mean_difference = sum / n;
  r.fast_evaluations_mean = evals / n;
  return r;
}

namespace {

std::string Describe(const EntryAgreement& a, const CorpusEntry& e) {
  const policy::ForecastQuestion& q = e.question;
  return absl::StrFormat(
      "  #%-3d %s x%g truth=%s t=%.0fs (%s): fast %d, exact %d (recorded %d); current %d, "
      "%zu ready + %zu pending, %.1f req/s cv %.2f, prompt %.0f / output %.0f tokens\n",
      a.index, e.source.trace, e.source.rate_scale, e.source.truth, e.source.time_s, e.source.kind,
      a.fast, a.exact, a.recorded, e.current, q.ready.size(), q.pending_ready_in.size(),
      q.arrival_rate, q.arrival_cv, q.prompt_tokens_mean, q.output_tokens_mean);
}

}  // namespace

std::string FormatAgreement(const AgreementReport& r, const std::vector<CorpusEntry>& entries,
                            bool all) {
  std::string out = absl::StrFormat(
      "decision corpus: %zu entries; fast (sampled twin) vs exact (full fleet, several seeds)\n"
      "  within one replica  %lld / %zu = %.1f%%\n"
      "  equal               %lld\n"
      "  |fast - exact|      mean %.3f, max %d\n"
      "  fast - exact        mean %+.3f (> 0: the fast decision asks for more)\n"
      "  what-ifs per fast decision: mean %.2f\n",
      r.entries.size(), static_cast<long long>(r.within_one), r.entries.size(),
      100 * r.within_one_share, static_cast<long long>(r.equal), r.mean_abs_difference,
      r.max_abs_difference, r.mean_difference, r.fast_evaluations_mean);
  bool header = false;
  for (const EntryAgreement& a : r.entries) {
    if (std::abs(a.fast - a.exact) <= 1 || a.index >= entries.size()) continue;
    if (!header) absl::StrAppend(&out, "disagreements (|fast - exact| > 1):\n");
    header = true;
    absl::StrAppend(&out, Describe(a, entries[a.index]));
  }
  if (!header) absl::StrAppend(&out, "no disagreement beyond one replica\n");
  if (all) {
    absl::StrAppend(&out, "every entry:\n");
    for (const EntryAgreement& a : r.entries) {
      if (a.index < entries.size()) absl::StrAppend(&out, Describe(a, entries[a.index]));
    }
  }
  return out;
}

}  // namespace twinscale::replay
