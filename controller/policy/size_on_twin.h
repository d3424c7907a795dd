// The decision's fourth stage: the fleet sized on the twin for the aimed forecast, and what that
// sizing says (the recommendation, before windows and rate limits, with its reasons).
//
// - Keeping or adding capacity is judged after the warm-up (before it, the fleet already ordered
//   is all there is): if the twin forecasts the aim missed at the current size, the smallest N
//   that meets it (fleet_sizing.h: doubling, then bisection). A miss within the twin's own noise
//   holds (MissWithinNoise), and so does a clear miss above the SLO's own percentile until the
//   next decision's independent draw confirms it (MissUnconfirmed). Neither is held where the
//   fleet's last minute missed, or where `rise_on_record` (SizingBounds::rise_on_record: the
//   arrivals ran above the rate forecast check after check, and the SLO's record has no minutes
//   to spare) confirms the miss.
// - Removing capacity is judged from now, at the safety margin (each request using at most that
//   share of its slack), only on fresh inputs with the fleet under both limits (queue per replica,
//   KV use), pooled with the same question's draws by the earlier decisions of the scale-down
//   window at this size.
// - The limits trigger scale-up only with enforceOnScaleUp (LimitsExceeded).
// Pure: the twin is asked through the Forecaster interface.
#ifndef TWINSCALE_CONTROLLER_POLICY_SIZE_ON_TWIN_H_
#define TWINSCALE_CONTROLLER_POLICY_SIZE_ON_TWIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/fleet_sizing.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/policy_history.h"
#include "controller/policy/reason.h"
#include "controller/state/fleet_snapshot.h"

namespace twinscale::policy {

// The size the searches start from and the scale-in draws are kept for: the current one, at least
// 1, within the configured bounds.
int32_t BaseSize(int32_t current, const PolicyConfig& config);

// The fleet against its limits: waiting requests per Ready replica (at least one replica counted)
// and the highest KV use.
struct FleetLoad {
  double queue_per_replica = 0;
  double kv_usage = 0;
  bool over_limits = false;  // either above spec.limits
};
FleetLoad LoadOf(const state::FleetSnapshot& snapshot, const PolicyConfig& config);

// The searches' bounds: scale-in allowed only on fresh inputs under both limits; the evidence is
// the earlier draws within the scale-down window asked at this base with the same margin, SLO and
// starting pods left out; the searches start at the previous recommendation.
SizingBounds BoundsFor(const state::FleetSnapshot& snapshot, const PolicyConfig& config,
                       const PolicyHistory& history, int32_t base, int32_t not_counted,
                       const FleetLoad& load, absl::Time now);

// What a sizing says: the recommendation and its reasons.
struct SizingVerdict {
  int32_t recommendation = 0;
  bool slo_at_risk = false;  // SloUnattainable or MaxReplicasInsufficient
  std::vector<Reason> reasons;
};
// `question` is the one sized; `pooled_at_answer` the earlier draws pooled into a scale-in's
// answer.
SizingVerdict ReadSizing(const Sizing& sizing, const ForecastQuestion& question,
                         const PolicyConfig& config, const FleetLoad& load, bool stale,
                         const std::string& stale_reason, int32_t base, int32_t pooled_at_answer);

struct SizedFleet {
  SizingBounds bounds;
  Sizing sizing;
  // This decision's own scale-in draws (at the margin), which later decisions pool.
  std::vector<MarginForecast> scale_in_forecasts;
  SizingVerdict verdict;
};
SizedFleet SizeOnTwin(const ForecastQuestion& question, const state::FleetSnapshot& snapshot,
                      const PolicyConfig& config, const PolicyHistory& history,
                      const Forecaster& forecaster, int32_t base, int32_t not_counted,
                      bool rise_on_record, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_SIZE_ON_TWIN_H_
