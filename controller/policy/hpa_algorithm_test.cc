// Tests of the HPA arithmetic (hpa_algorithm.h): one table per rule, each expected value worked by
// hand in the case's comment from the rules in the header (and the Go functions they cite), never
// captured from a run. Sequences step the fleet instantly to each decision, as a scale subresource
// write does, so each step's current count is the previous step's desired count.
#include "controller/policy/hpa_algorithm.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace twinscale::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Kind = HpaMetricSample::Kind;
using Events = std::deque<std::pair<absl::Time, int32_t>>;
using api::ScalingPolicy;
using api::ScalingRules;
using api::SelectPolicy;

// A conservative scale-down: a 300 s window, then at most 10% of the fleet or 1 pod per 60 s,
// whichever allows more (the step of twinscale's own rate: api::TwinscaleScaleDownPolicies).
ScalingRules TenPercentOrOnePodPerMinute() {
  return ScalingRules{absl::Seconds(300), api::TwinscaleScaleDownPolicies(), SelectPolicy::kMax};
}

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
absl::Time At(int64_t seconds) { return kT0 + absl::Seconds(seconds); }

// Behavior defaults (HPA with spec.behavior = {} filled by the API server).
HpaConfig Behavior(int32_t min_replicas = 1, int32_t max_replicas = 100) {
  HpaConfig c;
  c.min_replicas = min_replicas;
  c.max_replicas = max_replicas;
  return c;
}
// Behavior defaults without a scale-down window, to see a single sync's proposal go through.
HpaConfig NoDownWindow(int32_t min_replicas = 1, int32_t max_replicas = 100) {
  HpaConfig c = Behavior(min_replicas, max_replicas);
  c.scale_down.stabilization_window = absl::ZeroDuration();
  return c;
}
// No spec.behavior: the legacy path (KEDA without `advanced`, a plain HPA).
HpaConfig Legacy(int32_t min_replicas = 1, int32_t max_replicas = 100) {
  HpaConfig c = Behavior(min_replicas, max_replicas);
  c.has_behavior = false;
  return c;
}

HpaMetricSample Sum(double value, double target = 1) {
  HpaMetricSample m;
  m.kind = Kind::kAverageValuePerPod;
  m.value = value;
  m.target = target;
  return m;
}
HpaMetricSample Mean(double value, double target, std::optional<int32_t> reporting = std::nullopt,
                     int32_t pending = 0, int32_t missing = 0) {
  HpaMetricSample m;
  m.kind = Kind::kUtilizationRatio;
  m.value = value;
  m.target = target;
  m.reporting_pods = reporting;
  m.pending_pods = pending;
  m.missing_pods = missing;
  return m;
}
HpaMetricSample Unavailable(Kind kind) {
  HpaMetricSample m;
  m.kind = kind;
  m.available = false;
  return m;
}

// ---------------------------------------------------------------------------------------------
// One sync from a fresh history: the proposal, the tolerance, the metric kinds.

struct SyncCase {
  std::string name;
  HpaConfig config;
  int32_t current;
  HpaMetricSample metric;
  int32_t want_desired;
  int32_t want_raw;
  std::string want_reason;
};

