// The twin's error: each prediction paired with the requests arriving in its span, the queue at
// its end, and the run's bias and MAE over the decisions that count, on a hand-worked record.
#include "controller/replay/twin_error.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace twinscale::replay {
namespace {

absl::Duration S(double s) { return absl::Seconds(s); }

// Six requests (arrival s, TTFT ms, met): 0.5 100 met, 1 200 met, 2 700 miss, 3 rejected (no
// first token, a miss), 12 300 met, 13 400 met. The record ends at the last arrival, 13 s. The
// truth's queue: 2 at 5 s, 7 at 10 s, 1 at 15 s.
std::vector<ServedRequest> Record() {
  return {{S(0.5), 100.0, true},       {S(1), 200.0, true},  {S(2), 700.0, false},
          {S(3), std::nullopt, false}, {S(12), 300.0, true}, {S(13), 400.0, true}};
}
std::vector<QueueSample> Queue() { return {{S(5), 2}, {S(10), 7}, {S(15), 1}}; }

TwinPrediction Predicted(double at, double judge_from, double horizon, double attainment,
                         double p90_ms, bool settled = true) {
  TwinPrediction p;
  p.at = S(at);
  p.judge_from = S(judge_from);
  p.horizon = S(horizon);
  p.replicas = 3;
  p.attainment = attainment;
  p.ttft_p90_ms = p90_ms;
  p.waiting_at_end = 1.5;
  p.settled = settled;
  return p;
}

TEST(CheckPredictionsTest, PairsEachSpanWithItsRequestsAndTheQueueAtItsEnd) {
  struct Case {
    std::string name;
    TwinPrediction predicted;
    int64_t want_requests;
    double want_attainment;
    std::optional<double> want_p90_ms;
    std::optional<int64_t> want_waiting;
    bool want_cut, want_counted;
  };
  const std::vector<Case> cases = {
      // [0, 5): 0.5, 1, 2, 3; 2 met of 4. TTFTs 100, 200, 700: p90 at rank 0.9 x 2 = 1.8, so
      // 200 + 0.8 x 500 = 600. Queue at 5 s.
      {"a span from the decision on", Predicted(0, 0, 5, 0.6, 500), 4, 0.5, 600.0, 2, false, true},
      // [1, 13): 1, 2, 3, 12 (13 is the span's end, excluded); 2 met of 4. TTFTs 200, 300, 700:
      // 300 + 0.8 x 400 = 620. The first queue sample at or after 13 s is 15 s's.
      {"a span judged from the warm-up on", Predicted(0, 1, 13, 0.3, 700), 4, 0.5, 620.0, 1, false,
       true},
      // [5, 10): nothing arrived, nothing to compare; the queue at 10 s is still read.
      {"a span with no requests is excluded", Predicted(0, 5, 10, 0.9, 400), 0, 1.0, std::nullopt,
       7, false, false},
      // [10, 15) ends after the record's end (13 s): its requests (12 and 13 s) are reported,
      // not counted.
      {"a span the trace's end cuts is excluded", Predicted(5, 5, 10, 0.8, 300), 2, 1.0, 390.0, 1,
       true, false},
      // [14, 20): past the last queue sample as well.
      {"a span beyond every queue sample has no observed queue", Predicted(10, 4, 10, 0.8, 300), 0,
       1.0, std::nullopt, std::nullopt, true, false},
      {"a decision before calibration settles is excluded", Predicted(0, 0, 5, 0.9, 500, false), 4,
       0.5, 600.0, 2, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<CheckedPrediction> got =
        CheckPredictions({c.predicted}, Record(), Queue(), S(13));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].requests, c.want_requests);
    EXPECT_DOUBLE_EQ(got[0].observed_attainment, c.want_attainment);
    ASSERT_EQ(got[0].observed_ttft_p90_ms.has_value(), c.want_p90_ms.has_value());
    if (c.want_p90_ms) {
      EXPECT_NEAR(*got[0].observed_ttft_p90_ms, *c.want_p90_ms, 1e-9);
    }
    EXPECT_EQ(got[0].observed_waiting, c.want_waiting);
    EXPECT_EQ(got[0].cut, c.want_cut);
    EXPECT_EQ(got[0].counted, c.want_counted);
  }
}

TEST(SummarizeTwinErrorTest, BiasAndMaeOverTheCountedDecisionsOnly) {
  // Counted: predicted 0.6 vs 0.5 (+10 points, p90 500 vs 600: -100 ms) and 0.3 vs 0.5 (-20
  // points, 700 vs 620: +80 ms). Bias (10 - 20) / 2 = -5 points, MAE (10 + 20) / 2 = 15; p90
  // bias (-100 + 80) / 2 = -10 ms, MAE 90 ms. The empty, cut and unsettled spans add nothing.
  const std::vector<CheckedPrediction> checks = CheckPredictions(
      {Predicted(0, 0, 5, 0.6, 500), Predicted(0, 5, 10, 0.9, 400), Predicted(0, 1, 13, 0.3, 700),
       Predicted(5, 5, 10, 0.8, 300), Predicted(0, 0, 5, 0.9, 500, false)},
      Record(), Queue(), S(13));
  const std::optional<TwinError> e = SummarizeTwinError(checks);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decisions, 2);
  EXPECT_NEAR(e->attainment_bias_points, -5, 1e-9);
  EXPECT_NEAR(e->attainment_mae_points, 15, 1e-9);
  // Both spans hold 4 requests, 2 in time: sqrt(2 / pi) x sqrt(0.5 x 0.5 / 4) = 0.7979 x 0.25.
  EXPECT_NEAR(e->attainment_mae_floor_points, 100 * 0.797885 * 0.25, 1e-3);
  EXPECT_EQ(e->ttft_decisions, 2);
  EXPECT_NEAR(e->ttft_p90_bias_ms, -10, 1e-9);
  EXPECT_NEAR(e->ttft_p90_mae_ms, 90, 1e-9);
}

