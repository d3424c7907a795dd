// `twinscale replay`: flags -> trace, policies, truth -> RunReplay per policy -> table and files.
// See replay_command.h.
#include "controller/cli/replay_command.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "controller/api/spec_loader.h"
#include "controller/cli/command_line.h"
#include "controller/cli/common_flags.h"
#include "controller/cli/flag_checks.h"
#include "controller/cli/output_dir.h"
#include "controller/cli/run_budget.h"
#include "controller/cli/shipped_data.h"
#include "controller/cli/trace_warnings.h"
#include "controller/common/clock.h"
#include "controller/common/progress.h"
#include "controller/common/status_macros.h"
#include "controller/metrics/prometheus_client.h"
#include "controller/policy/baselines.h"
#include "controller/replay/baseline_autoscaler.h"
#include "controller/replay/decision_log.h"
#include "controller/replay/history_trace.h"
#include "controller/replay/oracle.h"
#include "controller/replay/replay_driver.h"
#include "controller/replay/report.h"
#include "controller/replay/report_html.h"
#include "controller/replay/truth.h"
#include "controller/replay/twinscale_autoscaler.h"
#include "controller/twin/resolve.h"
#include "controller/twin/target_decider.h"
#include "nlohmann/json.hpp"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/trace.h"
#include "simulator/workload/trace_reader.h"

ABSL_FLAG(std::string, policy, "deploy/samples/llama-3.1-8b-h100.yaml\nkeda-queue\nhpa-kv",
          "A policy to replay; repeat the flag for several. Either an InferenceAutoscaler "
          "manifest (a .yaml file: twinscale's policy with that spec) or a baseline family: "
          "keda-queue[:t1,t2,..] (KEDA on vllm:num_requests_waiting, default thresholds "
          "1,2,3,5,10), hpa-kv[:0.6,..] (HPA on mean KV use, default 0.6..0.9), static:N1,N2,...");
ABSL_FLAG(std::string, modes, "",
          "Replay each manifest once per mode in this comma list (Direct, KEDA, HPA; empty: the "
          "manifest's own spec.mode, Recommend replayed as Direct): KEDA and HPA pass each "
          "decision through the HPA's arithmetic on the published metric, 10% tolerance included.");
ABSL_FLAG(std::string, truth, "none",
          "How the simulated truth differs from the twin: none | efficiency | noise | warmup | "
          "routing | frontend | all (comma list).");
ABSL_FLAG(int32_t, initial_replicas, 0,
          "Replicas Ready at the start (of the pre-roll, if any) for every policy, clamped to its "
          "min/max (0: the largest of the oracle's fleets for the first minutes, up to the one in "
          "which a replica ordered at the start first serves; asked even with --oracle=false).");
ABSL_FLAG(absl::Duration, pre_roll, absl::Minutes(20),
          "Play the trace's first this-much before it, with every policy deciding, and count "
          "nothing of it: each policy then meets the trace with the fleet its own rule holds for "
          "that traffic, as a controller that was already running would (0: start cold, from "
          "--initial-replicas).");
ABSL_FLAG(bool, admission_effect, true,
          "For a manifest with spec.admission.enabled, also replay it with its advisory admission "
          "limits enforced at the gateway (a \"+admission\" row, rejected requests counted as "
          "misses), beside the comparison, which admits everything.");
ABSL_FLAG(std::string, out, "",
          "Directory for the run's files (created). replay: summary.json, timeline.csv, "
          "report.html and (for twinscale's policies) decisions.jsonl, every decision with its "
          "reasons; plan: plan.json and report.html.");
ABSL_FLAG(std::string, chartjs, "",
          "Chart.js (UMD build) to inline into report.html (empty: $TWINSCALE_CHARTJS, else "
          "/usr/share/javascript/chart.js/chart.min.js from Debian's libjs-chart.js).");
ABSL_FLAG(bool, calibrate, true,
          "Fit twinscale's twin speed to the inter-token latency the fleet shows (off: the "
          "profile's speed throughout).");
ABSL_FLAG(std::string, twin_speed, "",
          "Hold twinscale's twin at this speed factor instead of calibrating it: one factor for "
          "prefill and decode (0.8: 80% of the profile's speed, as --truth efficiency runs) or "
          "PREFILL,DECODE, each in [0.05, 20]. Calibration (unless --calibrate=false) fits the "
          "rest. With --truth, the twin with the truth's own parameters: its error apart from "
          "calibration's.");
ABSL_FLAG(std::string, twin_random_share, "",
          "Hold the share of requests twinscale's twin routes at random behind a balancing "
          "router at this value in [0, 1] instead of calibrating it (1: all, as --truth routing "
          "runs). Calibration (unless --calibrate=false) fits the rest.");
ABSL_FLAG(bool, oracle, true,
          "Compute the zero-lag oracle (the GPU-hours lower bound: each minute's p90 fleet) and "
          "the oracle for the target (the fewest GPU-hours with the target's share of the "
          "requests in time, 95% unless the first manifest's spec.slo.target says otherwise, "
          "every minute known in advance).");
// Replay from a fleet's own Prometheus history (controller/replay/history_trace.h).
ABSL_FLAG(std::string, from_prometheus, "",
          "Prometheus URL (e.g. http://prometheus:9090): synthesise the trace from the fleet's "
          "recorded arrivals, burstiness and length histograms instead of --trace.");
