// The HPA's replica arithmetic (see hpa_algorithm.h for the rules and the Go functions they
// follow). Arithmetic is done where the controller does it: metric values as int64 milli-units,
// ratios and percent policies in double (IEEE, as Go's float64, so the same roundings fall out),
// replica counts as int32 with int64 intermediates so nothing wraps.
#include "controller/policy/hpa_algorithm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace twinscale::policy {
namespace {

using Events = std::deque<std::pair<absl::Time, int32_t>>;

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();

int32_t ClampToInt32(double v) {
  if (!(v < static_cast<double>(kInt32Max))) return kInt32Max;  // also NaN: the Go code caps
  if (v < static_cast<double>(kInt32Min)) return kInt32Min;
  return static_cast<int32_t>(v);  // truncation toward zero, as Go's int32(float64)
}

int32_t ClampToInt32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, kInt32Min, kInt32Max));
}

// A quantity as the controller reads it: Quantity.MilliValue(). We round to the nearest milli-unit
// (see the header for why the last milli-unit does not matter).
int64_t Milli(double v) { return std::llround(v * 1000.0); }

// Tolerances.isWithin: both bounds inclusive.
struct Tolerances {
  double down = 0.1;
  double up = 0.1;
  bool IsWithin(double ratio) const { return (1.0 - down) <= ratio && ratio <= (1.0 + up); }
};

Tolerances TolerancesFor(const HpaConfig& config) {
  Tolerances t{config.tolerance, config.tolerance};
  if (config.has_behavior) {  // per-direction tolerances live in spec.behavior
    if (config.scale_down_tolerance.has_value()) t.down = *config.scale_down_tolerance;
    if (config.scale_up_tolerance.has_value()) t.up = *config.scale_up_tolerance;
  }
  return t;
}

// The metric's proposal; `hold` names why it equals the current count when a rule made it so.
struct Proposal {
  bool available = true;
  int32_t replicas = 0;
  std::string_view hold;  // empty, kWithinTolerance or kNotReadyPodsHold

  static Proposal Missing() { return {false, 0, {}}; }
  static Proposal Held(int32_t current, std::string_view why) { return {true, current, why}; }
  static Proposal Scale(int32_t replicas) { return {true, replicas, {}}; }
};

// GetExternalPerPodMetricReplicas.
Proposal ExternalAverageValueProposal(int32_t current, const HpaMetricSample& m,
                                      const Tolerances& tol) {
  const int64_t usage = Milli(m.value);
  const int64_t target = Milli(m.target);
  if (target <= 0) return Proposal::Missing();
  const double ratio =
      static_cast<double>(usage) / (static_cast<double>(target) * static_cast<double>(current));
  if (tol.IsWithin(ratio)) return Proposal::Held(current, hpa_reason::kWithinTolerance);
  return Proposal::Scale(
      ClampToInt32(std::ceil(static_cast<double>(usage) / static_cast<double>(target))));
}

