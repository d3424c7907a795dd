// KV-cache and weight arithmetic of a deployment (docs/architecture.md "The twin"). Everything is
// per GPU: with tensor parallelism each rank holds 1/TP of the weights and of the KV heads, and
// vLLM sizes the KV cache from the smallest rank's free memory, so one rank's arithmetic gives the
// replica's capacity.
#include "simulator/model/deployment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace twinscale::sim {

double KvBytesPerTokenPerGpu(const DeploymentSpec& d) {
  // KV heads are split across TP ranks; when TP exceeds the KV head count vLLM replicates heads so
  // every rank still holds at least one (integer division, as vLLM's num_kv_heads // tp_size).
  const int32_t tp = std::max<int32_t>(1, d.tensor_parallel);
  const int32_t kv_heads_per_gpu = std::max<int32_t>(1, d.model.kv_heads / tp);
  return 2.0 * d.model.layers * kv_heads_per_gpu * d.model.head_dim * d.model.dtype_bytes;
}

double WeightBytesPerGpu(const DeploymentSpec& d) {
  const int32_t tp = std::max<int32_t>(1, d.tensor_parallel);
  return d.model.params * d.model.dtype_bytes / tp;
}

int64_t KvCapacityTokens(const DeploymentSpec& d) {
  if (d.engine.kv_capacity_tokens_override > 0) return d.engine.kv_capacity_tokens_override;
  // vLLM: budget = total device memory x gpu_memory_utilization; what the weights and the profiling
  // run's peak (activations, CUDA context, communication buffers) take comes off it; the rest is
  // KV.
  const double budget = d.gpu.memory_bytes * d.engine.gpu_memory_utilization;
  const double kv_bytes = budget - WeightBytesPerGpu(d) - d.model.activation_workspace_bytes;
  const double per_token = KvBytesPerTokenPerGpu(d);
  if (!(kv_bytes > 0) || !(per_token > 0) || d.engine.block_size <= 0) return 0;
  const double blocks = std::floor(kv_bytes / (per_token * d.engine.block_size));
  // Capped at 1e15 tokens so absurd inputs (a 1e300-byte GPU from a fuzzed profile) can't
  // overflow the conversion to int64; real replicas hold well under 1e8.
  const double max_blocks = std::floor(1e15 / d.engine.block_size);
  return static_cast<int64_t>(std::min(blocks, max_blocks)) * d.engine.block_size;
}

}  // namespace twinscale::sim