ABSL_FLAG(std::string, selector, "",
          "With --from-prometheus: the PromQL label selector of the fleet's vLLM series, e.g. "
          "{model_name=\"meta-llama/Llama-3.1-8B-Instruct\",namespace=\"prod\"}.");
ABSL_FLAG(absl::Duration, range, absl::Hours(24), "With --from-prometheus: how much history.");
ABSL_FLAG(std::string, end, "now",
          "With --from-prometheus: the end of the history, RFC3339 (2025-01-31T12:00:00Z) or now.");
ABSL_FLAG(absl::Duration, step, absl::Seconds(15),
          "With --from-prometheus: the resolution of the rate curve and of the dispersion "
          "estimate (at least the scrape interval).");

// Replay a rate curve (simulator/workload/rate_curve.h).
ABSL_FLAG(std::string, rate_curve, "",
          "ServeGen aggregate rate CSV (window_start_s,aggregate_rate_rps,...): draw Poisson "
          "arrivals following the curve (linear between window centres) instead of --trace; "
          "token lengths from --lengths-from. --time-scale compresses it (0.125 plays 24 h in "
          "3 h at 8x the rate, the request count kept).");
ABSL_FLAG(std::string, lengths_from, "",
          "With --rate-curve: the request trace (Azure CSV, Mooncake JSONL, BurstGPT CSV; "
          "--trace-format) whose (prompt, output) pairs the arrivals draw, uniformly.");
ABSL_FLAG(absl::Duration, curve_start, absl::ZeroDuration(),
          "With --rate-curve: where in the curve to begin (e.g. 72h: the fourth day).");
ABSL_FLAG(absl::Duration, curve_span, absl::ZeroDuration(),
          "With --rate-curve: how much of the curve to play, before --time-scale (0: to its end).");
ABSL_FLAG(double, peak_rate, 0,
          "With --rate-curve: scale the rates so the played curve's peak is this many req/s, "
          "after --time-scale (0: the curve's own rates).");

namespace twinscale::cli {

const char kReplayUsage[] =
    "twinscale replay: what would each policy have done on this traffic, at what cost?\n"
    "\n"
    "Examples:\n"
    "  twinscale replay --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv --rate-scale 40 "
    "\\\n"
    "      --policy deploy/samples/llama-3.1-8b-h100.yaml --policy keda-queue --policy hpa-kv \\\n"
    "      --truth all --out /tmp/replay\n"
    "  twinscale replay --from-prometheus http://prometheus:9090 \\\n"
    "      --selector '{model_name=\"meta-llama/Llama-3.1-8B-Instruct\"}' --range 24h --policy "
    "static:4\n"
    "  twinscale replay \\\n"
    "      --rate-curve tests/data/traces/servegen_language_m-large_aggregate_rate.csv \\\n"
    "      --lengths-from tests/data/traces/AzureLLMInferenceTrace_conv.csv --curve-start 240h \\\n"
    "      --curve-span 24h --time-scale 0.125 --peak-rate 300 --policy static:30\n"
    "  twinscale replay --policy static:4,6,8 --truth efficiency\n";
const char kReplayFlagsFile[] = "replay_command.cc";

// The trace replay plays when given no traffic: a checkout's path, found by FindShippedFile.
constexpr char kDefaultTrace[] = "tests/data/traces/AzureLLMInferenceTrace_conv.csv";

namespace {

struct PolicyEntry {
  std::unique_ptr<replay::Autoscaler> autoscaler;
  bool enforce_admission = false;  // a "+admission" row: admission's effect, not compared
  int32_t min_replicas = 1;
  int32_t max_replicas = 1 << 20;
  sim::RouterKind router = sim::RouterKind::kLeastRequests;
  replay::TwinscaleAutoscaler* twinscale = nullptr;  // `autoscaler`, when twinscale's policy
};

// The InferenceAutoscaler of manifest file `path` as the object the API server would store (the
// file was loaded, so it exists and is valid).
absl::StatusOr<nlohmann::json> ManifestObject(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  return api::InferenceAutoscalerObject(text.str(), path);
}

// --from-prometheus: the history's queries, then the synthesis. Sets *description for the report.
absl::StatusOr<sim::Trace> LoadPrometheusTrace(std::string* description) {
  const std::string url = absl::GetFlag(FLAGS_from_prometheus);
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    return absl::InvalidArgumentError(
        "--trace and --from-prometheus are mutually exclusive: give one source of traffic");
  }
  replay::HistoryQueryOptions q;
  q.selector = absl::GetFlag(FLAGS_selector);
  q.range = absl::GetFlag(FLAGS_range);
  q.step = absl::GetFlag(FLAGS_step);
  const std::string end = absl::GetFlag(FLAGS_end);
  if (end == "now") {
    q.end = RealClock().Now();
  } else {
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, end, &q.end, &err)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--end: want RFC3339 (2025-01-31T12:00:00Z) or now, got \"", end, "\": ", err));
    }
  }
  TS_RETURN_IF_ERROR(replay::ValidateHistoryQuery(q));
  metrics::PrometheusClient client(url);
  TS_ASSIGN_OR_RETURN(
      replay::FleetHistory history,
      replay::FetchFleetHistory(
          [&client](const metrics::RangeQuery& rq) { return client.QueryRange(rq); }, q));
  replay::SynthesisOptions so;
  so.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<replay::HistoryTrace> h = replay::SynthesizeTrace(history, so);
  if (!h.ok()) {
    return absl::Status(h.status().code(), absl::StrCat("--from-prometheus ", url, " ", q.selector,
                                                        ": ", h.status().message()));
  }
  *description = absl::StrCat(url, " ", q.selector, " ", absl::FormatDuration(q.range), " to ",
                              absl::FormatTime(absl::RFC3339_sec, q.end, absl::UTCTimeZone()));
  std::cerr << absl::StrFormat(
      "history: %.0f arrivals, index of dispersion %.2f (gamma CV %.2f), prompt mean %.0f, output "
      "mean %.0f tokens\n",
      h->observed_requests, h->dispersion, h->cv, history.prompt.mean, history.output.mean);
  h->trace.source = *description;
  return std::move(h->trace);
}