// calcPlainMetricReplicas, with the pods grouped as groupPods does and the mean as
// GetMetricUsageRatio computes it (integer division of the milli total by the entry count).
Proposal PodsAverageProposal(int32_t current, const HpaMetricSample& m, const Tolerances& tol) {
  const int64_t reporting = m.reporting_pods.value_or(current);
  const int64_t target = Milli(m.target);
  // "did not receive metrics for targeted pods (pods might be unready)"
  if (reporting <= 0 || target <= 0) return Proposal::Missing();
  const int64_t pending = std::max(0, m.pending_pods);
  const int64_t missing = std::max(0, m.missing_pods);
  const int64_t mean = Milli(m.value);
  const double ratio = static_cast<double>(mean) / static_cast<double>(target);

  const bool scale_up_with_unready = pending > 0 && ratio > 1.0;
  if (!scale_up_with_unready && missing == 0) {
    if (tol.IsWithin(ratio)) return Proposal::Held(current, hpa_reason::kWithinTolerance);
    return Proposal::Scale(ClampToInt32(std::ceil(ratio * static_cast<double>(reporting))));
  }

  // Re-run the average with the pods that have no metric filled in.
  int64_t total = mean * reporting;
  int64_t entries = reporting;
  if (missing > 0) {
    if (ratio < 1.0) {  // scale-down: a pod still loading is assumed to sit exactly at the target
      total += target * missing;
      entries += missing;
    } else if (ratio > 1.0) {  // scale-up: it is assumed idle
      entries += missing;
    }
  }
  if (scale_up_with_unready) entries += pending;  // Pending pods count as idle on a scale-up
  const double new_ratio = static_cast<double>(total / entries) / static_cast<double>(target);

  if (tol.IsWithin(new_ratio)) return Proposal::Held(current, hpa_reason::kWithinTolerance);
  if ((ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0)) {
    return Proposal::Held(current, hpa_reason::kNotReadyPodsHold);
  }
  const int32_t new_replicas = ClampToInt32(std::ceil(new_ratio * static_cast<double>(entries)));
  if ((new_ratio < 1.0 && new_replicas > current) || (new_ratio > 1.0 && new_replicas < current)) {
    return Proposal::Held(current, hpa_reason::kNotReadyPodsHold);
  }
  return Proposal::Scale(new_replicas);
}

// Overwrites the LAST entry for which `outdated` holds, else appends: the controller's way of
// keeping its per-HPA slices bounded (stabilizeRecommendation*, storeScaleEvent).
template <typename Pred>
void ReplaceLastOutdatedOrAppend(Events& events, std::pair<absl::Time, int32_t> entry,
                                 Pred outdated) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (outdated(*it)) {
      *it = entry;
      return;
    }
  }
  events.push_back(entry);
}

// stabilizeRecommendation (no behavior): max over recommendations not before now - window.
int32_t StabilizeLegacy(const HpaConfig& config, int32_t proposal, absl::Time now,
                        HpaHistory& history) {
  const absl::Time cutoff = now - config.downscale_stabilization;
  int32_t max_recommendation = proposal;
  for (const auto& [when, recommendation] : history.recommendations) {
    if (!(when < cutoff)) max_recommendation = std::max(max_recommendation, recommendation);
  }
  ReplaceLastOutdatedOrAppend(history.recommendations, {now, proposal},
                              [&](const auto& rec) { return rec.first < cutoff; });
  return max_recommendation;
}

// stabilizeRecommendationWithBehaviors.
int32_t StabilizeWithBehaviors(const HpaConfig& config, int32_t current, int32_t proposal,
                               absl::Time now, HpaHistory& history) {
  const absl::Time up_cutoff = now - config.scale_up.stabilization_window;
  const absl::Time down_cutoff = now - config.scale_down.stabilization_window;
  int32_t up_recommendation = proposal;
  int32_t down_recommendation = proposal;
  for (const auto& [when, recommendation] : history.recommendations) {
    if (when > up_cutoff) up_recommendation = std::min(up_recommendation, recommendation);
    if (when > down_cutoff) down_recommendation = std::max(down_recommendation, recommendation);
  }
  // Bring the current count into [up, down]: a scale-up must have been wanted for the whole
  // scale-up window, a scale-down for the whole scale-down window.
  int32_t recommendation = current;
  if (recommendation < up_recommendation) recommendation = up_recommendation;
  if (recommendation > down_recommendation) recommendation = down_recommendation;
  ReplaceLastOutdatedOrAppend(history.recommendations, {now, proposal}, [&](const auto& rec) {
    return rec.first < up_cutoff && rec.first < down_cutoff;
  });
  return recommendation;
}

struct Limited {
  int32_t replicas;
  std::string_view reason;  // kDesiredWithinRange when nothing cut the change
};

