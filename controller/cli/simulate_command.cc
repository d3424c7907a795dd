// `twinscale simulate`: flags -> resolved deployment + workload -> Simulate / FindReplicas ->
// table or JSON. See simulate_command.h.
#include "controller/cli/simulate_command.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "controller/cli/command_line.h"
#include "controller/cli/common_flags.h"
#include "controller/cli/deployment_json.h"
#include "controller/cli/emitted_policy.h"
#include "controller/cli/flag_checks.h"
#include "controller/cli/run_budget.h"
#include "controller/cli/trace_warnings.h"
#include "controller/common/clock.h"
#include "controller/common/progress.h"
#include "controller/common/status_macros.h"
#include "nlohmann/json.hpp"
#include "simulator/model/router.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/capacity.h"
#include "simulator/whatif/simulate.h"
#include "simulator/workload/generators.h"
#include "simulator/workload/trace.h"
#include "simulator/workload/trace_reader.h"

// Deployment.
ABSL_FLAG(std::string, model, "", "Model profile name; overrides the deployment's model.");
ABSL_FLAG(std::string, gpu, "", "GPU profile name; overrides the deployment's GPU.");
ABSL_FLAG(int32_t, tensor_parallel, 0, "Tensor-parallel degree (0: the profile's).");
ABSL_FLAG(std::string, latency_model, "", "roofline | linear (empty: the profile's).");
ABSL_FLAG(int32_t, max_num_seqs, 0, "vLLM max_num_seqs (0: the profile's).");
ABSL_FLAG(int32_t, max_num_batched_tokens, 0, "vLLM max_num_batched_tokens (0: the profile's).");
ABSL_FLAG(int32_t, max_model_len, 0,
          "vLLM --max-model-len: longer requests are refused (0: the profile's).");
ABSL_FLAG(double, gpu_memory_utilization, 0, "vLLM gpu_memory_utilization (0: the profile's).");
ABSL_FLAG(int32_t, block_size, 0, "KV block size in tokens (0: the profile's).");
ABSL_FLAG(int64_t, kv_capacity_tokens, 0,
          "KV capacity in tokens, as vLLM logs it (0: computed from memory arithmetic).");
ABSL_FLAG(std::string, prefix_caching, "",
          "true | false: vLLM's automatic prefix cache (empty: the profile's). Needs a trace with "
          "prefix hashes (Mooncake) to hit.");
ABSL_FLAG(std::string, scheduler_reserve_full_isl, "",
          "true | false: admit a waiting request only when its whole prompt's KV blocks are free "
          "(vLLM's --scheduler-reserve-full-isl, its default since March 2026), or on its first "
          "chunk's as older V1 releases did (empty: the profile's).");
ABSL_FLAG(int32_t, long_prefill_token_threshold, -1,
          "vLLM --long-prefill-token-threshold: at most this many prompt tokens per request per "
          "step, so several prefills share the budget (0: off, vLLM's default; -1: the "
          "profile's).");
ABSL_FLAG(std::string, profile_dir, "",
          "Directory with gpus/, models/, deployments/ YAML files that add to or override the "
          "built-in profiles.");
// Fleet.
ABSL_FLAG(int32_t, replicas, 1, "Replicas, all Ready from the start.");
ABSL_FLAG(std::string, router, "random",
          "random | random-per-connection | round-robin | least-requests | prefix-aware.");
ABSL_FLAG(double, step_noise_cv, 0, "Coefficient of variation of step-time noise (0: none).");
// Workload: synthetic.
ABSL_FLAG(double, rate, 0, "Arrival rate in requests per second (synthetic workload).");
ABSL_FLAG(int64_t, num_requests, 0, "Requests to generate (synthetic workload).");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "How long arrivals continue (synthetic workload), e.g. 10m.");
ABSL_FLAG(std::string, arrival, "poisson", "poisson | gamma.");
ABSL_FLAG(double, cv, 1.0, "Coefficient of variation of gamma inter-arrival times.");
ABSL_FLAG(double, input_tokens, 512, "Mean prompt length (tokens).");
ABSL_FLAG(double, output_tokens, 512, "Mean output length (tokens).");
ABSL_FLAG(double, input_stddev, 0, "Prompt length standard deviation (> 0: Gaussian, clamped).");
ABSL_FLAG(double, output_stddev, 0, "Output length standard deviation (> 0: Gaussian, clamped).");
ABSL_FLAG(std::string, length_distribution, "auto",
          "auto | constant | gaussian | exponential: how lengths are drawn (auto: Gaussian when a "
          "stddev is given, else constant).");
ABSL_FLAG(int32_t, min_tokens, 1, "Lower clamp of drawn lengths.");
ABSL_FLAG(int32_t, max_tokens, 32768, "Upper clamp of drawn lengths.");
// Workload: trace.
// SLO and output.
ABSL_FLAG(double, slo_ttft_percentile, 90, "Percentile at which the TTFT SLO must hold.");
ABSL_FLAG(std::string, output, "table", "table | json.");
ABSL_FLAG(bool, report_wall_time, true,
          "Include wall-clock figures (wall_seconds, requests and sequence-steps per wall second). "
          "Off makes the output byte-identical between runs with the same seed.");