TEST(HpaStepTest, SingleSync) {
  const std::vector<SyncCase> cases = {
      // 21 / (1 x 20) = 1.05; 0.9 <= 1.05 <= 1.1: within, the HPA keeps 20.
      {"tolerance trap: 21 at target 1 on 20 replicas (ratio 1.05) keeps 20", Behavior(), 20,
       Sum(21), 20, 20, "WithinTolerance"},
      // 9 / (1 x 10) = 0.9 = 1 - 0.1: on the inclusive bound, kept.
      {"tolerance trap: 9 at target 1 on 10 replicas (ratio 0.9) keeps 10", NoDownWindow(), 10,
       Sum(9), 10, 10, "WithinTolerance"},
      // 22 / 20 = 1.1 = 1 + 0.1 (the same double): on the inclusive bound, kept.
      {"tolerance trap: 22 on 20 (ratio 1.1, on the bound) keeps 20", Behavior(), 20, Sum(22), 20,
       20, "WithinTolerance"},
      // 12 / 10 = 1.2 > 1.1: ceil(12 / 1) = 12; scale-up limit max(10 + 4, ceil(10 x 2)) = 20.
      {"12 at target 1 on 10 replicas (ratio 1.2) goes to 12", Behavior(), 10, Sum(12), 12, 12,
       "DesiredWithinRange"},
      // 23 / 20 = 1.15 > 1.1: ceil(23) = 23 (limit max(24, 40) = 40).
      {"23 on 20 (ratio 1.15) goes to 23", Behavior(), 20, Sum(23), 23, 23, "DesiredWithinRange"},
      // 8 / 10 = 0.8 < 0.9: ceil(8) = 8; no window; 100% per 15 s allows down to 0, min 1.
      {"8 on 10 (ratio 0.8) goes to 8 without a scale-down window", NoDownWindow(), 10, Sum(8), 8,
       8, "DesiredWithinRange"},
      // Scale-up tolerance 0: 1.05 > 1 + 0, ceil(21) = 21.
      {"per-HPA scale-up tolerance 0 lets 21 on 20 through",
       [] {
         HpaConfig c = Behavior();
         c.scale_up_tolerance = 0.0;
         return c;
       }(),
       20, Sum(21), 21, 21, "DesiredWithinRange"},
      // Scale-down tolerance 0.2: 17 / 20 = 0.85 >= 0.8, within.
      {"per-HPA scale-down tolerance 0.2 swallows 17 on 20 (ratio 0.85)",
       [] {
         HpaConfig c = NoDownWindow();
         c.scale_down_tolerance = 0.2;
         return c;
       }(),
       20, Sum(17), 20, 20, "WithinTolerance"},
      // Without spec.behavior there is nowhere to set a per-HPA tolerance: 1.05 is within 0.1.
      {"per-direction tolerance is ignored without behavior",
       [] {
         HpaConfig c = Legacy();
         c.scale_up_tolerance = 0.0;
         return c;
       }(),
       20, Sum(21), 20, 20, "WithinTolerance"},
      // KEDA's queue rule: 37 / (5 x 4) = 1.85; ceil(37 / 5) = ceil(7.4) = 8; limit max(8, 8) = 8.
      {"AverageValue: 37 waiting at 5 per pod on 4 pods goes to 8", Behavior(), 4, Sum(37, 5), 8, 8,
       "DesiredWithinRange"},
      // 40.5 / (5 x 5) = 1.62; ceil(40.5 / 5) = ceil(8.1) = 9; limit max(9, 10) = 10.
      {"AverageValue: a fractional sum rounds up (40.5 at 5 on 5 pods goes to 9)", Behavior(), 5,
       Sum(40.5, 5), 9, 9, "DesiredWithinRange"},
      // 950m / 800m = 1.1875; ceil(1.1875 x 10) = ceil(11.875) = 12; limit 20.
      {"Pods average: mean 0.95 at 0.8 on 10 pods (ratio 1.1875) goes to 12", Behavior(), 10,
       Mean(0.95, 0.8), 12, 12, "DesiredWithinRange"},
      // 850m / 800m = 1.0625: within.
      {"Pods average: mean 0.85 at 0.8 (ratio 1.0625) keeps 10", Behavior(), 10, Mean(0.85, 0.8),
       10, 10, "WithinTolerance"},
      // ratio 900m / 600m = 1.5 > 1, 4 loading pods count as idle: 10 x 900m = 9000m over 14
      // entries -> 642m (integer division); 642 / 600 = 1.07: within -> keep 14. (All 14
      // reporting would have given ceil(1.5 x 10) = 15.)
      {"Pods average: 4 loading pods count as idle on a scale-up, so 14 holds", Behavior(), 14,
       Mean(0.9, 0.6, 10, 0, 4), 14, 14, "WithinTolerance"},
      // ratio 1.1875 > 1 with 4 Pending pods: 9500m over 14 -> 678m; 678 / 800 = 0.8475 < 0.9 and
      // below 1 while the raw ratio was above 1: the direction flips, hold.
      {"Pods average: Pending pods that flip the ratio below 1 make the HPA hold", Behavior(), 14,
       Mean(0.95, 0.8, 10, 4, 0), 14, 14, "NotReadyPodsHold"},
      // ratio 250m / 500m = 0.5 < 1: Pending pods are not counted; ceil(0.5 x 8) = 4.
      {"Pods average: Pending pods are ignored on a scale-down", NoDownWindow(), 10,
       Mean(0.25, 0.5, 8, 2, 0), 4, 4, "DesiredWithinRange"},
      // ratio 0.5 < 1, 2 loading pods at the target: (6 x 250m + 2 x 500m) / 8 = 2500m / 8 ->
      // 312m; 312 / 500 = 0.624; ceil(0.624 x 8) = ceil(4.992) = 5 (not ceil(0.5 x 6) = 3).
      {"Pods average: loading pods count at the target on a scale-down", NoDownWindow(), 8,
       Mean(0.25, 0.5, 6, 0, 2), 5, 5, "DesiredWithinRange"},
      // No pod reported: "did not receive metrics for targeted pods" -> hold.
      {"Pods average: no pod reported, hold", NoDownWindow(), 10, Mean(0.1, 0.5, 0), 10, 10,
       "FailedGetPodsMetric"},
  };
  for (const SyncCase& c : cases) {
    SCOPED_TRACE(c.name);
    HpaHistory history;
    const HpaDecision d = HpaStep(c.config, c.current, c.metric, kT0, history);
    EXPECT_EQ(d.desired, c.want_desired);
    EXPECT_EQ(d.raw_recommendation, c.want_raw);
    EXPECT_EQ(d.reason, c.want_reason);
  }
}

