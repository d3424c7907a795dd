// twinscale's policy in replay: see twinscale_autoscaler.h.
#include "controller/replay/twinscale_autoscaler.h"

#include "absl/strings/str_cat.h"

namespace twinscale::replay {

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, policy::PolicyConfig config,
                                         twin::TwinOptions twin)
    : name_(std::move(name)),
      config_(config),
      forecaster_(std::move(twin)),
      snapshots_(state::SnapshotOptions{absl::Seconds(45),
                                        absl::ToDoubleSeconds(config.ttft_threshold), 20}) {}

int32_t TwinscaleAutoscaler::Decide(const ClusterView& view) {
  const state::FleetSnapshot snap = snapshots_.Build(view);
  policy::Decision d = policy::Recommend(snap, config_, forecaster_, view.now, history_);
  policy::RecordDecision(d, config_, history_);
  last_reason_.clear();
  for (const policy::Reason& r : d.reasons) {
    if (!last_reason_.empty()) last_reason_ += "; ";
    absl::StrAppend(&last_reason_, r.code);
  }
  decisions_.push_back(std::move(d));
  return decisions_.back().replicas;
}

}  // namespace twinscale::replay