// --twin-speed and --twin-random-share: what of the twin is held (nothing when neither is given).
absl::StatusOr<twin::TargetDecider::HeldTwin> HeldTwinFromFlags() {
  const std::string speed = absl::GetFlag(FLAGS_twin_speed);
  const std::string share = absl::GetFlag(FLAGS_twin_random_share);
  twin::TargetDecider::HeldTwin held;
  if (!speed.empty()) {
    const std::vector<std::string> parts = absl::StrSplit(speed, ',');
    std::vector<double> factors;
    for (const std::string& part : parts) {
      double f = 0;
      if (absl::SimpleAtod(part, &f) && f >= 0.05 && f <= 20) factors.push_back(f);
    }
    if (factors.size() != parts.size() || factors.size() > 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--twin-speed: \"", speed,
                       "\" is not a factor or PREFILL,DECODE factors in [0.05, 20] (e.g. 0.8)"));
    }
    held.speed = sim::SpeedFactors{factors.front(), factors.back()};  // one factor: both
  }
  if (!share.empty()) {
    double v = 0;
    if (!absl::SimpleAtod(share, &v) || !(v >= 0 && v <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--twin-random-share: \"", share, "\" is not a share in [0, 1]"));
    }
    held.router_random_share = v;
  }
  return held;
}

// A flag's file as a user's input: a file that cannot be read is the flag's InvalidArgument.
absl::Status AsFlagInput(absl::Status s, absl::string_view flag) {
  if (s.ok() || s.code() == absl::StatusCode::kInvalidArgument) return s;
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", s.message()));
}

// --rate-curve: the curve's played span and the lengths trace -> a trace. Sets *description, and
// *history to the traffic of the curve just before the span (up to --pre-roll of played time, at
// the span's own scale and peak factor; empty when the span starts at the curve's start): what
// the pre-roll plays, so every policy meets the span's first minute with the fleet the traffic
// before it left, not the fleet the span's own first minutes would.
// The arrivals a forecaster would have seen before the replay's pre-roll: `arrivals[i]` over
// [start + from + i x step, start + from + (i + 1) x step), start being the replay's first arrival.
struct EarlierArrivals {
  absl::Duration from;
  absl::Duration step;
  std::vector<double> arrivals;
};

// The rate curve's days before the played span, as a forecaster would have counted them: up to
// a week and an hour of curve time before the pre-roll's history (seasonal_forecast.h reads a
// week of days), at the played scale, the expected count per 15 s of played time (the curve's
// rates, not a draw of them: the history is what the fleet saw, whose noise is not the point).
EarlierArrivals EarlierArrivalsOf(const sim::RecordedRateCurve& curve,
                                  const sim::RateCurvePlay& play, sim::SimDuration pre_roll,
                                  double peak_factor) {
  EarlierArrivals e;
  const sim::SimDuration week = sim::SimDuration::FromAbsl(absl::Hours(7 * 24 + 1));
  const sim::SimDuration before = std::min(play.start, pre_roll + week);
  if (before <= pre_roll) return e;
  sim::RateCurvePlay earlier = play;
  earlier.peak_rate = 0;
  earlier.start = play.start - before;
  earlier.span = before - pre_roll;
  absl::StatusOr<sim::PlayedCurve> past = sim::PlanRateCurve(curve, earlier);
  if (!past.ok()) return e;
  e.step = absl::Seconds(15);
  e.from = -absl::Seconds(before.seconds() * play.time_scale);
  const double step_s = absl::ToDoubleSeconds(e.step);
  for (double a = 0; a + step_s <= past->span_seconds() + 1e-9; a += step_s) {
    e.arrivals.push_back(peak_factor * past->Expected(a, a + step_s));
  }
  return e;
}

