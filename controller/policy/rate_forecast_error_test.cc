// ForecastRatios and ForecastMargin, on hand-worked spans and quantiles.
#include "controller/policy/rate_forecast_error.h"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

namespace twinscale::policy {
namespace {

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

// 15 s windows ending at 15, 30, ... `n` x 15 s, each with rate[i] requests per second.
std::deque<ArrivalWindow> Windows(const std::vector<double>& rate) {
  std::deque<ArrivalWindow> out;
  for (size_t i = 0; i < rate.size(); ++i) {
    out.push_back({T(15 * static_cast<int>(i + 1)), 15, 15 * rate[i]});
  }
  return out;
}

TEST(RateForecastErrorTest, ARatioIsWhatCameOverWhatWasForecastForTheSameSpan) {
  // 100 req/s for a minute, then 150: a check of [60, 120) forecast at 100 saw 150 (1.5); one of
  // [30, 90) saw half of each (1.25); one of [90, 150) has not passed yet.
  const std::deque<ArrivalWindow> seen = Windows({100, 100, 100, 100, 150, 150, 150, 150});
  const std::deque<RateCheck> checks = {
      {T(60), T(120), 100}, {T(30), T(90), 100}, {T(90), T(150), 100}};
  const std::vector<double> r = ForecastRatios(checks, seen);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0], 1.5, 1e-12);
  EXPECT_NEAR(r[1], 1.25, 1e-12);
}

TEST(RateForecastErrorTest, WindowsCountByTheShareOfTheirSpanInside) {
  // [20, 50) over windows [0, 15) 60, [15, 30) 120, [30, 45) 30, [45, 60) 90 req/s: 10 s of the
  // second, all 15 s of the third, 5 s of the fourth: (1200 + 450 + 450) / 30 s = 70 req/s
  // against 100 forecast.
  const std::vector<double> r = ForecastRatios({{T(20), T(50), 100}}, Windows({60, 120, 30, 90}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0], 0.7, 1e-12);
}

TEST(RateForecastErrorTest, ASpanMostlyUnseenOrAnEmptyForecastIsNotChecked) {
  // Arrivals seen only from 60 s on: a check of [0, 75) has 15 of its 75 s covered.
  std::deque<ArrivalWindow> seen = Windows({100, 100, 100, 100, 100, 100});
  seen.erase(seen.begin(), seen.begin() + 4);
  EXPECT_TRUE(ForecastRatios({{T(0), T(75), 100}}, seen).empty());
  EXPECT_TRUE(ForecastRatios({{T(60), T(90), 0}}, seen).empty());
  EXPECT_TRUE(ForecastRatios({{T(60), T(90), 100}}, {}).empty());
}

TEST(RateForecastErrorTest, OnlyChecksMaturedSinceTheCutoffCount) {
  // Three checks ending at 60, 90 and 120 s, each saw 150 req/s against 100 forecast; with the
  // cutoff at 90 s the first is left out.
  const std::deque<ArrivalWindow> seen = Windows({150, 150, 150, 150, 150, 150, 150, 150});
  const std::deque<RateCheck> checks = {
      {T(0), T(60), 100}, {T(30), T(90), 100}, {T(60), T(120), 100}};
  EXPECT_EQ(ForecastRatios(checks, seen).size(), 3u);
  EXPECT_EQ(ForecastRatios(checks, seen, T(90)).size(), 2u);
  EXPECT_EQ(ForecastRatios(checks, seen, T(121)).size(), 0u);
}

TEST(RateForecastErrorTest, OnlyARunOfShortfallsAsksForAMargin) {
  struct Case {
    const char* name;
    std::vector<double> ratios;
    int32_t min_checks;
    double cap, want;
  };
  for (const Case& k : std::vector<Case>{
           {"a ramp: every check short, the least shortfall", {1.3, 1.1, 1.2, 1.15}, 4, 2, 1.1},
           {"too few checks", {1.3, 1.1, 1.2}, 4, 2, 1},
           {"bursts: ratios on both sides of 1", {1.4, 0.8, 1.3, 0.9, 1.2}, 4, 2, 1},
           {"one check exactly on forecast", {1.2, 1.0, 1.3, 1.1}, 4, 2, 1},
           {"forecasts overshooting: no margin below 1", {0.8, 0.85, 0.9, 0.95}, 4, 2, 1},
           {"capped", {3, 3, 3, 3}, 4, 2, 2},
           {"a cap below 1 is 1", {1.5, 1.5, 1.5, 1.5}, 4, 0.5, 1},
           {"nothing", {}, 0, 2, 1},
       }) {
    EXPECT_NEAR(ShortfallMargin(k.ratios, k.min_checks, k.cap), k.want, 1e-12) << k.name;
  }
}

}  // namespace
}  // namespace twinscale::policy