// convertDesiredReplicasWithBehaviorRate.
Limited ConvertWithBehaviorRate(const HpaConfig& config, int32_t current, int32_t desired,
                                const HpaHistory& history, absl::Time now) {
  if (desired > current) {
    const int32_t limit = HpaScaleUpLimit(current, history.scale_events, config.scale_up, now);
    int32_t maximum_allowed = config.max_replicas;
    std::string_view reason = hpa_reason::kTooManyReplicas;
    if (maximum_allowed > limit) {
      maximum_allowed = limit;
      reason = hpa_reason::kScaleUpLimit;
    }
    if (desired > maximum_allowed) return {maximum_allowed, reason};
  } else if (desired < current) {
    const int32_t limit = HpaScaleDownLimit(current, history.scale_events, config.scale_down, now);
    int32_t minimum_allowed = config.min_replicas;
    std::string_view reason = hpa_reason::kTooFewReplicas;
    if (minimum_allowed < limit) {
      minimum_allowed = limit;
      reason = hpa_reason::kScaleDownLimit;
    }
    if (desired < minimum_allowed) return {minimum_allowed, reason};
  }
  return {desired, hpa_reason::kDesiredWithinRange};
}

// convertDesiredReplicasWithRules with calculateScaleUpLimit (no behavior).
Limited ConvertWithRules(const HpaConfig& config, int32_t current, int32_t desired) {
  // int32(math.Max(scaleUpLimitFactor * current, scaleUpLimitMinimum)): 2x, at least 4.
  const int32_t scale_up_limit = ClampToInt32(std::max(2.0 * static_cast<double>(current), 4.0));
  int32_t maximum_allowed = config.max_replicas;
  std::string_view reason = hpa_reason::kTooManyReplicas;
  if (config.max_replicas > scale_up_limit) {
    maximum_allowed = scale_up_limit;
    reason = hpa_reason::kScaleUpLimit;
  }
  if (desired < config.min_replicas) return {config.min_replicas, hpa_reason::kTooFewReplicas};
  if (desired > maximum_allowed) return {maximum_allowed, reason};
  return {desired, hpa_reason::kDesiredWithinRange};
}

absl::Duration LongestPolicyPeriod(const api::ScalingRules& rules) {
  absl::Duration longest = absl::ZeroDuration();
  for (const api::ScalingPolicy& p : rules.policies) longest = std::max(longest, p.period);
  return longest;
}

// storeScaleEvent (behavior path only; a nil behavior stores nothing).
void StoreScaleEvent(const HpaConfig& config, int32_t previous, int32_t next, absl::Time now,
                     HpaHistory& history) {
  if (!config.has_behavior || next == previous) return;
  const bool up = next > previous;
  const absl::Time cutoff = now - LongestPolicyPeriod(up ? config.scale_up : config.scale_down);
  ReplaceLastOutdatedOrAppend(history.scale_events, {now, next - previous}, [&](const auto& e) {
    return (up ? e.second > 0 : e.second < 0) && e.first < cutoff;
  });
}

HpaDecision Hold(int32_t replicas, std::string_view reason) {
  return {replicas, replicas, replicas, std::string(reason)};
}

}  // namespace

int32_t ReplicasChangedInPeriod(const Events& scale_events, absl::Duration period, absl::Time now) {
  const absl::Time cutoff = now - period;
  int64_t change = 0;
  for (const auto& [when, delta] : scale_events) {
    if (when > cutoff) change += delta;
  }
  return ClampToInt32(change);
}

int32_t HpaScaleUpLimit(int32_t current, const Events& scale_events, const api::ScalingRules& rules,
                        absl::Time now) {
  if (rules.select == api::SelectPolicy::kDisabled) return current;
  const bool pick_min = rules.select == api::SelectPolicy::kMin;
  int64_t result = pick_min ? kInt32Max : kInt32Min;
  for (const api::ScalingPolicy& policy : rules.policies) {
    // current - added + removed in the period: the fleet size when the period began.
    const int64_t start =
        int64_t{current} - ReplicasChangedInPeriod(scale_events, policy.period, now);
    int64_t proposed = start;
    if (policy.type == api::ScalingPolicy::Type::kPods) {
      proposed = start + policy.value;
    } else {
      proposed = ClampToInt32(std::ceil(static_cast<double>(start) *
                                        (1.0 + static_cast<double>(policy.value) / 100.0)));
    }
    result = pick_min ? std::min(result, proposed) : std::max(result, proposed);
  }
  return std::max(current, ClampToInt32(result));
}