// `fits(requests, span_seconds)` checks the played curve's expected traffic against the run's
// limits before it is drawn.
absl::StatusOr<sim::Trace> LoadRateCurveTrace(
    std::string* description, sim::Trace* history, absl::Duration* history_span,
    EarlierArrivals* earlier_arrivals,
    const std::function<absl::Status(double requests, double span_seconds)>& fits,
    const std::function<void(const sim::Trace&)>& warn) {
  const std::string path = absl::GetFlag(FLAGS_rate_curve);
  const std::string lengths_path = absl::GetFlag(FLAGS_lengths_from);
  if (!absl::GetFlag(FLAGS_trace).empty() || !absl::GetFlag(FLAGS_from_prometheus).empty()) {
    return absl::InvalidArgumentError(
        "--rate-curve replaces --trace and --from-prometheus: give one source of traffic");
  }
  if (lengths_path.empty()) {
    return absl::InvalidArgumentError(
        "--rate-curve needs --lengths-from TRACE (the request trace whose token lengths to draw)");
  }
  if (absl::GetFlag(FLAGS_rate_scale) != 1.0) {
    return absl::InvalidArgumentError(
        "--rate-scale applies to --trace; scale a --rate-curve with --peak-rate");
  }
  absl::StatusOr<sim::RecordedRateCurve> curve = sim::ReadRateCurveFile(path);
  TS_RETURN_IF_ERROR(AsFlagInput(curve.status(), "rate-curve"));
  sim::TraceReadOptions ro;
  TS_ASSIGN_OR_RETURN(ro.format, sim::ParseTraceFormat(absl::GetFlag(FLAGS_trace_format)));
  ro.seed = absl::GetFlag(FLAGS_seed);
  TS_RETURN_IF_ERROR(CheckFits(TraceFileCost(lengths_path), LimitsFromFlags()));
  absl::StatusOr<sim::Trace> lengths = sim::ReadTraceFile(lengths_path, ro);
  TS_RETURN_IF_ERROR(AsFlagInput(lengths.status(), "lengths-from"));
  warn(*lengths);
  sim::RateCurvePlay play;
  play.start = sim::SimDuration::FromAbsl(absl::GetFlag(FLAGS_curve_start));
  play.span = sim::SimDuration::FromAbsl(absl::GetFlag(FLAGS_curve_span));
  play.time_scale = absl::GetFlag(FLAGS_time_scale);
  play.peak_rate = absl::GetFlag(FLAGS_peak_rate);
  absl::StatusOr<sim::PlayedCurve> played = sim::PlanRateCurve(*curve, play);
  if (!played.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rate-curve ", path,
        " (--curve-start, --curve-span, --time-scale, --peak-rate): ", played.status().message()));
  }
  TS_RETURN_IF_ERROR(fits(played->Expected(0, played->span_seconds()), played->span_seconds()));
  // The span in curve time (before --time-scale), as the flags give it.
  const absl::Duration curve_span = absl::Seconds(played->span_seconds() / play.time_scale);
  *description =
      absl::StrCat(path, " from ", absl::FormatDuration(absl::GetFlag(FLAGS_curve_start)), " for ",
                   absl::FormatDuration(curve_span), " at time scale ", play.time_scale);
  if (play.peak_rate > 0) absl::StrAppend(description, ", peak ", play.peak_rate, " req/s");
  absl::StrAppend(description, ", lengths from ", lengths_path);
  // The history (the same play over [start - before, start)) and the earlier arrivals before it,
  // their rates times the factor the span's peak rate set (the span's plan without --peak-rate
  // gives the factor).
  const sim::SimDuration before = std::min(
      play.start, sim::SimDuration::FromSecondsF(
                      absl::ToDoubleSeconds(absl::GetFlag(FLAGS_pre_roll)) / play.time_scale));
  *history = sim::Trace{};
  *history_span = absl::ZeroDuration();
  sim::RateCurvePlay unscaled = play;
  unscaled.peak_rate = 0;
  const absl::StatusOr<sim::PlayedCurve> own = sim::PlanRateCurve(*curve, unscaled);
  double own_peak = 0, played_peak = 0;
  if (own.ok()) {
    for (double r : own->rate) own_peak = std::max(own_peak, r);
  }
  for (double r : played->rate) played_peak = std::max(played_peak, r);
  const double factor = own_peak > 0 ? played_peak / own_peak : 1.0;
  *earlier_arrivals = EarlierArrivalsOf(*curve, unscaled, before, factor);
  if (before > sim::SimDuration::Zero()) {
    sim::RateCurvePlay earlier = unscaled;
    earlier.start = play.start - before;
    earlier.span = before;
    absl::StatusOr<sim::PlayedCurve> past = sim::PlanRateCurve(*curve, earlier);
    if (own.ok() && past.ok()) {
      for (double& r : past->rate) r *= factor;
      absl::StatusOr<sim::Trace> h = sim::GenerateRateCurveTrace(
          *past, *lengths, sim::Mix64(absl::GetFlag(FLAGS_seed) ^ 0x68697374ULL),
          *description + " (history)");
      if (h.ok()) {
        *history = *std::move(h);
        *history_span = absl::Seconds(past->span_seconds());
      }
    }
  }
  return sim::GenerateRateCurveTrace(*played, *lengths, absl::GetFlag(FLAGS_seed), *description);
}

// Range checks of replay's flags (flag_checks.h), before anything is read.
absl::Status CheckReplayFlags() {
  TS_RETURN_IF_ERROR(CheckCommonFlags());
  return FirstError({
      AtLeast(FLAGS_initial_replicas, 0, "0: the oracle's fleet for the first minutes"),
      AtLeast(FLAGS_pre_roll, absl::ZeroDuration(), "0: start cold"),
      AtLeast(FLAGS_peak_rate, 0.0, "0: the curve's own rates"),
      AtLeast(FLAGS_curve_start, absl::ZeroDuration()),
      AtLeast(FLAGS_curve_span, absl::ZeroDuration(), "0: to the curve's end"),
      Above(FLAGS_range, absl::ZeroDuration()),
      Above(FLAGS_step, absl::ZeroDuration()),
  });
}

