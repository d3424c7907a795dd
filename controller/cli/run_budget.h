// What a simulate or replay run will take, estimated before it starts, and the limits it must fit
// in: nothing a user types (static:100000, --num-requests 1e12, --rate-scale 1e9) may take the
// machine. The estimate is the twin's measured costs, rounded up:
//   - a simulated replica holds its KV block table and prefix-cache index, about 60 bytes of heap
//     per KV block (1.7 MiB for Llama-3.1-8B on an H100, 3.3 MiB on an H200: tests/bench/
//     sim_bench.cc, BM_HeapPerReplica), plus its fixed state;
//   - a request kept for the run's percentiles, about 40 bytes in `simulate`; in `replay` about
//     128 bytes for the trace plus 256 per policy for its results;
//   - a trace file read whole, about three times its size;
//   - CPU: about 1 us per simulated request in `simulate`, 4 us per request and 7 us per
//     replica-second per policy in `replay` (measured on the shipped traces).
// A run over a limit is refused with ResourceExhausted naming the flag that raises it.
#ifndef TWINSCALE_CONTROLLER_CLI_RUN_BUDGET_H_
#define TWINSCALE_CONTROLLER_CLI_RUN_BUDGET_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "simulator/model/deployment.h"

namespace twinscale::cli {

struct RunCost {
  double bytes = 0;
  absl::Duration cpu;
  std::string what;  // how the estimate was made, for the message
};

struct RunLimits {
  double memory_bytes = 0;
  std::string memory_source;  // "--memory-limit-gib" or "a quarter of this machine's memory"
  absl::Duration cpu;
};

// Bytes one simulated replica of `d` holds.
double ReplicaBytes(const sim::DeploymentSpec& d);

// `runs` simulations of `requests` each on up to `replicas` replicas.
RunCost SimulateCost(const sim::DeploymentSpec& d, int64_t replicas, double requests, int runs);

// `policies` replays of `requests` over `span_seconds` (pre-roll included), the largest fleet
// any of them (or the oracle) may run being `max_fleet`.
RunCost ReplayCost(const sim::DeploymentSpec& d, int64_t max_fleet, double requests,
                   double span_seconds, int policies);

// A capacity review (`twinscale plan`): traces of `trace_requests` requests in all (every scenario
// and seed) held at once; `threads` simulations at a time of up to `max_replicas` replicas of the
// largest profile (`replica_bytes` each); each trace run about `runs_per_trace` times.
RunCost PlanCost(double replica_bytes, int64_t max_replicas, int threads, double trace_requests,
                 int runs_per_trace);

// Reading the trace file at `path`: its text and the requests parsed from it, about three times
// its size (a CSV row of ~40 bytes becomes a ~60-byte request beside the text). Zero bytes if the
// file cannot be examined (the reader then says why).
RunCost TraceFileCost(const std::string& path);

// The memory of this machine (its cgroup's limit where lower), in bytes; 0 if unknown.
double MachineMemoryBytes();

// The limits from --memory-limit-gib and --time-limit (common_flags.h): the flag's value, or a
// quarter of the machine's memory when it is 0.
RunLimits LimitsFromFlags();

// Ok, or ResourceExhausted: "this run needs about 16.5 GiB (...), over the limit of
// 6.0 GiB (...; raise it with --memory-limit-gib)", likewise for time.
absl::Status CheckFits(const RunCost& cost, const RunLimits& limits);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_RUN_BUDGET_H_