// Capacity search.
ABSL_FLAG(bool, find_replicas, false,
          "Find the smallest fleet whose TTFT meets --slo-ttft-ms at --slo-ttft-percentile.");
ABSL_FLAG(int32_t, max_replicas, 512, "Upper bound of the --find-replicas search.");
ABSL_FLAG(int32_t, seeds, 3,
          "--find-replicas: search with this many seeds (--seed, --seed+1, ...) and answer the "
          "fleet that meets the SLO under every one, with the spread of the single-seed answers.");
ABSL_FLAG(double, headroom, 0,
          "--find-replicas: the fleet must meet the SLO with this much more traffic than given "
          "(0.2: 20% more requests per second, lengths unchanged).");
ABSL_FLAG(std::string, emit_policy, "",
          "Write an InferenceAutoscaler manifest for the answer to this file, mode Recommend "
          "(simulate's capacity search: the profile and SLO asked, maxReplicas the answer; plan: "
          "the chosen profile, minReplicas the warm reserve, maxReplicas the largest fleet).");

namespace twinscale::cli {

const char kSimulateUsage[] =
    "twinscale simulate: run the fleet simulator (the twin) on a synthetic workload or a trace.\n"
    "\n"
    "Examples:\n"
    "  twinscale simulate --rate 20 --num-requests 5000 --replicas 2\n"
    "  twinscale simulate --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv "
    "--rate-scale 10 --replicas 4\n"
    "  twinscale simulate --rate 500 --duration 5m --find-replicas --slo-ttft-ms 500\n"
    "  twinscale simulate --profile blis-llama-3.1-8b-h100-tp2 --rate 10 --num-requests 2000 "
    "--input-tokens 512 --input-stddev 256 --output json\n";
const char kSimulateFlagsFile[] = "simulate_command.cc";

namespace {

using sim::SimDuration;
using sim::SimTime;

struct Workload {
  std::shared_ptr<const sim::Trace> trace;  // set for trace workloads
  sim::SyntheticWorkloadSpec synthetic;
  std::string description;
  absl::Duration expected_span;  // for progress ETA
  std::unique_ptr<sim::RequestSource> MakeSource() const {
    if (trace) return sim::MakeTraceSource(trace);
    return sim::MakeSyntheticSource(synthetic);
  }
};

absl::StatusOr<sim::DeploymentSpec> ResolveDeployment() {
  TS_ASSIGN_OR_RETURN(sim::ProfileRegistry registry, sim::ProfileRegistry::LoadEmbedded());
  if (!absl::GetFlag(FLAGS_profile_dir).empty()) {
    TS_RETURN_IF_ERROR(registry.AddDirectory(absl::GetFlag(FLAGS_profile_dir)));
  }
  sim::DeploymentOverrides o;
  if (!absl::GetFlag(FLAGS_model).empty()) o.model = absl::GetFlag(FLAGS_model);
  if (!absl::GetFlag(FLAGS_gpu).empty()) o.gpu = absl::GetFlag(FLAGS_gpu);
  if (absl::GetFlag(FLAGS_tensor_parallel) > 0)
    o.tensor_parallel = absl::GetFlag(FLAGS_tensor_parallel);
  if (absl::GetFlag(FLAGS_max_num_seqs) > 0) o.max_num_seqs = absl::GetFlag(FLAGS_max_num_seqs);
  if (absl::GetFlag(FLAGS_max_num_batched_tokens) > 0) {
    o.max_num_batched_tokens = absl::GetFlag(FLAGS_max_num_batched_tokens);
  }
  if (absl::GetFlag(FLAGS_gpu_memory_utilization) > 0) {
    o.gpu_memory_utilization = absl::GetFlag(FLAGS_gpu_memory_utilization);
  }
  if (absl::GetFlag(FLAGS_block_size) > 0) o.block_size = absl::GetFlag(FLAGS_block_size);
  if (absl::GetFlag(FLAGS_max_model_len) > 0) o.max_model_len = absl::GetFlag(FLAGS_max_model_len);
  if (absl::GetFlag(FLAGS_kv_capacity_tokens) > 0) {
    o.kv_capacity_tokens = absl::GetFlag(FLAGS_kv_capacity_tokens);
  }
  const std::string prefix_caching = absl::GetFlag(FLAGS_prefix_caching);
  if (prefix_caching == "true") {
    o.enable_prefix_caching = true;
  } else if (prefix_caching == "false") {
    o.enable_prefix_caching = false;
  } else if (!prefix_caching.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prefix-caching: want true or false, got \"", prefix_caching, "\""));
  }
  const std::string reserve_full = absl::GetFlag(FLAGS_scheduler_reserve_full_isl);
  if (reserve_full == "true") {
    o.reserve_full_prompt = true;
  } else if (reserve_full == "false") {
    o.reserve_full_prompt = false;
  } else if (!reserve_full.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scheduler-reserve-full-isl: want true or false, got \"", reserve_full, "\""));
  }
  if (absl::GetFlag(FLAGS_long_prefill_token_threshold) >= 0) {
    o.long_prefill_token_threshold = absl::GetFlag(FLAGS_long_prefill_token_threshold);
  }
  if (!absl::GetFlag(FLAGS_latency_model).empty()) {
    TS_ASSIGN_OR_RETURN(o.latency_model,
                        sim::ParseLatencyModelKind(absl::GetFlag(FLAGS_latency_model)));
  }
  const std::string profile =
      absl::GetFlag(FLAGS_profile).empty() ? kDefaultProfile : absl::GetFlag(FLAGS_profile);
  TS_ASSIGN_OR_RETURN(sim::DeploymentSpec d, registry.Resolve(profile, o));
  TS_RETURN_IF_ERROR(sim::ValidateDeployment(d));
  return d;
}

