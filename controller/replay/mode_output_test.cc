// ModeOutput: what KEDA's HPA does with the published metric, hand-worked against the HPA's
// arithmetic (desired = ceil(value / target) unless value / (target x current) is within 10% of 1).
#include "controller/replay/mode_output.h"

#include <gtest/gtest.h>

#include <vector>

namespace twinscale::replay {
namespace {

TEST(ModeOutputTest, KedaModeLandsOutsideTheToleranceAndHoldsInsideIt) {
  struct Case {
    const char* name;
    int32_t current, decided, want;
  };
  const std::vector<Case> cases = {
      {"hold: value 20, ratio 1", 20, 20, 20},
      {"20 -> 21: value 21, ratio 1.05 <= 1.1: swallowed", 20, 21, 20},
      {"20 -> 22: ratio 1.1, on the band's edge (inclusive): swallowed", 20, 22, 20},
      {"20 -> 23: ratio 1.15: lands", 20, 23, 23},
      {"10 -> 12: ratio 1.2: lands", 10, 12, 12},
      {"1 -> 48: lands at once (wide scale-up policies)", 1, 48, 48},
      {"10 -> 9: value 8.002, ratio 0.8002: lands on ceil = 9", 10, 9, 9},
      {"20 -> 19: value 18.002, ratio 0.9001: swallowed", 20, 19, 20},
      {"20 -> 17: value 16.002, ratio 0.8001: lands", 20, 17, 17},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ModeOutput keda(api::Mode::kKeda, 1, 48);
    EXPECT_EQ(keda.Apply(tc.decided, tc.current, absl::FromUnixSeconds(1000)), tc.want);
  }
}

TEST(ModeOutputTest, DirectSetsTheDecisionAndAZeroToleranceLandsEverywhere) {
  ModeOutput direct(api::Mode::kDirect, 1, 48);
  EXPECT_EQ(direct.Apply(21, 20, absl::FromUnixSeconds(0)), 21);
  EXPECT_TRUE(direct.last_reason().empty());
  ModeOutput exact(api::Mode::kHpa, 1, 48, /*tolerance=*/0.0);
  EXPECT_EQ(exact.Apply(21, 20, absl::FromUnixSeconds(0)), 21);
  EXPECT_EQ(exact.Apply(19, 20, absl::FromUnixSeconds(15)), 19);
}

TEST(ModeOutputTest, ASwallowedStepStaysSwallowedUntilTheDecisionMovesFurther) {
  // twinscale asks 21 at 20 for a minute, then 23: the HPA holds 20 for the whole minute.
  ModeOutput keda(api::Mode::kKeda, 1, 48);
  int32_t current = 20;
  for (int s = 0; s < 60; s += 15) {
    current = keda.Apply(21, current, absl::FromUnixSeconds(s));
    EXPECT_EQ(current, 20) << "at " << s << " s";
  }
  EXPECT_EQ(keda.Apply(23, current, absl::FromUnixSeconds(60)), 23);
}

}  // namespace
}  // namespace twinscale::replay
