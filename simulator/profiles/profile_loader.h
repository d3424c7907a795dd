// GPU, model and deployment profiles: YAML files turned into a typed DeploymentSpec.
//
// Three kinds, one file each, named by kind and file name:
//   gpus/<name>.yaml         the device (memory, FLOP/s, bandwidth, interconnect) and the vLLM
//                            engine defaults that depend on it (engineDefaults)
//   models/<name>.yaml       the architecture (parameters, layers, heads, ...) and its activation
//                            workspace
//   deployments/<name>.yaml  a model on a GPU: names one of each, plus tensorParallel, engine
//                            limits, the latency model and its knobs, and the replica lifecycle
// The files under simulator/profiles/ are compiled into the binary (EmbeddedProfiles), so
// `twinscale` works from any directory; AddDirectory adds or replaces files at run time.
//
// Keys are camelCase like the CRD's (maxNumSeqs, gpuMemoryUtilization, tensorParallel, ...);
// durations are strings parsed with absl::ParseDuration ("30s", "500ms", "6910.42us"). Every key
// is checked: an unknown key is an error (a typo must not be silently ignored), as is a value of
// the wrong type; errors name the file, the 1-based line and the key. The files themselves are the
// reference for the keys (deployments/llama-3.1-8b-h100-sxm-tp1.yaml shows all of them).
//
// Precedence when resolving (highest first): DeploymentOverrides (flags, the CRD's model
// overrides) > the deployment profile > the model and GPU profiles it names > the built-in
// defaults of simulator/model/deployment.h.
//
// Errors: InvalidArgument for bad YAML, unknown keys, wrong types, unknown profile names (the
// message lists the known ones) and specs that fail ValidateDeployment; NotFound for a directory
// that doesn't exist. No exceptions escape (yaml-cpp's are caught here).
//
// Thread-safety: a ProfileRegistry is a plain value; const methods may run concurrently, Add*
// may not run alongside anything else on the same object.
#ifndef TWINSCALE_SIMULATOR_PROFILES_PROFILE_LOADER_H_
#define TWINSCALE_SIMULATOR_PROFILES_PROFILE_LOADER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simulator/model/deployment.h"

namespace twinscale::sim {

// The YAML files under simulator/profiles/, embedded at build time: (kind/name.yaml, text), e.g.
// ("deployments/llama-3.1-8b-h100-sxm-tp1.yaml", "..."). Defined in the generated
// embedded_profiles.cc.
const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedProfiles();

// The deployment profile `twinscale` uses when none is named.
inline constexpr std::string_view kDefaultDeploymentProfile = "llama-3.1-8b-h100-sxm-tp1";

// Settings from flags (or the CRD's spec.model overrides): the highest precedence. Unset fields
// leave the profile's value.
struct DeploymentOverrides {
  std::optional<std::string> model, gpu;  // profile names, replacing the deployment's
  std::optional<int32_t> tensor_parallel, max_num_seqs, max_num_batched_tokens, block_size;
  std::optional<double> gpu_memory_utilization;
  std::optional<LatencyModelKind> latency_model;
  std::optional<int64_t> kv_capacity_tokens;  // e.g. from vllm:cache_config_info
  std::optional<bool> enable_prefix_caching;
  std::optional<bool> reserve_full_prompt;              // vLLM's --scheduler-reserve-full-isl
  std::optional<int32_t> long_prefill_token_threshold;  // vLLM's --long-prefill-token-threshold
  std::optional<int32_t> max_model_len;                 // vLLM's --max-model-len
};

class ProfileRegistry {
 public:
  ProfileRegistry() = default;  // empty: only built-in defaults resolve

  // Every profile compiled into the binary. Fails only if an embedded file is broken (a build
  // that passed its tests never does).
  static absl::StatusOr<ProfileRegistry> LoadEmbedded();

  // Adds every <dir>/{gpus,models,deployments}/*.yaml (and *.yml); a file replaces a profile of
  // the same kind and name already loaded (embedded ones included). NotFound if dir doesn't exist;
  // InvalidArgument if it holds none of the three folders, or a file doesn't parse (the registry
  // is then left with the files before it).
  absl::Status AddDirectory(const std::string& dir);

  // Adds one profile from text; kind_and_name_path is "<kind>/<name>.yaml" with kind one of gpus,
  // models, deployments (also the name used in error messages).
  absl::Status AddYaml(std::string_view kind_and_name_path, std::string_view yaml);

  // The typed, validated deployment. Precedence: overrides > deployment profile > model/gpu
  // profiles > built-in defaults. An empty deployment name means built-in defaults plus the
  // model/gpu profiles named by the overrides. The spec is named "<model>-<gpu>-tp<N>" then, and
  // also when an override changes the deployment profile's model, GPU or tensor parallelism (it
  // is no longer that profile); otherwise it keeps the deployment profile's name. InvalidArgument
  // for unknown names (listing the known ones) and for a result that fails ValidateDeployment.
  absl::StatusOr<DeploymentSpec> Resolve(std::string_view deployment,
                                         const DeploymentOverrides& overrides) const;

  // Profile names of one kind ("gpus" | "models" | "deployments"), sorted; empty for others.
  std::vector<std::string> Names(std::string_view kind) const;

 private:
  // One parsed file: the typed edits it makes to a DeploymentSpec, in file order. Built and
  // type-checked at load time, so Resolve never sees YAML.
  struct Profile {
    std::string source;      // file name for messages
    std::string model, gpu;  // deployments only: the profiles they name
    std::vector<std::function<void(DeploymentSpec&)>> edits;
  };
  using ProfileMap = std::map<std::string, std::shared_ptr<const Profile>, std::less<>>;

  absl::Status AddParsed(std::string_view kind, std::string_view name, std::string_view source,
                         std::string_view yaml);
  ProfileMap* MapFor(std::string_view kind);
  const ProfileMap* MapFor(std::string_view kind) const;

  ProfileMap gpus_, models_, deployments_;
};

// "roofline" | "linear"; InvalidArgument otherwise.
absl::StatusOr<LatencyModelKind> ParseLatencyModelKind(std::string_view name);
std::string_view LatencyModelKindName(LatencyModelKind kind);

// Checks a resolved spec; InvalidArgument naming the field (vLLM's argument names, e.g.
// "max_num_batched_tokens (128) must be >= max_num_seqs (256): vLLM requires it"). Checks: positive
// sizes and rates; 0 < gpu_memory_utilization <= 1; efficiencies in (0, 1]; query heads divisible
// by kv heads and by tensor_parallel, kv heads divisible by tensor_parallel or the reverse (as vLLM
// requires); max_num_batched_tokens >= max_num_seqs; non-negative delays and coefficients; and a KV
// capacity of at least one block (weights + workspace must fit in the budget).
absl::Status ValidateDeployment(const DeploymentSpec& d);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_PROFILES_PROFILE_LOADER_H_