// ---------------------------------------------------------------------------------------------
// Missing metrics and range clamps, with an optional history to show it does not matter.

struct GuardCase {
  std::string name;
  HpaConfig config;
  int32_t current;
  HpaMetricSample metric;
  HpaHistory history;
  int32_t want_desired;
  std::string want_reason;
};

TEST(HpaStepTest, MissingMetricsAndClamps) {
  // Proposals of 2 made in the last minute: present, they would take 10 down to 2.
  HpaHistory recent_twos;
  recent_twos.recommendations = {{At(-60), 2}, {At(-30), 2}};
  HpaHistory old_nine;
  old_nine.recommendations = {{At(-600), 9}};  // older than any window: replaced, not used
  const std::vector<GuardCase> cases = {
      {"external metric with no items holds",
       Behavior(),
       10,
       Unavailable(Kind::kAverageValuePerPod),
       {},
       10,
       "FailedGetExternalMetric"},
      {"pods metric that failed holds",
       Behavior(),
       10,
       Unavailable(Kind::kUtilizationRatio),
       {},
       10,
       "FailedGetPodsMetric"},
      // Control row: with the metric, 2 / 10 = 0.2, ceil(2) = 2; window 0; 100% per 15 s.
      {"control: the same history with the metric present goes to 2", NoDownWindow(), 10, Sum(2),
       recent_twos, 2, "DesiredWithinRange"},
      {"missing metric never scales down, whatever was recommended before", NoDownWindow(), 10,
       Unavailable(Kind::kAverageValuePerPod), recent_twos, 10, "FailedGetExternalMetric"},
      {"missing metric on the legacy path holds too", Legacy(), 10,
       Unavailable(Kind::kAverageValuePerPod), recent_twos, 10, "FailedGetExternalMetric"},
      {"a non-positive target is treated as a missing metric",
       Behavior(),
       10,
       Sum(50, 0),
       {},
       10,
       "FailedGetExternalMetric"},
      {"zero replicas means scaling is disabled",
       Behavior(),
       0,
       Sum(100),
       {},
       0,
       "ScalingDisabled"},
      // The range checks precede the metric read: above max goes to max even without a metric.
      {"above maxReplicas goes to max before the metric is read",
       Behavior(1, 10),
       12,
       Unavailable(Kind::kAverageValuePerPod),
       {},
       10,
       "TooManyReplicas"},
      {"below minReplicas goes to min", Behavior(2, 10), 1, Sum(0), {}, 2, "TooFewReplicas"},
      // ceil(30) = 30; limit max(8 + 4, 16) = 16 > max 10, so max binds: TooManyReplicas.
      {"a proposal above max is cut to max",
       Behavior(1, 10),
       8,
       Sum(30),
       {},
       10,
       "TooManyReplicas"},
      // ceil(0) = 0; 100% per 15 s allows 0, so min 2 binds: TooFewReplicas.
      {"a proposal below min is raised to min",
       NoDownWindow(2, 10),
       4,
       Sum(0),
       {},
       2,
       "TooFewReplicas"},
      // Legacy: limit max(2 x 8, 4) = 16 > max 10: TooManyReplicas.
      {"legacy: a proposal above max is cut to max",
       Legacy(1, 10),
       8,
       Sum(30),
       {},
       10,
       "TooManyReplicas"},
      // Legacy, the only stored proposal is 10 min old: stabilized 0 < min 2.
      {"legacy: a proposal below min is raised to min", Legacy(2, 10), 4, Sum(0), old_nine, 2,
       "TooFewReplicas"},
  };
  for (const GuardCase& c : cases) {
    SCOPED_TRACE(c.name);
    HpaHistory history = c.history;
    const HpaDecision d = HpaStep(c.config, c.current, c.metric, kT0, history);
    EXPECT_EQ(d.desired, c.want_desired);
    EXPECT_EQ(d.reason, c.want_reason);
  }
}

