// Decider: one target's decision maker across decisions. Each interval it gets what the
// controller sees (state::ClusterView) and returns the Decision; between calls it keeps what
// successive decisions need (the previous scrapes for increases, stabilization history, the
// twin's calibration, the arrival history of the seasonal forecast). The live reconciler and replay
// drive the same implementation (twin::TargetDecider); tests of the reconcile loop can drive a
// scripted one.
#ifndef TWINSCALE_CONTROLLER_POLICY_DECIDER_H_
#define TWINSCALE_CONTROLLER_POLICY_DECIDER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/policy/decision.h"
#include "controller/state/cluster_view.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

// The twin's speed factors fitted to the fleet (1 = the profile is exact). Kept in the object's
// status so a new leader starts from them.
struct CalibrationFactors {
  double prefill_speed = 1;
  double decode_speed = 1;
  int64_t updates = 0;  // windows folded in so far
  // Behind a balancing router, the share of requests the twin routes at random
  // (twin::TwinOptions::router_random_share).
  double router_random_share = 0;
  // The time the fleet's requests spend before the engine sees them beyond what the profile's
  // latency model puts there (twin::TwinOptions::extra_front_end_seconds; negative where the
  // profile puts more), at most kMaxExtraFrontEndSeconds either way.
  double extra_front_end_seconds = 0;
};

// A front-end time beyond this, either way, is not one the calibration fits (vLLM's API server
// adds milliseconds): a status that says more is refused, and a restore clamps to it. The CRD's
// status schema holds the same bound.
inline constexpr double kMaxExtraFrontEndSeconds = 10;

class Decider {
 public:
  virtual ~Decider() = default;
  virtual Decision Decide(const state::ClusterView& view) = 0;
  // The actuator changed the target's replica count from `from` to `to` at `at` (a /scale write
  // that landed; replay's fleet set). The rate limits count only such changes and the ones a
  // decision observes in view.spec_replicas (another autoscaler, a user), never a decision as
  // such: in Recommend, KEDA and HPA modes twinscale's decisions change nothing by themselves.
  virtual void NoteScaled(absl::Time at, int32_t from, int32_t to) = 0;
  // The snapshot the last Decide built (null before the first).
  virtual const state::FleetSnapshot* last_snapshot() const = 0;
  virtual CalibrationFactors calibration() const = 0;
  virtual void RestoreCalibration(const CalibrationFactors& factors) = 0;
  // The arrivals the seasonal forecast reads (null for a decider that keeps none). The controller
  // keeps its closed buckets in the object's status so a new leader starts from them.
  virtual const state::ArrivalHistory* arrival_history() const { return nullptr; }
  // Adds arrivals observed before the first decision (a previous leader's, read back from the
  // status; a Prometheus history) to that history. Ignored by a decider that keeps none.
  virtual void RestoreArrivals(const state::ArrivalBuckets& /*buckets*/) {}
  // The twin's p90 TTFT forecast for the last window minus what the fleet showed (ms), when both
  // were known.
  virtual std::optional<double> last_prediction_error_ms() const = 0;
};

// Makes and re-configures the per-target decision makers (twin::TwinDeciderFactory in the binary;
// a scripted one in tests of the reconcile loop).
class DeciderFactory {
 public:
  virtual ~DeciderFactory() = default;
  // InvalidArgument naming the field when the spec can't be resolved (an unknown profile, ...).
  virtual absl::StatusOr<std::unique_ptr<Decider>> Create(
      const api::InferenceAutoscalerSpec& spec) = 0;
  // Applies a changed spec to an existing decider, keeping its history and calibration.
  virtual absl::Status Reconfigure(const api::InferenceAutoscalerSpec& spec, Decider& decider) = 0;
};

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_DECIDER_H_
