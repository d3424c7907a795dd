// Pod objects into pod stages: see kube_pod.h.
#include "controller/reconcile/kube_pod.h"

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
  out.unschedulable = ConditionIs(scheduled, "False") && scheduled->value("reason", "") == "Unschedulable";

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
  return out;
}

}  // namespace twinscale::reconcile
