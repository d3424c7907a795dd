// twinscale's own policy behind replay's Autoscaler interface: each sync it builds a FleetSnapshot
// from the scraped view (state::SnapshotBuilder), asks Recommend with the twin as forecaster, and
// records the decision in its history — the same pieces the live reconciler wires together.
#ifndef TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
#define TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_

#include <string>
#include <vector>

#include "controller/policy/recommend.h"
#include "controller/replay/autoscaler.h"
#include "controller/state/fleet_snapshot.h"
#include "controller/twin/twin_forecaster.h"

namespace twinscale::replay {

class TwinscaleAutoscaler : public Autoscaler {
 public:
  TwinscaleAutoscaler(std::string name, policy::PolicyConfig config, twin::TwinOptions twin);
  std::string Name() const override { return name_; }
  absl::Duration SyncPeriod() const override { return config_.interval; }
  int32_t Decide(const ClusterView& view) override;
  std::string LastReason() const override { return last_reason_; }
  // Every decision taken, in order (for reports and the decision corpus).
  const std::vector<policy::Decision>& decisions() const { return decisions_; }

 private:
  std::string name_;
  policy::PolicyConfig config_;
  twin::TwinForecaster forecaster_;
  state::SnapshotBuilder snapshots_;
  policy::PolicyHistory history_;
  std::vector<policy::Decision> decisions_;
  std::string last_reason_;
};

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_TWINSCALE_AUTOSCALER_H_
