// Actuator: how a reconcile pass changes its target's size in Direct mode (the seam beside
// kube::KubeClient, metrics::MetricsSource and PodSource). The pass decides the replica count and,
// on a scale-in, the victims (policy::ChooseScaleInVictims, the one victim rule); the actuator
// carries them out. In the binary, KubeActuator: the victims marked with
// controller.kubernetes.io/pod-deletion-cost (the ReplicaSet removes the lowest cost first), then a
// write of /scale with the read resourceVersion as precondition. In replay, the simulated cluster's
// (controller/replay/simulated_api.h): the fleet drains exactly those victims.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_ACTUATOR_H_
#define TWINSCALE_CONTROLLER_RECONCILE_ACTUATOR_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/kube/resource_ref.h"
#include "controller/reconcile/reconcile_steps.h"

namespace twinscale {
namespace kube {
class KubeClient;
}  // namespace kube
namespace reconcile {

// One change of a target's size.
struct ScaleOrder {
  kube::ResourceRef target;  // the /scale-bearing resource
  std::string ns;
  std::string name;
  ScaleRead read;        // the /scale the pass read (its resourceVersion: the precondition)
  int32_t replicas = 0;  // the count to set
  // Scale-in: the pods to remove first, in order; empty otherwise (and for targets that don't
  // honour the deletion cost, which only Deployments' ReplicaSets do).
  std::vector<std::string> victims;
  std::set<std::string> marked;  // pods that carry a victim mark from an earlier scale-in
  // Told each /scale write's outcome ("ok", "conflict", "error"); may be empty.
  std::function<void(std::string_view)> on_write;
  // Told of each mark that could not be set or cleared (the pod, the error); may be empty.
  std::function<void(const std::string&, const absl::Status&)> on_mark_failed;
};

class Actuator {
 public:
  virtual ~Actuator() = default;
  // Carries out `order`: what the target has afterwards, as ScaleWrite says (ScaleWrite::Scaled
  // tells a change that landed).
  virtual ScaleWrite Scale(const ScaleOrder& order) = 0;
};

// The Kubernetes actuator: marks this scale-in's victims with kVictimCost and clears the mark from
// the other marked pods (a mark left from an earlier scale-in that removed nothing would tie with
// them), then WriteScale (a 409 re-reads and retries).
class KubeActuator final : public Actuator {
 public:
  explicit KubeActuator(kube::KubeClient* client) : client_(client) {}
  ScaleWrite Scale(const ScaleOrder& order) override;

 private:
  kube::KubeClient* client_;
};

}  // namespace reconcile
}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_RECONCILE_ACTUATOR_H_