absl::StatusOr<sim::LengthDistribution> LengthFlags(std::string_view what, double mean,
                                                    double stddev) {
  sim::LengthDistribution l;
  l.mean = mean;
  l.stddev = stddev;
  l.min = absl::GetFlag(FLAGS_min_tokens);
  l.max = absl::GetFlag(FLAGS_max_tokens);
  const std::string kind = absl::GetFlag(FLAGS_length_distribution);
  if (kind == "auto") {
    l.kind = stddev > 0 ? sim::LengthDistribution::Kind::kGaussian
                        : sim::LengthDistribution::Kind::kConstant;
  } else if (kind == "constant") {
    l.kind = sim::LengthDistribution::Kind::kConstant;
  } else if (kind == "gaussian") {
    l.kind = sim::LengthDistribution::Kind::kGaussian;
  } else if (kind == "exponential") {
    l.kind = sim::LengthDistribution::Kind::kExponential;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--length-distribution: unknown \"", kind,
                                                   "\" (want auto|constant|gaussian|exponential)"));
  }
  if (mean < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", std::string(what), "-tokens must be >= 1"));
  }
  return l;
}

// `fits(requests)` checks a workload of that many requests against the run's limits before it is
// made (a trace before --rate-scale multiplies it).
absl::StatusOr<Workload> BuildWorkload(const sim::DeploymentSpec& deployment,
                                       const std::function<absl::Status(double)>& fits) {
  Workload w;
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  const double rate = absl::GetFlag(FLAGS_rate);
  if (!trace_path.empty() && rate > 0) {
    return absl::InvalidArgumentError(
        "--rate and --trace exclude each other: scale a trace with --rate-scale");
  }
  if (!trace_path.empty()) {
    sim::TraceReadOptions ro;
    TS_ASSIGN_OR_RETURN(ro.format, sim::ParseTraceFormat(absl::GetFlag(FLAGS_trace_format)));
    ro.seed = absl::GetFlag(FLAGS_seed);
    TS_RETURN_IF_ERROR(CheckFits(TraceFileCost(trace_path), LimitsFromFlags()));
    TS_ASSIGN_OR_RETURN(sim::Trace t, sim::ReadTraceFile(trace_path, ro));
    for (const std::string& w : TraceWarnings(t, deployment)) {
      std::cerr << "twinscale simulate: warning: " << w << "\n";
    }
    if (absl::GetFlag(FLAGS_time_scale) != 1.0) {
      TS_ASSIGN_OR_RETURN(t, sim::ScaleTime(t, absl::GetFlag(FLAGS_time_scale)));
    }
    TS_ASSIGN_OR_RETURN(const sim::RateScaleOptions rso, RateScaleOptionsFromFlags());
    TS_RETURN_IF_ERROR(
        fits(static_cast<double>(t.requests.size()) * absl::GetFlag(FLAGS_rate_scale)));
    if (absl::GetFlag(FLAGS_rate_scale) != 1.0) {
      TS_ASSIGN_OR_RETURN(
          t, sim::ScaleRate(t, absl::GetFlag(FLAGS_rate_scale), absl::GetFlag(FLAGS_seed), rso));
    }
    if (t.requests.empty())
      return absl::InvalidArgumentError(absl::StrCat(trace_path, ": no requests"));
    const sim::TraceSummary ts = sim::Summarize(t);
    w.description = absl::StrFormat(
        "trace %s x%g rate, x%g time: %d requests over %.0f s (%.2f req/s)", trace_path,
        absl::GetFlag(FLAGS_rate_scale), absl::GetFlag(FLAGS_time_scale), ts.requests,
        ts.span_seconds, ts.mean_rate_rps);
    w.expected_span = absl::Seconds(ts.span_seconds);
    w.trace = std::make_shared<const sim::Trace>(std::move(t));
    return w;
  }
  if (rate <= 0) {
    return absl::InvalidArgumentError(
        "no workload: give --trace FILE, or --rate R with --num-requests N or --duration D");
  }
  if (absl::GetFlag(FLAGS_rate_scale) != 1.0 || absl::GetFlag(FLAGS_time_scale) != 1.0) {
    return absl::InvalidArgumentError("--rate-scale and --time-scale apply to --trace only");
  }
  sim::SyntheticWorkloadSpec& s = w.synthetic;
  const std::string arrival = absl::GetFlag(FLAGS_arrival);
  if (arrival == "poisson") {
    s.arrival = sim::ArrivalKind::kPoisson;
  } else if (arrival == "gamma") {
    s.arrival = sim::ArrivalKind::kGamma;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--arrival: unknown \"", arrival, "\" (want poisson|gamma)"));
  }
  s.cv = absl::GetFlag(FLAGS_cv);
  s.rate.kind = sim::RateCurve::Kind::kConstant;
  s.rate.rate = rate;
  TS_ASSIGN_OR_RETURN(s.prompt, LengthFlags("input", absl::GetFlag(FLAGS_input_tokens),
                                            absl::GetFlag(FLAGS_input_stddev)));
  TS_ASSIGN_OR_RETURN(s.output, LengthFlags("output", absl::GetFlag(FLAGS_output_tokens),
                                            absl::GetFlag(FLAGS_output_stddev)));
  s.num_requests = absl::GetFlag(FLAGS_num_requests);
  s.duration = SimDuration::FromAbsl(absl::GetFlag(FLAGS_duration));
  s.seed = absl::GetFlag(FLAGS_seed);
  if (s.num_requests <= 0 && s.duration <= SimDuration::Zero()) {
    return absl::InvalidArgumentError("--rate needs --num-requests N or --duration D to end");
  }
  TS_RETURN_IF_ERROR(sim::ValidateSyntheticWorkload(s));
  TS_RETURN_IF_ERROR(
      fits(s.num_requests > 0 ? static_cast<double>(s.num_requests) : rate * s.duration.seconds()));
  const double span =
      s.num_requests > 0 ? static_cast<double>(s.num_requests) / rate : s.duration.seconds();
  w.expected_span = absl::Seconds(span);
  w.description =
      absl::StrFormat("%s arrivals at %g req/s (cv %g), prompt %g+-%g, output %g+-%g", arrival,
                      rate, s.cv, s.prompt.mean, s.prompt.stddev, s.output.mean, s.output.stddev);
  return w;
}

