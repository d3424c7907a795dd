// The Controller: the long-running part of `twinscale controller`. It keeps an informer on the
// InferenceAutoscalers (list then watch), queues an object when it appears, when its spec changes
// (metadata.generation) and again every spec.metrics.interval — never for the controller's own
// status writes, which change resourceVersion but not generation — and runs Reconciler passes on
// worker threads. The targets' pods are watched too (PodInformers, shared with the Reconciler):
// a pod of a target that appears, goes, or changes stage brings the autoscaler's next pass
// forward, never to less than one interval after its last one (pod_informers.h says why). With
// leader election on, only the Lease holder's workers run: a follower keeps its cache warm and
// takes over within the lease duration when the leader goes away; the leader releases the Lease on
// Stop() (SIGTERM) so a peer takes over at once.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_H_
#define TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "controller/common/clock.h"
#include "controller/kube/leader_election.h"
#include "controller/reconcile/reconciler.h"
#include "controller/reconcile/work_queue.h"

namespace twinscale {
class JsonLogger;
namespace kube {
class Cancellation;
class Informer;
class KubeClient;
}  // namespace kube
namespace reconcile {

struct ControllerOptions {
  std::string watch_namespace;  // "" = every namespace
  int32_t workers = 2;
  bool leader_election = true;
  kube::LeaderElectionConfig lease;  // used when leader_election
  // Optional: told true when this replica starts leading (its workers start; without leader
  // election, at Start) and false when it stops (after its workers have ended, so nothing is
  // published any more; also on Stop). The outputs serve only while leading. Runs
  // on the election thread or the caller of Start/Stop; must not call back into the Controller.
  std::function<void(bool leading)> on_leadership_change;
};

class PodInformers;

class Controller {
 public:
  // Pointers must outlive the controller; `metrics` and `log` may be null. `pods` is the one the
  // reconciler reads (ReconcilerDeps::pods): the controller takes its change notifications and
  // stops it on Stop().
  Controller(ControllerOptions options, kube::KubeClient* client, Reconciler* reconciler,
             PodInformers* pods, const Clock* clock, JsonLogger* log, ControllerMetrics* metrics);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informer, the election (or the workers at once without it). InvalidArgument for
  // a bad lease configuration.
  absl::Status Start();
  // Stops acting at once, releases the Lease if held, stops the informers (the pods' too);
  // returns when every thread has ended. Idempotent.
  void Stop();

  // For /readyz: the informer has listed once.
  bool Synced() const;
  // For /readyz: OK unless leader election can't read or write its Lease (LeaderElector::
  // LeaseHealth: refused by RBAC, or failing for the renew deadline); OK without leader election.
  absl::Status LeaseHealth() const;
  bool IsLeader() const { return leading_.load(); }

 private:
  class Handler;
  void StartLeading();
  void StartWorkersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(workers_mu_);
  void StopLeading();
  void NotifyLeadership();  // tells on_leadership_change the current state if it changed

  ControllerOptions options_;
  kube::KubeClient* client_;
  Reconciler* reconciler_;
  PodInformers* pods_;
  const Clock* clock_;
  JsonLogger* log_;
  ControllerMetrics* metrics_;
  WorkQueue queue_;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<kube::Informer> informer_;
  std::unique_ptr<kube::LeaderElector> elector_;
  std::unique_ptr<kube::Cancellation> stop_;
  std::thread election_thread_;
  // Read by the workers without the lock; changed with workers_mu_ held.
  std::atomic<bool> leading_{false};
  std::atomic<int64_t> leadership_epoch_{0};  // workers of an older epoch exit
  absl::Mutex workers_mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(workers_mu_);
  bool stopped_ ABSL_GUARDED_BY(workers_mu_) = false;
  absl::Mutex notify_mu_;  // serializes on_leadership_change
  bool notified_leading_ ABSL_GUARDED_BY(notify_mu_) = false;
};

}  // namespace reconcile
}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_H_
