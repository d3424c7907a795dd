// The one scale-in victim rule: which replicas go first when a target is scaled in. The live
// reconciler marks them with controller.kubernetes.io/pod-deletion-cost before it writes /scale
// (the ReplicaSet controller removes the lowest cost first); replay's simulated cluster drains the
// same ones. Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_SCALE_IN_VICTIMS_H_
#define TWINSCALE_CONTROLLER_POLICY_SCALE_IN_VICTIMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/state/cluster_view.h"

namespace twinscale::policy {

// A replica that could be removed.
struct VictimCandidate {
  std::string name;
  bool ready = false;
  absl::Time created;
  std::optional<double> in_flight;  // running + waiting per the last reading; nullopt when unread
};

// The `count` replicas to remove: those not Ready first (newest first: they have cost least), then
// Ready ones with the fewest requests in flight (unread ones last), ties newest first (as the
// ReplicaSet controller ranks equal pods), then by name. Fewer when there are fewer candidates.
std::vector<std::string> ChooseScaleInVictims(std::vector<VictimCandidate> pods, int32_t count);

// The candidates of a view: every pod but Terminating ones, created at view.now - age, with its
// requests in flight from its reading when the scrape succeeded.
std::vector<VictimCandidate> VictimCandidatesOf(const state::ClusterView& view);

// The requests in flight a reading shows: running + waiting over its engines.
double InFlightOf(const metrics::PodObservation& observation);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_SCALE_IN_VICTIMS_H_