TEST(HpaStepTest, MissingMetricRecordsNoRecommendation) {
  // The first sync still remembers the size it found (recordInitialRecommendation), but the
  // failed metric adds no proposal.
  HpaHistory history;
  HpaStep(Behavior(), 7, Unavailable(Kind::kAverageValuePerPod), kT0, history);
  EXPECT_THAT(history.recommendations, ElementsAre(Pair(kT0, 7)));
  EXPECT_TRUE(history.scale_events.empty());
}

// ---------------------------------------------------------------------------------------------
// Sequences: stabilization windows and rate limits need history.

struct Step {
  int64_t t;     // seconds after kT0
  double value;  // the metric (a sum at target 1 unless the case says otherwise)
  int32_t want_desired;
  std::string want_reason;
};

struct SequenceCase {
  std::string name;
  HpaConfig config;
  int32_t initial;
  std::vector<Step> steps;
};

TEST(HpaStepTest, Sequences) {
  const std::vector<SequenceCase> cases = {
      {"behavior defaults: from 2 wanting 20 the limit is max(4 pods, 100%) per 15 s",
       Behavior(),
       2,
       {
           // start 2: Pods 2 + 4 = 6, Percent ceil(2 x 2) = 4, Max -> 6. Event +4 at 0.
           {0, 20, 6, "ScaleUpLimit"},
           // The +4 at 0 is inside (10 - 15, 10]: start 6 - 4 = 2, limit 6 again: held.
           {10, 20, 6, "ScaleUpLimit"},
           // At 15 the event at 0 is not newer than 15 - 15 = 0: start 6, max(10, 12) = 12.
           {15, 20, 12, "ScaleUpLimit"},
           // start 12 (the +6 at 15 is not newer than 15): max(16, 24) = 24 >= 20.
           {30, 20, 20, "DesiredWithinRange"},
           // 20 / 20 = 1.
           {45, 20, 20, "WithinTolerance"},
       }},
      {"no behavior (KEDA's HPA): from 2 wanting 20 the limit is max(2 x current, 4) per sync",
       Legacy(),
       2,
       {
           {0, 20, 4, "ScaleUpLimit"},    // max(2 x 2, 4) = 4 (the behavior path would allow 6)
           {5, 20, 8, "ScaleUpLimit"},    // no period memory: max(2 x 4, 4) = 8, 5 s later
           {20, 20, 16, "ScaleUpLimit"},  // max(16, 4) = 16
           {35, 20, 20, "DesiredWithinRange"},  // limit 32 >= 20
       }},
      {"scale-down stabilization holds the max of the last 300 s of proposals",
       Behavior(),
       10,
       {
           {0, 10, 10, "WithinTolerance"},       // 10 / 10 = 1
           {60, 8, 10, "ScaleDownStabilized"},   // proposal 8; window holds 10 (t = 0)
           {120, 6, 10, "ScaleDownStabilized"},  // proposal 6
           {180, 3, 10, "ScaleDownStabilized"},  // proposal 3
           {299, 3, 10,
            "ScaleDownStabilized"},  // t = 0 is still newer than 299 - 300
                                     // (0, 300]: 8 (60), 6 (120), 3 (180, 299, 300): max 8.
           {300, 3, 8, "ScaleDownStabilized"},
           // current 8, proposal ceil(3) = 3; (60, 360]: 6, 3, 3, 3, 3: max 6.
           {360, 3, 6, "ScaleDownStabilized"},
           // (120, 420]: all 3. Proposal at 6: 3 / 6 = 0.5, ceil(3) = 3.
           {420, 3, 3, "DesiredWithinRange"},
       }},
      {"legacy stabilization window includes its boundary",
       Legacy(),
       10,
       {
           {0, 10, 10, "WithinTolerance"},
           {60, 8, 10, "ScaleDownStabilized"},
           {120, 6, 10, "ScaleDownStabilized"},
           {180, 3, 10, "ScaleDownStabilized"},
           // cutoff 0: the 10s at t = 0 are not before it, so they still count.
           {300, 3, 10, "ScaleDownStabilized"},
           // cutoff 1: max of 8 (60), 6, 3, 3 = 8; legacy limit max(20, 4) does not bind.
           {301, 3, 8, "ScaleDownStabilized"},
       }},
      {"legacy: a recent high proposal keeps scaling up after the load drops",
       Legacy(),
       4,
       {
           // proposal 30; stabilized max(30, 4) = 30; limit max(2 x 4, 4) = 8.
           {0, 30, 8, "ScaleUpLimit"},
           // 6 / 8 = 0.75, proposal 6; stabilized max(6, 4, 30) = 30; limit 16.
           {15, 6, 16, "ScaleUpLimit"},
           // proposal 6; stabilized 30; limit 32 does not bind: 30, far above the load.
           {30, 6, 30, "ScaleDownStabilized"},
       }},
      {"behavior: the same proposals never scale up past the current count",
       Behavior(),
       4,
       {
           // start 4: max(4 + 4, 8) = 8.
           {0, 30, 8, "ScaleUpLimit"},
           // proposal 6; up = 6 (no scale-up window), down = max(4, 30, 6) = 30; current 8 is in
           // [6, 30]: stays 8.
           {15, 6, 8, "ScaleDownStabilized"},
           {30, 6, 8, "ScaleDownStabilized"},
       }},
      {"scale-up stabilization waits for the whole window",
       [] {
         HpaConfig c = Behavior();
         c.scale_up.stabilization_window = absl::Seconds(60);
         return c;
       }(),
       4,
       {
           {0, 4, 4, "WithinTolerance"},
           // proposal 10; up = min(4 (t = 0), 10) = 4; current 4 stays.
           {15, 10, 4, "ScaleUpStabilized"},
           // (0, 60]: only the 10 at 15: up = 10; limit max(4 + 4, 8) = 8.
           {60, 10, 8, "ScaleUpLimit"},
           // current 8, 10 / 8 = 1.25, proposal 10; (15, 75]: 10; limit: the +4 at 60 is not
           // newer than 75 - 15 = 60, start 8, max(12, 16) = 16.
           {75, 10, 10, "DesiredWithinRange"},
       }},
      {"a conservative scale-down: 300 s, then 10% or 1 pod per 60 s (from 10)",
       [] {
         HpaConfig c = Behavior();
         c.scale_down = TenPercentOrOnePodPerMinute();
         return c;
       }(),
       10,
       {
           {0, 2, 10, "ScaleDownStabilized"},  // proposal ceil(2) = 2; window holds 10
           {150, 2, 10, "ScaleDownStabilized"},
           {299, 2, 10,
            "ScaleDownStabilized"},  // the 10 at t = 0 is still in (-1, 299]
                                     // Window (0, 300] holds only 2s. start 10: Percent trunc(10 x
                                     // 0.9) = 9, Pods 9; Max (the larger change) -> 9.
           {300, 2, 9, "ScaleDownLimit"},
           // The -1 at 300 is inside (270, 330]: start 10, limit 9 = current: held.
           {330, 2, 9, "ScaleDownLimit"},
           // 300 is not newer than 360 - 60: start 9, trunc(8.1) = 8, Pods 8 -> 8.
           {360, 2, 8, "ScaleDownLimit"},
           {419, 2, 8, "ScaleDownLimit"},  // the -1 at 360 is inside (359, 419]
           {420, 2, 7, "ScaleDownLimit"},  // start 8: trunc(7.2) = 7, Pods 7 -> 7
       }},
      {"a conservative scale-down from 40 removes 10% per 60 s",
       [] {
         HpaConfig c = Behavior();
         c.scale_down = TenPercentOrOnePodPerMinute();
         return c;
       }(),
       40,
       {
           {0, 2, 40, "ScaleDownStabilized"},
           {300, 2, 36, "ScaleDownLimit"},  // trunc(40 x 0.9) = 36 beats Pods 39 (Max)
           {360, 2, 32, "ScaleDownLimit"},  // trunc(36 x 0.9 = 32.4) = 32
           {420, 2, 28, "ScaleDownLimit"},  // trunc(32 x 0.9 = 28.8) = 28
       }},
  };
  for (const SequenceCase& c : cases) {
    SCOPED_TRACE(c.name);
    HpaHistory history;
    int32_t current = c.initial;
    for (const Step& s : c.steps) {
      SCOPED_TRACE(testing::Message() << "t = " << s.t << " s, current " << current);
      const HpaDecision d = HpaStep(c.config, current, Sum(s.value), At(s.t), history);
      EXPECT_EQ(d.desired, s.want_desired);
      EXPECT_EQ(d.reason, s.want_reason);
      current = d.desired;
    }
  }
}

