// Replica lifecycle stages, as a Kubernetes pod serving vLLM goes through them:
//   Provisioning (no GPU node free yet) -> Loading (image pull, weights) -> WarmingUp
//   (torch.compile, CUDA graphs; not serving) -> Ready (serving; the first `slow_period` runs
//   slower) -> Draining (no new requests; in-flight ones get the grace period) -> Gone.
// The fleet drives the transitions with delays drawn from the deployment's LifecycleSpec.
#ifndef TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_
#define TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_

namespace twinscale::sim {

enum class ReplicaPhase { kProvisioning, kLoading, kWarmingUp, kReady, kDraining, kGone };

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_LIFECYCLE_H_