absl::Status Run() {
  TS_RETURN_IF_ERROR(CheckReplayFlags());
  if (!absl::GetFlag(FLAGS_out).empty()) TS_RETURN_IF_ERROR(CheckOutDir(absl::GetFlag(FLAGS_out)));
  // Policies: manifests first (they set the deployment and the SLO), then baseline families.
  TS_ASSIGN_OR_RETURN(sim::ProfileRegistry profiles, sim::ProfileRegistry::LoadEmbedded());
  std::vector<std::string> policy_args;
  const bool default_policies = absl::GetFlagReflectionHandle(FLAGS_policy).CurrentValue() ==
                                absl::GetFlagReflectionHandle(FLAGS_policy).DefaultValue();
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_policy), '\n', absl::SkipEmpty())) {
    policy_args.emplace_back(absl::StripAsciiWhitespace(p));
    // The default manifest ships with twinscale: found wherever the binary runs from.
    if (default_policies && absl::EndsWith(policy_args.back(), ".yaml")) {
      TS_ASSIGN_OR_RETURN(policy_args.back(),
                          FindShippedFile(policy_args.back(), ShippedDataRoots(), "policy"));
    }
  }
  if (policy_args.empty()) return absl::InvalidArgumentError("--policy: give at least one policy");
  TS_ASSIGN_OR_RETURN(const twin::TargetDecider::HeldTwin held_twin, HeldTwinFromFlags());
  std::vector<std::optional<api::Mode>> modes;  // nullopt: the manifest's own
  for (absl::string_view m :
       absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipWhitespace())) {
    m = absl::StripAsciiWhitespace(m);
    if (m == "Direct") {
      modes.push_back(api::Mode::kDirect);
    } else if (m == "KEDA") {
      modes.push_back(api::Mode::kKeda);
    } else if (m == "HPA") {
      modes.push_back(api::Mode::kHpa);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--modes: \"", m, "\" is not one of Direct, KEDA, HPA"));
    }
  }
  if (modes.empty()) modes.push_back(std::nullopt);
  std::vector<PolicyEntry> policies;
  std::optional<twin::ResolvedTarget> first;
  // What every policy is judged by: the first manifest's spec.slo.target (percent there, shares
  // here); without a manifest, the default 95% / 95%.
  replay::AttainmentTarget target;
  std::vector<std::string> baseline_args;
  for (const std::string& arg : policy_args) {
    if (absl::EndsWith(arg, ".yaml") || absl::EndsWith(arg, ".yml")) {
      TS_ASSIGN_OR_RETURN(api::InferenceAutoscaler ias, api::LoadInferenceAutoscalerFile(arg));
      TS_ASSIGN_OR_RETURN(nlohmann::json object, ManifestObject(arg));
      TS_ASSIGN_OR_RETURN(twin::ResolvedTarget r, twin::Resolve(ias.spec, profiles));
      r.policy.seed = absl::GetFlag(FLAGS_seed);
      // A compressed replay compresses the day the seasonal forecast repeats.
      r.policy.season_period = absl::Hours(24) * absl::GetFlag(FLAGS_time_scale);
      for (const std::optional<api::Mode>& mode : modes) {
        std::string name = absl::StrCat("twinscale:", ias.metadata.name);
        if (mode) absl::StrAppend(&name, "/", std::string(api::ModeName(*mode)));
        auto add = [&](const std::string& row, bool enforce_admission) -> absl::Status {
          PolicyEntry e;
          e.min_replicas = r.policy.min_replicas;
          e.max_replicas = r.policy.max_replicas;
          e.router = r.twin.router;
          e.enforce_admission = enforce_admission;
          // The controller's own Reconciler and decider factory, on the manifest's object, with
          // the run's seed and compressed day.
          const uint64_t seed = r.policy.seed;
          const absl::Duration season = r.policy.season_period;
          TS_ASSIGN_OR_RETURN(std::unique_ptr<replay::TwinscaleAutoscaler> a,
                              replay::TwinscaleAutoscaler::FromManifest(
                                  row, object, &profiles,
                                  [seed, season](twin::ResolvedTarget& t) {
                                    t.policy.seed = seed;
                                    t.policy.season_period = season;
                                  },
                                  mode));
          a->set_calibration(absl::GetFlag(FLAGS_calibrate));
          a->set_held_twin(held_twin);
          e.twinscale = a.get();
          e.autoscaler = std::move(a);
          policies.push_back(std::move(e));
          return absl::OkStatus();
        };
        TS_RETURN_IF_ERROR(add(name, /*enforce_admission=*/false));
        if (r.policy.admission_enabled && absl::GetFlag(FLAGS_admission_effect)) {
          // The same policy once more, its advisory limits enforced at the gateway.
          TS_RETURN_IF_ERROR(add(absl::StrCat(name, "+admission"), /*enforce_admission=*/true));
        }
      }
      if (!first) {
        target.requests = ias.spec.slo.target.requests / 100;
        target.minutes = ias.spec.slo.target.minutes / 100;
        first = std::move(r);
      }
    } else {
      baseline_args.push_back(arg);
    }
  }
  const int32_t min_r = first ? first->policy.min_replicas : 1;
  const int32_t max_r = first ? first->policy.max_replicas : 64;
  for (const std::string& arg : baseline_args) {
    absl::StatusOr<std::vector<policy::BaselineSpec>> family =
        policy::ParseBaselineFamily(arg, min_r, max_r);
    if (!family.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--policy ", arg, ": ", family.status().message(), " (or give a .yaml manifest)"));
    }
    for (const policy::BaselineSpec& spec : *family) {
      PolicyEntry e;
      e.min_replicas = spec.min_replicas;
      e.max_replicas = spec.max_replicas;
      if (spec.kind == policy::BaselineKind::kStatic) {  // starts at its own size
        e.min_replicas = e.max_replicas = static_cast<int32_t>(spec.parameter);
      }
      e.router = first ? first->twin.router : sim::RouterKind::kLeastRequests;
      e.autoscaler = std::make_unique<replay::BaselineAutoscaler>(spec);
      policies.push_back(std::move(e));
    }
  }

  // Deployment and SLO.
  sim::DeploymentSpec deployment;
  if (!absl::GetFlag(FLAGS_profile).empty()) {
    TS_ASSIGN_OR_RETURN(deployment, profiles.Resolve(absl::GetFlag(FLAGS_profile), {}));
  } else if (first) {
    deployment = first->deployment;
  } else {
    TS_ASSIGN_OR_RETURN(deployment, profiles.Resolve(kDefaultProfile, {}));
  }
  sim::TtftSlo slo;
  if (first) {
    slo.threshold = sim::SimDuration::FromAbsl(first->policy.ttft_threshold);
    slo.per_prompt_token = sim::SimDuration::FromAbsl(first->policy.ttft_per_prompt_token);
    slo.percentile = first->policy.percentile;
  }
  if (absl::GetFlag(FLAGS_slo_ttft_ms) > 0) {
    slo.threshold = sim::SimDuration::FromSecondsF(absl::GetFlag(FLAGS_slo_ttft_ms) / 1000);
  }
  if (absl::GetFlag(FLAGS_slo_ttft_per_prompt_token_ms) >= 0) {
    slo.per_prompt_token =
        sim::SimDuration::FromSecondsF(absl::GetFlag(FLAGS_slo_ttft_per_prompt_token_ms) / 1000);
  }

  // Trace: a file, or synthesised from a Prometheus history.
  std::string trace_path = absl::GetFlag(FLAGS_trace);
  if (trace_path.empty() && absl::GetFlag(FLAGS_rate_curve).empty() &&
      absl::GetFlag(FLAGS_from_prometheus).empty()) {
    TS_ASSIGN_OR_RETURN(trace_path, FindShippedFile(kDefaultTrace, ShippedDataRoots(), "trace"));
  }
  sim::Trace trace;
  sim::Trace history;  // what the pre-roll plays when the source knows what came before
  absl::Duration history_span = absl::ZeroDuration();
  const bool rate_curve = !absl::GetFlag(FLAGS_rate_curve).empty();
  if (!rate_curve) {
    // The curve's flags have defaults; one changed from its default was meant for a curve.
    for (const absl::CommandLineFlag* flag : {&absl::GetFlagReflectionHandle(FLAGS_lengths_from),
                                              &absl::GetFlagReflectionHandle(FLAGS_curve_start),
                                              &absl::GetFlagReflectionHandle(FLAGS_curve_span),
                                              &absl::GetFlagReflectionHandle(FLAGS_peak_rate)}) {
      if (flag->CurrentValue() != flag->DefaultValue()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", absl::StrReplaceAll(flag->Name(), {{"_", "-"}}), " needs --rate-curve FILE"));
      }
    }
  }
  // The run's size against its limits, before the traffic is made: the largest fleet any policy
  // (or the oracle) may run, and the requests every policy replays.
  int64_t max_fleet = absl::GetFlag(FLAGS_oracle) ? std::max(max_r, 256) : 0;
  for (const PolicyEntry& p : policies) max_fleet = std::max<int64_t>(max_fleet, p.max_replicas);
  const RunLimits limits = LimitsFromFlags();
  const double pre_roll_s = absl::ToDoubleSeconds(absl::GetFlag(FLAGS_pre_roll));
  const auto warn = [&deployment](const sim::Trace& t) {
    for (const std::string& w : TraceWarnings(t, deployment)) {
      std::cerr << "twinscale replay: warning: " << w << "\n";
    }
  };
  const auto fits = [&](double requests, double span_seconds) {
    return CheckFits(ReplayCost(deployment, max_fleet, requests, span_seconds + pre_roll_s,
                                static_cast<int>(policies.size())),
                     limits);
  };
  if (rate_curve) {
    EarlierArrivals earlier;
    TS_ASSIGN_OR_RETURN(
        trace, LoadRateCurveTrace(&trace_path, &history, &history_span, &earlier, fits, warn));
    for (PolicyEntry& p : policies) {
      if (p.twinscale == nullptr || earlier.arrivals.empty()) continue;
      p.twinscale->SeedArrivals(absl::UnixEpoch() + earlier.from, earlier.step, earlier.arrivals);
    }
  } else if (!absl::GetFlag(FLAGS_from_prometheus).empty()) {
    TS_ASSIGN_OR_RETURN(trace, LoadPrometheusTrace(&trace_path));
  } else {
    if (!absl::GetFlag(FLAGS_selector).empty()) {
      return absl::InvalidArgumentError("--selector needs --from-prometheus");
    }
    // The history flags have defaults; one changed from its default was meant for a history.
    for (const absl::CommandLineFlag* flag :
         {&absl::GetFlagReflectionHandle(FLAGS_range), &absl::GetFlagReflectionHandle(FLAGS_end),
          &absl::GetFlagReflectionHandle(FLAGS_step)}) {
      if (flag->CurrentValue() != flag->DefaultValue()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->Name(), " needs --from-prometheus (it selects the history ",
                         "to synthesise a trace from; a --trace file is replayed whole)"));
      }
    }
    sim::TraceReadOptions ro;
    TS_ASSIGN_OR_RETURN(ro.format, sim::ParseTraceFormat(absl::GetFlag(FLAGS_trace_format)));
    ro.seed = absl::GetFlag(FLAGS_seed);
    TS_RETURN_IF_ERROR(CheckFits(TraceFileCost(trace_path), limits));
    TS_ASSIGN_OR_RETURN(trace, sim::ReadTraceFile(trace_path, ro));
    warn(trace);
  }
  if (absl::GetFlag(FLAGS_time_scale) != 1.0 && !rate_curve) {  // a curve is played compressed
    TS_ASSIGN_OR_RETURN(trace, sim::ScaleTime(trace, absl::GetFlag(FLAGS_time_scale)));
  }
  TS_ASSIGN_OR_RETURN(const sim::RateScaleOptions rso, RateScaleOptionsFromFlags());
  TS_RETURN_IF_ERROR(
      fits(static_cast<double>(trace.requests.size()) * absl::GetFlag(FLAGS_rate_scale),
           sim::Summarize(trace).span_seconds));
  if (absl::GetFlag(FLAGS_rate_scale) != 1.0) {
    TS_ASSIGN_OR_RETURN(trace, sim::ScaleRate(trace, absl::GetFlag(FLAGS_rate_scale),
                                              absl::GetFlag(FLAGS_seed), rso));
  }
  auto shared_trace = std::make_shared<const sim::Trace>(std::move(trace));
  auto shared_history = std::make_shared<const sim::Trace>(std::move(history));
  TS_ASSIGN_OR_RETURN(replay::Truth truth, replay::ParseTruth(absl::GetFlag(FLAGS_truth)));

  ProgressMode mode = ProgressMode::kAuto;
  if (absl::GetFlag(FLAGS_progress) == "always") mode = ProgressMode::kAlways;
  if (absl::GetFlag(FLAGS_progress) == "never") mode = ProgressMode::kNever;
  RealClock clock;
  const sim::TraceSummary ts = sim::Summarize(*shared_trace);

  // How late a replica ordered now serves: the truth's warm-up (the first manifest's, slowed as the
  // truth slows it) plus two intervals (one to see the change, one to decide), in whole minutes,
  // as the oracles' allocation is. Without a twinscale policy: 0 (the first minute alone).
  int32_t serve_lag_minutes = 0;
  if (first) {
    const absl::Duration warmup =
        first->policy.warmup_expected * (truth.warmup ? replay::kTruthWarmupMedianFactor : 1.0);
    const absl::Duration late = warmup + 2 * first->policy.interval;
    serve_lag_minutes = static_cast<int32_t>(std::ceil(absl::ToDoubleSeconds(late) / 60.0 - 1e-9));
  }

  std::optional<replay::OracleResult> oracle;
  replay::OracleOptions oo;
  oo.min_replicas = min_r;
  oo.max_replicas = std::max(max_r, 256);
  oo.router = first ? first->twin.router : sim::RouterKind::kLeastRequests;
  if (absl::GetFlag(FLAGS_oracle)) {
    // The target's share of requests, within the largest fleet any replayed policy may run.
    oo.request_share = target.requests;
    for (const PolicyEntry& p : policies) {
      oo.share_max_replicas = std::max(oo.share_max_replicas, p.max_replicas);
    }
    oo.minute_share = target.minutes;
    if (first) oo.follower_lag_minutes = serve_lag_minutes;
    absl::StatusOr<replay::OracleResult> o =
        replay::Oracle(*shared_trace, deployment, truth, slo, absl::GetFlag(FLAGS_seed), oo);
    if (!o.ok()) return o.status();
    oracle = std::move(*o);
  }

  // Every policy starts with the fleet the first minutes played need, unless --initial-replicas
  // says otherwise: the largest of the oracle's fleets for each minute up to the one in which a
  // replica ordered at the start first serves (serve_lag_minutes), since no policy can add
  // capacity sooner. Those are the pre-roll's first minutes where the pre-roll plays the history
  // before a rate curve's span (the pre-roll then starts at another rate than the counted span
  // does), else the trace's own first minutes (which a pre-roll of the trace replays first). A
  // fleet sized for less starts the replay as a cold start no running controller would see: on the
  // conversation hour at x40 the first minute alone asks for 8 replicas at about 125 req/s, the
  // next two bring 190-230 req/s, and a start at 8 missed three of the pre-roll's first five
  // minutes and two thirds of their requests, which every policy's SLO ledger then carried into
  // the counted hour. Without the oracle those minutes are still asked, alone (the oracle's
  // minutes are independent, so it is the same answer): --oracle=false skips the report's lower
  // bounds, not the start, so its GPU-hours stay comparable with a run that computes them.
  int32_t first_minutes_replicas = 0;
  const absl::Duration pre_roll = absl::GetFlag(FLAGS_pre_roll);
  const bool history_first = !shared_history->requests.empty() && pre_roll > absl::ZeroDuration();
  const auto largest_of_first_minutes = [&](const replay::OracleResult& o) {
    int32_t largest = 0;
    for (size_t i = 0; i < o.minutes.size() && i <= static_cast<size_t>(serve_lag_minutes); ++i) {
      largest = std::max(largest, o.minutes[i].replicas);
    }
    return largest;
  };
  if (oracle && !oracle->minutes.empty() && !history_first) {
    first_minutes_replicas = largest_of_first_minutes(*oracle);
  } else if (absl::GetFlag(FLAGS_initial_replicas) <= 0 &&
             (history_first || !shared_trace->requests.empty())) {
    sim::Trace first_minutes;
    const sim::SimDuration span = sim::SimDuration::Seconds(60) * (serve_lag_minutes + 1);
    if (history_first) {
      // The history plays shifted so that its end meets the trace's start (replay::WithPreRoll).
      const sim::SimTime from =
          sim::SimTime::Zero() +
          sim::SimDuration::FromAbsl(std::max(absl::ZeroDuration(), history_span - pre_roll));
      for (const sim::RequestSpec& r : shared_history->requests) {
        if (r.arrival < from) continue;
        if (r.arrival >= from + span) break;  // sorted
        sim::RequestSpec shifted = r;
        shifted.arrival = sim::SimTime::Zero() + (r.arrival - from);
        first_minutes.requests.push_back(std::move(shifted));
      }
    } else {
      for (const sim::RequestSpec& r : shared_trace->requests) {
        if (r.arrival >= sim::SimTime::Zero() + span) break;  // sorted
        first_minutes.requests.push_back(r);
      }
    }
    if (!first_minutes.requests.empty()) {
      absl::StatusOr<replay::OracleResult> o =
          replay::Oracle(first_minutes, deployment, truth, slo, absl::GetFlag(FLAGS_seed), oo);
      if (!o.ok()) return o.status();
      first_minutes_replicas = largest_of_first_minutes(*o);
    }
  }

  std::vector<replay::ReplayResult> results;
  std::vector<replay::ReplaySummary> summaries;
  const absl::Time replays_started = clock.Now();
  for (PolicyEntry& p : policies) {
    replay::ReplayConfig rc;
    rc.trace = shared_trace;
    if (!shared_history->requests.empty()) {
      rc.history = shared_history;
      rc.history_span = history_span;
    }
    rc.deployment = deployment;
    rc.truth = truth;
    rc.router = p.router;
    rc.seed = absl::GetFlag(FLAGS_seed);
    rc.slo = slo;
    rc.pre_roll = absl::GetFlag(FLAGS_pre_roll);
    rc.enforce_admission = p.enforce_admission;
    int32_t initial = absl::GetFlag(FLAGS_initial_replicas);
    if (initial <= 0)
      initial = first_minutes_replicas > 0 ? first_minutes_replicas : p.min_replicas;
    // Within the policy's own bounds: a policy never runs a fleet it could not have asked for.
    rc.initial_replicas =
        std::clamp(initial, p.min_replicas, std::max(p.min_replicas, p.max_replicas));
    ProgressBar bar(clock, absl::StrCat("replay ", p.autoscaler->Name()),
                    absl::Seconds(ts.span_seconds), mode,
                    ProgressStage{.index = static_cast<int>(&p - policies.data()),
                                  .count = static_cast<int>(policies.size()),
                                  .started = replays_started});
    rc.progress = [&bar](absl::Duration d) { bar.Update(d); };
    absl::StatusOr<replay::ReplayResult> r = replay::RunReplay(rc, *p.autoscaler, &clock);
    bar.Finish();
    if (!r.ok()) return r.status();
    summaries.push_back(r->summary);
    results.push_back(std::move(*r));
  }

  replay::ReportHeader header;
  header.trace =
      rate_curve ? trace_path : absl::StrCat(trace_path, " x", absl::GetFlag(FLAGS_rate_scale));
  header.requests = ts.requests;
  header.span_seconds = ts.span_seconds;
  header.deployment = deployment.name;
  header.truth = replay::Describe(truth);
  header.seed = absl::GetFlag(FLAGS_seed);
  header.pre_roll = absl::GetFlag(FLAGS_pre_roll);
  header.pre_roll_from_history = !shared_history->requests.empty();
  header.slo = slo;
  header.target = target;
  const replay::OracleResult* oracle_ptr = oracle ? &*oracle : nullptr;
  std::cout << replay::FormatTable(header, summaries, oracle_ptr);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("--out ", out, ": ", ec.message()));
    TS_RETURN_IF_ERROR(replay::WriteSummaryJson(out, header, summaries, oracle_ptr));
    TS_RETURN_IF_ERROR(replay::WriteTimelineCsv(out, results));
    std::cout << "\nwrote " << out << "/summary.json and " << out << "/timeline.csv\n";
    std::string decision_log;
    for (size_t i = 0; i < policies.size(); ++i) {  // results[i] is policies[i]'s run
      if (policies[i].twinscale == nullptr) continue;
      decision_log += replay::DecisionLogJsonl(*policies[i].twinscale, absl::UnixEpoch(),
                                               &results[i].twin_checks);
    }
    if (!decision_log.empty()) {
      TS_RETURN_IF_ERROR(
          replay::WriteReportFile(absl::StrCat(out, "/decisions.jsonl"), decision_log));
      std::cout << "wrote " << out << "/decisions.jsonl\n";
    }
    // The page is a convenience: without Chart.js the run still succeeds, with a warning.
    std::string chartjs = absl::GetFlag(FLAGS_chartjs);
    const char* chartjs_env = std::getenv(replay::kChartJsEnv);
    if (chartjs.empty()) {
      chartjs = chartjs_env != nullptr && *chartjs_env != '\0' ? chartjs_env
                                                               : replay::kDefaultChartJsPath;
    }
    const absl::Status html =
        replay::WriteReportHtml(out, header, summaries, oracle_ptr, results, chartjs);
    if (html.ok()) {
      std::cout << "wrote " << out << "/report.html\n";
    } else {
      std::cerr << "twinscale replay: warning: report.html not written: " << html.message() << "\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace

int RunReplayCommand() { return Finish("replay", Run()); }

}  // namespace twinscale::cli
