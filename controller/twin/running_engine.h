// The engine the twin simulates, as the running pods show it (docs/architecture.md "The
// InferenceAutoscaler spec"): the spec's model profile and overrides say what the engine should be
// before any pod runs; once pods run, their vLLM flags (state::EngineArgs, read from the pod spec)
// and the KV capacity their engines report (vllm:cache_config_info) say what it is. A twin that
// simulated the profile's 1,024 sequences per engine for a fleet started with --max-num-seqs 128,
// or the profile's KV cache for engines that hold less, would forecast capacity the fleet does not
// have.
//
// Pure: the spec's deployment and a snapshot in, the deployment to simulate out.
#ifndef TWINSCALE_CONTROLLER_TWIN_RUNNING_ENGINE_H_
#define TWINSCALE_CONTROLLER_TWIN_RUNNING_ENGINE_H_

#include <string>
#include <vector>

#include "controller/state/fleet_snapshot.h"
#include "simulator/model/deployment.h"

namespace twinscale::twin {

// The engine settings the spec states itself (spec.model's overrides). As the CRD documents them
// ("default from the profile or the pods"), a stated value wins over the pods'; a disagreement is
// reported, since one of the two is out of date.
struct StatedEngineSettings {
  bool max_num_seqs = false;
  bool max_num_batched_tokens = false;
  bool max_model_len = false;
  bool block_size = false;
  bool gpu_memory_utilization = false;
};

struct RunningEngine {
  sim::DeploymentSpec deployment;  // the spec's, with what the pods run in its place
  // One line per setting where the pods differ from the spec (or the profile): what the twin now
  // follows, or, for --tensor-parallel-size, what it can't and what to set instead. Empty when the
  // pods run what the spec says.
  std::vector<std::string> differences;
};

// Engine limits (max-num-seqs, max-num-batched-tokens, max-model-len, block-size,
// long-prefill-token-threshold, gpu-memory-utilization, prefix caching) follow the pods' flags
// where the spec does not state them; the KV capacity follows the engines' reported one when it
// differs from what the deployment computes by at least one block (a measurement: it wins over a
// stated gpuMemoryUtilization too). The tensor-parallel size is not followed (it changes the GPU
// profile and the GPUs each replica costs): a difference is reported.
RunningEngine FollowRunningEngines(const sim::DeploymentSpec& from_spec,
                                   const StatedEngineSettings& stated,
                                   const state::FleetSnapshot& snap);

// The engine settings the twin's simulation depends on are the same.
bool SameEngine(const sim::DeploymentSpec& a, const sim::DeploymentSpec& b);

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_RUNNING_ENGINE_H_
