// The Kubernetes actuator: see actuator.h.
#include "controller/reconcile/actuator.h"

#include <algorithm>

#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {

ScaleWrite KubeActuator::Scale(const ScaleOrder& order) {
  const auto failed = [&](const std::string& pod, const absl::Status& s) {
    if (!s.ok() && !absl::IsNotFound(s) && order.on_mark_failed) order.on_mark_failed(pod, s);
  };
  if (!order.victims.empty()) {
    for (const std::string& pod : order.marked) {
      if (std::find(order.victims.begin(), order.victims.end(), pod) != order.victims.end()) {
        continue;
      }
      failed(pod, client_
                      ->MergePatch(kube::kPods, order.ns, pod,
                                   {{"metadata", {{"annotations", {{kDeletionCost, nullptr}}}}}})
                      .status());
    }
    for (const std::string& victim : order.victims) {
      if (order.marked.count(victim) != 0) continue;  // already marked
      failed(victim,
             client_
                 ->MergePatch(kube::kPods, order.ns, victim,
                              {{"metadata", {{"annotations", {{kDeletionCost, kVictimCost}}}}}})
                 .status());
    }
  }
  return WriteScale(
      *client_, order.target, order.ns, order.name, order.read, order.replicas,
      order.on_write ? order.on_write : [](std::string_view) {});
}

}  // namespace twinscale::reconcile
