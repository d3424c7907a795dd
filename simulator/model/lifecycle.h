// Replica lifecycle stages, as a Kubernetes pod serving vLLM goes through them:
//   Provisioning (no GPU node free yet) -> Loading (image pull, weights) -> WarmingUp (torch.compile,
//   CUDA graphs; not serving) -> Ready (serving; the first `slow_period` runs slower) -> Draining (no
//   new requests; in-flight ones get the grace period) -> Gone.
// The fleet drives the transitions with delays drawn from the deployment's LifecycleSpec.
#ifndef TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_
#define TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_

#include <string_view>

namespace twinscale::sim {

enum class ReplicaPhase { kProvisioning, kLoading, kWarmingUp, kReady, kDraining, kGone };

constexpr std::string_view ReplicaPhaseName(ReplicaPhase p) {
  switch (p) {
    case ReplicaPhase::kProvisioning: return "Provisioning";
    case ReplicaPhase::kLoading: return "Loading";
    case ReplicaPhase::kWarmingUp: return "WarmingUp";
    case ReplicaPhase::kReady: return "Ready";
    case ReplicaPhase::kDraining: return "Draining";
    case ReplicaPhase::kGone: return "Gone";
  }
  return "?";
}

// A replica holds a GPU (and costs money) from Loading until Gone.
constexpr bool HoldsGpu(ReplicaPhase p) {
  return p == ReplicaPhase::kLoading || p == ReplicaPhase::kWarmingUp ||
         p == ReplicaPhase::kReady || p == ReplicaPhase::kDraining;
}

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_
