// `twinscale plan`'s outputs: the table on the terminal, plan.json, and the InferenceAutoscaler
// --emit-policy writes. The JSON document (PlanJson), which report.html also draws from:
//
//   {"review": "deploy/samples/plan/capacity-review.yaml", "baseline": "trace ...",
//    "slo": {"ttft_ms": 500, "percentile": 90, "per_prompt_token_ms": 0, "itl_ms": 0,
//            "itl_percentile": 90},
//    "seeds": [1, 2, 3], "max_replicas": 128,
//    "profiles": [{"name": "llama-3.1-8b-h100-sxm-tp1", "deployment": "llama-3.1-8b-h100-sxm-tp1",
//                  "model": "llama-3.1-8b", "gpu": "h100-sxm", "tensor_parallel": 1,
//                  "gpu_hour_price": 2.5, "ready_after_s": 45}, ...],
//    "scenarios": [{"name": "baseline", "changes": "none", "requests": 19800, "span_s": 600,
//                   "mean_rps": 33, "p95_rps": 41.2, "prompt_mean": 1100, "prompt_computed_mean":
//                   1100, "output_mean": 230}, ...],
//    "cells": [{"scenario": "baseline", "profile": "llama-3.1-8b-h100-sxm-tp1", "found": true,
//               "searched": true, "unreachable_share": 0,
//               "replicas": 6, "replicas_fewest": 5, "replicas_per_seed": [6, 5, 6],
//               "attainment": {"mean": 0.93, "min": 0.91, "max": 0.95},
//               "goodput_rps": 30.6, "goodput_per_gpu_rps": 5.1, "cost_per_hour": 15,
//               "cost_per_1k_successful": 0.136, "cost_per_million_output_tokens": 0.59,
//               "itl_ms": 21.5, "queue_delay_ms": 12.1, "prefill_ms_per_token": 0.04,
//               "per_replica_rps": 6.9, "warm_reserve": 1,
//               "headroom": {"planned_replicas": 6, "binding": "prefill",
//                            "resources": [{"resource": "requests", "unit": "req/s",
//                                           "demand_p95": 41.2, "capacity": 80.1,
//                                           "headroom": 0.486, "risk": "okay"}, ...]},
//               "improves": "", "worsens": ""}, ...],   // scenario-major, as PlanResult
//    "recommended_profile": "llama-3.1-8b-h100-sxm-tp1",
//    "wall_seconds": 12.3}                                // only when given
//
// Numbers are rounded for people (4 significant decimals at most). Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_PLAN_OUTPUT_H_
#define TWINSCALE_CONTROLLER_PLAN_PLAN_OUTPUT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/plan/capacity_plan.h"
#include "nlohmann/json.hpp"

namespace twinscale::plan {

nlohmann::ordered_json PlanJson(const PlanResult& plan, std::optional<double> wall_seconds);

// The terminal's tables: per scenario and profile the replicas (with the seeds' spread), goodput
// per GPU, costs and warm reserve; then per scenario the headroom at the planned fleet of the
// recommended profile, and what each scenario improves and worsens.
std::string PlanTable(const PlanResult& plan);

// The InferenceAutoscaler for profile `profile` (an index into plan.profiles and review.profiles,
// the review `plan` ran): minReplicas the
// largest warm reserve over the scenarios (at least 1), maxReplicas the largest fleet any scenario
// needs plus its warm reserve (capped at the review's maxReplicas), the SLO, mode Recommend.
// InvalidArgument for a profile that overrides its model or GPU (spec.model.profile cannot say it).
absl::StatusOr<std::string> PlanPolicyYaml(const PlanResult& plan, int32_t profile,
                                           const Review& review);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_PLAN_OUTPUT_H_
