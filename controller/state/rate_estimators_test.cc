// AllanDispersion on counts worked by hand. LevelOf and RatePersistence are exercised on traffic
// shapes in fleet_snapshot_test.cc, where the snapshot uses them.
#include "controller/state/rate_estimators.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace twinscale::state {
namespace {

TEST(AllanDispersionTest, HalfTheMeanSquaredSuccessiveDifferenceOverTheMean) {
  struct Case {
    std::string name;
    std::vector<double> counts;
    double want;
  };
  const std::vector<Case> cases = {
      {"no counts: Poisson by default", {}, 1.0},
      {"one count: no difference to take", {7}, 1.0},
      {"no arrivals: the mean is not positive", {0, 0, 0}, 1.0},
      {"a steady count has no spread", {5, 5, 5, 5}, 0.0},
      // Mean 3; differences 2, -2, 2: 12 / (2 x 3 x 3).
      {"alternating counts", {2, 4, 2, 4}, 12.0 / 18.0},
      // Mean 25; differences 10, 10, 10: 300 / (2 x 3 x 25). The variance over the mean would be
      // 166.7 / 25 = 6.7: successive differences see a ramp's steps, not its span.
      {"a ramp counts only its steps", {10, 20, 30, 40}, 2.0},
      // Mean 11; differences 20, -10: 500 / (2 x 2 x 11).
      {"a burst then half of it", {1, 21, 11}, 500.0 / 44.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(AllanDispersion(c.counts), c.want);
  }
}

}  // namespace
}  // namespace twinscale::state
