// A Kubernetes Pod object, as the API server returns it, read into what the controller needs: the
// pod's stage in the serving lifecycle (state::PodView::Stage), its address for scraping, and the
// times that make ages and the measured warm-up. Pure: JSON in, struct out; no I/O.
//
// Stage rules (the order matters; the first that holds wins):
//   metadata.deletionTimestamp set, or phase Succeeded/Failed   -> kTerminating
//   condition PodScheduled=False (Unschedulable or still pending) -> kPending
//   condition Ready=True                                          -> kReady
//   condition ContainersReady=True (a readiness gate still open)  -> kWarmingUp
//   otherwise (containers starting, image pull, weights loading)   -> kLoading
// A vLLM pod is not Ready until its readiness probe (/health) answers, i.e. until the model is
// loaded and the engine is warm; that is the warm-up twinscale measures (creation -> Ready).
#ifndef TWINSCALE_CONTROLLER_RECONCILE_KUBE_POD_H_
#define TWINSCALE_CONTROLLER_RECONCILE_KUBE_POD_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/state/cluster_view.h"
#include "controller/state/engine_args.h"
#include "nlohmann/json_fwd.hpp"

namespace twinscale::reconcile {

struct KubePod {
  std::string name;
  std::string uid;
  std::string ip;  // status.podIP; empty until the pod has an address
  state::PodView::Stage stage = state::PodView::Stage::kPending;
  bool unschedulable = false;             // PodScheduled=False, reason Unschedulable
  absl::Time created;                     // metadata.creationTimestamp
  std::optional<absl::Time> ready_since;  // Ready=True's lastTransitionTime
  // The vLLM engine settings of the pod's vLLM container (the first whose command + args start a
  // vLLM server, state::LooksLikeVllm, or whose image is a vLLM one, whose entrypoint does),
  // $(VAR) expanded from its literal env; nullopt when no container is. A command line vLLM would
  // refuse leaves engine_args unset and says why in engine_args_error ("pod NAME container C: vLLM
  // flag ...").
  std::optional<state::EngineArgs> engine_args;
  std::string engine_args_error;
};

// InvalidArgument naming the field when the object is not a readable Pod (no name, a timestamp
// that is not RFC 3339).
absl::StatusOr<KubePod> ParseKubePod(const nlohmann::json& pod);

}  // namespace twinscale::reconcile

#endif  // TWINSCALE_CONTROLLER_RECONCILE_KUBE_POD_H_
