// The decision corpus: recorded decision inputs (tests/data/decisions/corpus.jsonl), one JSON
// object per line, each enough to ask the twin that decision's questions again offline. It proves
// the fast reduction right (corpus_agreement.h): on every entry the decision taken with the default
// twin (a small sample of replicas, grown only where a verdict is uncertain, one seed) must equal,
// within one replica, the one taken with a full-fleet, multi-seed what-if (docs/architecture.md
// "Performance targets").
//
// A line (every duration in seconds; keys in this order; unknown keys are an error):
//   {"source": {"trace": "AzureLLMInferenceTrace_conv.csv", "rate_scale": 20, "truth": "none",
//               "time_s": 615, "policy": "llama-3-1-8b", "kind": "scale-up"},
//    "profile": "llama-3.1-8b-h100-sxm-tp1", "router": "random", "speed": 1,
//    "current": 6, "min_replicas": 1, "max_replicas": 48, "not_counted": 0,
//    "safety_margin": 0.8, "scale_in_allowed": true, "decided": 8, "recommended": 8,
//    "previous_recommendation": 7,
//    "question": {"ready": [{"waiting": 0, "running": 41, "kv_usage": 0.12}, ...],
//                 "pending_ready_in_s": [22.5], "new_replica_warmup_s": 45,
//                 "arrival_rate": 110.2, "arrival_rate_cv": 0.04, "rate_interval_s": 15,
//                 "prompt_tokens_mean": 1150,
//                 "output_tokens_mean": 210, "prompt_shape": {"upper_bounds": [...],
//                 "weights": [...]}, "output_shape": {...}, "horizon_s": 105,
//                 "judge_from_s": 45, "ttft_threshold_s": 0.5, "ttft_per_prompt_token_s": 0,
//                 "percentile": 90, "seed": 1}}
// `question` is the decision's base question (Decision::question with judge_from set to the
// warm-up, as keeping or adding capacity is judged; candidate_replicas is not stored: the searches
// set it). The shapes are present only when the decision had observed length histograms.
// `kind` says why the entry was picked: "even" (evenly spaced in time), "peak" (among the busiest
// moments of its replay), "scale-up" or "scale-in" (the decision changed the replica count).
// `scale_in_allowed` is false when stale inputs or the limits kept the decision from scaling in;
// `decided` and `recommended` are what twinscale did (after and before windows and rate limits);
// `previous_recommendation` (optional; absent or 0: none) is where the decision's searches started
// (Decision::previous_recommendation, SizingBounds::hint).
// "prefill_speed" (optional, after "speed") is the calibrated prefill factor; without it `speed`
// stands for both, as the calibration had one factor when the committed corpora were recorded.
// "router_random_share" (optional, after them) is the calibrated share of requests the twin
// routes at random behind a balancing router (twin::TwinOptions::router_random_share).
// Legacy entries carry "arrival_cv" (the gamma renewal gap CV of the twin before it modelled
// burstiness as a modulated rate) instead of "arrival_rate_cv" and "rate_interval_s"; it is read
// as a 15 s rate CV of sqrt(max(0, cv^2 - 1) / (arrival_rate x 15 s)), what the snapshot computes
// from the same dispersion. The committed corpus is such a recording.
//
// Pure: strings in, strings out (the recorder and the tests read and write the file).
#ifndef TWINSCALE_CONTROLLER_REPLAY_DECISION_CORPUS_H_
#define TWINSCALE_CONTROLLER_REPLAY_DECISION_CORPUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"

namespace twinscale::replay {

struct CorpusSource {
  std::string trace;      // the trace file's name (no directory)
  double rate_scale = 1;  // --rate-scale of the replay
  std::string truth;      // Describe(truth): "none", "all", "efficiency+noise", ...
  double time_s = 0;      // the decision's time since the first arrival
  std::string policy;     // the InferenceAutoscaler's metadata.name
  std::string kind;       // "even", "peak", "scale-up" or "scale-in"
};

struct CorpusEntry {
  CorpusSource source;
  std::string profile;  // deployment profile name (resolved with its defaults)
  std::string router;   // sim::RouterKindName of the twin's router
  double speed = 1;     // the twin's calibrated decode speed factor
  // The prefill one; absent in entries recorded while the two were one factor (then `speed`).
  std::optional<double> prefill_speed;
  // Behind a balancing router, the share the twin routed at random (absent: 0).
  std::optional<double> router_random_share;
  int32_t current = 0;  // spec.replicas when decided
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  int32_t not_counted = 0;  // starting pods that hold a slot but no longer count as capacity
  double safety_margin = 0.8;
  bool scale_in_allowed = true;
  int32_t decided = 0;                  // Decision::replicas
  int32_t recommended = 0;              // Decision::recommendation
  int32_t previous_recommendation = 0;  // Decision::previous_recommendation (0: none)
  policy::ForecastQuestion question;
};

// One line of JSON (no newline) for `entry`.
std::string CorpusEntryToJson(const CorpusEntry& entry);

// InvalidArgument naming the field for malformed JSON, a missing or mistyped field, an unknown key
// or a value out of range (negative counts, a percentile outside (0, 100], min > max, ...).
absl::StatusOr<CorpusEntry> ParseCorpusLine(std::string_view line);
// Every non-blank line; errors carry the 1-based line number.
absl::StatusOr<std::vector<CorpusEntry>> ParseCorpus(std::string_view text);

// The entry for a recorded decision. `not_counted` and `scale_in_allowed` are read from the
// decision's reasons (PendingNotCounted, ScaleInFrozen, ScaleInBlockedByLimits, LimitsExceeded);
// `min_replicas`, `max_replicas`, `safety_margin`, `profile`, `router`, `speed` and `source` are
// the caller's to fill.
CorpusEntry EntryFromDecision(const policy::Decision& decision);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_DECISION_CORPUS_H_