TEST(HpaStepTest, ScaleEventsAreOverwrittenInPlaceLikeStoreScaleEvent) {
  HpaHistory history;
  // The first sequence above: +4 at 0, +6 at 15, +8 at 30.
  HpaStep(Behavior(), 2, Sum(20), At(0), history);
  HpaStep(Behavior(), 6, Sum(20), At(15), history);
  EXPECT_THAT(history.scale_events, ElementsAre(Pair(At(0), 4), Pair(At(15), 6)));
  HpaStep(Behavior(), 12, Sum(20), At(30), history);
  // Longest scale-up period 15 s: at 30 the +4 at 0 is older than 30 - 15 and is overwritten;
  // the +6 at 15 is not older than 15 and stays.
  EXPECT_THAT(history.scale_events, ElementsAre(Pair(At(30), 8), Pair(At(15), 6)));
}

TEST(HpaStepTest, LegacyPathStoresNoScaleEvents) {
  HpaHistory history;
  HpaStep(Legacy(), 2, Sum(20), At(0), history);  // 2 -> 4
  EXPECT_TRUE(history.scale_events.empty());
  EXPECT_THAT(history.recommendations, ElementsAre(Pair(At(0), 2), Pair(At(0), 20)));
}

// ---------------------------------------------------------------------------------------------
// The rate-limit rules on their own: Pods vs Percent, selectPolicy, events in the period.