// Numbers people read: rounded to a sensible precision (nlohmann prints the shortest round-trip
// form, so a rounded value prints short).
double Round(double x, int digits = 4) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

nlohmann::ordered_json LatencyJson(const sim::LatencySummary& l) {
  nlohmann::ordered_json j;
  j["mean"] = Round(l.mean);
  j["p50"] = Round(l.p50);
  j["p90"] = Round(l.p90);
  j["p99"] = Round(l.p99);
  return j;
}

nlohmann::ordered_json SummaryJson(const sim::RunSummary& s) {
  nlohmann::ordered_json j;
  j["injected_requests"] = s.injected;
  j["completed_requests"] = s.completed;
  j["rejected_requests"] = s.rejected;
  j["aborted_requests"] = s.aborted;
  j["simulated_seconds"] = Round(s.simulated_seconds);
  j["throughput_rps"] = Round(s.throughput_rps);
  j["output_tokens_per_s"] = Round(s.output_tokens_per_s, 2);
  j["ttft_ms"] = LatencyJson(s.ttft_ms);
  j["itl_ms"] = LatencyJson(s.itl_ms);
  j["e2e_ms"] = LatencyJson(s.e2e_ms);
  j["scheduling_delay_ms"] = LatencyJson(s.scheduling_delay_ms);
  j["preemptions"] = s.preemptions;
  j["kv_peak_utilization"] = Round(s.kv_peak_utilization);
  j["slo_attainment"] = Round(s.slo_attainment, 6);
  j["goodput_rps"] = Round(s.goodput_rps);
  j["gpu_hours"] = Round(s.gpu_hours, 6);
  j["prefix_cache_hit_rate"] = Round(s.prefix_cache_hit_rate, 6);
  j["engine_steps"] = s.engine_steps;
  j["sequence_steps"] = s.sequence_steps;
  return j;
}

void PrintLatencyRow(const char* name, const sim::LatencySummary& l) {
  std::printf("  %-22s %10.1f %10.1f %10.1f %10.1f\n", name, l.mean, l.p50, l.p90, l.p99);
}

