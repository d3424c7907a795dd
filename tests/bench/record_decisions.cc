// record_decisions: writes the decision corpus (tests/data/decisions/corpus.jsonl; format in
// controller/replay/decision_corpus.h) by replaying the shipped traces with twinscale's policy, the
// same pieces `twinscale replay` wires together (manifest -> Resolve -> TwinscaleAutoscaler ->
// RunReplay, the zero-lag oracle's first minute as the starting fleet), and keeping a spread of the
// decisions taken: every scale event (up to a cap per replay, evenly chosen among them), the
// busiest moments, and decisions evenly spaced in time, so the corpus is not just steady state.
//
//   build/tests/bench/record_decisions [--out tests/data/decisions/corpus.jsonl] [--even 10]
//       [--max-events 10] [--peaks 2]
//
// Run from the repository root (traces and manifests are read by relative path). The replays run
// one after the other, on one core; the whole recording takes a few minutes. Deterministic: the
// same build writes the same file.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "controller/api/spec_loader.h"
#include "controller/common/status_macros.h"
#include "controller/replay/decision_corpus.h"
#include "controller/replay/oracle.h"
#include "controller/replay/replay_driver.h"
#include "controller/replay/truth.h"
#include "controller/replay/twinscale_autoscaler.h"
#include "controller/twin/resolve.h"
#include "simulator/model/router.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/trace.h"
#include "simulator/workload/trace_reader.h"

namespace twinscale::replay {
namespace {

struct ReplaySpec {
  const char* trace;  // under tests/data/traces
  double rate_scale;
  const char* truth;
  const char* manifest;  // under deploy/samples
};

// Varied load: the conversation trace at three scales (small, medium and large fleets), the code
// trace (long prompts, short answers, bursty), Mooncake (very long prompts, a length-aware SLO,
// prefix-aware routing, a 4-minute warm-up); the truth perturbed in two of them so the twin's
// calibration moves and scale events come from a twin that is not the truth.
constexpr ReplaySpec kReplays[] = {
    {"AzureLLMInferenceTrace_conv.csv", 10, "none", "llama-3.1-8b-h100.yaml"},
    {"AzureLLMInferenceTrace_conv.csv", 20, "all", "llama-3.1-8b-h100.yaml"},
    {"AzureLLMInferenceTrace_conv.csv", 40, "none", "llama-3.1-8b-h100.yaml"},
    {"AzureLLMInferenceTrace_code.csv", 20, "all", "llama-3.1-8b-h100.yaml"},
    {"mooncake_conversation_trace.jsonl", 8, "none", "long-prompts.yaml"},
};

struct Selection {
  int32_t even = 10;        // decisions evenly spaced in time, per replay
  int32_t max_events = 10;  // scale events kept per replay (evenly among them when more)
  int32_t peaks = 2;        // the busiest decisions, per replay
};

// Up to `k` of `items`, evenly spread (all when there are fewer).
std::vector<size_t> Spread(const std::vector<size_t>& items, int32_t k) {
  if (static_cast<int64_t>(items.size()) <= k) return items;
  std::vector<size_t> out;
  for (int32_t i = 0; i < k; ++i) {
    out.push_back(items[static_cast<size_t>((i + 0.5) * items.size() / k)]);
  }
  return out;
}

absl::StatusOr<std::vector<CorpusEntry>> Record(const ReplaySpec& spec, const Selection& sel) {
  TS_ASSIGN_OR_RETURN(sim::ProfileRegistry profiles, sim::ProfileRegistry::LoadEmbedded());
  const std::string manifest = absl::StrCat("deploy/samples/", spec.manifest);
  TS_ASSIGN_OR_RETURN(api::InferenceAutoscaler ias, api::LoadInferenceAutoscalerFile(manifest));
  TS_ASSIGN_OR_RETURN(twin::ResolvedTarget target, twin::Resolve(ias.spec, profiles));
  const uint64_t seed = 1;
  target.policy.seed = seed;

  sim::TraceReadOptions ro;
  ro.seed = seed;
  TS_ASSIGN_OR_RETURN(sim::Trace trace,
                      sim::ReadTraceFile(absl::StrCat("tests/data/traces/", spec.trace), ro));
  if (spec.rate_scale != 1.0) {
    TS_ASSIGN_OR_RETURN(trace, sim::ScaleRate(trace, spec.rate_scale, seed));
  }
  auto shared = std::make_shared<const sim::Trace>(std::move(trace));
  TS_ASSIGN_OR_RETURN(Truth truth, ParseTruth(spec.truth));

  sim::TtftSlo slo;
  slo.threshold = sim::SimDuration::FromAbsl(target.policy.ttft_threshold);
  slo.per_prompt_token = sim::SimDuration::FromAbsl(target.policy.ttft_per_prompt_token);
  slo.percentile = target.policy.percentile;

  OracleOptions oo;
  oo.min_replicas = target.policy.min_replicas;
  oo.max_replicas = std::max(target.policy.max_replicas, 256);
  oo.router = target.twin.router;
  TS_ASSIGN_OR_RETURN(OracleResult oracle,
                      Oracle(*shared, target.deployment, truth, slo, seed, oo));

  ReplayConfig rc;
  rc.trace = shared;
  rc.deployment = target.deployment;
  rc.truth = truth;
  rc.router = target.twin.router;
  rc.seed = seed;
  rc.slo = slo;
  rc.initial_replicas = std::max(
      oracle.minutes.empty() ? target.policy.min_replicas : oracle.minutes.front().replicas,
      target.policy.min_replicas);
  TwinscaleAutoscaler autoscaler(absl::StrCat("twinscale:", ias.metadata.name), target.policy,
                                 target.twin);
  TS_ASSIGN_OR_RETURN(ReplayResult result, RunReplay(rc, autoscaler));

  const std::vector<policy::Decision>& decisions = autoscaler.decisions();
  const std::vector<double>& speeds = autoscaler.speed_history();
  const std::vector<double>& prefill_speeds = autoscaler.prefill_speed_history();
  const std::vector<double>& shares = autoscaler.router_random_share_history();
  const double span_s = sim::Summarize(*shared).span_seconds;
  const absl::Time start = rc.start;
  // Candidates: decisions taken while the trace was arriving, with a usable arrival rate.
  std::vector<size_t> events, steady;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const policy::Decision& d = decisions[i];
    const double t = absl::ToDoubleSeconds(d.at - start);
    if (t > span_s || d.question.arrival_rate <= 0 || d.forecasts == 0) continue;
    (d.replicas != d.current ? events : steady).push_back(i);
  }
  std::set<size_t> chosen;
  std::vector<std::pair<size_t, const char*>> picks;
  auto pick = [&](size_t i, const char* kind) {
    if (chosen.insert(i).second) picks.push_back({i, kind});
  };
  for (size_t i : Spread(events, sel.max_events)) {
    pick(i, decisions[i].replicas > decisions[i].current ? "scale-up" : "scale-in");
  }
  std::vector<size_t> by_rate = steady;
  std::stable_sort(by_rate.begin(), by_rate.end(), [&](size_t a, size_t b) {
    return decisions[a].question.arrival_rate > decisions[b].question.arrival_rate;
  });
  for (int32_t k = 0; k < sel.peaks && k < static_cast<int32_t>(by_rate.size()); ++k) {
    pick(by_rate[static_cast<size_t>(k)], "peak");
  }
  std::vector<size_t> rest;
  for (size_t i : steady) {
    if (!chosen.count(i)) rest.push_back(i);
  }
  for (size_t i : Spread(rest, sel.even)) pick(i, "even");
  std::sort(picks.begin(), picks.end());

