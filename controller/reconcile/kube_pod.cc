// Pod objects into pod stages: see kube_pod.h.
#include "controller/reconcile/kube_pod.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/kube/kube_time.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {
namespace {

using Stage = state::PodView::Stage;

// The condition of `type` in status.conditions, or null.
const nlohmann::json* FindCondition(const nlohmann::json& pod, const std::string& type) {
  const auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return nullptr;
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return nullptr;
  for (const nlohmann::json& c : *conditions) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool ConditionIs(const nlohmann::json* c, const char* value) {
  return c != nullptr && c->value("status", "") == value;
}

std::string StringAt(const nlohmann::json& obj, const char* a, const char* b) {
  const auto x = obj.find(a);
  if (x == obj.end() || !x->is_object()) return "";
  const auto y = x->find(b);
  return y != x->end() && y->is_string() ? y->get<std::string>() : "";
}

// spec.containers[i].command / args / env (literal values only: valueFrom needs the API server,
// and the kubelet leaves a reference it cannot resolve as written).
// A string field of a container, "" when absent or not a string (never throws).
std::string StringField(const nlohmann::json& c, const char* key) {
  const auto it = c.find(key);
  return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> ContainerWords(const nlohmann::json& c) {
  std::vector<std::string> words;
  for (const char* key : {"command", "args"}) {
    const auto list = c.find(key);
    if (list == c.end() || !list->is_array()) continue;
    for (const nlohmann::json& w : *list) {
      if (w.is_string()) words.push_back(w.get<std::string>());
    }
  }
  return words;
}

void ReadEngineArgs(const nlohmann::json& pod, KubePod& out) {
  const auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return;
  const auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return;
  // The container that runs vLLM: the first whose command line starts it, else the first with a
  // vLLM image, whose entrypoint starts it (image vllm/vllm-openai, args ["--model", "...",
  // "--max-model-len", "8192"]): a sidecar with "vllm" in its image name (a router) must not hide
  // the engine's flags when the engine's command line says what it is.
  const nlohmann::json* chosen = nullptr;
  for (int by_image = 0; by_image < 2 && chosen == nullptr; ++by_image) {
    for (const nlohmann::json& c : *containers) {
      if (!c.is_object()) continue;
      const bool match = by_image == 0 ? state::LooksLikeVllm(ContainerWords(c))
                                       : StringField(c, "image").find("vllm") != std::string::npos;
      if (match) {
        chosen = &c;
        break;
      }
    }
  }
  if (chosen == nullptr) return;
  const nlohmann::json& c = *chosen;
  std::map<std::string, std::string> env;
  if (const auto e = c.find("env"); e != c.end() && e->is_array()) {
    for (const nlohmann::json& var : *e) {
      if (!var.is_object()) continue;
      const auto name = var.find("name");
      const auto value = var.find("value");
      if (name != var.end() && name->is_string() && value != var.end() && value->is_string()) {
        env[name->get<std::string>()] = value->get<std::string>();
      }
    }
  }
  absl::StatusOr<state::EngineArgs> args = state::ParseVllmArgs(ContainerWords(c), env);
  if (args.ok()) {
    out.engine_args = *std::move(args);
  } else {
    const std::string name = StringField(c, "name");
    out.engine_args_error = absl::StrCat("pod ", out.name, " container ", name.empty() ? "?" : name,
                                         ": ", args.status().message());
  }
}

}  // namespace

absl::StatusOr<KubePod> ParseKubePod(const nlohmann::json& pod) {
  if (!pod.is_object()) return absl::InvalidArgumentError("pod: not a JSON object");
  KubePod out;
  out.name = StringAt(pod, "metadata", "name");
  if (out.name.empty()) return absl::InvalidArgumentError("pod: metadata.name is missing");
  out.uid = StringAt(pod, "metadata", "uid");
  out.ip = StringAt(pod, "status", "podIP");
  const std::string created = StringAt(pod, "metadata", "creationTimestamp");
  if (created.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod ", out.name, ": metadata.creationTimestamp is missing"));
  }
  auto t = kube::ParseKubeTime(created);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod ", out.name, ": metadata.creationTimestamp: ", t.status().message()));
  }
  out.created = *t;

  const nlohmann::json* scheduled = FindCondition(pod, "PodScheduled");
  const nlohmann::json* ready = FindCondition(pod, "Ready");
  const nlohmann::json* containers = FindCondition(pod, "ContainersReady");
  const std::string phase = StringAt(pod, "status", "phase");
  out.unschedulable =
      ConditionIs(scheduled, "False") && scheduled->value("reason", "") == "Unschedulable";

  if (!StringAt(pod, "metadata", "deletionTimestamp").empty() || phase == "Succeeded" ||
      phase == "Failed") {
    out.stage = Stage::kTerminating;
  } else if (scheduled == nullptr || ConditionIs(scheduled, "False")) {
    out.stage = Stage::kPending;
  } else if (ConditionIs(ready, "True")) {
    out.stage = Stage::kReady;
  } else if (ConditionIs(containers, "True")) {
    out.stage = Stage::kWarmingUp;
  } else {
    out.stage = Stage::kLoading;
  }
  if (ConditionIs(ready, "True")) {
    const std::string since = ready->value("lastTransitionTime", "");
    if (!since.empty()) {
      auto rt = kube::ParseKubeTime(since);
      if (!rt.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pod ", out.name, ": Ready condition lastTransitionTime: ", rt.status().message()));
      }
      out.ready_since = *rt;
    }
  }
  ReadEngineArgs(pod, out);
  return out;
}

}  // namespace twinscale::reconcile
