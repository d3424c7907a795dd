// ArrivalHistory and SeasonalRatios against hand-worked histories.
#include "controller/state/arrival_history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "controller/state/seasonal_forecast.h"

namespace twinscale::state {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

TEST(ArrivalHistoryTest, SpreadsAnIntervalOverTheBucketsItCovers) {
  ArrivalHistory h(absl::Seconds(60), absl::Hours(1));
  h.Add(kT0, kT0 + absl::Seconds(150), 150);  // 1 req/s: 60 + 60 + 30 over three buckets
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0, kT0 + absl::Seconds(150)), 1.0);
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0 + absl::Seconds(60), kT0 + absl::Seconds(120)), 1.0);
  // The third bucket was observed for half its length: too little for the default coverage.
  EXPECT_FALSE(h.MeanRate(kT0 + absl::Seconds(120), kT0 + absl::Seconds(180)).has_value());
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0 + absl::Seconds(120), kT0 + absl::Seconds(180), 0.4), 1.0);
}

TEST(ArrivalHistoryTest, AGapIsUnobservedNotQuiet) {
  ArrivalHistory h(absl::Seconds(60), absl::Hours(1));
  h.Add(kT0, kT0 + absl::Seconds(60), 60);                         // 1 req/s
  h.Add(kT0 + absl::Seconds(120), kT0 + absl::Seconds(180), 240);  // 4 req/s, after a gap
  // Two of three minutes observed.
  EXPECT_FALSE(h.MeanRate(kT0, kT0 + absl::Seconds(180)).has_value());
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0, kT0 + absl::Seconds(180), 0.5), 2.5);  // 300 / 120 s
  EXPECT_FALSE(h.MeanRate(kT0 + absl::Seconds(60), kT0 + absl::Seconds(120), 0.0).has_value());
}

TEST(ArrivalHistoryTest, TimesBeforeTheEpochFloorToTheirBuckets) {
  ArrivalHistory h(absl::Seconds(60), absl::Hours(1));
  h.Add(kT0 - absl::Seconds(90), kT0 - absl::Seconds(30), 120);  // 2 req/s over two buckets
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0 - absl::Seconds(90), kT0 - absl::Seconds(30)), 2.0);
  EXPECT_EQ(h.buckets(), 2u);
}

TEST(ArrivalHistoryTest, KeepsOnlyItsRetention) {
  ArrivalHistory h(absl::Seconds(60), absl::Minutes(5));
  for (int m = 0; m < 60; ++m) {
    h.Add(kT0 + absl::Minutes(m), kT0 + absl::Minutes(m + 1), 60);
  }
  EXPECT_LE(h.buckets(), 6u);
  EXPECT_FALSE(h.MeanRate(kT0, kT0 + absl::Minutes(1)).has_value());
  EXPECT_DOUBLE_EQ(*h.MeanRate(kT0 + absl::Minutes(58), kT0 + absl::Minutes(60)), 1.0);
}

TEST(ArrivalHistoryTest, IgnoresEmptyNegativeAndNonFiniteIntervals) {
  ArrivalHistory h(absl::Seconds(60), absl::Hours(1));
  h.Add(kT0 + absl::Seconds(60), kT0, 10);
  h.Add(kT0, kT0 + absl::Seconds(60), -1);
  h.Add(kT0, kT0 + absl::Seconds(60), std::nan(""));
  EXPECT_EQ(h.buckets(), 0u);
  EXPECT_FALSE(h.MeanRate(kT0, kT0 + absl::Seconds(60), 0.0).has_value());
}

// A day's worth of minutes at rate(t) (t in seconds from kT0), added minute by minute, each with
// its exact integral (the rate is linear within a minute in these tests).
void AddDay(ArrivalHistory& h, absl::Time from, int minutes, double (*rate)(double)) {
  for (int m = 0; m < minutes; ++m) {
    const double a = absl::ToDoubleSeconds(from - kT0) + 60.0 * m;
    h.Add(from + absl::Minutes(m), from + absl::Minutes(m + 1), 60 * rate(a + 30));
  }
}

double Ramp(double t) { return 100 + t / 60; }  // +1 req/s per minute

SeasonOptions Day() {
  SeasonOptions o;
  o.period = absl::Hours(24);
  return o;
}

TEST(SeasonalRatiosTest, YesterdaysRampIsForecastFromTodaysLevel) {
  const SeasonOptions o = Day();
  ArrivalHistory h(o.bucket(), o.retention(absl::Minutes(10)));
  AddDay(h, kT0, 24 * 60, Ramp);
  // Now: 12:00 a day later. Yesterday at 12:00 the rate was 820; the level's window (5 minutes,
  // read 15 minutes wide, centred 2.5 minutes back) had 817.5 on a straight ramp; the interval
  // k ahead is read centred at (k - 1/2) x 15 s.
  const absl::Time now = kT0 + absl::Hours(36);
  const std::vector<double> r = SeasonalRatios(h, now, absl::Minutes(5), absl::Seconds(15), 40, o);
  ASSERT_EQ(r.size(), 40u);
  const double level = Ramp(12 * 3600 - 150);
  for (int k = 1; k <= 40; ++k) {
    const double expected = Ramp(12 * 3600 + (k - 0.5) * 15) / level;
    EXPECT_NEAR(r[k - 1], expected, 1e-3) << "k = " << k;
  }
  EXPECT_GT(r.back(), r.front());
}