void PrintTable(const sim::RunSummary& s, const sim::DeploymentSpec& d, int32_t replicas,
                const Workload& w, const sim::TtftSlo& slo) {
  std::printf("twinscale simulate: %d x %s (%s on %s, TP%d, %s)\n", replicas, d.name.c_str(),
              d.model.name.c_str(), d.gpu.name.c_str(), d.tensor_parallel,
              std::string(sim::LatencyModelKindName(d.latency_model)).c_str());
  std::printf("workload: %s\n\n", w.description.c_str());
  std::printf(
      "  requests               injected %lld, completed %lld, rejected %lld, aborted %lld\n",
      static_cast<long long>(s.injected), static_cast<long long>(s.completed),
      static_cast<long long>(s.rejected), static_cast<long long>(s.aborted));
  std::printf("  simulated              %.1f s\n", s.simulated_seconds);
  std::printf("  throughput             %.2f req/s, %.0f output tok/s\n", s.throughput_rps,
              s.output_tokens_per_s);
  std::printf("\n  %-22s %10s %10s %10s %10s\n", "latency (ms)", "mean", "p50", "p90", "p99");
  PrintLatencyRow("TTFT", s.ttft_ms);
  PrintLatencyRow("inter-token", s.itl_ms);
  PrintLatencyRow("end-to-end", s.e2e_ms);
  PrintLatencyRow("scheduling delay", s.scheduling_delay_ms);
  std::printf("\n  SLO (TTFT p%g <= %.0f ms)  attainment %.2f%%  goodput %.2f req/s  %s\n",
              slo.percentile, slo.threshold.millis(), s.slo_attainment * 100, s.goodput_rps,
              sim::MeetsTtftSlo(s, slo) ? "MET" : "MISSED");
  std::printf("  preemptions            %lld\n", static_cast<long long>(s.preemptions));
  std::printf("  KV peak utilization    %.1f%%\n", s.kv_peak_utilization * 100);
  if (d.engine.enable_prefix_caching) {
    std::printf("  prefix cache hit rate  %.1f%% of prompt tokens\n",
                s.prefix_cache_hit_rate * 100);
  }
  std::printf("  GPU-hours              %.3f\n", s.gpu_hours);
}

// The worst seed's figures of a fleet: the lowest attainment and the highest p90 TTFT.
struct WorstSeed {
  double attainment = 1;
  double ttft_p90_ms = 0;
};
WorstSeed WorstOf(const std::vector<sim::RunSummary>& runs) {
  WorstSeed w;
  for (const sim::RunSummary& r : runs) {
    w.attainment = std::min(w.attainment, r.slo_attainment);
    w.ttft_p90_ms = std::max(w.ttft_p90_ms, r.ttft_ms.p90);
  }
  return w;
}

nlohmann::ordered_json CapacityJson(const sim::SeededCapacityAnswer& a, const sim::TtftSlo& slo) {
  nlohmann::ordered_json j;
  j["replicas"] = a.replicas;
  j["seeds"] = a.seeds;
  nlohmann::ordered_json single = nlohmann::ordered_json::array();
  for (const sim::CapacityAnswer& one : a.per_seed) single.push_back(one.replicas);
  j["single_seed_replicas"] = single;
  j["spread"] = {{"fewest", a.fewest}, {"most", a.replicas}};
  j["headroom"] = absl::GetFlag(FLAGS_headroom);
  const WorstSeed at = WorstOf(a.at_answer);
  j["margin"] = {{"worst_attainment", Round(at.attainment, 6)},
                 {"attainment_needed", Round(slo.percentile / 100, 6)},
                 {"points_above_needed", Round((at.attainment - slo.percentile / 100) * 100, 3)},
                 {"worst_ttft_p90_ms", Round(at.ttft_p90_ms)}};
  if (!a.one_fewer.empty()) {
    const WorstSeed below = WorstOf(a.one_fewer);
    j["one_fewer"] = {{"replicas", a.replicas - 1},
                      {"worst_attainment", Round(below.attainment, 6)},
                      {"worst_ttft_p90_ms", Round(below.ttft_p90_ms)},
                      {"meets_slo", below.attainment + 1e-12 >= slo.percentile / 100}};
  }
  nlohmann::ordered_json tried = nlohmann::ordered_json::array();
  for (const sim::CapacityCandidate& c : a.per_seed.front().tried) {
    tried.push_back({{"replicas", c.replicas},
                     {"ttft_p90_ms", Round(c.summary.ttft_ms.p90)},
                     {"slo_attainment", Round(c.summary.slo_attainment, 6)},
                     {"meets_slo", c.meets_slo}});
  }
  j["tried"] = tried;  // the first seed's search
  return j;
}

void PrintCapacity(const sim::SeededCapacityAnswer& a, const sim::TtftSlo& slo) {
  const double needed = slo.percentile / 100;
  std::printf("smallest fleet meeting TTFT p%g <= %.0f ms under %zu seed%s: %d replicas",
              slo.percentile, slo.threshold.millis(), a.seeds.size(),
              a.seeds.size() == 1 ? "" : "s", a.replicas);
  if (a.seeds.size() > 1 && a.fewest < a.replicas) {
    std::printf(" (one seed alone: %d-%d)", a.fewest, a.replicas);
  } else if (a.seeds.size() > 1) {
    std::printf(" (each seed alone: %d)", a.replicas);
  }
  std::printf("\n");
  const WorstSeed at = WorstOf(a.at_answer);
  std::printf(
      "  at %d: %.2f%% of requests in time on the worst seed, %.2f points above the %g%% "
      "needed; TTFT p90 up to %.0f ms\n",
      a.replicas, at.attainment * 100, (at.attainment - needed) * 100, slo.percentile,
      at.ttft_p90_ms);
  if (!a.one_fewer.empty()) {
    const WorstSeed below = WorstOf(a.one_fewer);
    std::printf("  at %d: %.2f%% on the worst seed (TTFT p90 up to %.0f ms): %s\n", a.replicas - 1,
                below.attainment * 100, below.ttft_p90_ms,
                below.attainment + 1e-12 >= needed ? "meets it on every seed" : "short");
  }
  if (absl::GetFlag(FLAGS_headroom) > 0) {
    std::printf("  sized for %g x the workload's request rate (--headroom %g)\n",
                1 + absl::GetFlag(FLAGS_headroom), absl::GetFlag(FLAGS_headroom));
  }
  std::printf("\n");
}

