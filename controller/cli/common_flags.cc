// Flags shared by several subcommands: see common_flags.h.
#include "controller/cli/common_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, trace, "",
          "Request trace file (Azure CSV, Mooncake JSONL, BurstGPT CSV). replay: defaults to the "
          "shipped Azure conversation trace.");
ABSL_FLAG(std::string, trace_format, "auto", "auto | azure | mooncake | burstgpt.");
ABSL_FLAG(double, rate_scale, 1.0,
          "Multiply the trace's rate by superposing copies shifted by independent seeded offsets "
          "(a fractional part by thinning).");
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
ABSL_FLAG(std::string, progress, "auto",
          "auto (a bar when stderr is a terminal) | always | never.");

namespace twinscale::cli {
const char kCommonFlagsFile[] = "common_flags.cc";
}  // namespace twinscale::cli