TEST(SummarizeTwinErrorTest, APerfectForecastStillShowsTheSpansSamplingAsItsMae) {
  // 400 spans of 100 requests, each in time with probability 0.95 (seeded draws), forecast at
  // exactly 0.95: the MAE is the spans' own sampling, E|share - 0.95| with share ~ Binomial(100,
  // 0.95) / 100, which is close to sqrt(2 / pi) x sqrt(0.95 x 0.05 / 100) = 1.74 points (the exact
  // binomial value is 1.71). The floor, computed from the observed shares, agrees within a tenth.
  std::mt19937_64 rng(7);
  std::bernoulli_distribution in_time(0.95);
  std::vector<ServedRequest> served;
  std::vector<TwinPrediction> predicted;
  for (int span = 0; span < 400; ++span) {
    for (int i = 0; i < 100; ++i) {
      served.push_back({S(10 * span + 0.05 * i), 100.0, in_time(rng)});
    }
    predicted.push_back(Predicted(10 * span, 0, 10, 0.95, 100));
  }
  const std::optional<TwinError> e =
      SummarizeTwinError(CheckPredictions(predicted, served, {}, S(4000)));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decisions, 400);
  EXPECT_NEAR(e->attainment_bias_points, 0, 0.25);
  EXPECT_NEAR(e->attainment_mae_floor_points, 1.74, 0.1);
  EXPECT_NEAR(e->attainment_mae_points, e->attainment_mae_floor_points,
              0.1 * e->attainment_mae_floor_points);
}

TEST(CompareArrivalsTest, TheBandIsFivePercentOrTwoPoissonDeviationsWhicheverIsWider) {
  struct Case {
    std::string name;
    int64_t requests;
    double forecast_rps;
    double span_s;
    ArrivalsAgainstForecast want;
  };
  using A = ArrivalsAgainstForecast;
  const std::vector<Case> cases = {
      // 100 expected: two deviations (sqrt(100) = 10) give 20, wider than 5%.
      {"inside two deviations of a small count", 119, 10, 10, A::kAsForecast},
      {"above two deviations of a small count", 121, 10, 10, A::kAbove},
      {"below two deviations of a small count", 79, 10, 10, A::kBelow},
      // 10,000 expected: 5% gives 500, wider than two deviations (200).
      {"inside 5% of a large count", 10499, 100, 100, A::kAsForecast},
      {"above 5% of a large count", 10501, 100, 100, A::kAbove},
      {"below 5% of a large count", 9499, 100, 100, A::kBelow},
      {"no forecast rate", 50, 0, 10, A::kNoForecast},
      {"no span", 50, 10, 0, A::kNoForecast},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CompareArrivals(c.requests, c.forecast_rps, S(c.span_s)), c.want) << c.name;
  }
}

TEST(SummarizeTwinErrorTest, SplitsTheErrorByWhetherTheArrivalsCameAsForecast) {
  // Three spans of 10 s, each forecast at 10 req/s (100 expected, band 20). The first gets 100
  // requests, 90 in time, forecast at 0.92: +2 points, as forecast. The second gets 150 (above),
  // 60 in time (40%), forecast at 0.9: +50 points. The third gets 50 (below), all in time, forecast
  // at 0.96: -4 points. A fourth, with no forecast rate, counts in the whole only: 100 requests,
  // all in time, forecast at 1.0.
  std::vector<ServedRequest> served;
  auto add = [&](double from, int n, int met) {
    for (int i = 0; i < n; ++i) served.push_back({S(from + 10.0 * i / n), 100.0, i < met});
  };
  add(0, 100, 90);
  add(10, 150, 60);
  add(20, 50, 50);
  add(30, 100, 100);
  std::vector<TwinPrediction> predicted = {
      Predicted(0, 0, 10, 0.92, 100), Predicted(10, 0, 10, 0.9, 100),
      Predicted(20, 0, 10, 0.96, 100), Predicted(30, 0, 10, 1.0, 100)};
  for (int i = 0; i < 3; ++i) predicted[i].forecast_rps = 10;
  const std::optional<TwinError> e =
      SummarizeTwinError(CheckPredictions(predicted, served, {}, S(40)));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decisions, 4);
  EXPECT_NEAR(e->attainment_bias_points, (2 + 50 - 4 + 0) / 4.0, 1e-9);
  EXPECT_EQ(e->rate_as_forecast.decisions, 1);
  EXPECT_NEAR(e->rate_as_forecast.attainment_bias_points, 2, 1e-9);
  EXPECT_NEAR(e->rate_as_forecast.attainment_mae_points, 2, 1e-9);
  EXPECT_EQ(e->rate_above_forecast.decisions, 1);
  EXPECT_NEAR(e->rate_above_forecast.attainment_bias_points, 50, 1e-9);
  EXPECT_EQ(e->rate_below_forecast.decisions, 1);
  EXPECT_NEAR(e->rate_below_forecast.attainment_bias_points, -4, 1e-9);
  EXPECT_NEAR(e->rate_below_forecast.attainment_mae_points, 4, 1e-9);
}

TEST(SummarizeTwinErrorTest, NothingCountedIsNoError) {
  EXPECT_FALSE(SummarizeTwinError({}).has_value());
  EXPECT_FALSE(SummarizeTwinError(
                   CheckPredictions({Predicted(0, 5, 10, 0.9, 400)}, Record(), Queue(), S(13)))
                   .has_value());
}

}  // namespace
}  // namespace twinscale::replay