TEST(SeasonalRatiosTest, DaysAreAveragedAsSums) {
  SeasonOptions o = Day();
  o.periods = 2;
  ArrivalHistory h(o.bucket(), o.retention(absl::Minutes(10)));
  // Two days ago: flat 100; yesterday: flat 300 until 12:00, 600 after. Summed: (100 + 600) /
  // (100 + 300) = 1.75 once the window lies wholly after 12:00.
  AddDay(h, kT0, 24 * 60, [](double) { return 100.0; });
  AddDay(h, kT0 + absl::Hours(24), 24 * 60, [](double t) { return t < 36 * 3600 ? 300.0 : 600.0; });
  const absl::Time now = kT0 + absl::Hours(48) + absl::Hours(12) - absl::Minutes(10);
  const std::vector<double> r = SeasonalRatios(h, now, absl::Minutes(5), absl::Minutes(1), 20, o);
  ASSERT_EQ(r.size(), 20u);
  EXPECT_NEAR(r[0], 1.0, 1e-9);  // both windows before the step
  // Interval 20 is centred 9.5 minutes after 11:50, its 15-minute window 2 minutes after noon.
  EXPECT_NEAR(r[19], 1.75, 1e-9);
}

TEST(SeasonalRatiosTest, EmptyWithoutAWholePastPeriod) {
  const SeasonOptions o = Day();
  ArrivalHistory h(o.bucket(), o.retention(absl::Minutes(10)));
  AddDay(h, kT0, 12 * 60, Ramp);  // half a day
  EXPECT_TRUE(
      SeasonalRatios(h, kT0 + absl::Hours(24), absl::Minutes(5), absl::Seconds(15), 40, o).empty());
  // A day later the morning is covered but not the forecast's lead past noon.
  EXPECT_TRUE(SeasonalRatios(h, kT0 + absl::Hours(36) - absl::Minutes(2), absl::Minutes(5),
                             absl::Seconds(15), 40, o)
                  .empty());
  EXPECT_TRUE(
      SeasonalRatios(h, kT0 + absl::Hours(30), absl::Minutes(5), absl::Seconds(15), 0, o).empty());
}

TEST(SeasonalRatiosTest, RatiosAreClamped) {
  SeasonOptions o = Day();
  o.max_ratio = 2;
  ArrivalHistory h(o.bucket(), o.retention(absl::Minutes(10)));
  AddDay(h, kT0, 24 * 60, [](double t) { return t < 12 * 3600 ? 10.0 : 1000.0; });
  const std::vector<double> r = SeasonalRatios(h, kT0 + absl::Hours(36) - absl::Minutes(20),
                                               absl::Minutes(5), absl::Minutes(1), 40, o);
  ASSERT_EQ(r.size(), 40u);
  EXPECT_DOUBLE_EQ(r.front(), 1.0);
  EXPECT_DOUBLE_EQ(r.back(), 2.0);
}

TEST(SeasonSkillTest, TheSeasonIsUsedWhileItHasClearlyForecastBetter) {
  const absl::Duration s = absl::Seconds(1);
  ArrivalHistory h(absl::Seconds(15), absl::Hours(2));
  SeasonSkill skill(absl::Hours(1), 2);
  EXPECT_FALSE(skill.score().use_season);  // no checks yet
  // Two minutes at 120 req/s, forecast 100 by the level and 120 with the season: the differences
  // of the errors are ln(1.2) = 0.1823 twice; their standard error is 0.
  h.Add(kT0, kT0 + 180 * s, 120 * 180);
  skill.Forecast(kT0, kT0 + 60 * s, 100, 120);
  skill.Mature(kT0 + 60 * s, h);
  EXPECT_EQ(skill.score().checks, 1);
  EXPECT_FALSE(skill.score().use_season);  // fewer than 2 checks
  skill.Forecast(kT0 + 60 * s, kT0 + 120 * s, 100, 120);
  skill.Forecast(kT0 + 90 * s, kT0 + 150 * s, 100, 200);  // overlaps the last span: not kept
  skill.Mature(kT0 + 150 * s, h);
  SeasonSkill::Score score = skill.score();
  EXPECT_EQ(score.checks, 2);
  EXPECT_NEAR(score.level_error, std::log(1.2), 1e-12);
  EXPECT_NEAR(score.seasonal_error, 0, 1e-12);
  EXPECT_NEAR(score.difference_se, 0, 1e-12);
  EXPECT_TRUE(score.use_season);
  // A third minute the season gets wrong (90 against 120, the level 100): differences 0.1823,
  // 0.1823 and ln(1.2) - ln(4/3) = -0.1054, mean 0.0864 with a standard error of 0.0959. Better on
  // average, but not by two standard errors: not used.
  skill.Forecast(kT0 + 120 * s, kT0 + 180 * s, 100, 90);
  skill.Mature(kT0 + 180 * s, h);
  score = skill.score();
  EXPECT_EQ(score.checks, 3);
  EXPECT_NEAR(score.level_error - score.seasonal_error,
              (2 * std::log(1.2) + std::log(1.2) - std::log(120.0 / 90)) / 3, 1e-12);
  EXPECT_NEAR(score.difference_se, 0.09589, 1e-5);
  EXPECT_FALSE(score.use_season);
  // An hour on, every check is out of the window.
  skill.Mature(kT0 + 180 * s + absl::Hours(1) + s, h);
  EXPECT_EQ(skill.score().checks, 0);
  EXPECT_FALSE(skill.score().use_season);
}

TEST(SeasonSkillTest, ASpanTheHistoryDidNotSeeIsNoCheck) {
  ArrivalHistory h(absl::Seconds(15), absl::Hours(2));
  SeasonSkill skill(absl::Hours(1), 1);
  skill.Forecast(kT0, kT0 + absl::Minutes(1), 100, 120);
  skill.Mature(kT0 + absl::Minutes(1), h);  // nothing observed over the span
  EXPECT_EQ(skill.score().checks, 0);
}

}  // namespace
}  // namespace twinscale::state
