// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics, so that of the
// controller's replicas exactly one decides and acts:
//  - A replica takes the lease when it is absent (creates it), released (empty holderIdentity),
//    expired (renewTime + leaseDurationSeconds < now), or already held by its own identity.
//    Taking it from another holder bumps leaseTransitions and sets acquireTime.
//  - The leader renews every retry period (renewTime = now). If renewals keep failing for
//    renew_deadline, or the lease turns out to be held by someone else, it steps down
//    (on_stopped_leading) before its lease can expire for the others (renew_deadline <
//    lease_duration).
//  - Release() (on shutdown) writes an empty holderIdentity and leaseDurationSeconds 1 so a peer
//    takes over at its next try instead of waiting out the lease.
//  - Every write carries the resourceVersion read just before (Update is a PUT with
//    metadata.resourceVersion): of two replicas racing for the lease one gets a 409 and loses.
//  - A replica that can't read or write the Lease at all (RBAC refuses it: 403; the API server
//    is unreachable) can never lead, and says so: on_lease_error once per episode, and
//    LeaseHealth() for /readyz. A lost race (409) or a lease another replica holds is no failure.
// Expiry is judged from the lease's renewTime against this replica's Clock, so the replicas'
// clocks must agree to well within lease_duration (NTP). Times are written as RFC 3339 micro time.
// Thread-safety: Run() on one thread; IsLeader(), ObservedLeader(), last_error() and LeaseHealth()
// from any thread.
#ifndef TWINSCALE_CONTROLLER_KUBE_LEADER_ELECTION_H_
#define TWINSCALE_CONTROLLER_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/kube_client.h"

namespace twinscale::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;                               // unique per replica (the pod name)
  absl::Duration lease_duration = absl::Seconds(15);  // > renew_deadline
  absl::Duration renew_deadline = absl::Seconds(10);  // > retry_period
  absl::Duration retry_period = absl::Seconds(2);
  bool release_on_cancel = true;  // Run() releases the lease when cancelled while leading
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;  // optional
  std::function<void()> on_stopped_leading;  // optional; stop acting as leader at once
  // The holder seen on the lease changed (another replica, or this one); optional.
  std::function<void(const std::string& identity)> on_new_leader;
  // Reading or writing the Lease failed (with the API's error) where the attempt before had not,
  // or failed with another error (code or Kubernetes reason) than the attempt before; then OK
  // when an attempt reaches the Lease again. Once per change, not per attempt; optional. Called
  // on the election thread.
  std::function<void(const absl::Status& error)> on_lease_error;
};

class LeaderElector {
 public:
  // InvalidArgument unless identity and lease name are set and lease_duration > renew_deadline >
  // retry_period > 0. `client` and `clock` must outlive the elector. `sleep` waits between
  // attempts; by default the Cancellation given to Run() (real time, cut short by Cancel()).
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(
      KubeClient* client, const Clock* clock, LeaderElectionConfig config,
      LeaderCallbacks callbacks = {}, std::function<void(absl::Duration)> sleep = nullptr);

  // Campaigns (an attempt every retry period, with up to 20% jitter) until this replica leads,
  // then calls on_started_leading and renews until it loses the lease or `cancel` fires; then
  // calls on_stopped_leading (after releasing the lease, if cancelled and release_on_cancel) and
  // returns. Returns at once, without callbacks, if cancelled before leading. The release is an
  // API request: don't cancel the client's own shutdown token before Run() has returned.
  void Run(Cancellation* cancel);

  // One attempt (client-go's tryAcquireOrRenew): true when this replica holds the lease
  // afterwards. API failures and lost races are false; last_error() says why.
  bool TryAcquireOrRenew();

  // Gives the lease up if this replica holds it (holderIdentity "", leaseDurationSeconds 1).
  absl::Status Release();

  // True between a successful acquire/renew and stepping down or releasing.
  bool IsLeader() const { return is_leader_.load(); }
  // The holderIdentity last read from the lease ("" when released or never read).
  std::string ObservedLeader() const;
  absl::Status last_error() const;
  // OK unless this replica can't read or write its Lease: the last attempt's error, naming the
  // Lease, when RBAC refused it (PermissionDenied, Unauthenticated: at once) or when attempts have
  // kept failing for renew_deadline (anything else: a blip is not a failure). For /readyz.
  absl::Status LeaseHealth() const;

 private:
  LeaderElector(KubeClient* client, const Clock* clock, LeaderElectionConfig config,
                LeaderCallbacks callbacks, std::function<void(absl::Duration)> sleep);
  void Observe(const std::string& holder);
  void SetError(absl::Status s);
  // The outcome of an attempt at `now`: OK when it reached the Lease (a lost race included),
  // else the API's error. Tracks the episode and calls on_lease_error on a change.
  void NoteAttempt(absl::Time now, const absl::Status& failure);
  absl::Duration Jittered(absl::Duration d);

  KubeClient* const client_;
  const Clock* const clock_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const std::function<void(absl::Duration)> sleep_;
  std::atomic<bool> is_leader_{false};
  // Set by TryAcquireOrRenew when it finds another valid holder: the leader steps down at once.
  bool lost_to_other_ = false;
  // When the last successful acquire/renew started (the renewTime it wrote): the renew deadline
  // counts from here.
  absl::Time renewed_at_ = absl::InfinitePast();
  absl::BitGen random_;

  mutable absl::Mutex mu_;
  std::string observed_leader_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  // The current episode of failing to reach the Lease: the last attempt's error (OK: no episode)
  // and when the episode began.
  absl::Status lease_error_ ABSL_GUARDED_BY(mu_);
  absl::Time failing_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_LEADER_ELECTION_H_