int32_t HpaScaleDownLimit(int32_t current, const Events& scale_events,
                          const api::ScalingRules& rules, absl::Time now) {
  if (rules.select == api::SelectPolicy::kDisabled) return current;
  // For a scale-down the policy allowing the smaller change gives the HIGHER floor.
  const bool smallest_change = rules.select == api::SelectPolicy::kMin;
  int64_t result = smallest_change ? kInt32Min : kInt32Max;
  for (const api::ScalingPolicy& policy : rules.policies) {
    const int64_t start =
        int64_t{current} - ReplicasChangedInPeriod(scale_events, policy.period, now);
    int64_t proposed = start;
    if (policy.type == api::ScalingPolicy::Type::kPods) {
      proposed = start - policy.value;
    } else {
      proposed = ClampToInt32(static_cast<double>(start) *
                              (1.0 - static_cast<double>(policy.value) / 100.0));
    }
    result = smallest_change ? std::max(result, proposed) : std::min(result, proposed);
  }
  return std::min(current, ClampToInt32(result));
}

HpaDecision HpaStep(const HpaConfig& config, int32_t current_replicas,
                    const HpaMetricSample& metric, absl::Time now, HpaHistory& history) {
  const int32_t current = current_replicas;
  // recordInitialRecommendation: the first sync remembers the size it found.
  if (history.recommendations.empty()) history.recommendations.push_back({now, current});

  // reconcileAutoscaler's range checks come before any metric is read.
  if (current == 0 && config.min_replicas != 0) return Hold(0, hpa_reason::kScalingDisabled);
  if (current > config.max_replicas || current < config.min_replicas) {
    const bool above = current > config.max_replicas;
    const int32_t target = above ? config.max_replicas : config.min_replicas;
    StoreScaleEvent(config, current, target, now, history);
    return Hold(target, above ? hpa_reason::kTooManyReplicas : hpa_reason::kTooFewReplicas);
  }

  const bool external = metric.kind == HpaMetricSample::Kind::kAverageValuePerPod;
  const std::string_view failed =
      external ? hpa_reason::kFailedGetExternalMetric : hpa_reason::kFailedGetPodsMetric;
  if (!metric.available) return Hold(current, failed);
  const Tolerances tolerances = TolerancesFor(config);
  const Proposal proposal = external ? ExternalAverageValueProposal(current, metric, tolerances)
                                     : PodsAverageProposal(current, metric, tolerances);
  if (!proposal.available) return Hold(current, failed);

  int32_t stabilized = 0;
  Limited limited{};
  std::string_view stabilized_reason;
  if (config.has_behavior) {
    stabilized = StabilizeWithBehaviors(config, current, proposal.replicas, now, history);
    // The controller names the direction by the proposal, not by the result.
    stabilized_reason = proposal.replicas >= current ? hpa_reason::kScaleUpStabilized
                                                     : hpa_reason::kScaleDownStabilized;
    limited = ConvertWithBehaviorRate(config, current, stabilized, history, now);
  } else {
    stabilized = StabilizeLegacy(config, proposal.replicas, now, history);
    stabilized_reason = hpa_reason::kScaleDownStabilized;  // the only reason the legacy path has
    limited = ConvertWithRules(config, current, stabilized);
  }

  HpaDecision decision;
  decision.desired = limited.replicas;
  decision.raw_recommendation = proposal.replicas;
  decision.stabilized = stabilized;
  if (limited.replicas != stabilized) {
    decision.reason = std::string(limited.reason);
  } else if (stabilized != proposal.replicas) {
    decision.reason = std::string(stabilized_reason);
  } else if (!proposal.hold.empty()) {
    decision.reason = std::string(proposal.hold);
  } else {
    decision.reason = std::string(hpa_reason::kDesiredWithinRange);
  }
  StoreScaleEvent(config, current, decision.desired, now, history);
  return decision;
}

}  // namespace twinscale::policy