// --emit-policy: the answer as an InferenceAutoscaler manifest (emitted_policy.h).
absl::Status EmitPolicy(const std::string& path, const sim::SeededCapacityAnswer& answer,
                        const sim::SimulateOptions& options, const std::string& workload,
                        const sim::DeploymentSpec& deployment) {
  EmittedPolicy p;
  p.profile = absl::GetFlag(FLAGS_profile).empty() ? kDefaultProfile : absl::GetFlag(FLAGS_profile);
  if (absl::GetFlag(FLAGS_tensor_parallel) > 0) p.tensor_parallel = deployment.tensor_parallel;
  if (absl::GetFlag(FLAGS_max_num_seqs) > 0) p.max_num_seqs = deployment.engine.max_num_seqs;
  if (absl::GetFlag(FLAGS_max_num_batched_tokens) > 0) {
    p.max_num_batched_tokens = deployment.engine.max_num_batched_tokens;
  }
  if (absl::GetFlag(FLAGS_gpu_memory_utilization) > 0) {
    p.gpu_memory_utilization = deployment.engine.gpu_memory_utilization;
  }
  if (absl::GetFlag(FLAGS_block_size) > 0) p.block_size = deployment.engine.block_size;
  if (absl::GetFlag(FLAGS_max_model_len) > 0) p.max_model_len = deployment.engine.max_model_len;
  p.router = options.fleet.router.kind;
  p.max_replicas = answer.replicas;
  p.ttft_threshold = options.slo.threshold.ToAbsl();
  p.percentile = options.slo.percentile;
  p.ttft_per_prompt_token = options.slo.per_prompt_token.ToAbsl();
  p.comment = {
      absl::StrFormat("Written by `twinscale simulate --find-replicas --emit-policy`: %d replicas "
                      "meet TTFT p%g <= %s",
                      answer.replicas, options.slo.percentile,
                      absl::FormatDuration(options.slo.threshold.ToAbsl())),
      absl::StrFormat(
          "under %d seeds (single seeds: %d-%d) for %s%s.", answer.seeds.size(), answer.fewest,
          answer.replicas, workload,
          absl::GetFlag(FLAGS_headroom) > 0
              ? absl::StrFormat(" with %g%% headroom", absl::GetFlag(FLAGS_headroom) * 100)
              : ""),
      "maxReplicas is that answer: raise it if the traffic can grow past the question's."};
  TS_ASSIGN_OR_RETURN(const std::string yaml, EmittedPolicyYaml(p));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << yaml;
  f.flush();
  if (!f) return absl::UnavailableError(absl::StrCat("--emit-policy ", path, ": write failed"));
  return absl::OkStatus();
}

