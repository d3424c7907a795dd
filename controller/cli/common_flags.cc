// Flags shared by several subcommands: see common_flags.h.
#include "controller/cli/common_flags.h"

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/cli/flag_checks.h"
#include "controller/common/status_macros.h"

ABSL_FLAG(std::string, trace, "",
          "Request trace file (Azure CSV, Mooncake JSONL, BurstGPT CSV). replay: defaults to the "
          "shipped Azure conversation trace.");
ABSL_FLAG(std::string, trace_format, "auto", "auto | azure | mooncake | burstgpt.");
ABSL_FLAG(double, rate_scale, 1.0,
          "Multiply the trace's rate by superposing copies shifted by independent seeded offsets "
          "(a fractional part by thinning); --rate-scale-mode says how far a copy moves.");
ABSL_FLAG(std::string, rate_scale_mode, "jitter",
          "jitter: each copy of --rate-scale shifted by at most --rate-scale-jitter, so the "
          "scaled trace keeps the trace's rate curve | spread: shifted anywhere in the trace's "
          "span, which flattens the curve to its mean.");
ABSL_FLAG(absl::Duration, rate_scale_jitter, absl::Seconds(60),
          "With --rate-scale-mode=jitter: the largest shift of a copy, either way (> 0); a copy's "
          "arrivals pushed past one end of the trace re-enter at the other.");
ABSL_FLAG(double, time_scale, 1.0,
          "Multiply every trace timestamp by this (0.5 replays twice as fast).");
ABSL_FLAG(uint64_t, seed, 1, "Random seed: the same seed gives byte-identical results.");
ABSL_FLAG(std::string, profile, "",
          "Deployment profile (model + GPU + TP + engine limits + latency model); default "
          "llama-3.1-8b-h100-sxm-tp1 (replay: the first manifest's model.profile).");
ABSL_FLAG(double, slo_ttft_ms, 0,
          "TTFT SLO threshold in milliseconds (0: 500, or replay's first manifest's).");
ABSL_FLAG(double, slo_ttft_per_prompt_token_ms, -1,
          "Length-aware TTFT allowance per prompt token in ms (negative: 0, or replay's first "
          "manifest's).");
ABSL_FLAG(double, memory_limit_gib, 0,
          "Refuse a run estimated to need more memory than this many GiB (0: a quarter of this "
          "machine's memory, or of its container's limit).");
ABSL_FLAG(absl::Duration, time_limit, absl::Hours(2),
          "Refuse a run estimated to need more CPU time than this.");
ABSL_FLAG(std::string, progress, "auto",
          "auto (a bar when stderr is a terminal) | always | never.");

namespace twinscale::cli {
const char kCommonFlagsFile[] = "common_flags.cc";

absl::Status CheckCommonFlags() {
  TS_RETURN_IF_ERROR(FirstError({
      OneOf(FLAGS_progress, {"auto", "always", "never"}),
      Above(FLAGS_time_scale, 0.0),
      Above(FLAGS_rate_scale, 0.0),
      AtLeast(FLAGS_slo_ttft_ms, 0.0, "0: 500, or replay's first manifest's"),
      AtLeast(FLAGS_memory_limit_gib, 0.0, "0: a quarter of this machine's memory"),
      Above(FLAGS_time_limit, absl::ZeroDuration()),
  }));
  // -1 (the default) means "not given"; any other negative allowance is a mistake.
  const double per_token = absl::GetFlag(FLAGS_slo_ttft_per_prompt_token_ms);
  if (per_token < 0 && per_token != -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--slo-ttft-per-prompt-token-ms must be >= 0 (leave it out for the default), got ",
        per_token));
  }
  return absl::OkStatus();
}

absl::StatusOr<sim::RateScaleOptions> RateScaleOptionsFromFlags() {
  sim::RateScaleOptions o;
  const std::string mode = absl::GetFlag(FLAGS_rate_scale_mode);
  absl::StatusOr<sim::RateScaleMode> m = sim::ParseRateScaleMode(mode);
  if (!m.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rate-scale-mode: \"", mode, "\" is not one of jitter, spread"));
  }
  o.mode = *m;
  const absl::Duration jitter = absl::GetFlag(FLAGS_rate_scale_jitter);
  if (jitter <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rate-scale-jitter must be > 0 (copies need distinct shifts), got ",
                     absl::FormatDuration(jitter)));
  }
  o.jitter = sim::SimDuration::FromAbsl(jitter);
  return o;
}
}  // namespace twinscale::cli
