// Tests of the replay baselines (baselines.h): names, the family parser (good inputs with the specs
// they must give; bad inputs with why they are bad), and single syncs and sequences of each
// baseline, every expected count worked by hand from the HPA rules in hpa_algorithm.h.
#include "controller/policy/baselines.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace twinscale::policy {
namespace {

using ::testing::ElementsAreArray;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
absl::Time At(int64_t seconds) { return kT0 + absl::Seconds(seconds); }

BaselineSpec Spec(BaselineKind kind, double parameter, int32_t min_replicas = 1,
                  int32_t max_replicas = 64) {
  BaselineSpec s;
  s.kind = kind;
  s.parameter = parameter;
  s.min_replicas = min_replicas;
  s.max_replicas = max_replicas;
  return s;
}

// All pods ready and reporting.
FleetSignals Fleet(int64_t t, int32_t replicas, double waiting_sum, double kv_mean = 0) {
  FleetSignals f;
  f.now = At(t);
  f.current_replicas = replicas;
  f.ready_replicas = replicas;
  f.waiting_sum = waiting_sum;
  f.kv_usage_mean = kv_mean;
  return f;
}

std::vector<std::string> Names(const std::vector<BaselineSpec>& specs) {
  std::vector<std::string> names;
  for (const BaselineSpec& s : specs) names.push_back(s.Name());
  return names;
}

TEST(BaselineSpecTest, Names) {
  EXPECT_EQ(Spec(BaselineKind::kKedaQueue, 5).Name(), "keda-queue-5");
  EXPECT_EQ(Spec(BaselineKind::kHpaKv, 0.8).Name(), "hpa-kv-0.8");
  EXPECT_EQ(Spec(BaselineKind::kStatic, 12).Name(), "static-12");
  EXPECT_EQ(Spec(BaselineKind::kKedaQueue, 2.5).Name(), "keda-queue-2.5");
}

TEST(BaselineSpecTest, DefaultsSyncEvery15sAndRunTheLegacyHpa) {
  const BaselineSpec s = Spec(BaselineKind::kKedaQueue, 5, 2, 20);
  EXPECT_EQ(s.sync_period, absl::Seconds(15));
  const HpaConfig c = BaselineHpaConfig(s);
  EXPECT_FALSE(c.has_behavior);  // KEDA without `advanced` creates an HPA with no behavior
  EXPECT_EQ(c.min_replicas, 2);
  EXPECT_EQ(c.max_replicas, 20);
  EXPECT_DOUBLE_EQ(c.tolerance, 0.1);
}

// ---------------------------------------------------------------------------------------------
// ParseBaselineFamily.

struct ParseGood {
  std::string name;
  std::string text;
  std::vector<std::string> want_names;
};

TEST(ParseBaselineFamilyTest, GoodInputs) {
  const std::vector<ParseGood> cases = {
      {"keda-queue alone is the default sweep",
       "keda-queue",
       {"keda-queue-1", "keda-queue-2", "keda-queue-3", "keda-queue-5", "keda-queue-10"}},
      {"hpa-kv alone is the default sweep",
       "hpa-kv",
       {"hpa-kv-0.6", "hpa-kv-0.7", "hpa-kv-0.8", "hpa-kv-0.9"}},
      {"static with its sizes", "static:4,8,12", {"static-4", "static-8", "static-12"}},
      {"explicit keda thresholds, spaces ignored",
       " keda-queue : 2, 4 ",
       {"keda-queue-2", "keda-queue-4"}},
      {"explicit KV target", "hpa-kv:0.75", {"hpa-kv-0.75"}},
      {"a KV target of exactly 1 is allowed", "hpa-kv:1", {"hpa-kv-1"}},
  };
  for (const ParseGood& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<std::vector<BaselineSpec>> specs = ParseBaselineFamily(c.text, 2, 40);
    ASSERT_TRUE(specs.ok()) << specs.status();
    EXPECT_THAT(Names(*specs), ElementsAreArray(c.want_names));
    for (const BaselineSpec& s : *specs) {
      EXPECT_EQ(s.min_replicas, 2);
      EXPECT_EQ(s.max_replicas, 40);
      EXPECT_EQ(s.sync_period, absl::Seconds(15));
    }
  }
}

struct ParseBad {
  std::string name;  // why the input is bad
  std::string text;
  int32_t min_replicas;
  int32_t max_replicas;
  std::string want_in_message;
};

TEST(ParseBaselineFamilyTest, BadInputs) {
  const std::vector<ParseBad> cases = {
      {"empty text names no family", "", 1, 64, "unknown family"},
      {"knative is not a baseline family", "knative", 1, 64, "unknown family \"knative\""},
      {"family names are exact (no plural)", "keda-queues:5", 1, 64, "unknown family"},
      {"static has no default sizes", "static", 1, 64, "static needs its replica counts"},
      {"a colon with nothing after it is an empty value", "static:", 1, 64, "empty value"},
      {"an empty value between commas", "static:4,,8", 1, 64, "empty value"},
      {"a static fleet of zero replicas", "static:0", 1, 64, "whole number of replicas >= 1"},
      {"a static fleet of half a replica", "static:4.5", 1, 64, "whole number of replicas"},
      {"a queue threshold of zero would divide by zero", "keda-queue:0", 1, 64, "> 0"},
      {"a negative queue threshold", "keda-queue:-1", 1, 64, "> 0"},
      {"an infinite queue threshold never scales", "keda-queue:inf", 1, 64, "> 0"},
      {"not a number", "keda-queue:abc", 1, 64, "\"abc\" is not a number"},
      {"KV use cannot exceed 1", "hpa-kv:1.5", 1, 64, "(0, 1]"},
      {"a KV target of 0 would divide by zero", "hpa-kv:0", 1, 64, "(0, 1]"},
      {"a value listed twice", "static:4,8,4", 1, 64, "\"4\" is listed twice"},
      {"scale-to-zero is out of scope (min 0)", "keda-queue", 0, 64, "min replicas 0"},
      {"max below min", "hpa-kv", 8, 4, "max replicas 4 is below min replicas 8"},
  };
  for (const ParseBad& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<std::vector<BaselineSpec>> specs =
        ParseBaselineFamily(c.text, c.min_replicas, c.max_replicas);
    ASSERT_FALSE(specs.ok());
    EXPECT_EQ(specs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(specs.status().message(), c.want_in_message))
        << specs.status().message();
    // The message names the text as given.
    EXPECT_TRUE(absl::StrContains(specs.status().message(), "baseline family \"" + c.text + "\""))
        << specs.status().message();
  }
}

TEST(BaselineFamilyTest, DefaultSweeps) {
  EXPECT_THAT(Names(BaselineFamily(BaselineKind::kKedaQueue, 1, 64)),
              ElementsAreArray({"keda-queue-1", "keda-queue-2", "keda-queue-3", "keda-queue-5",
                                "keda-queue-10"}));
  EXPECT_THAT(Names(BaselineFamily(BaselineKind::kHpaKv, 1, 64)),
              ElementsAreArray({"hpa-kv-0.6", "hpa-kv-0.7", "hpa-kv-0.8", "hpa-kv-0.9"}));
  EXPECT_TRUE(BaselineFamily(BaselineKind::kStatic, 1, 64).empty());
}

// ---------------------------------------------------------------------------------------------
// One sync of each baseline from a fresh history.

struct StepCase {
  std::string name;
  BaselineSpec spec;
  FleetSignals signals;
  int32_t want_desired;
  std::string want_reason;
};

TEST(BaselineStepTest, SingleSync) {
  FleetSignals warming = Fleet(0, 14, 0, 0.95);
  warming.ready_replicas = 10;  // 4 replicas still loading (Running, no metrics yet)
  FleetSignals warming_pending = warming;
  warming_pending.pending_replicas = 4;  // the same 4, still waiting for a node
  FleetSignals no_metrics = Fleet(0, 6, 500);
  no_metrics.metrics_available = false;
  FleetSignals none_ready = Fleet(0, 3, 0, 0.5);
  none_ready.ready_replicas = 0;

  const std::vector<StepCase> cases = {
      // 37 / (5 x 4) = 1.85; ceil(37 / 5) = ceil(7.4) = 8; legacy limit max(2 x 4, 4) = 8.
      {"keda-queue-5: 37 waiting on 4 pods goes to 8", Spec(BaselineKind::kKedaQueue, 5),
       Fleet(0, 4, 37), 8, "DesiredWithinRange"},
      // 21 / (1 x 20) = 1.05: within tolerance.
      {"keda-queue-1: the tolerance trap keeps 20 with 21 waiting",
       Spec(BaselineKind::kKedaQueue, 1), Fleet(0, 20, 21), 20, "WithinTolerance"},
      // ceil(20 / 1) = 20 but no behavior: max(2 x 2, 4) = 4 per sync (not 6).
      {"keda-queue-1: KEDA's HPA has no behavior, so 2 wanting 20 gets 4",
       Spec(BaselineKind::kKedaQueue, 1), Fleet(0, 2, 20), 4, "ScaleUpLimit"},
      // ceil(500 / 2) = 250 > max 64; legacy limit max(12, 4) = 12 < 64: ScaleUpLimit.
      {"keda-queue-2: a flood is limited to doubling", Spec(BaselineKind::kKedaQueue, 2),
       Fleet(0, 6, 500), 12, "ScaleUpLimit"},
      {"keda-queue: a failed query holds", Spec(BaselineKind::kKedaQueue, 5), no_metrics, 6,
       "FailedGetExternalMetric"},
      // 950m / 800m = 1.1875; ceil(1.1875 x 10) = ceil(11.875) = 12; limit max(20, 4).
      {"hpa-kv-0.8: mean 0.95 on 10 pods goes to 12", Spec(BaselineKind::kHpaKv, 0.8),
       Fleet(0, 10, 0, 0.95), 12, "DesiredWithinRange"},
      // 4 loading pods count as idle on a scale-up: 10 x 950m / 14 -> 678m; 678 / 800 = 0.8475:
      // the ratio flips below 1, hold.
      {"hpa-kv-0.8: replicas still loading hold the fleet", Spec(BaselineKind::kHpaKv, 0.8),
       warming, 14, "NotReadyPodsHold"},
      // Pending pods count as idle on a scale-up too: the same arithmetic, the same hold.
      {"hpa-kv-0.8: Pending replicas hold the fleet too", Spec(BaselineKind::kHpaKv, 0.8),
       warming_pending, 14, "NotReadyPodsHold"},
      {"hpa-kv: no ready pod means no metric, hold", Spec(BaselineKind::kHpaKv, 0.8), none_ready, 3,
       "FailedGetPodsMetric"},
      {"hpa-kv: a failed query holds", Spec(BaselineKind::kHpaKv, 0.8), no_metrics, 6,
       "FailedGetPodsMetric"},
      {"static-12 asks for 12 whatever it sees", Spec(BaselineKind::kStatic, 12),
       Fleet(0, 3, 1000, 1.0), 12, "Static"},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    HpaHistory history;
    const HpaDecision d = BaselineStep(c.spec, c.signals, history);
    EXPECT_EQ(d.desired, c.want_desired);
    EXPECT_EQ(d.reason, c.want_reason);
  }
}

TEST(BaselineStepTest, StaticLeavesHistoryAlone) {
  HpaHistory history;
  BaselineStep(Spec(BaselineKind::kStatic, 4), Fleet(0, 4, 0), history);
  EXPECT_TRUE(history.recommendations.empty());
  EXPECT_TRUE(history.scale_events.empty());
}

// ---------------------------------------------------------------------------------------------
// Sequences at the 15 s sync: the 300 s scale-down window and the minReplicas floor.

struct SeqStep {
  int64_t t;
  double waiting_sum;
  double kv_mean;
  int32_t want_desired;
  std::string want_reason;
};

struct SeqCase {
  std::string name;
  BaselineSpec spec;
  int32_t initial;
  std::vector<SeqStep> steps;  // unlisted syncs every 15 s in between repeat the previous step
};

TEST(BaselineStepTest, Sequences) {
  const std::vector<SeqCase> cases = {
      {"keda-queue-5: the queue drains; the fleet waits 300 s, then drops to minReplicas",
       Spec(BaselineKind::kKedaQueue, 5, 1, 64),
       3,
       {
           // 0 / (5 x 3) = 0; ceil(0) = 0; the first sync's size 3 is in the window.
           {0, 0, 0, 3, "ScaleDownStabilized"},
           // Legacy cutoff 300 - 300 = 0: the 3 recorded at t = 0 is not before it.
           {300, 0, 0, 3, "ScaleDownStabilized"},
           // Cutoff 15: only proposals of 0 remain; 0 < min 1.
           {315, 0, 0, 1, "TooFewReplicas"},
       }},
      {"hpa-kv-0.6: KV use climbs, the fleet follows within the doubling limit",
       Spec(BaselineKind::kHpaKv, 0.6, 1, 64),
       2,
       {
           // 600m / 600m = 1: within.
           {0, 0, 0.6, 2, "WithinTolerance"},
           // 1200m / 600m = 2; ceil(2 x 2) = 4; legacy limit max(4, 4) = 4.
           {15, 0, 1.2, 4, "DesiredWithinRange"},
           // (A KV mean above 1 is not physical; it stands for "twice the target" here.)
           // At 4: ratio 2, ceil(8) = 8; limit max(8, 4) = 8.
           {30, 0, 1.2, 8, "DesiredWithinRange"},
           // At 8: 660m / 600m = 1.1: within (inclusive bound).
           {45, 0, 0.66, 8, "WithinTolerance"},
       }},
  };
  for (const SeqCase& c : cases) {
    SCOPED_TRACE(c.name);
    HpaHistory history;
    int32_t current = c.initial;
    int64_t t = 0;
    const SeqStep* previous = nullptr;
    for (const SeqStep& s : c.steps) {
      // Fill the 15 s syncs between listed steps with the previous step's signals.
      for (; previous != nullptr && t < s.t; t += 15) {
        current = BaselineStep(c.spec, Fleet(t, current, previous->waiting_sum, previous->kv_mean),
                               history)
                      .desired;
      }
      t = s.t;
      SCOPED_TRACE(testing::Message() << "t = " << s.t << " s, current " << current);
      const HpaDecision d =
          BaselineStep(c.spec, Fleet(s.t, current, s.waiting_sum, s.kv_mean), history);
      EXPECT_EQ(d.desired, s.want_desired);
      EXPECT_EQ(d.reason, s.want_reason);
      current = d.desired;
      previous = &s;
      t += 15;
    }
  }
}

}  // namespace
}  // namespace twinscale::policy
