// The advisory admission limit's search against a fleet that holds the SLO up to a known rate:
// hand-worked sequences of the rates asked, cold and from the previous decision's answer.
#include "controller/policy/admission_search.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace twinscale::policy {
namespace {

// Holds the SLO at every rate up to `capacity`; remembers what it was asked.
struct Threshold {
  explicit Threshold(double c) : capacity(c) {}
  double capacity;
  std::vector<double> asked;
  bool operator()(double rate) {
    asked.push_back(rate);
    return rate <= capacity;
  }
};

TEST(LargestHeldRateTest, WithoutAPreviousAnswerBisectsSixTimes) {
  // 64 req/s arriving, the fleet holds 30: 32 no, 16 yes, 24 yes, 28 yes, 30 yes, 31 no -> 30.
  Threshold t{30};
  const HeldRate got = LargestHeldRate(64, std::nullopt, std::ref(t));
  EXPECT_EQ(t.asked, (std::vector<double>{32, 16, 24, 28, 30, 31}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 30);
  EXPECT_EQ(got.evaluations, 6);
}

TEST(LargestHeldRateTest, AnAnswerThatStillHoldsCostsTwoWhatIfsAndStaysPut) {
  // Last time 29.5; the fleet still holds 30. 29.5 yes, 30.5 (one 1/64 step up) no: 29.5, as the
  // gateway already enforces.
  Threshold t{30};
  const HeldRate got = LargestHeldRate(64, 29.5, std::ref(t));
  EXPECT_EQ(t.asked, (std::vector<double>{29.5, 30.5}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 29.5);
  EXPECT_EQ(got.evaluations, 2);
}

TEST(LargestHeldRateTest, GallopsUpWhenTheFleetHoldsMore) {
  // Last time 20; now it holds 30 (a replica became Ready). 20 yes; up 1, 2, 4, 8: 21, 23, 27
  // yes, 35 no; then bisect [27, 35] to a 1 req/s step: 31 no, 29 yes, 30 yes -> 30.
  Threshold t{30};
  const HeldRate got = LargestHeldRate(64, 20, std::ref(t));
  EXPECT_EQ(t.asked, (std::vector<double>{20, 21, 23, 27, 35, 31, 29, 30}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 30);
}

TEST(LargestHeldRateTest, GallopsDownWhenTheFleetHoldsLess) {
  // Last time 30; now it holds 25.5. 30 no; down 1, 2, 4: 29, 27, 23 -> 23 yes; bisect [23, 27]:
  // 25 yes, 26 no -> 25, within one step under 25.5.
  Threshold t{25.5};
  const HeldRate got = LargestHeldRate(64, 30, std::ref(t));
  EXPECT_EQ(t.asked, (std::vector<double>{30, 29, 27, 23, 25, 26}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 25);
}

TEST(LargestHeldRateTest, APreviousAnswerAtOrAboveTheArrivingRateStartsCold) {
  // The load fell to 16 req/s, under last time's 30: the fleet is asked from scratch over
  // [0, 16] (never at 16 itself), as without a previous answer.
  Threshold t{10};
  const HeldRate got = LargestHeldRate(16, 30, std::ref(t));
  EXPECT_EQ(t.asked, (std::vector<double>{8, 12, 10, 11, 10.5, 10.25}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 10);
}

TEST(LargestHeldRateTest, AfterAnAdviceOfZeroOneWhatIfAtOneStep) {
  // So backlogged last time that no rate held: one step (1 req/s) still does not hold -> 0, for
  // one what-if.
  Threshold none{-1};
  const HeldRate got = LargestHeldRate(64, 0.0, std::ref(none));
  EXPECT_EQ(none.asked, (std::vector<double>{1}));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 0);
  // The backlog cleared: 1 yes, then up 1, 2, 4: 2, 4 yes, 8 no; bisect [4, 8]: 6 yes, 7 no -> 6.
  Threshold t{6.5};
  EXPECT_DOUBLE_EQ(LargestHeldRate(64, 0.0, std::ref(t)).max_arrival_rate, 6);
  EXPECT_EQ(t.asked, (std::vector<double>{1, 2, 4, 8, 6, 7}));
}

TEST(LargestHeldRateTest, NothingHoldsIsZeroAndNothingArrivingIsNotAsked) {
  Threshold none{-1};
  const HeldRate got = LargestHeldRate(64, 3, std::ref(none));
  EXPECT_DOUBLE_EQ(got.max_arrival_rate, 0);
  // 3 no, 2 no (the next gallop would reach 0, taken to hold, never asked); [0, 2] is two steps
  // wide: one bisection, 1 no.
  EXPECT_EQ(none.asked, (std::vector<double>{3, 2, 1}));
  Threshold t{5};
  EXPECT_EQ(LargestHeldRate(0, 3, std::ref(t)).evaluations, 0);
  EXPECT_TRUE(t.asked.empty());
}

TEST(LargestHeldRateTest, EveryAnswerIsWithinOneStepUnderWhatHolds) {
  // Whatever the start, the answer holds and one step above it does not.
  for (double capacity : {0.7, 5.0, 17.3, 40.0, 63.5}) {
    for (std::optional<double> previous :
         {std::optional<double>(), std::optional<double>(0.0), std::optional<double>(1.0),
          std::optional<double>(17.0), std::optional<double>(33.3), std::optional<double>(63.9),
          std::optional<double>(80.0)}) {
      Threshold t{capacity};
      const double got = LargestHeldRate(64, previous, std::ref(t)).max_arrival_rate;
      EXPECT_LE(got, capacity) << capacity << " from " << previous.value_or(-1);
      EXPECT_GT(got + 1 + 1e-9, capacity) << capacity << " from " << previous.value_or(-1);
    }
  }
}

}  // namespace
}  // namespace twinscale::policy
