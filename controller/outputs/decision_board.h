// The DecisionBoard: the latest decision the controller publishes for each InferenceAutoscaler
// (key "namespace/name"), read by the outputs that serve it — KEDA's external scaler
// (keda_scaler.h), the admission API (admission_service.h) and the external metrics API
// (external_metrics_api.h).
//
// The reconciler publishes after every pass that reached a decision (Publish) and removes a target
// when its InferenceAutoscaler is deleted (Remove). Readers take copies (Get, List). Streams learn
// about changes through listeners (Subscribe): a listener is told WHICH key changed, never what it
// changed to; it reads the board again (level-based, so a missed or reordered hint loses nothing).
//
// Leadership: only the holder of the controller's Lease serves these outputs.
// SetServing(false) marks this replica a follower: the outputs answer UNAVAILABLE, and the board
// drops its entries, so a new term of leadership publishes nothing until it has decided again (a
// decision of an earlier term may be far from what the leader in between did).
//
// Thread-safety: every method may be called from any thread. Listeners run on the thread that
// changed the board, after the change is visible to readers and outside the board's data lock;
// they must be quick and must not call Subscribe or Unsubscribe.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_DECISION_BOARD_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_DECISION_BOARD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/policy/decision.h"

namespace twinscale::outputs {

// What one reconcile pass publishes for one InferenceAutoscaler.
struct PublishedDecision {
  api::Mode mode = api::Mode::kRecommend;  // spec.mode (KEDA is served only in mode KEDA)
  int32_t desired_replicas = 0;            // the policy's decision
  int32_t current_replicas = 0;            // the target's spec.replicas as read in the same pass
  // The pass judged the fleet's metrics stale (MetricsFresh=False: the metric source failed, or no
  // Ready pod's metrics were fresh). The outputs then publish "hold": the current count.
  bool inputs_stale = false;
  policy::AdmissionAdvice admission;  // advisory limits for a gateway
  absl::Time decided_at;              // the controller's clock at the decision

  // The replica count the outputs publish: the current count while the inputs are stale (hold,
  // never a decision made on stale data), else the decision.
  int32_t published_replicas() const { return inputs_stale ? current_replicas : desired_replicas; }
};

struct BoardEntry {
  std::string namespace_name;
  std::string name;
  PublishedDecision decision;
  // The board's version() when this entry last changed (1, 2, ...; never 0 for an entry).
  uint64_t version = 0;
};

class DecisionBoard {
 public:
  // Told that the entry `key` ("namespace/name") changed or went away, or, with key "", that
  // everything may have changed (serving flipped; entries were dropped).
  using Listener = std::function<void(std::string_view key)>;
  using SubscriptionId = uint64_t;

  // A new board serves (answers as the leader) until SetServing(false).
  DecisionBoard() = default;
  DecisionBoard(const DecisionBoard&) = delete;
  DecisionBoard& operator=(const DecisionBoard&) = delete;

  // "namespace/name".
  static std::string Key(std::string_view namespace_name, std::string_view name);

  // Records the latest decision for a target. A decision equal to the current one except for
  // decided_at only refreshes decided_at: no version bump, no listener call.
  void Publish(std::string_view namespace_name, std::string_view name, const PublishedDecision& d);
  // Forgets a target (its InferenceAutoscaler was deleted). No-op if unknown.
  void Remove(std::string_view namespace_name, std::string_view name);

  std::optional<BoardEntry> Get(std::string_view namespace_name, std::string_view name) const;
  // Every entry ("" = every namespace), sorted by namespace then name.
  std::vector<BoardEntry> List(std::string_view namespace_name = "") const;
  // Increases by one with every change of an entry (publish, remove) and every clear.
  uint64_t version() const;

  // The leadership hook. false: this replica is a follower (the outputs answer UNAVAILABLE) and
  // every entry is dropped; true: it leads again (entries come back as passes publish them).
  void SetServing(bool serving);
  bool serving() const;

  // Adds a listener; it may be called (from other threads) before Subscribe returns.
  SubscriptionId Subscribe(Listener listener);
  // Removes a listener. When Unsubscribe returns the listener is not running and never runs again
  // (so its captures may be destroyed). Must not be called from inside a listener.
  void Unsubscribe(SubscriptionId id);

 private:
  void Notify(std::string_view key);

  mutable absl::Mutex mu_;
  // By (namespace, name): List's order.
  std::map<std::pair<std::string, std::string>, BoardEntry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool serving_ ABSL_GUARDED_BY(mu_) = true;

  // Held while listeners run, so Unsubscribe can wait out a running call.
  absl::Mutex listeners_mu_;
  std::map<SubscriptionId, Listener> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  SubscriptionId next_id_ ABSL_GUARDED_BY(listeners_mu_) = 1;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_DECISION_BOARD_H_
