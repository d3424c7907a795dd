// PodInformers: the pods of the autoscalers' targets, kept up to date by list-then-watch instead of
// being listed on every reconcile pass (docs/architecture.md "Kubernetes plumbing").
//
// One kube::Informer per (namespace, label selector) that some InferenceAutoscaler's target
// selects. The selector is the target's /scale status.selector, sent to the API server as the
// list's and watch's labelSelector, so the server (the authority on selector semantics) picks the
// pods and the cache holds only those. Autoscalers whose targets select the same pods share one
// informer. An informer starts on the first pass that needs it and stops when its last autoscaler
// lets go (the autoscaler is deleted, or its target now selects other pods). Each lists then
// watches with bookmarks, resumes a watch that ended, and re-lists after the server's 410 Expired,
// telling what changed in the gap (controller/kube/informer.h). While an informer's list or watch
// is failing, its cache may miss changes, and passes list the pods from the server as they did
// before.
//
// Pod changes wake the autoscalers that select the pod — a pod added or deleted, or whose stage
// (kube_pod.h: deletion, scheduling, Ready), address or schedulability changed — so the change is
// decided on without waiting out a long retry. Changes that can't change a decision (annotations,
// such as twinscale's own pod-deletion-cost marks; a probe's timestamp) wake nobody. A wake-up is
// held to ONE PASS PER INTERVAL: the callback names the earliest time the autoscaler's next pass
// may start, spec.metrics.interval after the start of its last pass, never sooner. The reason is
// the decision's inputs, not CPU: the arrival counts behind the burstiness estimate
// (state::AllanDispersion) are per-pass counts that assume passes one interval apart, and a single
// half-length window among them reads as bursty traffic (at 20 req/s and a 15 s interval one such
// window lifts the estimated dispersion from 1 to about 5 for the next 20 passes), which the twin
// would answer with more replicas. So a pod change can't add passes; it brings the next one forward
// when a retry (after a failed pass) or the pass's own duration would have put it later.
//
// Thread-safety: every method may be called from any thread. The change callback runs on an
// informer's thread and must not block (it should only queue the key).
#ifndef TWINSCALE_CONTROLLER_RECONCILE_POD_INFORMERS_H_
#define TWINSCALE_CONTROLLER_RECONCILE_POD_INFORMERS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kube/informer.h"
#include "controller/reconcile/pod_source.h"
#include "nlohmann/json.hpp"

namespace twinscale {
namespace kube {
class KubeClient;
}  // namespace kube
namespace reconcile {

struct PodInformersOptions {
  // How long the pass that starts an informer waits for its first list before it lists the pods
  // itself (see Pods()); later passes don't wait.
  absl::Duration sync_timeout = absl::Seconds(5);
  // The settings of every informer (backoff, watch timeout, sleep, clock, on_error); resource,
  // namespace and label selector are set per informer.
  kube::InformerOptions informer;
};

class PodInformers final : public PodSource {
 public:
  // Autoscaler `key` ("namespace/name") should run its next pass at `earliest` (possibly already
  // past): a pod it selects changed.
  using ChangeCallback = std::function<void(const std::string& key, absl::Time earliest)>;

  // `client` must outlive this object.
  explicit PodInformers(kube::KubeClient* client, PodInformersOptions options = {});
  ~PodInformers() override;  // Stop()
  PodInformers(const PodInformers&) = delete;
  PodInformers& operator=(const PodInformers&) = delete;

  // Who to tell about pod changes. May be set or replaced at any time; none by default.
  void SetChangeCallback(ChangeCallback on_change);

  // The pods of namespace `ns` that `selector` (a Scale's status.selector, non-empty) selects, as
  // the watch last reported them, ordered by name: for the pass of autoscaler `key` that started
  // at `pass_start`; its passes are `interval` apart (the rate limit of its wake-ups). Starts the
  // informer for (ns, selector) when none runs, and then waits up to sync_timeout for its first
  // list; lets go of the one `key` used before if that selected other pods.
  // When the cache is not current (its first list is late, or its list or watch keeps failing:
  // kube::Informer::Current), the pods come from a list of the server instead, so a pass never
  // decides on pods the watch may have missed. The list's error (its code, the message naming
  // the selector and the watch's last error) when that fails too: the pods are unknown then,
  // which the caller must never read as "no pods". Cancelled after Stop().
  absl::StatusOr<std::vector<nlohmann::json>> Pods(const std::string& key, const std::string& ns,
                                                   const std::string& selector,
                                                   absl::Time pass_start,
                                                   absl::Duration interval) override;

  // A pass of autoscaler `key` started at `start`, whether or not it gets as far as Pods() (a pass
  // that fails early still counts against the one-pass-per-interval limit). No-op for a key that
  // has no pods watched yet.
  void NotePassStart(const std::string& key, absl::Time start) override;

  // Autoscaler `key` needs no pods any more (deleted, or its target has no selector): its
  // informer stops unless another autoscaler uses it. No-op for an unknown key.
  void Forget(const std::string& key) override;

  // Stops every informer and waits for their threads. Idempotent; Pods() fails afterwards.
  void Stop();

 private:
  class Source;  // one informer and its event handler
  struct Subscriber {
    std::shared_ptr<Source> source;
    absl::Time last_pass;
    absl::Duration interval;
  };
  // Called by a Source's handler (on its informer thread) when one of its pods changed.
  void Changed(const Source* source);
  // Removes `key`'s subscription; returns its source when nobody else uses it (to be stopped by
  // the caller outside the lock).
  std::shared_ptr<Source> UnsubscribeLocked(const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::KubeClient* const client_;
  const PodInformersOptions options_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  ChangeCallback on_change_ ABSL_GUARDED_BY(mu_);
  // By SourceId(ns, selector).
  std::map<std::string, std::shared_ptr<Source>> sources_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Subscriber> subscribers_ ABSL_GUARDED_BY(mu_);  // by autoscaler key
};

// Whether a pod's change from `before` to `after` can change a decision: its stage, address,
// schedulability, Ready time or uid (a pod recreated under the same name) differ. Changes of
// annotations, labels that keep it selected, or resourceVersion alone don't. Exposed for tests.
bool PodChangeMatters(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace reconcile
}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_RECONCILE_POD_INFORMERS_H_
