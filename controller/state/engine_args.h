// The vLLM engine settings a pod runs with, read from its container's command line
// (docs/architecture.md "The InferenceAutoscaler spec"): when pods are running, engine limits come
// from the pods' args, not from the spec or the profile, so the twin simulates the engine that is
// actually serving (a fleet started with --max-num-seqs 128 saturates long before the profile's
// 1,024 would).
//
// Pure: words in, settings out; no I/O. The words are a Pod's container command + args as the
// API server returns them; Kubernetes' $(VAR) references are expanded from the container's literal
// env values, and a shell wrapper (`sh -c "vllm serve ... --max-model-len 8k"`) is split into
// words.
#ifndef TWINSCALE_CONTROLLER_STATE_ENGINE_ARGS_H_
#define TWINSCALE_CONTROLLER_STATE_ENGINE_ARGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace twinscale::state {

// Each field is set only when the command line says it (vLLM's own default applies otherwise).
struct EngineArgs {
  std::optional<int32_t> max_num_seqs;                  // --max-num-seqs
  std::optional<int32_t> max_num_batched_tokens;        // --max-num-batched-tokens
  std::optional<int32_t> max_model_len;                 // --max-model-len (1k, 1K, 25.6k accepted)
  std::optional<int32_t> block_size;                    // --block-size
  std::optional<int32_t> tensor_parallel_size;          // --tensor-parallel-size, -tp
  std::optional<int32_t> long_prefill_token_threshold;  // --long-prefill-token-threshold
  std::optional<double> gpu_memory_utilization;         // --gpu-memory-utilization
  std::optional<bool>
      enable_prefix_caching;  // --enable-prefix-caching / --no-enable-prefix-caching

  bool empty() const;
  // "--max-num-seqs 128 --max-model-len 8192": the flags set, in the order above.
  std::string ToString() const;
  bool operator==(const EngineArgs&) const = default;
};

// True when the words start a vLLM server: `vllm serve`, `python -m vllm.entrypoints.openai.
// api_server`, or a shell wrapper whose script does either.
bool LooksLikeVllm(const std::vector<std::string>& words);

// Reads the flags above from `words` (a container's command followed by its args). Flags are
// matched as vLLM's parser matches them: `--flag value` or `--flag=value`, underscores the same as
// dashes; the last occurrence wins; flags twinscale does not model are skipped, with their values.
// $(NAME) is replaced by env[NAME] where the container sets it literally (and $$ by $), as the
// kubelet does; a word that is a whole shell command line (it holds spaces after a `-c`) is split
// into words, honouring single and double quotes. InvalidArgument naming the flag and the value
// when a value is not one vLLM would accept (it would refuse to start).
absl::StatusOr<EngineArgs> ParseVllmArgs(const std::vector<std::string>& words,
                                         const std::map<std::string, std::string>& env = {});

// vLLM's human_readable_int: "8192", "8k" (x 1,000), "8K" (x 1,024), "25.6k"; decimals only with
// the lower-case (decimal) suffixes. nullopt when `text` is not one.
std::optional<int64_t> ParseHumanReadableInt(std::string_view text);

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_ENGINE_ARGS_H_
