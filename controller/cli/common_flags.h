// Flags shared by several subcommands (abseil flags are process-wide, so a name is defined once).
// Each subcommand's --help lists these beside its own.
#ifndef TWINSCALE_CONTROLLER_CLI_COMMON_FLAGS_H_
#define TWINSCALE_CONTROLLER_CLI_COMMON_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "simulator/workload/trace.h"

ABSL_DECLARE_FLAG(std::string, trace);
ABSL_DECLARE_FLAG(std::string, trace_format);
ABSL_DECLARE_FLAG(double, rate_scale);
ABSL_DECLARE_FLAG(std::string, rate_scale_mode);
ABSL_DECLARE_FLAG(absl::Duration, rate_scale_jitter);
ABSL_DECLARE_FLAG(double, time_scale);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(std::string, profile);
ABSL_DECLARE_FLAG(double, slo_ttft_ms);
ABSL_DECLARE_FLAG(double, slo_ttft_per_prompt_token_ms);
ABSL_DECLARE_FLAG(std::string, progress);
ABSL_DECLARE_FLAG(double, memory_limit_gib);
ABSL_DECLARE_FLAG(absl::Duration, time_limit);

namespace twinscale::cli {
extern const char kCommonFlagsFile[];
constexpr char kDefaultProfile[] = "llama-3.1-8b-h100-sxm-tp1";
constexpr double kDefaultTtftMs = 500;

// Range checks of the shared flags (flag_checks.h): --progress, --time-scale, --rate-scale,
// --slo-ttft-ms, --slo-ttft-per-prompt-token-ms.
absl::Status CheckCommonFlags();

// --rate-scale-mode and --rate-scale-jitter as ScaleRate's options; InvalidArgument naming the
// flag for an unknown mode or a jitter <= 0.
absl::StatusOr<sim::RateScaleOptions> RateScaleOptionsFromFlags();
}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_COMMON_FLAGS_H_
