// The warm reserve, worked by hand: a step burst, a ramp, a lag longer than a window, and the
// windows of a trace.
#include "controller/plan/warm_reserve.h"

#include <vector>

#include "gtest/gtest.h"

namespace twinscale::plan {
namespace {

sim::Trace TraceAt(const std::vector<double>& seconds) {
  sim::Trace t;
  for (size_t i = 0; i < seconds.size(); ++i) {
    sim::RequestSpec r;
    r.id = i;
    r.arrival = sim::SimTime::FromSecondsF(seconds[i]);
    t.requests.push_back(r);
  }
  return t;
}

TEST(WarmReserve, AStepBurstNeedsTheStepsReplicas) {
  // 10 req/s for five minutes, then 30 req/s; one replica serves 4 req/s within the SLO. Sized
  // for 10 req/s the fleet has ceil(10 / 4) = 3; the burst needs ceil(30 / 4) = 8 before new
  // replicas can start: 5 more, kept warm.
  const std::vector<double> rates = {10, 10, 10, 10, 10, 30, 30, 30};
  const WarmReserve w = WarmReserveFor(rates, absl::Seconds(60), absl::Seconds(45), 4.0);
  EXPECT_EQ(w.replicas, 5);
  EXPECT_EQ(w.at_window, 4u);  // the last minute at 10 req/s
  EXPECT_DOUBLE_EQ(w.from_rps, 10);
  EXPECT_DOUBLE_EQ(w.to_rps, 30);
}

TEST(WarmReserve, ARampIsCoveredForTheRiseWithinTheLag) {
  // +6 req/s per minute; with a lag of 45 s the fleet sees one minute of rise before new replicas
  // serve: from 12 (3 replicas at 4 req/s) to 18 (5): 2. With a 150 s lag, three minutes of rise:
  // 12 -> 30, ceil(30 / 4) - 3 = 5.
  const std::vector<double> rates = {12, 18, 24, 30, 36};
  EXPECT_EQ(WarmReserveFor(rates, absl::Seconds(60), absl::Seconds(45), 4.0).replicas, 2);
  EXPECT_EQ(WarmReserveFor(rates, absl::Seconds(60), absl::Seconds(150), 4.0).replicas, 5);
}

TEST(WarmReserve, FallingOrFlatTrafficNeedsNone) {
  EXPECT_EQ(WarmReserveFor({40, 30, 20, 10}, absl::Seconds(60), absl::Minutes(5), 4.0).replicas, 0);
  EXPECT_EQ(WarmReserveFor({8, 8, 8}, absl::Seconds(60), absl::Minutes(5), 4.0).replicas, 0);
  // Whole quotients stay whole: 8 / 4 is 2 replicas, not 3.
  EXPECT_EQ(WarmReserveFor({4, 8}, absl::Seconds(60), absl::ZeroDuration(), 4.0).replicas, 1);
}

TEST(WarmReserve, NothingToSizeWithGivesNone) {
  EXPECT_EQ(WarmReserveFor({}, absl::Seconds(60), absl::Seconds(45), 4.0).replicas, 0);
  EXPECT_EQ(WarmReserveFor({1, 100}, absl::Seconds(60), absl::Seconds(45), 0.0).replicas, 0);
}

TEST(WindowRates, WholeWindowsFromTheFirstArrival) {
  // Arrivals at 0, 10, 59.9 (window 0), 60, 61 (window 1), 125 (past the last whole window:
  // the span 125 s holds two whole minutes).
  const std::vector<double> r = WindowRates(TraceAt({0, 10, 59.9, 60, 61, 125}), absl::Seconds(60));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0], 3.0 / 60);
  EXPECT_DOUBLE_EQ(r[1], 2.0 / 60);
}

TEST(WindowRates, ATraceShorterThanAWindowIsOneWindowOfItsLength) {
  const std::vector<double> r = WindowRates(TraceAt({5, 6, 7, 25}), absl::Seconds(60));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0], 4.0 / 20);
  EXPECT_TRUE(WindowRates(sim::Trace{}, absl::Seconds(60)).empty());
}

}  // namespace
}  // namespace twinscale::plan
