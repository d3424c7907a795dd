// `twinscale plan`: review file -> RunPlan -> table, plan.json, report.html, InferenceAutoscaler.
// See plan_command.h.
#include "controller/cli/plan_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/cli/command_line.h"
#include "controller/cli/output_dir.h"
#include "controller/cli/run_budget.h"
#include "controller/cli/shipped_data.h"
#include "controller/common/clock.h"
#include "controller/common/status_macros.h"
#include "controller/plan/capacity_plan.h"
#include "controller/plan/plan_output.h"
#include "controller/plan/plan_report_html.h"
#include "controller/plan/review.h"
#include "controller/replay/report_html.h"

ABSL_FLAG(
    std::string, review, "",
    "The capacity review file (YAML; deploy/samples/plan/capacity-review.yaml is the documented "
    "example).");
ABSL_FLAG(int32_t, threads, 0,
          "Scenarios and profiles run side by side on this many threads (0: one per CPU the "
          "process may use). The answers do not depend on it.");
// Defined with simulate's and replay's flags; plan takes them too (kPlanBorrowedFlags).
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, emit_policy);
ABSL_DECLARE_FLAG(std::string, chartjs);

namespace twinscale::cli {

const char kPlanUsage[] =
    "twinscale plan: a launch-week capacity review on the twin. For each scenario of the review "
    "file (changes to a baseline workload: more requests, longer prompts or outputs, a "
    "long-context cohort, a retry storm, a prefix-cache miss, a burst) and each deployment "
    "profile: the replicas needed to meet the SLO under several seeds, goodput per GPU, the cost "
    "per 1,000 successful requests and per million output tokens, the warm reserve for the "
    "warm-up lag, and the headroom on every resource (requests, prefill, decode, KV memory, "
    "queue) with the binding one named.\n\n"
    "Examples:\n"
    "  twinscale plan --review deploy/samples/plan/capacity-review.yaml\n"
    "  twinscale plan --review deploy/samples/plan/capacity-review.yaml --out /tmp/plan "
    "--emit-policy /tmp/plan/policy.yaml\n";
const char kPlanFlagsFile[] = "plan_command.cc";
const char kPlanBorrowedFlags[] = "output out emit_policy chartjs memory_limit_gib time_limit";

namespace {

// One CPU per thread, of those the process may use.
int Threads() {
  const int32_t asked = absl::GetFlag(FLAGS_threads);
  if (asked > 0) return asked;
  return std::max(1u, std::thread::hardware_concurrency());
}

absl::Status WriteFile(const std::string& path, const std::string& text, absl::string_view flag) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.flush();
  if (!f) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", std::string(flag), " ", path, ": cannot write the file"));
  }
  return absl::OkStatus();
}

// A profile an InferenceAutoscaler can name: one that overrides neither its model nor its GPU.
bool Nameable(const plan::ProfileChoice& c) { return !c.model.has_value() && !c.gpu.has_value(); }

