// The pods' engine in place of the spec's: see running_engine.h.
#include "controller/twin/running_engine.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace twinscale::twin {

RunningEngine FollowRunningEngines(const sim::DeploymentSpec& from_spec,
                                   const StatedEngineSettings& stated,
                                   const state::FleetSnapshot& snap) {
  RunningEngine out{from_spec, {}};
  sim::EngineLimits& e = out.deployment.engine;
  if (snap.engine_args.has_value()) {
    const state::EngineArgs& a = *snap.engine_args;
    auto follow = [&](const char* flag, const char* spec_field, bool spec_states, const auto& seen,
                      auto& field) {
      if (!seen.has_value() || *seen == field) return;
      if (spec_states) {
        out.differences.push_back(absl::StrCat("pods run ", flag, " ", *seen, " but ", spec_field,
                                               " says ", field, ": the twin follows the spec"));
        return;
      }
      out.differences.push_back(
          absl::StrCat("pods run ", flag, " ", *seen, " (profile: ", field, ")"));
      field = *seen;
    };
    follow("--max-num-seqs", "spec.model.maxNumSeqs", stated.max_num_seqs, a.max_num_seqs,
           e.max_num_seqs);
    follow("--max-num-batched-tokens", "spec.model.maxNumBatchedTokens",
           stated.max_num_batched_tokens, a.max_num_batched_tokens, e.max_num_batched_tokens);
    follow("--max-model-len", "spec.model.maxModelLen", stated.max_model_len, a.max_model_len,
           e.max_model_len);
    follow("--block-size", "spec.model.blockSize", stated.block_size, a.block_size, e.block_size);
    follow("--long-prefill-token-threshold", "", false, a.long_prefill_token_threshold,
           e.long_prefill_token_threshold);
    follow("--gpu-memory-utilization", "spec.model.gpuMemoryUtilization",
           stated.gpu_memory_utilization, a.gpu_memory_utilization, e.gpu_memory_utilization);
    if (a.enable_prefix_caching.has_value() &&
        *a.enable_prefix_caching != e.enable_prefix_caching) {
      out.differences.push_back(absl::StrCat(
          "pods run ",
          *a.enable_prefix_caching ? "--enable-prefix-caching" : "--no-enable-prefix-caching",
          " (profile: prefix caching ", e.enable_prefix_caching ? "on" : "off", ")"));
      e.enable_prefix_caching = *a.enable_prefix_caching;
    }
    if (a.tensor_parallel_size.has_value() &&
        *a.tensor_parallel_size != from_spec.tensor_parallel) {
      out.differences.push_back(absl::StrCat(
          "pods run --tensor-parallel-size ", *a.tensor_parallel_size, " but the twin simulates ",
          from_spec.tensor_parallel, " GPU(s) per replica: set spec.model.tensorParallel"));
    }
  }
  if (snap.kv_capacity_tokens_per_engine > 0 && e.block_size > 0) {
    const int64_t computed = sim::KvCapacityTokens(out.deployment);
    const int64_t seen = snap.kv_capacity_tokens_per_engine;
    if (seen / e.block_size != computed / e.block_size) {
      out.differences.push_back(absl::StrFormat(
          "engines report %d KV tokens (vllm:cache_config_info; the twin computed %d)", seen,
          computed));
      e.kv_capacity_tokens_override = seen;
    }
  }
  return out;
}

bool SameEngine(const sim::DeploymentSpec& a, const sim::DeploymentSpec& b) {
  const sim::EngineLimits& x = a.engine;
  const sim::EngineLimits& y = b.engine;
  return x.max_num_seqs == y.max_num_seqs && x.max_num_batched_tokens == y.max_num_batched_tokens &&
         x.gpu_memory_utilization == y.gpu_memory_utilization && x.block_size == y.block_size &&
         x.enable_prefix_caching == y.enable_prefix_caching &&
         x.reserve_full_prompt == y.reserve_full_prompt &&
         x.long_prefill_token_threshold == y.long_prefill_token_threshold &&
         x.kv_capacity_tokens_override == y.kv_capacity_tokens_override &&
         x.max_model_len == y.max_model_len && a.tensor_parallel == b.tensor_parallel;
}

}  // namespace twinscale::twin