  std::vector<CorpusEntry> out;
  for (const auto& [i, kind] : picks) {
    CorpusEntry e = EntryFromDecision(decisions[i]);
    e.source.trace = spec.trace;
    e.source.rate_scale = spec.rate_scale;
    e.source.truth = Describe(truth);
    e.source.time_s = absl::ToDoubleSeconds(decisions[i].at - start);
    e.source.policy = ias.metadata.name;
    e.source.kind = kind;
    e.profile = ias.spec.model.profile;
    e.router = std::string(sim::RouterKindName(target.twin.router));
    e.speed = i < speeds.size() ? speeds[i] : 1.0;
    if (i < prefill_speeds.size()) e.prefill_speed = prefill_speeds[i];
    if (i < shares.size() && shares[i] > 0) e.router_random_share = shares[i];
    e.min_replicas = target.policy.min_replicas;
    e.max_replicas = target.policy.max_replicas;
    e.safety_margin = target.policy.safety_margin;
    out.push_back(std::move(e));
  }
  std::cerr << absl::StrCat(spec.trace, " x", spec.rate_scale, " truth ", spec.truth, ": ",
                            decisions.size(), " decisions, ", events.size(), " scale events, max ",
                            result.summary.max_replicas, " replicas; kept ", out.size(), "\n");
  return out;
}

absl::Status Run(int argc, char** argv) {
  std::string out_path = "tests/data/decisions/corpus.jsonl";
  Selection sel;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(a, " needs a value"));
      return std::string(argv[++i]);
    };
    if (a == "--out") {
      TS_ASSIGN_OR_RETURN(out_path, value());
    } else if (a == "--even" || a == "--max-events" || a == "--peaks") {
      TS_ASSIGN_OR_RETURN(const std::string v, value());
      const int32_t n = std::atoi(v.c_str());
      (a == "--even" ? sel.even : a == "--peaks" ? sel.peaks : sel.max_events) = n;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument ", a,
                       " (usage: record_decisions [--out FILE] [--even N] "
                       "[--max-events N] [--peaks N])"));
    }
  }
  std::vector<std::string> lines;
  for (const ReplaySpec& spec : kReplays) {
    TS_ASSIGN_OR_RETURN(std::vector<CorpusEntry> entries, Record(spec, sel));
    for (const CorpusEntry& e : entries) lines.push_back(CorpusEntryToJson(e));
  }
  std::ofstream f(out_path, std::ios::trunc);
  if (!f) return absl::UnavailableError(absl::StrCat("can't write ", out_path));
  for (const std::string& l : lines) f << l << "\n";
  f.close();
  if (!f) return absl::UnavailableError(absl::StrCat("writing ", out_path, " failed"));
  std::cerr << "wrote " << lines.size() << " entries to " << out_path << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace twinscale::replay

int main(int argc, char** argv) {
  const absl::Status s = twinscale::replay::Run(argc, argv);
  if (!s.ok()) {
    std::cerr << "record_decisions: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
