// twinscale's policy in replay: see twinscale_autoscaler.h.
#include "controller/replay/twinscale_autoscaler.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace twinscale::replay {

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, policy::PolicyConfig config,
                                         twin::TwinOptions twin, policy::Mode mode)
    : name_(std::move(name)),
      decider_(config, std::move(twin), absl::Seconds(45)),
      output_(mode, config.min_replicas, config.max_replicas) {}

int32_t TwinscaleAutoscaler::Decide(const ClusterView& view) {
  policy::Decision d = decider_.Decide(view);
  speed_history_.push_back(decider_.forecaster().options().speed.decode);
  prediction_error_ms_.push_back(decider_.last_prediction_error_ms().value_or(std::nan("")));
  last_reason_.clear();
  for (const policy::Reason& r : d.reasons) {
    if (!last_reason_.empty()) last_reason_ += "; ";
    absl::StrAppend(&last_reason_, r.code);
  }
  decisions_.push_back(std::move(d));
  const int32_t decided = decisions_.back().replicas;
  const int32_t applied = output_.Apply(decided, view.spec_replicas, view.now);
  if (applied != decided) {
    absl::StrAppend(&last_reason_, "; HPA ", output_.last_reason(), " (decided ", decided,
                    ", HPA set ", applied, ")");
  }
  return applied;
}

}  // namespace twinscale::replay
