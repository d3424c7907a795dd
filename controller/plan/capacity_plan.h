// The capacity review run on the twin: for each scenario (the baseline first) and each deployment
// profile, under several seeds,
// - the replicas needed to meet the SLO (sim::FindReplicasOverSeeds: the smallest fleet meeting it
//   under every seed, fully warm from the start; the spread is the smallest single seed's answer),
//   and what that fleet serves: goodput (requests within the SLO per second) per GPU, the cost per
//   1,000 successful requests and per million output tokens at the profile's GPU-hour price;
// - the warm reserve (warm_reserve.h) for the scenario's rises within the profile's warm-up lag;
// - the headroom per resource (resource_headroom.h) at the planned fleet (the review's
//   plannedReplicas, or the baseline's answer on that profile): the scenario's demand, at the pace
//   the twin serves the baseline at its answer (its ITL, prefill time per token and queueing
//   delay: one yardstick for every scenario), against what the planned fleet sustains;
// - what the scenario improves and what it worsens against the baseline on that profile, one line
//   each.
// Each (scenario, seed) gets one trace, shared by every profile (common random numbers: profiles
// are compared on the same requests). Cells run on `threads` threads; the result does not depend
// on how many.
//
// Pure apart from reading the baseline's files (and Prometheus, for that kind of baseline).
#ifndef TWINSCALE_CONTROLLER_PLAN_CAPACITY_PLAN_H_
#define TWINSCALE_CONTROLLER_PLAN_CAPACITY_PLAN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/plan/resource_headroom.h"
#include "controller/plan/review.h"
#include "simulator/model/deployment.h"
#include "simulator/workload/trace.h"

namespace twinscale::plan {

struct ProfileSummary {
  std::string name;  // the review's label
  sim::DeploymentSpec deployment;
  double gpu_hour_price = 0;
  double ready_after_seconds = 0;  // provisioning + loading + warm-up medians
};

struct ScenarioSummary {
  std::string name;      // "baseline" first
  std::string changes;   // "rate x2, prompts x1.5, ..." ("none" for the baseline)
  int64_t requests = 0;  // of the first seed's trace
  double span_seconds = 0;
  double mean_rps = 0, p95_rps = 0;  // p95 of the 60 s windows
  WorkloadMix mix;
};

struct Cell {
  int32_t scenario = 0, profile = 0;  // indices into PlanResult's lists
  bool found = false;                 // false: even maxReplicas misses the SLO under some seed
  // Of the first seed's requests, the share whose TTFT target is shorter than their prefill alone
  // on an idle replica (sim::UnloadedTtft): no fleet serves them in time. When it exceeds what the
  // SLO may miss, the cell is not searched (found stays false, the costs are not known).
  double unreachable_share = 0;
  bool searched = true;
  int32_t replicas = 0;         // meets under every seed (maxReplicas when !found)
  int32_t replicas_fewest = 0;  // the smallest single-seed answer
  std::vector<int32_t> replicas_per_seed;
  double attainment_mean = 0, attainment_min = 0, attainment_max = 0;  // at `replicas`
  double goodput_rps = 0;          // mean over seeds, at `replicas`
  double goodput_per_gpu_rps = 0;  // / (replicas x TP)
  double cost_per_hour = 0;        // replicas x TP x price
  double cost_per_1k_successful = 0;
  double cost_per_million_output_tokens = 0;
  // What the twin measured at `replicas` (means over seeds): the demand's Little's-law inputs.
  double itl_ms = 0, queue_delay_ms = 0;
  double prefill_ms_per_token = 0;  // prefill time over the prompt tokens computed
  // What one replica serves within the SLO, which warm_reserve sizes with: the baseline's p95
  // minute over its replicas, scaled by how the scenario's mix moves the arithmetic capacity.
  double per_replica_rps = 0;
  int32_t warm_reserve = 0;
  HeadroomTable headroom;
  std::string improves, worsens;  // against the baseline on this profile ("" for the baseline)
};

struct PlanResult {
  std::string review;    // the review file
  std::string baseline;  // what the baseline is, in words
  Slo slo;
  std::vector<uint64_t> seeds;
  int32_t max_replicas = 0;
  std::vector<ProfileSummary> profiles;
  std::vector<ScenarioSummary> scenarios;
  std::vector<Cell> cells;          // scenario-major: cells[s * profiles.size() + p]
  int32_t recommended_profile = 0;  // the cheapest per 1,000 successful requests at the baseline
  const Cell& at(size_t scenario, size_t profile) const {
    return cells[scenario * profiles.size() + profile];
  }
};

struct PlanOptions {
  int threads = 1;
  // What a Prometheus baseline's `end: now` means (the CLI passes its clock's time).
  absl::Time now = absl::UnixEpoch();
  // Called once per finished cell, under a lock (from any of the threads).
  std::function<void(const Cell&)> on_cell;
  // Asked, before any scenario's trace is made, whether the review fits: the requests of every
  // (scenario, seed) in all, estimated from the first seed's baseline (EstimatedRequests), and the
  // profiles as resolved. An error stops the review with it.
  std::function<absl::Status(double trace_requests, const std::vector<ProfileSummary>& profiles)>
      check_size;
};

// The baseline trace for one seed (read or drawn), before any scenario. Paths relative to the
// review file's directory are tried first, then as given.
absl::StatusOr<sim::Trace> BaselineTrace(const Review& review, uint64_t seed,
                                         absl::Time now = absl::UnixEpoch());

// Runs the review. InvalidArgument for a profile that does not resolve or a scenario that cannot
// apply (naming them); errors reading the baseline as they are.
absl::StatusOr<PlanResult> RunPlan(const Review& review, const PlanOptions& options);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_CAPACITY_PLAN_H_
