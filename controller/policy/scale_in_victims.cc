// The scale-in victim rule: see scale_in_victims.h.
#include "controller/policy/scale_in_victims.h"

#include <algorithm>

namespace twinscale::policy {

std::vector<std::string> ChooseScaleInVictims(std::vector<VictimCandidate> pods, int32_t count) {
  std::sort(pods.begin(), pods.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.ready != b.ready) return !a.ready;  // not Ready first
    if (!a.ready) {
      if (a.created != b.created) return a.created > b.created;  // newest first
      return a.name < b.name;
    }
    if (a.in_flight.has_value() != b.in_flight.has_value()) return a.in_flight.has_value();
    if (a.in_flight.has_value() && *a.in_flight != *b.in_flight) return *a.in_flight < *b.in_flight;
    // Equally loaded: the newest, as the ReplicaSet controller itself prefers among otherwise
    // equal pods, so a mark it can't honour (a target that ignores the deletion cost) and the
    // pod it removes agree.
    if (a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
  std::vector<std::string> out;
  for (int32_t i = 0; i < count && i < static_cast<int32_t>(pods.size()); ++i) {
    out.push_back(pods[static_cast<size_t>(i)].name);
  }
  return out;
}

double InFlightOf(const metrics::PodObservation& observation) {
  double load = 0;
  for (const auto& e : observation.engines) load += e.running.value_or(0) + e.waiting.value_or(0);
  return load;
}

std::vector<VictimCandidate> VictimCandidatesOf(const state::ClusterView& view) {
  std::vector<VictimCandidate> candidates;
  for (const state::PodView& p : view.pods) {
    if (p.stage == state::PodView::Stage::kTerminating) continue;
    VictimCandidate c{p.name, p.stage == state::PodView::Stage::kReady, view.now - p.age,
                      std::nullopt};
    if (p.scrape_ok) c.in_flight = InFlightOf(p.observation);
    candidates.push_back(std::move(c));
  }
  return candidates;
}

}  // namespace twinscale::policy
