// LeaderPodLabel: keeps a label on this replica's own pod saying whether it holds the controller's
// Lease (docs/architecture.md "Outputs and their contracts", high availability), so the Services of
// the outputs (KEDA's gRPC scaler, the external metrics API) select only the leader:
// `twinscale.io/leader: "true"` while leading, "false" otherwise. The pod is named by the downward
// API (POD_NAME, POD_NAMESPACE in deploy/controller/deployment.yaml); each write is a JSON merge
// patch of metadata.labels (RBAC: pods patch in the pod's namespace).
//
// Level-based: Set() records the state and returns at once; a writer thread patches until the
// pod says the latest state set, retrying failures with capped exponential backoff (retry_period
// doubling up to 30 s), so a flap (true, false, true) writes at most what is current and an API
// outage delays the label rather than losing it. The first state is "false": a container that
// restarts in a pod whose previous container led must not leave the Service pointing at a
// follower.
//
// What the label cannot promise: a leader that loses the Lease because it can't reach the API
// server can't remove its label either. Until it can, the Service selects both pods; the old
// leader answers UNAVAILABLE / 503 (it no longer serves), which KEDA and the HPA treat as a failed
// poll and hold. A pod that is killed outright leaves the Service with the pod itself.
//
// Thread-safety: Set and written() from any thread; Start and Stop from one thread.
#ifndef TWINSCALE_CONTROLLER_KUBE_LEADER_POD_LABEL_H_
#define TWINSCALE_CONTROLLER_KUBE_LEADER_POD_LABEL_H_

#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kube/kube_client.h"

namespace twinscale::kube {

struct LeaderPodLabelOptions {
  std::string pod_namespace;                       // required ($POD_NAMESPACE)
  std::string pod_name;                            // required ($POD_NAME)
  std::string label = "twinscale.io/leader";       // the label's key
  absl::Duration retry_period = absl::Seconds(1);  // the first wait after a failed write
};

class LeaderPodLabel {
 public:
  // Told about every failed write (from the writer thread); optional.
  using ErrorHandler = std::function<void(const absl::Status&)>;
  // Told when a write lands that changes what the pod's label says (from the writer thread), with
  // the state now on the pod: true once this pod is labelled as the leader, false once it no
  // longer is (or, first, that it is not). Optional.
  using WrittenHandler = std::function<void(bool leading)>;

  // `client` must outlive this object.
  LeaderPodLabel(KubeClient* client, LeaderPodLabelOptions options, ErrorHandler on_error = {},
                 WrittenHandler on_written = {});
  ~LeaderPodLabel();  // Stop(absl::ZeroDuration()) if still running
  LeaderPodLabel(const LeaderPodLabel&) = delete;
  LeaderPodLabel& operator=(const LeaderPodLabel&) = delete;

  // InvalidArgument when the pod's name or namespace is missing. Starts the writer; it writes
  // the latest state set ("false" unless Set(true) came first).
  absl::Status Start();

  // The state to write: true while this replica leads. Returns at once.
  void Set(bool leading);

  // Waits up to `timeout` for the latest state to be written, then stops the writer (after its
  // write in flight, if any, ends). OK when the pod's label says the latest state; otherwise the
  // last write's error (DeadlineExceeded if no write failed but none landed in time).
  // Idempotent; later Set calls are recorded but not written.
  absl::Status Stop(absl::Duration timeout);

  // The state the last successful write put on the pod (nullopt before one succeeded).
  std::optional<bool> written() const;

 private:
  void Run();
  absl::Status Write(bool leading);

  KubeClient* const client_;
  const LeaderPodLabelOptions options_;
  const ErrorHandler on_error_;
  const WrittenHandler on_written_;
  std::thread writer_;

  mutable absl::Mutex mu_;
  bool desired_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<bool> written_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool quit_ ABSL_GUARDED_BY(mu_) = false;  // the writer exits at its next check
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_LEADER_POD_LABEL_H_
