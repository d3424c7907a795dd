// What replay drives: any autoscaler (twinscale's policy, a KEDA or HPA baseline, a static fleet)
// behind one interface. Each sync it sees the cluster the way it would see a real one — the pods'
// vLLM /metrics text, scraped, parsed and extracted by controller/metrics, plus pod stages and ages
// — and answers the replica count it wants. Implementations keep their own history (stabilization
// windows, metric windows) between calls; replay owns the clock.
#ifndef TWINSCALE_CONTROLLER_REPLAY_AUTOSCALER_H_
#define TWINSCALE_CONTROLLER_REPLAY_AUTOSCALER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/replay/twin_error.h"
#include "controller/state/cluster_view.h"
#include "simulator/model/fleet.h"

namespace twinscale::replay {

// The view types live in controller/state (the live controller builds the same view).
using PodView = state::PodView;
using ClusterView = state::ClusterView;

class Autoscaler {
 public:
  virtual ~Autoscaler() = default;
  virtual std::string Name() const = 0;
  // How often it decides (twinscale: spec.metrics.interval; the HPA 15 s; KEDA's metric 30 s).
  virtual absl::Duration SyncPeriod() const = 0;
  // The replica count it wants now. Called every SyncPeriod with a fresh view.
  virtual int32_t Decide(const ClusterView& view) = 0;
  // The pods its last Decide's scale-in removes first, in order (twinscale in Direct mode: the
  // victims its reconcile pass marked). Empty: the cluster chooses (SimulatedCluster::Scale, by
  // the same rule, policy::ChooseScaleInVictims).
  virtual std::vector<std::string> Victims() const { return {}; }
  // One line on why (for the timeline); empty when there is nothing to say.
  virtual std::string LastReason() const { return ""; }
  // The admission limits it advises after its last Decide, for a gateway to enforce (none by
  // default; twinscale's policy: its decision's AdmissionAdvice while active). Replay enforces
  // them only when asked to (ReplayConfig::enforce_admission).
  virtual sim::AdmissionLimits Admission() const { return {}; }
  // What its twin forecast at its last Decide for the fleet that decision left in place
  // (twin_error.h), for replay to check against the truth; nullopt for a policy without a twin,
  // or when the decision asked none (no usable arrival rate). The driver sets `at`.
  virtual std::optional<TwinPrediction> LastPrediction() const { return std::nullopt; }
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_AUTOSCALER_H_