// Range checks of simulate's flags (flag_checks.h), before anything is read.
absl::Status CheckSimulateFlags() {
  TS_RETURN_IF_ERROR(CheckCommonFlags());
  TS_RETURN_IF_ERROR(FirstError({
      OneOf(FLAGS_output, {"table", "json"}),
      AtLeast(FLAGS_tensor_parallel, 0, "0: the profile's"),
      AtLeast(FLAGS_max_num_seqs, 0, "0: the profile's"),
      AtLeast(FLAGS_max_num_batched_tokens, 0, "0: the profile's"),
      AtLeast(FLAGS_max_model_len, 0, "0: the profile's"),
      Within(FLAGS_gpu_memory_utilization, 0.0, 1.0, "0: the profile's"),
      AtLeast(FLAGS_block_size, 0, "0: the profile's"),
      AtLeast(FLAGS_kv_capacity_tokens, int64_t{0}, "0: computed"),
      AtLeast(FLAGS_long_prefill_token_threshold, -1, "-1: the profile's"),
      AtLeast(FLAGS_replicas, 1),
      AtLeast(FLAGS_step_noise_cv, 0.0, "0: none"),
      AtLeast(FLAGS_rate, 0.0),
      AtLeast(FLAGS_num_requests, int64_t{0}),
      AtLeast(FLAGS_duration, absl::ZeroDuration()),
      Above(FLAGS_cv, 0.0),
      AtLeast(FLAGS_input_tokens, 1.0),
      AtLeast(FLAGS_output_tokens, 1.0),
      AtLeast(FLAGS_input_stddev, 0.0, "0: constant"),
      AtLeast(FLAGS_output_stddev, 0.0, "0: constant"),
      AtLeast(FLAGS_min_tokens, 1),
      AtLeast(FLAGS_max_tokens, absl::GetFlag(FLAGS_min_tokens), "at least --min-tokens"),
      AtLeast(FLAGS_max_replicas, 1),
      Within(FLAGS_seeds, 1, 20),
      Within(FLAGS_headroom, 0.0, 10.0),
  }));
  const bool capacity = absl::GetFlag(FLAGS_find_replicas);
  for (const absl::CommandLineFlag* flag :
       {&absl::GetFlagReflectionHandle(FLAGS_seeds), &absl::GetFlagReflectionHandle(FLAGS_headroom),
        &absl::GetFlagReflectionHandle(FLAGS_emit_policy)}) {
    if (!capacity && flag->CurrentValue() != flag->DefaultValue()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", DashedName(flag->Name()), " needs --find-replicas"));
    }
  }
  const std::string emit = absl::GetFlag(FLAGS_emit_policy);
  if (!emit.empty()) {
    // The manifest names a profile and the engine fields spec.model takes; nothing else.
    for (const absl::CommandLineFlag* flag :
         {&absl::GetFlagReflectionHandle(FLAGS_model), &absl::GetFlagReflectionHandle(FLAGS_gpu),
          &absl::GetFlagReflectionHandle(FLAGS_latency_model),
          &absl::GetFlagReflectionHandle(FLAGS_kv_capacity_tokens),
          &absl::GetFlagReflectionHandle(FLAGS_prefix_caching),
          &absl::GetFlagReflectionHandle(FLAGS_scheduler_reserve_full_isl),
          &absl::GetFlagReflectionHandle(FLAGS_long_prefill_token_threshold),
          &absl::GetFlagReflectionHandle(FLAGS_profile_dir)}) {
      if (flag->CurrentValue() != flag->DefaultValue()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--emit-policy: an InferenceAutoscaler names a built-in --profile and cannot carry --",
            DashedName(flag->Name()), "; ask the question of a profile as it ships"));
      }
    }
    std::ofstream f(emit, std::ios::app);
    if (!f) {
      return absl::InvalidArgumentError(
          absl::StrCat("--emit-policy ", emit, ": cannot write it (", std::strerror(errno), ")"));
    }
  }
  // A synthetic workload's shape without its rate: say what is missing, not "no workload".
  if (absl::GetFlag(FLAGS_rate) <= 0 && absl::GetFlag(FLAGS_trace).empty() &&
      (absl::GetFlag(FLAGS_num_requests) > 0 ||
       absl::GetFlag(FLAGS_duration) > absl::ZeroDuration())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rate must be > 0 for a synthetic workload (--num-requests/--duration), got ",
        absl::GetFlag(FLAGS_rate)));
  }
  return absl::OkStatus();
}

