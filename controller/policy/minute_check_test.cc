// CheckLastMinute: the last minute's interval forecasts against what the fleet served, worked by
// hand.
#include "controller/policy/minute_check.h"

#include <cmath>
#include <deque>

#include "gtest/gtest.h"

namespace twinscale::policy {
namespace {

absl::Time T(int64_t s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

TEST(MinuteCheckTest, TheMinutesIntervalsArePooledByRequests) {
  // 1,000 requests forecast 96% and served 80%, 3,000 forecast 92% and served 88%:
  // forecast (960 + 2760) / 4000 = 93%, served (800 + 2640) / 4000 = 86%.
  const std::deque<IntervalCheck> checks = {
      {T(0), 5000, 0.5, 0, 0.5},  // ended a minute ago: outside (now - 60 s, now]
      {T(30), 1000, 0.96, 0, 0.80},
      {T(60), 3000, 0.92, 0, 0.88},
  };
  const auto m = CheckLastMinute(checks, T(60), absl::Minutes(1), absl::Seconds(15), 90);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->intervals, 2);
  EXPECT_DOUBLE_EQ(m->requests, 4000);
  EXPECT_NEAR(m->predicted_percent, 93.0, 1e-9);
  EXPECT_NEAR(m->served_percent, 86.0, 1e-9);
  EXPECT_TRUE(m->missed);
  // Noise: forecast variance (1/4)^2 0.96 0.04 / 1000 + (3/4)^2 0.92 0.08 / 3000, served
  // 0.86 0.14 / 4000; two standard errors, in points.
  const double var = 0.0625 * 0.96 * 0.04 / 1000 + 0.5625 * 0.92 * 0.08 / 3000 + 0.86 * 0.14 / 4000;
  EXPECT_NEAR(m->noise_points, 200 * std::sqrt(var), 1e-9);
  EXPECT_NEAR(m->optimism, 7.0, 1e-9);
}

TEST(MinuteCheckTest, AForecastsOwnStandardErrorCountsWhereGiven) {
  // One interval, 400 requests; the forecast's own standard error 3 points: the noise is
  // 2 sqrt(0.03^2 + 0.85 0.15 / 400) = 7.13 points, so a 6-point gap is within it.
  const std::deque<IntervalCheck> checks = {{T(45), 400, 0.91, 0.03, 0.85},
                                            {T(60), 0, 0.5, 0, 0.5}};
  const auto m = CheckLastMinute(checks, T(60), absl::Minutes(1), absl::Seconds(30), 90);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->intervals, 1);  // an interval that served nothing does not count
  EXPECT_TRUE(m->missed);
  EXPECT_NEAR(m->noise_points, 200 * std::sqrt(0.0009 + 0.85 * 0.15 / 400), 1e-9);
  EXPECT_DOUBLE_EQ(m->optimism, 0);
}

TEST(MinuteCheckTest, AMinuteMetOrAPessimisticTwinRaisesNothing) {
  struct Case {
    const char* name;
    double predicted, served;
    bool missed;
    bool optimistic;
  };
  const Case cases[] = {
      {"met, twin optimistic", 0.99, 0.93, false, true},
      {"missed, twin pessimistic", 0.80, 0.88, true, false},
      {"missed, twin right", 0.88, 0.88, true, false},
      {"missed, twin optimistic", 0.95, 0.85, true, true},
      {"exactly at the percentile: met", 0.95, 0.90, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::deque<IntervalCheck> checks;
    for (int i = 1; i <= 4; ++i) checks.push_back({T(15 * i), 3000, c.predicted, 0, c.served});
    const auto m = CheckLastMinute(checks, T(60), absl::Minutes(1), absl::Seconds(15), 90);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->missed, c.missed);
    EXPECT_EQ(m->optimism > 0, c.optimistic);
    if (c.optimistic) {
      EXPECT_NEAR(m->optimism, 100 * (c.predicted - c.served), 1e-9);
    }
  }
}

TEST(MinuteCheckTest, LessThanHalfAMinuteOfChecksSaysNothing) {
  const std::deque<IntervalCheck> one = {{T(60), 3000, 0.97, 0, 0.70}};
  EXPECT_FALSE(CheckLastMinute(one, T(60), absl::Minutes(1), absl::Seconds(15), 90).has_value());
  const std::deque<IntervalCheck> two = {{T(45), 3000, 0.97, 0, 0.70},
                                         {T(60), 3000, 0.97, 0, 0.70}};
  EXPECT_TRUE(CheckLastMinute(two, T(60), absl::Minutes(1), absl::Seconds(15), 90).has_value());
  EXPECT_FALSE(CheckLastMinute(two, T(60), absl::ZeroDuration(), absl::Seconds(15), 90)
                   .has_value());  // no window: no check
  EXPECT_FALSE(CheckLastMinute({}, T(60), absl::Minutes(1), absl::Seconds(15), 90).has_value());
}

}  // namespace
}  // namespace twinscale::policy
