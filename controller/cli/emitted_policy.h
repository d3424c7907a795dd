// The InferenceAutoscaler manifest `simulate --find-replicas --emit-policy FILE` and `plan
// --emit-policy FILE` write: the deployment profile and SLO the capacity question asked, the
// answer as the replica bounds, mode Recommend (twinscale reports before it is trusted to act). The
// text loads through the same loader as any manifest (api::LoadInferenceAutoscalerFile).
#ifndef TWINSCALE_CONTROLLER_CLI_EMITTED_POLICY_H_
#define TWINSCALE_CONTROLLER_CLI_EMITTED_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "simulator/model/router.h"

namespace twinscale::cli {

struct EmittedPolicy {
  std::string profile;  // spec.model.profile; metadata.name is derived from it
  // spec.model's engine fields, where the question changed them from the profile's.
  std::optional<int32_t> tensor_parallel, max_num_seqs, max_num_batched_tokens, block_size,
      max_model_len;
  std::optional<double> gpu_memory_utilization;
  sim::RouterKind router = sim::RouterKind::kRandom;
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  absl::Duration ttft_threshold = absl::Milliseconds(500);
  double percentile = 90;
  absl::Duration ttft_per_prompt_token = absl::ZeroDuration();
  // spec.slo.itl, when the threshold is > 0.
  absl::Duration itl_threshold = absl::ZeroDuration();
  double itl_percentile = 90;
  std::vector<std::string> comment;  // header lines: the question and its answer
};

// The manifest's YAML. InvalidArgument for a router the CRD cannot name (random per connection).
absl::StatusOr<std::string> EmittedPolicyYaml(const EmittedPolicy& policy);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_EMITTED_POLICY_H_