struct LimitCase {
  std::string name;
  bool up;
  ScalingRules rules;
  int32_t current;
  Events events;  // times relative to kT0 via At()
  int32_t want;
};

ScalingRules PodsAndPercent(SelectPolicy select) {
  return ScalingRules{absl::ZeroDuration(),
                      {{ScalingPolicy::Type::kPods, 4, absl::Seconds(60)},
                       {ScalingPolicy::Type::kPercent, 50, absl::Seconds(60)}},
                      select};
}
ScalingRules OnePercentPolicy(int32_t percent) {
  return ScalingRules{absl::ZeroDuration(),
                      {{ScalingPolicy::Type::kPercent, percent, absl::Seconds(60)}},
                      SelectPolicy::kMax};
}

TEST(HpaLimitTest, PodsPercentAndSelectPolicy) {
  const std::vector<LimitCase> cases = {
      // Up from 10: Pods 14, Percent ceil(10 x 1.5) = 15.
      {"up, Max: the policy allowing more wins (15)",
       true,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {},
       15},
      {"up, Min: the policy allowing less wins (14)",
       true,
       PodsAndPercent(SelectPolicy::kMin),
       10,
       {},
       14},
      {"up, Disabled: no scale-up", true, PodsAndPercent(SelectPolicy::kDisabled), 10, {}, 10},
      // Down from 10: Pods 6, Percent trunc(10 x 0.5) = 5.
      {"down, Max: the larger change wins (5)",
       false,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {},
       5},
      {"down, Min: the smaller change wins (6)",
       false,
       PodsAndPercent(SelectPolicy::kMin),
       10,
       {},
       6},
      {"down, Disabled: no scale-down", false, PodsAndPercent(SelectPolicy::kDisabled), 10, {}, 10},
      // +4 at -30 s is inside the 60 s period: start 6, Pods 10, Percent ceil(9) = 9 -> 10.
      {"up: replicas added in the period shrink the room",
       true,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {{At(-30), 4}},
       10},
      // +4 at exactly -60 s is not newer than now - 60: start 10 -> 15.
      {"up: an event exactly one period old no longer counts",
       true,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {{At(-60), 4}},
       15},
      // -2 at -30 s: start 10 + 2 = 12; Pods 16, Percent ceil(18) = 18.
      {"up: replicas removed in the period count too (both directions)",
       true,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {{At(-30), -2}},
       18},
      // current 6 after -4 at -30 s: start 10; Pods 6, Percent 5 -> 5.
      {"down: the Percent base is the size when the period began",
       false,
       PodsAndPercent(SelectPolicy::kMax),
       6,
       {{At(-30), -4}},
       5},
      // current 10 after +5 at -30 s: start 5; Pods 1, Percent trunc(2.5) = 2 -> min 1.
      {"down: a scale-up in the period lowers the base",
       false,
       PodsAndPercent(SelectPolicy::kMax),
       10,
       {{At(-30), 5}},
       1},
      // ceil(3 x 1.1) = ceil(3.3...) = 4: rounded up so a small fleet can always grow.
      {"up: Percent rounds up (10% of 3 -> 4)", true, OnePercentPolicy(10), 3, {}, 4},
      {"down: Percent truncates (10% of 3: trunc(2.7) = 2)", false, OnePercentPolicy(10), 3, {}, 2},
      {"down: Percent truncates (10% of 9: trunc(8.1) = 8)", false, OnePercentPolicy(10), 9, {}, 8},
      {"down: Percent truncates (50% of 3: trunc(1.5) = 1)", false, OnePercentPolicy(50), 3, {}, 1},
      {"down: 100% allows 0", false, OnePercentPolicy(100), 10, {}, 0},
      {"up: no policies leaves no room",
       true,
       ScalingRules{absl::ZeroDuration(), {}, SelectPolicy::kMax},
       10,
       {},
       10},
  };
  for (const LimitCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int32_t got = c.up ? HpaScaleUpLimit(c.current, c.events, c.rules, kT0)
                             : HpaScaleDownLimit(c.current, c.events, c.rules, kT0);
    EXPECT_EQ(got, c.want);
  }
}

TEST(HpaLimitTest, ReplicasChangedInPeriod) {
  const Events events = {{At(-90), 5}, {At(-60), 3}, {At(-30), -2}, {At(-1), 1}};
  // (-60, 0]: -2 and +1 = -1 (the +3 at exactly -60 is out).
  EXPECT_EQ(ReplicasChangedInPeriod(events, absl::Seconds(60), kT0), -1);
  // (-120, 0]: 5 + 3 - 2 + 1 = 7.
  EXPECT_EQ(ReplicasChangedInPeriod(events, absl::Seconds(120), kT0), 7);
  EXPECT_EQ(ReplicasChangedInPeriod(events, absl::ZeroDuration(), kT0), 0);
}

}  // namespace
}  // namespace twinscale::policy
