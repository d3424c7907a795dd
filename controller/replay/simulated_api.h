// What the Reconciler reads and writes in replay: the simulated cluster behind the controller's own
// seams. Replay drives the very Reconciler the controller runs (controller/reconcile/reconciler.h)
// on a ManualClock; this is the cluster it talks to, built from what the simulated cluster shows
// at one sync (a ClusterView: the pods' stages, ages and scraped vLLM /metrics):
//   - kube::KubeClient: the InferenceAutoscaler object (the manifest, its status as last written),
//     the target Deployment's /scale (spec.replicas as the cluster has it, a selector), no other
//     autoscaler of the target (empty HorizontalPodAutoscaler and ScaledObject lists), the pods,
//     merge patches of the object's status and of pod annotations. Nothing else is served
//     (Unimplemented): replay creates, updates, deletes and watches nothing.
//   - reconcile::PodSource: the view's pods as Pod objects (PodJson: stage as conditions, times as
//     RFC 3339 with nanoseconds so ages survive the round trip), in the view's order.
//   - metrics::MetricsSource: each pod's newest scrape as the view shows it; a pod without one is
//     a failed read ("no scrape"), as a pod whose server is not up yet is to the live scraper.
//   - reconcile::Actuator: the order the pass gave (count and victims) is kept for the sync to
//     carry out on the truth fleet (last_order), and /scale shows the new count from then on.
// Not thread-safe; one per replayed autoscaler.
#ifndef TWINSCALE_CONTROLLER_REPLAY_SIMULATED_API_H_
#define TWINSCALE_CONTROLLER_REPLAY_SIMULATED_API_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/kube/kube_client.h"
#include "controller/metrics/metrics_source.h"
#include "controller/reconcile/actuator.h"
#include "controller/reconcile/pod_source.h"
#include "controller/reconcile/reconciler.h"
#include "controller/state/cluster_view.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {

// Pod `pod` of namespace `ns` at `now` as the API server would return it (see the file comment);
// `ip` is its address (given to every pod whose server has started, i.e. not Pending), `marked`
// adds the scale-in mark. reconcile::ParseKubePod reads back the pod's stage, age, Ready time and
// schedulability exactly.
nlohmann::json PodJson(const state::PodView& pod, absl::Time now, const std::string& ns,
                       const std::string& ip, bool marked);

class SimulatedApi {
 public:
  // `object`: the InferenceAutoscaler (metadata.namespace defaults to "default"); its
  // spec.targetRef names the Deployment whose /scale and pods are served.
  explicit SimulatedApi(nlohmann::json object);
  ~SimulatedApi();
  SimulatedApi(const SimulatedApi&) = delete;
  SimulatedApi& operator=(const SimulatedApi&) = delete;

  // The cluster as the next pass sees it; forgets the last order.
  void Show(const state::ClusterView& view);
  // The Reconciler's dependencies on this cluster (client, pods, metrics sources, actuator).
  // clock, deciders and the optional ones are the caller's.
  reconcile::ReconcilerDeps Deps();

  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  // The last order since Show (nullopt: the pass scaled nothing).
  const std::optional<reconcile::ScaleOrder>& last_order() const { return last_order_; }
  // The object's status as the reconciler last wrote it (null before the first write).
  const nlohmann::json& status() const { return status_; }

 private:
  class Client;
  class PodList;
  class Metrics;
  class Act;

  std::string ns_;
  std::string name_;
  std::string target_;  // the Deployment's name
  nlohmann::json object_;
  nlohmann::json status_;
  state::ClusterView view_;
  int32_t spec_replicas_ = 0;  // /scale spec.replicas: the view's, or the last order's
  int64_t resource_version_ = 1;
  std::set<std::string> marked_;
  std::optional<reconcile::ScaleOrder> last_order_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<PodList> pods_;
  std::unique_ptr<Act> act_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_SIMULATED_API_H_
