// Is the fast decision right? For each decision-corpus entry (decision_corpus.h) the decision is
// taken twice from the same recorded inputs: "fast" with the twin as the controller runs it (the
// default TwinOptions: a small sample of replicas, one seed) and "exact" with a full-fleet twin
// (sample_replicas = 0) averaged over several seeds. They are to agree within one replica on every
// snapshot (docs/architecture.md "Performance targets"); the report gives the share that do, the
// differences, and each disagreement with its inputs.
//
// The decision is Recommend's recommendation from the forecasts (before stabilization windows and
// rate limits, which do not depend on the twin): the attainment targets capped below what
// maxReplicas could reach; the forecast at the current size; if it misses, the scale-up search
// above it; if it meets and scale-in was allowed when recorded, the scale-in search at the safety
// margin below it — the same helpers, in the same order, as Recommend (policy/replica_search.h).
//
// Pure computation (no I/O, no clock); slow in proportion to the corpus (an exact answer simulates
// whole fleets several times). Thread-compatible.
#ifndef TWINSCALE_CONTROLLER_REPLAY_CORPUS_AGREEMENT_H_
#define TWINSCALE_CONTROLLER_REPLAY_CORPUS_AGREEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/policy/forecaster.h"
#include "controller/replay/decision_corpus.h"
#include "controller/twin/twin_forecaster.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::replay {

struct EntryDecision {
  int32_t replicas = 0;
  int32_t evaluations = 0;  // what-ifs run
};

// The recommendation `forecaster` gives for the entry's inputs (see above).
EntryDecision DecideEntry(const CorpusEntry& entry, const policy::Forecaster& forecaster);

// The twin an entry was decided with: the profile resolved with its defaults, the entry's router
// and speed factor, and `base`'s sample size and seed count. InvalidArgument for an unknown profile
// or router.
absl::StatusOr<twin::TwinOptions> TwinFor(const CorpusEntry& entry,
                                          const sim::ProfileRegistry& profiles,
                                          const twin::TwinOptions& base);

struct AgreementOptions {
  twin::TwinOptions fast;  // deployment, router and speed come from each entry
  twin::TwinOptions exact = [] {
    twin::TwinOptions o;
    o.sample_replicas = 0;  // the whole fleet
    o.seeds = 5;
    return o;
  }();
  // Added to each entry's question seed for the fast decision only. With `fast` set to the exact
  // twin's options, a non-zero offset measures how well the exact decision agrees with itself
  // under other random numbers: the noise floor the fast one is held to.
  uint64_t fast_seed_offset = 0;
};

struct EntryAgreement {
  size_t index = 0;  // in the corpus given
  int32_t fast = 0, exact = 0;
  int32_t fast_evaluations = 0, exact_evaluations = 0;
  int32_t recorded = 0;  // the entry's `recommended`
};

struct AgreementReport {
  std::vector<EntryAgreement> entries;
  int64_t within_one = 0;  // entries with |fast - exact| <= 1
  double within_one_share = 0;
  int64_t equal = 0;  // fast == exact
  double mean_abs_difference = 0;
  double mean_difference = 0;  // fast - exact: > 0 means the fast decision asks for more
  int32_t max_abs_difference = 0;
  double fast_evaluations_mean = 0;
};

// Decides every entry both ways. InvalidArgument as TwinFor.
absl::StatusOr<AgreementReport> CheckAgreement(const std::vector<CorpusEntry>& entries,
                                               const sim::ProfileRegistry& profiles,
                                               const AgreementOptions& options = {});

// The report as text: the figures, then one line per disagreement (|fast - exact| > 1) with its
// source and inputs, then (with `all`) every entry.
std::string FormatAgreement(const AgreementReport& report, const std::vector<CorpusEntry>& entries,
                            bool all = false);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_CORPUS_AGREEMENT_H_
