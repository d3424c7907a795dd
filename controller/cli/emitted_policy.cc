// The emitted InferenceAutoscaler: see emitted_policy.h.
#include "controller/cli/emitted_policy.h"

#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::cli {
namespace {

// A DNS-1123 name from a profile name: lower case, dots and other marks as dashes, at most 63.
std::string ObjectName(const std::string& profile) {
  std::string out;
  for (char c : profile) {
    const unsigned char u = static_cast<unsigned char>(c);
    out += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-';
  }
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "inference" : out;
}

absl::StatusOr<std::string> RoutingName(sim::RouterKind kind) {
  switch (kind) {
    case sim::RouterKind::kRandom:
      return "Random";
    case sim::RouterKind::kRoundRobin:
      return "RoundRobin";
    case sim::RouterKind::kLeastRequests:
      return "LeastRequests";
    case sim::RouterKind::kPrefixAware:
      return "PrefixAware";
    case sim::RouterKind::kRandomPerConnection:
      break;
  }
  return absl::InvalidArgumentError(
      "--emit-policy: spec.routing has no name for random-per-connection routing (use random)");
}

std::string Ms(absl::Duration d) { return absl::StrCat(absl::ToDoubleMilliseconds(d), "ms"); }

}  // namespace

absl::StatusOr<std::string> EmittedPolicyYaml(const EmittedPolicy& p) {
  absl::StatusOr<std::string> routing = RoutingName(p.router);
  if (!routing.ok()) return routing.status();
  const std::string name = ObjectName(p.profile);
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "twinscale.io/v1alpha1";
  y << YAML::Key << "kind" << YAML::Value << "InferenceAutoscaler";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << name << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "targetRef" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "apps/v1";
  y << YAML::Key << "kind" << YAML::Value << "Deployment";
  y << YAML::Key << "name" << YAML::Value << absl::StrCat("vllm-", name) << YAML::EndMap;
  y << YAML::Key << "mode" << YAML::Value << "Recommend";
  y << YAML::Key << "minReplicas" << YAML::Value << p.min_replicas;
  y << YAML::Key << "maxReplicas" << YAML::Value << p.max_replicas;
  y << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "profile" << YAML::Value << p.profile;
  if (p.tensor_parallel) y << YAML::Key << "tensorParallel" << YAML::Value << *p.tensor_parallel;
  if (p.max_num_seqs) y << YAML::Key << "maxNumSeqs" << YAML::Value << *p.max_num_seqs;
  if (p.max_num_batched_tokens) {
    y << YAML::Key << "maxNumBatchedTokens" << YAML::Value << *p.max_num_batched_tokens;
  }
  if (p.gpu_memory_utilization) {
    y << YAML::Key << "gpuMemoryUtilization" << YAML::Value << *p.gpu_memory_utilization;
  }
  if (p.block_size) y << YAML::Key << "blockSize" << YAML::Value << *p.block_size;
  if (p.max_model_len) y << YAML::Key << "maxModelLen" << YAML::Value << *p.max_model_len;
  y << YAML::EndMap;
  y << YAML::Key << "routing" << YAML::Value << *routing;
  y << YAML::Key << "slo" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "ttft" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "threshold" << YAML::Value << Ms(p.ttft_threshold);
  if (p.ttft_per_prompt_token > absl::ZeroDuration()) {
    y << YAML::Key << "perPromptToken" << YAML::Value << Ms(p.ttft_per_prompt_token);
  }
  y << YAML::Key << "percentile" << YAML::Value << p.percentile;
  y << YAML::EndMap;
  if (p.itl_threshold > absl::ZeroDuration()) {
    y << YAML::Key << "itl" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "threshold" << YAML::Value << Ms(p.itl_threshold);
    y << YAML::Key << "percentile" << YAML::Value << p.itl_percentile;
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  y << YAML::EndMap << YAML::EndMap;
  if (!y.good()) return absl::InternalError(absl::StrCat("emitting YAML: ", y.GetLastError()));
  std::string out;
  for (const std::string& line : p.comment) absl::StrAppend(&out, "# ", line, "\n");
  absl::StrAppend(&out,
                  "# Recommend mode: twinscale decides and reports in status but never scales; "
                  "set\n# spec.targetRef to your vLLM Deployment, then mode: Direct to act.\n",
                  y.c_str(), "\n");
  return out;
}

}  // namespace twinscale::cli
