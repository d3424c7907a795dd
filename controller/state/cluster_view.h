// What a controller sees of one target's fleet at one moment, before any interpretation: every pod
// of the target with its Kubernetes stage and age, and its last vLLM /metrics scrape (parsed and
// extracted by controller/metrics). Built by the live controller from the API server and scrapes,
// and by replay from the simulated cluster, so everything downstream is the same code.
#ifndef TWINSCALE_CONTROLLER_STATE_CLUSTER_VIEW_H_
#define TWINSCALE_CONTROLLER_STATE_CLUSTER_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/metrics/vllm_observation.h"
#include "controller/state/engine_args.h"

namespace twinscale::state {

// A pod as the Kubernetes API and its /metrics show it.
struct PodView {
  // From pod conditions: PodScheduled=False -> kPending; ContainersReady=False -> kLoading;
  // containers up but Ready=False -> kWarmingUp; Ready -> kReady; deletionTimestamp ->
  // kTerminating.
  enum class Stage { kPending, kLoading, kWarmingUp, kReady, kTerminating };
  std::string name;
  Stage stage = Stage::kReady;
  absl::Duration age;                   // since the pod was created
  absl::Duration ready_for;             // since it became Ready (zero if not Ready)
  bool unschedulable = false;           // PodScheduled=False with reason Unschedulable
  bool scrape_ok = false;               // the last scrape of /metrics succeeded
  absl::Time scraped_at;                // when that scrape was taken
  metrics::PodObservation observation;  // valid when scrape_ok
  // The vLLM flags its container runs with (state::ParseVllmArgs), when the pod spec was read;
  // engine_args_error says why a vLLM command line could not be.
  std::optional<EngineArgs> engine_args;
  std::string engine_args_error;
};

struct ClusterView {
  absl::Time now;
  int32_t spec_replicas = 0;  // the target's /scale spec.replicas
  std::vector<PodView> pods;  // every pod of the target, including starting and terminating ones
};

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_CLUSTER_VIEW_H_
