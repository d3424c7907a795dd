// Run estimates and limits: see run_budget.h.
#include "controller/cli/run_budget.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "controller/cli/common_flags.h"

namespace twinscale::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kBytesPerKvBlock = 60;
constexpr double kReplicaFixedBytes = 64 * 1024;
constexpr double kSimulateBytesPerRequest = 40;
constexpr double kReplayTraceBytesPerRequest = 128;
// What each policy adds per trace request: its per-minute and per-decision records, not
// per-request ones. Measured: a compressed ServeGen day (3.16M requests) with ten policies peaks
// at 785 MB (/usr/bin/time); the estimate with this figure is 1.4 GiB.
constexpr double kReplayResultBytesPerRequest = 16;
constexpr double kProcessBytes = 64 * 1024 * 1024;  // the binary, profiles, buffers
constexpr double kTraceFileFactor = 3;
constexpr double kSimulateCpuPerRequest = 1e-6;
constexpr double kReplayCpuPerRequest = 4e-6;
constexpr double kReplayCpuPerReplicaSecond = 7e-6;

std::string Gib(double bytes) { return absl::StrFormat("%.1f GiB", bytes / kGiB); }

}  // namespace

double ReplicaBytes(const sim::DeploymentSpec& d) {
  return static_cast<double>(sim::KvCapacityBlocks(d)) * kBytesPerKvBlock + kReplicaFixedBytes;
}

RunCost SimulateCost(const sim::DeploymentSpec& d, int64_t replicas, double requests, int runs) {
  RunCost c;
  const double replica_bytes = ReplicaBytes(d);
  c.bytes = kProcessBytes + static_cast<double>(replicas) * replica_bytes +
            requests * kSimulateBytesPerRequest;
  c.cpu = absl::Seconds(requests * kSimulateCpuPerRequest * runs);
  c.what = absl::StrFormat("%d replica%s x %.1f MiB of KV block table, %.3g requests", replicas,
                           replicas == 1 ? "" : "s", replica_bytes / 1024 / 1024, requests);
  if (runs > 1) absl::StrAppendFormat(&c.what, ", %d runs", runs);
  return c;
}

RunCost PlanCost(double replica_bytes, int64_t max_replicas, int threads, double trace_requests,
                 int runs_per_trace) {
  RunCost c;
  c.bytes = kProcessBytes +
            static_cast<double>(threads) * static_cast<double>(max_replicas) * replica_bytes +
            trace_requests * (kReplayTraceBytesPerRequest + kSimulateBytesPerRequest);
  c.cpu = absl::Seconds(trace_requests * kSimulateCpuPerRequest * runs_per_trace);
  c.what = absl::StrFormat(
      "%.3g requests over every scenario and seed, each trace run about %d times; %d thread%s "
      "of up to %d replicas x %.1f MiB of KV block table",
      trace_requests, runs_per_trace, threads, threads == 1 ? "" : "s", max_replicas,
      replica_bytes / 1024 / 1024);
  return c;
}

RunCost ReplayCost(const sim::DeploymentSpec& d, int64_t max_fleet, double requests,
                   double span_seconds, int policies) {
  RunCost c;
  const double replica_bytes = ReplicaBytes(d);
  c.bytes = kProcessBytes + static_cast<double>(max_fleet) * replica_bytes +
            requests * (kReplayTraceBytesPerRequest + kReplayResultBytesPerRequest * policies);
  c.cpu = absl::Seconds(
      policies * (requests * kReplayCpuPerRequest +
                  static_cast<double>(max_fleet) * span_seconds * kReplayCpuPerReplicaSecond));
  c.what = absl::StrFormat(
      "up to %d replicas x %.1f MiB of KV block table, %.3g requests over %.0f s, %d polic%s",
      max_fleet, replica_bytes / 1024 / 1024, requests, span_seconds, policies,
      policies == 1 ? "y" : "ies");
  return c;
}

RunCost TraceFileCost(const std::string& path) {
  RunCost c;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return c;
  c.bytes = kProcessBytes + kTraceFileFactor * static_cast<double>(size);
  c.what = absl::StrFormat("reading %s, %.1f MiB of text, and its requests", path,
                           static_cast<double>(size) / 1024 / 1024);
  return c;
}

double MachineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  double bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0;
  // A container's limit (cgroup v2, then v1) where it is lower than the machine's.
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string text;
    if (!(f >> text)) continue;
    double limit = 0;
    if (absl::SimpleAtod(text, &limit) && limit > 0 && (bytes == 0 || limit < bytes)) {
      bytes = limit;
    }
  }
  return bytes;
}

RunLimits LimitsFromFlags() {
  RunLimits l;
  const double gib = absl::GetFlag(FLAGS_memory_limit_gib);
  if (gib > 0) {
    l.memory_bytes = gib * kGiB;
    l.memory_source = "--memory-limit-gib";
  } else {
    const double machine = MachineMemoryBytes();
    l.memory_bytes = machine > 0 ? machine / 4 : 4 * kGiB;
    l.memory_source = machine > 0 ? "a quarter of this machine's memory" : "4 GiB by default";
  }
  l.cpu = absl::GetFlag(FLAGS_time_limit);
  return l;
}

absl::Status CheckFits(const RunCost& cost, const RunLimits& limits) {
  if (cost.bytes > limits.memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "this run needs about %s (%s), over the limit of %s (%s); raise it with "
        "--memory-limit-gib if the machine has the room",
        Gib(cost.bytes), cost.what, Gib(limits.memory_bytes), limits.memory_source));
  }
  if (cost.cpu > limits.cpu) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "this run needs about %s of CPU (%s), over --time-limit=%s; raise --time-limit to run it",
        absl::FormatDuration(absl::Trunc(cost.cpu, absl::Seconds(1))), cost.what,
        absl::FormatDuration(limits.cpu)));
  }
  return absl::OkStatus();
}

}  // namespace twinscale::cli
