// Fast vs exact decisions on the decision corpus: see corpus_agreement.h.
#include "controller/replay/corpus_agreement.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/fleet_sizing.h"
#include "simulator/model/router.h"

namespace twinscale::replay {

EntryDecision DecideEntry(const CorpusEntry& e, const policy::Forecaster& forecaster) {
  policy::SizingBounds b;
  b.base = std::clamp(std::max(e.current, 1), e.min_replicas, e.max_replicas);
  b.min_replicas = e.min_replicas;
  b.max_replicas = e.max_replicas;
  b.not_counted = e.not_counted;
  b.safety_margin = e.safety_margin;
  b.scale_in_allowed = e.scale_in_allowed;
  b.hint = e.previous_recommendation;
  const policy::Sizing s = policy::SizeFleet(e.question, forecaster, b);
  EntryDecision out;
  out.replicas = s.replicas;
  out.evaluations = s.evaluations;
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
  o.speed.prefill = e.prefill_speed.value_or(e.speed);
  o.router_random_share = e.router_random_share.value_or(0);
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
    CorpusEntry reseeded = e;
    reseeded.question.seed += options.fast_seed_offset;
    const EntryDecision f = DecideEntry(reseeded, fast);
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
      "%zu ready + %zu pending, %.1f req/s (rate cv %.2f), prompt %.0f / output %.0f tokens\n",
      a.index, e.source.trace, e.source.rate_scale, e.source.truth, e.source.time_s, e.source.kind,
      a.fast, a.exact, a.recorded, e.current, q.ready.size(), q.pending_ready_in.size(),
      q.arrival_rate, q.arrival_rate_cv, q.prompt_tokens_mean, q.output_tokens_mean);
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