absl::Status Run(int* exit_code) {
  TS_RETURN_IF_ERROR(CheckSimulateFlags());
  const std::string output = absl::GetFlag(FLAGS_output);
  ProgressMode progress_mode = ProgressMode::kAuto;
  const std::string progress = absl::GetFlag(FLAGS_progress);
  if (progress == "always") {
    progress_mode = ProgressMode::kAlways;
  } else if (progress == "never") {
    progress_mode = ProgressMode::kNever;
  }
  const double slo_ms =
      absl::GetFlag(FLAGS_slo_ttft_ms) > 0 ? absl::GetFlag(FLAGS_slo_ttft_ms) : kDefaultTtftMs;
  const double pct = absl::GetFlag(FLAGS_slo_ttft_percentile);
  if (!(pct > 0 && pct <= 100)) {
    return absl::InvalidArgumentError("--slo-ttft-percentile must be in (0, 100]");
  }

  TS_ASSIGN_OR_RETURN(sim::DeploymentSpec deployment, ResolveDeployment());
  // The run's size against its limits, before anything is simulated: the largest fleet it builds,
  // and a capacity search's runs (each seed doubles, then bisects, to --max-replicas at most).
  const bool find = absl::GetFlag(FLAGS_find_replicas);
  const int32_t largest = find ? absl::GetFlag(FLAGS_max_replicas) : absl::GetFlag(FLAGS_replicas);
  const int runs = find ? absl::GetFlag(FLAGS_seeds) *
                              (2 * static_cast<int>(std::ceil(std::log2(std::max(2, largest)))) + 2)
                        : 1;
  const RunLimits limits = LimitsFromFlags();
  TS_ASSIGN_OR_RETURN(Workload workload, BuildWorkload(deployment, [&](double requests) {
                        return CheckFits(SimulateCost(deployment, largest, requests, runs), limits);
                      }));

  sim::SimulateOptions options;
  options.fleet.deployment = deployment;
  TS_ASSIGN_OR_RETURN(options.fleet.router.kind, sim::ParseRouterKind(absl::GetFlag(FLAGS_router)));
  options.fleet.initial_replicas = absl::GetFlag(FLAGS_replicas);
  options.fleet.seed = absl::GetFlag(FLAGS_seed);
  options.fleet.step_noise_cv = absl::GetFlag(FLAGS_step_noise_cv);
  options.slo.threshold = SimDuration::FromSecondsF(slo_ms / 1000.0);
  options.slo.per_prompt_token = SimDuration::FromSecondsF(
      std::max(0.0, absl::GetFlag(FLAGS_slo_ttft_per_prompt_token_ms)) / 1000.0);
  options.slo.percentile = pct;

  RealClock clock;
  const absl::Time start = clock.Now();
  sim::RunSummary summary;
  int64_t peak_in_flight = 0;
  int32_t replicas = options.fleet.initial_replicas;
  std::optional<sim::SeededCapacityAnswer> capacity;
  if (absl::GetFlag(FLAGS_find_replicas)) {
    // The load asked about: the workload with --headroom more requests per second.
    const double load = 1 + absl::GetFlag(FLAGS_headroom);
    Workload asked = workload;
    if (load != 1) {
      if (asked.trace) {
        TS_ASSIGN_OR_RETURN(sim::Trace faster, sim::ScaleTime(*asked.trace, 1 / load));
        asked.trace = std::make_shared<const sim::Trace>(std::move(faster));
      } else {
        asked.synthetic.rate.rate *= load;
      }
    }
    std::vector<uint64_t> seeds;
    for (int i = 0; i < absl::GetFlag(FLAGS_seeds); ++i) seeds.push_back(options.fleet.seed + i);
    sim::CapacityQuestion q;
    q.base = options;
    q.min_replicas = 1;
    q.max_replicas = absl::GetFlag(FLAGS_max_replicas);
    ProgressBar bar(clock, "capacity search", absl::ZeroDuration(), progress_mode);
    q.on_candidate = [&](int32_t n, const sim::RunSummary& s) {
      bar.Update(absl::Seconds(s.simulated_seconds));
      if (progress_mode != ProgressMode::kNever && output == "table") {
        bar.Finish();
        std::fprintf(stderr, "  tried %3d replicas: TTFT p90 %.1f ms, SLO attainment %.2f%%\n", n,
                     s.ttft_ms.p90, s.slo_attainment * 100);
      }
    };
    absl::StatusOr<sim::SeededCapacityAnswer> answer =
        sim::FindReplicasOverSeeds(q, seeds, [&asked](uint64_t seed) {
          if (asked.trace) return sim::MakeTraceSource(asked.trace);
          sim::SyntheticWorkloadSpec spec = asked.synthetic;
          spec.seed = seed;
          return sim::MakeSyntheticSource(spec);
        });
    bar.Finish();
    if (!answer.ok()) return answer.status();
    capacity = *std::move(answer);
    summary = capacity->at_answer.front();
    replicas = capacity->replicas;
    if (!absl::GetFlag(FLAGS_emit_policy).empty()) {
      TS_RETURN_IF_ERROR(EmitPolicy(absl::GetFlag(FLAGS_emit_policy), *capacity, options,
                                    workload.description, deployment));
    }
  } else {
    ProgressBar bar(clock, "simulate", workload.expected_span, progress_mode);
    options.progress = [&bar](SimTime t) { bar.Update(absl::Nanoseconds(t.nanos())); };
    options.progress_every = SimDuration::Seconds(10);
    std::unique_ptr<sim::RequestSource> source = workload.MakeSource();
    sim::SimulateResult r = sim::Simulate(options, *source);
    bar.Finish();
    summary = r.summary;
    peak_in_flight = r.peak_in_flight;
  }
  const double wall = absl::ToDoubleSeconds(clock.Now() - start);

  if (output == "json") {
    nlohmann::ordered_json j = SummaryJson(summary);
    j["replicas"] = replicas;
    if (capacity.has_value()) {
      j["capacity_search"] = CapacityJson(*capacity, options.slo);
    } else {
      j["peak_in_flight_requests"] = peak_in_flight;
    }
    if (absl::GetFlag(FLAGS_report_wall_time)) {
      j["wall_seconds"] = Round(wall, 3);
      j["simulated_requests_per_wall_second"] =
          Round(wall > 0 ? static_cast<double>(summary.injected) / wall : 0, 0);
      j["sequence_steps_per_wall_second"] =
          Round(wall > 0 ? static_cast<double>(summary.sequence_steps) / wall : 0, 0);
    }
    nlohmann::ordered_json config;
    config["deployment"] = DeploymentToJson(deployment);
    config["replicas"] = replicas;
    config["router"] = std::string(sim::RouterKindName(options.fleet.router.kind));
    config["workload"] = workload.description;
    config["seed"] = options.fleet.seed;
    config["slo"] = {{"ttft_ms", Round(options.slo.threshold.millis())},
                     {"percentile", options.slo.percentile},
                     {"per_prompt_token_ms", Round(options.slo.per_prompt_token.millis(), 6)}};
    config["step_noise_cv"] = options.fleet.step_noise_cv;
    j["config"] = config;
    std::cout << j.dump(2) << "\n";
  } else {
    if (capacity.has_value()) PrintCapacity(*capacity, options.slo);
    PrintTable(summary, deployment, replicas, workload, options.slo);
    if (absl::GetFlag(FLAGS_report_wall_time)) {
      std::printf(
          "\n  wall time              %.2f s (%.0f simulated requests/s, %.0f sequence-steps/s)\n",
          wall, wall > 0 ? summary.injected / wall : 0,
          wall > 0 ? summary.sequence_steps / wall : 0);
    }
  }
  *exit_code = 0;
  return absl::OkStatus();
}

}  // namespace

int RunSimulate() {
  int code = 1;
  const absl::Status s = Run(&code);
  return s.ok() ? code : Finish("simulate", s);
}

}  // namespace twinscale::cli
