// What is being simulated: a model on a GPU with an engine configuration and a latency model, plus
// how long a new replica takes to become useful. These are the typed forms of the YAML profiles
// (simulator/profiles/); downstream code never sees YAML. Every field says its unit; defaults
// beside them are the built-in ones (the lowest level of precedence: flags > deployment profile >
// model/gpu profile > built-in defaults).
#ifndef TWINSCALE_SIMULATOR_MODEL_DEPLOYMENT_H_
#define TWINSCALE_SIMULATOR_MODEL_DEPLOYMENT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "simulator/core/time.h"

namespace twinscale::sim {

struct GpuSpec {
  std::string name = "h100-sxm";
  double memory_bytes = 81559.0 * 1024 * 1024;  // what the device reports (nvidia-smi), bytes
  double peak_flops = 989e12;                   // dense bf16 FLOP/s
  double memory_bandwidth = 3.35e12;            // bytes/s
  double interconnect_bandwidth = 450e9;        // NVLink, bytes/s per direction per GPU
};

struct ModelSpec {
  std::string name = "llama-3.1-8b";
  double params = 8.03e9;  // total parameters
  int32_t layers = 32;
  int32_t query_heads = 32;
  int32_t kv_heads = 8;
  int32_t head_dim = 128;
  int32_t hidden = 4096;
  int32_t ffn = 14336;
  int32_t vocab = 128256;
  int32_t dtype_bytes = 2;  // weights and KV (bf16)
  double activation_workspace_bytes =
      1.5 * 1073741824.0;  // per GPU, reserved by vLLM's profiling run
};

// vLLM engine arguments that shape scheduling and memory.
struct EngineLimits {
  int32_t max_num_seqs = 1024;            // vLLM default on >= 70 GiB GPUs that are not A100s
  int32_t max_num_batched_tokens = 8192;  // token budget per step (chunked prefill)
  double gpu_memory_utilization = 0.9;
  int32_t block_size = 16;            // tokens per KV block
  bool enable_prefix_caching = true;  // vLLM V1's default (--enable-prefix-caching)
  // Admit a waiting request only if its whole prompt's blocks (less prefix-cache hits) are free,
  // not just its first chunk's: vLLM's --scheduler-reserve-full-isl, on by default since vLLM
  // PR #37307 (March 2026). Off models the V1 releases before it, which admitted on the first
  // chunk and, with long prompts, over-admitted into preemption storms (replica.h).
  bool reserve_full_prompt = true;
  // vLLM's --long-prefill-token-threshold: when > 0, a request takes at most this many prompt
  // tokens in one step (running or being admitted), so the rest of the budget goes to other
  // prompts; 0 (vLLM's default) leaves a long prompt the whole budget. (V1 honours it alone; the
  // V0-era
  // --max-num-partial-prefills made V1 fall back to V0, which vLLM has since removed.)
  int32_t long_prefill_token_threshold = 0;
  // When > 0, overrides the computed KV capacity (tokens); e.g. read from vllm:cache_config_info.
  int64_t kv_capacity_tokens_override = 0;
  // vLLM's --max-model-len: the longest context (prompt plus output) a request may have; the API
  // server refuses longer ones. vLLM's default is the model's own context length (131,072 for
  // Llama 3.1). It is also the top of the 1-2-5 ladder of vLLM's token-count histograms, and the
  // twin draws no request longer (a deployment serving short contexts, such as 8k, tells the twin
  // where its prompt lengths end).
  int32_t max_model_len = 131072;
};

enum class LatencyModelKind { kRoofline, kLinear };

// The BLIS "blackbox" form. Step = b0 + b1*prefill_tokens + b2*decode_tokens (us). Before a request
// enters the waiting queue it spends a0 + a1*prompt_tokens (us) in the front end; every output
// token is emitted a2 (us) after the step that produced it. Neither delay occupies the GPU.
struct LinearCoefficients {
  double b0_us = 6910.42, b1_us = 17.67, b2_us = 2.84;
  double a0_us = 1601.35, a1_us = 3.51, a2_us = 1805.54;
};

// Roofline model knobs (see latency_model.h for the formula).
struct RooflineParams {
  double mfu = 0.45;                   // achieved share of peak FLOP/s on the GEMMs
  double attention_mfu = 0.60;         // achieved share of peak on prefill attention (FA3 on H100)
  double bandwidth_efficiency = 0.80;  // achieved share of peak HBM bandwidth
  double per_layer_overhead_us = 4.0;  // kernel launches etc. per layer per step
  double per_step_overhead_us = 1500.0;  // scheduler, sampler, detokenize, CPU<->GPU sync
  double allreduce_latency_us = 8.0;     // per all-reduce (two per layer when TP > 1)
  double front_end_delay_us = 0.0;       // API server time before the engine sees the request
  double token_emission_delay_us = 0.0;  // streaming out of a token after its step
};

// A delay drawn log-normally: median and p90/median ratio (1 = constant).
struct DelayDistribution {
  SimDuration median;
  double p90_over_median = 1.0;
};

// Replica lifecycle: Provisioning -> Loading -> WarmingUp -> Ready -> Draining -> Gone.
struct LifecycleSpec {
  DelayDistribution provisioning{SimDuration::Seconds(0), 1.0};  // node free: 0; cold node 80-150 s
  DelayDistribution loading{SimDuration::Seconds(30), 1.5};      // image pull + weights
  DelayDistribution warming_up{SimDuration::Seconds(25), 1.4};   // torch.compile + CUDA graphs
  SimDuration slow_period = SimDuration::Seconds(30);   // first requests after Ready run slower
  double slow_factor = 1.5;                             // step-time multiplier in the slow period
  SimDuration drain_grace = SimDuration::Seconds(120);  // in-flight work gets this long to finish
};

struct DeploymentSpec {
  std::string name = "llama-3.1-8b-h100-sxm-tp1";
  GpuSpec gpu;
  ModelSpec model;
  int32_t tensor_parallel = 1;
  EngineLimits engine;
  LatencyModelKind latency_model = LatencyModelKind::kRoofline;
  RooflineParams roofline;
  LinearCoefficients linear;
  LifecycleSpec lifecycle;
};

// KV bytes one token occupies on one GPU: 2 (K and V) x layers x max(1, kv_heads / TP) x head_dim x
// dtype bytes.
double KvBytesPerTokenPerGpu(const DeploymentSpec& d);
// Weights bytes on one GPU (params x dtype bytes / TP).
double WeightBytesPerGpu(const DeploymentSpec& d);
// Tokens of KV the replica holds: (device memory x gpu_memory_utilization - weights - workspace) /
// bytes per token, rounded down to whole blocks; or the override when set.
int64_t KvCapacityTokens(const DeploymentSpec& d);
// The longest request (prompt + output tokens) one replica ever serves: vLLM refuses one longer
// than max_model_len, and one that cannot fit the whole KV cache could never run.
inline int64_t MaxRequestTokens(const DeploymentSpec& d) {
  return std::min<int64_t>(d.engine.max_model_len, KvCapacityTokens(d));
}
inline int64_t KvCapacityBlocks(const DeploymentSpec& d) {
  return KvCapacityTokens(d) / d.engine.block_size;
}

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_DEPLOYMENT_H_