// The profile --emit-policy writes for: the review's emitProfile, else the cheapest per 1,000
// successful requests at the baseline of those an InferenceAutoscaler can name.
int32_t EmitProfile(const plan::PlanResult& result, const plan::Review& review) {
  int32_t best = result.recommended_profile;
  double cheapest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < result.profiles.size(); ++i) {
    if (result.profiles[i].name == review.emit_profile) return static_cast<int32_t>(i);
    const plan::Cell& c = result.at(0, i);
    if (Nameable(review.profiles[i]) && c.found && c.cost_per_1k_successful < cheapest) {
      cheapest = c.cost_per_1k_successful;
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

// `path` as given when it is there (or absolute), else the shipped file of that relative path
// where one is found (shipped_data.h), else as given (its reader then says it is missing).
std::string ShippedOr(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::path(path).is_absolute() || std::filesystem::exists(path, ec)) return path;
  absl::StatusOr<std::string> shipped = FindShippedFile(path, ShippedDataRoots(), "review");
  return shipped.ok() ? *shipped : path;
}

absl::Status Run() {
  const std::string path = absl::GetFlag(FLAGS_review);
  if (path.empty()) {
    return absl::InvalidArgumentError(
        "--review FILE is required (deploy/samples/plan/capacity-review.yaml is an example)");
  }
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "table" && output != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--output: want table or json, got \"", output, "\""));
  }
  if (absl::GetFlag(FLAGS_threads) < 0) {
    return absl::InvalidArgumentError("--threads must be >= 0 (0: one per CPU)");
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) TS_RETURN_IF_ERROR(CheckOutDir(out));
  const std::string emit = absl::GetFlag(FLAGS_emit_policy);
  if (!emit.empty()) {
    // Proven writable now, not after the review's runs.
    std::ofstream probe(emit, std::ios::binary | std::ios::app);
    if (!probe) {
      return absl::InvalidArgumentError(
          absl::StrCat("--emit-policy ", emit, ": cannot write it (", std::strerror(errno), ")"));
    }
  }
  std::string chartjs = absl::GetFlag(FLAGS_chartjs);
  if (chartjs.empty()) {
    const char* env = std::getenv(replay::kChartJsEnv);
    chartjs = env != nullptr && *env != '\0' ? env : replay::kDefaultChartJsPath;
  }

  TS_ASSIGN_OR_RETURN(plan::Review review, plan::LoadReviewFile(ShippedOr(path)));
  // A relative trace that is neither beside the review nor under the working directory: a
  // shipped one (the documented example's, from an install or another directory).
  if (review.baseline.kind == plan::Baseline::Kind::kTrace) {
    std::string& trace = review.baseline.trace.path;
    const std::filesystem::path beside = std::filesystem::path(review.source).parent_path() / trace;
    std::error_code ec;
    if (std::filesystem::path(trace).is_relative() && !std::filesystem::exists(trace, ec) &&
        !std::filesystem::exists(beside, ec)) {
      trace = ShippedOr(trace);
    }
  }
  if (!emit.empty() && !review.emit_profile.empty()) {
    for (const plan::ProfileChoice& c : review.profiles) {
      if (c.name == review.emit_profile && !Nameable(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--emit-policy: emitProfile ", c.name,
                         " overrides its model or GPU, which an InferenceAutoscaler cannot say "
                         "(spec.model.profile names a deployment profile)"));
      }
    }
  }
  if (!emit.empty() && std::none_of(review.profiles.begin(), review.profiles.end(), Nameable)) {
    return absl::InvalidArgumentError(
        "--emit-policy: every profile of the review overrides its model or GPU, which an "
        "InferenceAutoscaler cannot say (spec.model.profile names a deployment profile)");
  }
  const RunLimits limits = LimitsFromFlags();
  if (review.baseline.kind == plan::Baseline::Kind::kTrace) {
    TS_RETURN_IF_ERROR(CheckFits(TraceFileCost(review.baseline.trace.path), limits));
  }
  plan::PlanOptions options;
  options.threads = Threads();
  options.check_size = [&](double trace_requests,
                           const std::vector<plan::ProfileSummary>& profiles) {
    double replica_bytes = 0;  // the largest replica of the review's profiles
    for (const plan::ProfileSummary& p : profiles) {
      replica_bytes = std::max(replica_bytes, ReplicaBytes(p.deployment));
    }
    // A search per seed doubles, then bisects: about 2 log2(maxReplicas) + 4 runs, per profile.
    const int runs =
        static_cast<int>(review.profiles.size()) *
        (2 * static_cast<int>(std::ceil(std::log2(std::max(2, review.max_replicas)))) + 4);
    return CheckFits(
        PlanCost(replica_bytes, review.max_replicas, options.threads, trace_requests, runs),
        limits);
  };
  const int cells = static_cast<int>((review.scenarios.size() + 1) * review.profiles.size());
  // Progress on a terminal only: a log or a pipe gets the result alone.
  const bool progress = output == "table" && isatty(STDERR_FILENO) == 1;
  int done = 0;
  options.on_cell = [&](const plan::Cell&) {
    ++done;
    if (progress) std::cerr << absl::StrFormat("\r  %d of %d cells", done, cells);
  };
  RealClock clock;
  options.now = clock.Now();
  const absl::Time start = clock.Now();
  TS_ASSIGN_OR_RETURN(plan::PlanResult result, plan::RunPlan(review, options));
  const double wall = absl::ToDoubleSeconds(clock.Now() - start);
  if (progress) std::cerr << "\r" << std::string(24, ' ') << "\r";

  const nlohmann::ordered_json json = plan::PlanJson(result, wall);
  if (output == "json") {
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << plan::PlanTable(result);
    std::cout << absl::StrFormat("\n  wall time %.1f s on %d threads\n", wall, options.threads);
  }
  if (!out.empty()) {
    TS_RETURN_IF_ERROR(WriteFile(absl::StrCat(out, "/plan.json"), json.dump(2) + "\n", "out"));
    TS_RETURN_IF_ERROR(plan::WritePlanReportHtml(out, json, chartjs));
    if (output == "table") std::cout << "  wrote " << out << "/plan.json and report.html\n";
  }
  if (!emit.empty()) {
    TS_ASSIGN_OR_RETURN(std::string yaml,
                        plan::PlanPolicyYaml(result, EmitProfile(result, review), review));
    TS_RETURN_IF_ERROR(WriteFile(emit, yaml, "emit-policy"));
    if (output == "table") std::cout << "  wrote " << emit << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int RunPlanCommand() { return Finish("plan", Run()); }

}  // namespace twinscale::cli
