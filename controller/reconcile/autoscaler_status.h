// The InferenceAutoscaler's status (docs/architecture.md "The InferenceAutoscaler spec") as the
// controller keeps it: conditions with honest transition times, current and desired replicas,
// admission limits, what was observed, the measured warm-up, the calibration and the seasonal
// forecast's arrival history (which a new leader reads back, so they survive a failover) and the
// last decision with its reasons. Also the two rules that keep status writes rare and meaningful: a
// condition's lastTransitionTime moves only when its status flips, and a status is written only
// when something a person or a peer would act on changed. Pure.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_AUTOSCALER_STATUS_H_
#define TWINSCALE_CONTROLLER_RECONCILE_AUTOSCALER_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "nlohmann/json_fwd.hpp"

namespace twinscale::reconcile {

// Condition types.
inline constexpr std::string_view kSpecValid = "SpecValid";          // the spec parsed and resolved
inline constexpr std::string_view kMetricsFresh = "MetricsFresh";    // inputs within staleAfter
inline constexpr std::string_view kScalingActive = "ScalingActive";  // the controller may act
inline constexpr std::string_view kSloAtRisk = "SloAtRisk";          // forecast misses even so
// Starting pods hold slots of spec.replicas but no longer count as capacity: not Ready past the
// warm-up deadline (reason PodsNotReady) or unschedulable (PodsUnschedulable). See SetPodsStalled.
inline constexpr std::string_view kPodsStalled = "PodsStalled";

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;  // CamelCase
  std::string message;
  absl::Time last_transition_time;
  int64_t observed_generation = 0;
};

struct AutoscalerStatus {
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  std::optional<int32_t> current_replicas;  // the target's /scale spec.replicas
  std::optional<int32_t> desired_replicas;  // the decision
  std::optional<policy::AdmissionAdvice> admission;
  struct Observed {
    std::optional<double> queue_depth_per_replica, kv_cache_utilization, arrival_rate;
    std::optional<absl::Duration> ttft_p90;
  };
  std::optional<Observed> observed;
  std::optional<absl::Duration> measured_warmup;
  struct Calibration {
    double prefill_speed = 1;
    double decode_speed = 1;
    int64_t updates = 0;
    double router_random_share = 0;  // routerRandomShare, in [0, 1]
    // extraFrontEndSeconds: the time the fleet's requests spend before the engine sees them
    // beyond what the profile's model puts there, in [-10, 10] (absent: 0).
    double extra_front_end_seconds = 0;
  };
  std::optional<Calibration> calibration;
  // The seasonal forecast's arrival history (state::ArrivalHistory): its closed buckets, `data`
  // encoded as controller/state/arrival_history_codec.h says, from `start` (a bucket boundary) to
  // `end` (start + buckets x bucket, for people reading the status). A new leader reads it back, so
  // the history survives a failover; it changes when a bucket closes (every 5 minutes), so it is
  // written then, not every pass. Decoded only where it is restored: damaged data costs the
  // history, not the rest of the status.
  struct ArrivalHistory {
    absl::Duration bucket;
    absl::Time start, end;
    std::string data;
  };
  std::optional<ArrivalHistory> arrival_history;
  struct LastDecision {
    absl::Time time;
    int32_t replicas = 0;
    std::vector<policy::Reason> reasons;
  };
  std::optional<LastDecision> last_decision;

  const Condition* FindCondition(std::string_view type) const;
};

// Sets condition `type` to `status` ("True"/"False"/"Unknown") with reason and message. Its
// lastTransitionTime becomes `now` only when the status differs from the one held (or the
// condition is new): a reason or message change alone keeps the time, as Kubernetes conventions
// ask.
void SetCondition(AutoscalerStatus& status, std::string_view type, std::string_view value,
                  std::string_view reason, std::string_view message, absl::Time now,
                  int64_t generation);

// PodsStalled from a decision's starting pods that the policy left out of capacity
// (policy::Decision::not_counted). None: False, reason NoneStalled. Otherwise True, reason
// PodsNotReady when any is past the warm-up deadline (else PodsUnschedulable), with a message
// naming how many, the deadline, and the pods (at most 5) with their creation times: a message
// that stays the same from pass to pass while the same pods are stalled (ages would change it
// every pass, and a message change is a status write); the condition's lastTransitionTime says
// since when. Returns the message an event should carry when the condition turns True: the same
// facts with each pod's age (empty when none are stalled).
std::string SetPodsStalled(AutoscalerStatus& status, const policy::Decision& decision,
                           absl::Time now, int64_t generation);

// Whether `next` differs from `written` in a way worth a write: generation, a condition's status,
// reason or message, replicas, admission, the last decision's replicas or reason codes, the
// calibration by more than 1% (its front-end time by a millisecond), the measured warm-up by a
// second or more, an observed value by more than 10% (a change to or from zero counts), or the
// arrival history (its buckets change only when one closes). The decision's time and small drifts
// don't.
bool MeaningfulChange(const AutoscalerStatus& written, const AutoscalerStatus& next);

// The status as the CRD's schema has it (durations as "1.5s" strings, times RFC 3339), and back.
// FromJson is lenient about what it doesn't need (a status written by an older controller) and
// InvalidArgument, naming the field, for a value of the wrong type.
nlohmann::json StatusToJson(const AutoscalerStatus& status);
absl::StatusOr<AutoscalerStatus> StatusFromJson(const nlohmann::json& status);

// The parts of a status that read: each top-level field read on its own (as StatusFromJson reads
// it), the ones that fail left out and their errors appended to `unreadable`. A status with one
// damaged field (anyone who may write the status subresource can put any JSON there) keeps its
// calibration, arrival history and conditions instead of losing them all with it.
AutoscalerStatus ReadableStatus(const nlohmann::json& status,
                                std::vector<absl::Status>& unreadable);

// A duration as the CRD's pattern wants it: absl's form, but "0s" rather than "0".
std::string FormatSpecDuration(absl::Duration d);

}  // namespace twinscale::reconcile

#endif  // TWINSCALE_CONTROLLER_RECONCILE_AUTOSCALER_STATUS_H_
