// SizeFleet against a forecaster whose answers are known by hand: the attainment is
// plateau x min(1, n / need), `need` depending on whether the question is asked at the full
// threshold or at the scale-in margin, and the ceiling question (maxReplicas, idle) reaches the
// plateau. Each case lists the what-ifs in the order they must be
// asked (the hint first, then galloping and bisection) and when a ceiling must be asked; and for
// every base and hint, the answer is the one a search without a hint finds.
#include "controller/policy/fleet_sizing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace twinscale::policy {
namespace {

constexpr double kMargin = 0.8;

class KnownForecaster : public Forecaster {
 public:
  KnownForecaster(int32_t need_keep, int32_t need_safe, double plateau)
      : need_keep_(need_keep), need_safe_(need_safe), plateau_(plateau) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    const bool at_margin = q.slack_margin < 1.0;
    const bool ceiling = q.attainment_tolerance > 0;  // CeilingQuestion asks for precision
    (ceiling ? ceilings_ : asked_).push_back(q.candidate_replicas);
    if (at_margin && !ceiling) margin_priors_.push_back(q.prior);
    const int32_t need = at_margin ? need_safe_ : need_keep_;
    Forecast f;
    // The ceiling (maxReplicas, idle) is the plateau: what no fleet size can improve on.
    f.attainment = ceiling
                       ? plateau_
                       : plateau_ * std::min(1.0, static_cast<double>(q.candidate_replicas) / need);
    f.meets_slo = 100 * f.attainment + 1e-9 >= q.percentile;
    // A forecaster that knows its noise: within `unclear_band` of the target the verdict could go
    // either way.
    f.verdict_clear = std::abs(100 * f.attainment - q.percentile) >= unclear_band;
    return f;
  }
  double unclear_band = 0;  // points of attainment
  mutable std::vector<int32_t> asked_, ceilings_;
  mutable std::vector<PooledDraws> margin_priors_;  // the prior of each scale-in question

 private:
  int32_t need_keep_, need_safe_;
  double plateau_;
};

ForecastQuestion Question() {
  ForecastQuestion q;
  q.ttft_threshold = absl::Milliseconds(500);
  q.percentile = 93;
  q.horizon = absl::Minutes(5);
  return q;
}

SizingBounds Bounds(int32_t base, int32_t hint, bool scale_in_allowed = true) {
  SizingBounds b;
  b.base = base;
  b.min_replicas = 1;
  b.max_replicas = 20;
  b.safety_margin = kMargin;
  b.scale_in_allowed = scale_in_allowed;
  b.hint = hint;
  return b;
}

TEST(FleetSizingTest, WorkedByHand) {
  using O = Sizing::Outcome;
  struct Case {
    std::string name;
    int32_t need_keep, need_safe;
    double plateau;
    SizingBounds bounds;
    int32_t want;
    O outcome;
    std::vector<int32_t> want_asked;
    int32_t want_ceilings;
  };
  const std::vector<Case> cases = {
      {"steady: base - 1 asked first is not safe (its 90% < 94% asks the margin's ceiling); base "
       "meets",
       8,
       10,
       1.0,
       Bounds(10, 10),
       10,
       O::kHold,
       {9, 10},
       1},
      {"scale-in found from steady: base - 1 safe implies base meets; down from it: 8, 7 (miss)",
       6,
       8,
       1.0,
       Bounds(10, 10),
       8,
       O::kScaleIn,
       {9, 8, 7},
       0},
      {"scale-up from steady: base - 1 unsafe, base misses, then up: 11, 12 (meets)",
       12,
       14,
       1.0,
       Bounds(10, 10),
       12,
       O::kScaleUp,
       {9, 10, 11, 12},
       2},
      {"scale-in, hint right: 9 safe at the margin implies 12 meets (not asked); 8 not safe",
       8,
       9,
       1.0,
       Bounds(12, 9),
       9,
       O::kScaleIn,
       {9, 8},
       0},
      {"scale-in, hint too low: 6 unsafe, so base is asked; then up from 6: 7 misses, and the line "
       "through 6 and 7 crosses the target at 8.4: 9 meets, 8 misses",
       8,
       9,
       1.0,
       Bounds(12, 6),
       9,
       O::kScaleIn,
       {6, 12, 7, 9, 8},
       1},
      {"scale-in, hint too high: 11 safe (base not asked), then down: 10, 9, 7 (miss), bisect 8",
       6,
       8,
       1.0,
       Bounds(12, 11),
       8,
       O::kScaleIn,
       {11, 10, 9, 7, 8},
       0},
      {"scale-in not allowed: one what-if", 8, 9, 1.0, Bounds(12, 9, false), 12, O::kHold, {12}, 0},
      {"scale-up, hint right: 9 meets, 8 misses",
       9,
       12,
       1.0,
       Bounds(5, 9),
       9,
       O::kScaleUp,
       {5, 9, 8},
       1},
      {"scale-up, no hint: 6 misses, the line through 5 and 6 crosses at 8.4: 9 (meets), 8",
       9,
       12,
       1.0,
       Bounds(5, 0),
       9,
       O::kScaleUp,
       {5, 6, 9, 8},
       1},
      {"scale-up, hint too low: 7 misses, then 8, 9",
       9,
       12,
       1.0,
       Bounds(5, 7),
       9,
       O::kScaleUp,
       {5, 7, 8, 9},
       1},
      {"scale-up, hint above maxReplicas is ignored",
       9,
       12,
       1.0,
       Bounds(5, 40),
       9,
       O::kScaleUp,
       {5, 6, 9, 8},
       1},
      {"maxReplicas insufficient: 6, then as far as each doubling allows toward the line's 28: 9, "
       "13, 20, all miss",
       30,
       30,
       1.0,
       Bounds(5, 0),
       20,
       O::kMaxInsufficient,
       {5, 6, 9, 13, 20},
       1},
      // Plateau 0.90: even 20 idle replicas reach 90%, so the target drops to 89% at both
      // margins and each size is asked again at it; 9 at the margin reaches 0.9 x 9/10 = 81%:
      // unsafe.
      // base - 1 first: its ceiling lowers the margin's target, which then no longer implies
      // base's, so base is asked (and capped) before 9 again at the margin's new target.
      {"SLO unattainable: the targets drop below the ceiling",
       8,
       10,
       0.90,
       Bounds(10, 10),
       10,
       O::kHold,
       {9, 10, 10, 9},
       2},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    KnownForecaster f(tc.need_keep, tc.need_safe, tc.plateau);
    const Sizing s = SizeFleet(Question(), f, tc.bounds);
    EXPECT_EQ(s.replicas, tc.want);
    EXPECT_EQ(s.outcome, tc.outcome);
    EXPECT_EQ(f.asked_, tc.want_asked);
    EXPECT_EQ(static_cast<int32_t>(f.ceilings_.size()), tc.want_ceilings);
    EXPECT_EQ(s.evaluations, static_cast<int32_t>(f.asked_.size() + f.ceilings_.size()));
  }
}

TEST(FleetSizingTest, UnattainableSloAimsJustBelowTheCeiling) {
  KnownForecaster f(8, 10, 0.90);
  const Sizing s = SizeFleet(Question(), f, Bounds(10, 10));
  EXPECT_TRUE(s.slo_unattainable);
  ASSERT_TRUE(s.keep_ceiling.has_value());
  EXPECT_NEAR(*s.keep_ceiling, 89.0, 1e-9);  // 100 x 0.90 - 1
  EXPECT_NEAR(s.keep_percentile, 89.0, 1e-9);
  EXPECT_NEAR(s.scale_in_percentile, 89.0, 1e-9);
  EXPECT_TRUE(s.at_base.meets_slo);
}

TEST(FleetSizingTest, TheHintNeverChangesTheAnswerOfAMonotoneForecaster) {
  for (int32_t need_keep = 1; need_keep <= 22; need_keep += 3) {
    for (int32_t need_safe = need_keep; need_safe <= 24; need_safe += 4) {
      for (int32_t base = 1; base <= 20; ++base) {
        KnownForecaster plain(need_keep, need_safe, 1.0);
        const Sizing want = SizeFleet(Question(), plain, Bounds(base, 0));
        for (int32_t hint = 1; hint <= 21; ++hint) {
          SCOPED_TRACE(testing::Message() << "need " << need_keep << "/" << need_safe << " base "
                                          << base << " hint " << hint);
          KnownForecaster f(need_keep, need_safe, 1.0);
          const Sizing s = SizeFleet(Question(), f, Bounds(base, hint));
          EXPECT_EQ(s.replicas, want.replicas);
          EXPECT_EQ(s.outcome, want.outcome);
        }
      }
    }
  }
}

TEST(FleetSizingTest, AHintSafeAtTheMarginImpliesBaseMeets) {
  KnownForecaster f(8, 9, 1.0);
  const Sizing s = SizeFleet(Question(), f, Bounds(12, 10));
  EXPECT_EQ(s.outcome, Sizing::Outcome::kScaleIn);
  EXPECT_EQ(s.replicas, 9);
  EXPECT_TRUE(s.base_implied);
  EXPECT_FALSE(s.Find(12, 1.0).has_value());  // never asked
  EXPECT_TRUE(s.at_base.meets_slo);           // the lower bound it stands for
  EXPECT_NEAR(s.at_base.attainment, s.at_answer.attainment, 1e-12);
  // Without the hint, base is asked, meets, and the search finds the same size.
  KnownForecaster plain(8, 9, 1.0);
  const Sizing cold = SizeFleet(Question(), plain, Bounds(12, 0));
  EXPECT_FALSE(cold.base_implied);
  EXPECT_TRUE(cold.Find(12, 1.0).has_value());
  EXPECT_EQ(cold.replicas, 9);
}

TEST(FleetSizingTest, FindReturnsWhatWasAskedAtThatMarginsTarget) {
  KnownForecaster f(8, 9, 1.0);
  const Sizing s = SizeFleet(Question(), f, Bounds(12, 6));  // 6 unsafe: base is asked
  ASSERT_TRUE(s.Find(12, 1.0).has_value());
  EXPECT_TRUE(s.Find(12, 1.0)->meets_slo);
  ASSERT_TRUE(s.Find(8, kMargin).has_value());
  EXPECT_FALSE(s.Find(8, kMargin)->meets_slo);
  EXPECT_FALSE(s.Find(8, 1.0).has_value());
  EXPECT_FALSE(s.Find(11, kMargin).has_value());
}

// The target is 93%. With need_keep 11, base 10 forecasts 10/11 = 90.9%: a miss by 2.1 points;
// with need_keep 12, 83.3%: a miss by 9.7.
TEST(FleetSizingTest, AMissWithinTheForecastsNoiseIsHeld) {
  KnownForecaster f(11, 14, 1.0);
  f.unclear_band = 3;  // 90.9% is within 3 points of 93%: unclear
  const Sizing s = SizeFleet(Question(), f, Bounds(10, 0, false));
  EXPECT_EQ(s.outcome, Sizing::Outcome::kHold);
  EXPECT_EQ(s.replicas, 10);
  EXPECT_TRUE(s.miss_within_noise);
  EXPECT_TRUE(s.missed_at_base);
  EXPECT_EQ(f.asked_, std::vector<int32_t>({10}));  // no scale-up search

  KnownForecaster clear(12, 14, 1.0);
  clear.unclear_band = 3;  // 83.3% is a clear miss: up to 12, the smallest size meeting 93%
  const Sizing up = SizeFleet(Question(), clear, Bounds(10, 0, false));
  EXPECT_EQ(up.outcome, Sizing::Outcome::kScaleUp);
  EXPECT_EQ(up.replicas, 12);  // 11 (91.7%) is short, if not clearly: the search wants the target
  EXPECT_FALSE(up.miss_within_noise);
}

TEST(FleetSizingTest, AShallowClearMissWaitsForTheNextDecisionsDraw) {
  // 90.9% misses the 93% aim clearly but still meets a 90% SLO: held, unless the previous
  // decision also missed at this size.
  SizingBounds b = Bounds(10, 0, false);
  b.slo_percentile = 90;
  KnownForecaster first(11, 14, 1.0);
  const Sizing held = SizeFleet(Question(), first, b);
  EXPECT_EQ(held.outcome, Sizing::Outcome::kHold);
  EXPECT_TRUE(held.miss_unconfirmed);
  EXPECT_TRUE(held.missed_at_base);
  EXPECT_EQ(held.replicas, 10);

  b.miss_seen_at_base = true;
  KnownForecaster second(11, 14, 1.0);
  const Sizing confirmed = SizeFleet(Question(), second, b);
  EXPECT_EQ(confirmed.outcome, Sizing::Outcome::kScaleUp);
  EXPECT_EQ(confirmed.replicas, 11);
  EXPECT_FALSE(confirmed.miss_unconfirmed);
  EXPECT_FALSE(confirmed.shallow_step);  // the answer was one replica anyway

  // A shallow miss whose draw asks for more than one replica takes one. With a 92% aim and an
  // 80% SLO, base 10 of need 12 shows 83.3%: a clear miss above the SLO (shallow), confirmed. The
  // search finds 12 (11 shows 91.7%, short of 92); the fleet goes to 11.
  ForecastQuestion aim92 = Question();
  aim92.percentile = 92;
  SizingBounds low = b;
  low.slo_percentile = 80;
  KnownForecaster far(12, 14, 1.0);
  const Sizing stepped = SizeFleet(aim92, far, low);
  EXPECT_EQ(stepped.outcome, Sizing::Outcome::kScaleUp);
  EXPECT_EQ(stepped.replicas, 11);
  EXPECT_TRUE(stepped.shallow_step);
  EXPECT_NEAR(stepped.at_answer.attainment, 11.0 / 12, 1e-12);  // the forecast at 11
  // Not confirmed yet: held, as above.
  low.miss_seen_at_base = false;
  KnownForecaster unconfirmed(12, 14, 1.0);
  EXPECT_EQ(SizeFleet(aim92, unconfirmed, low).outcome, Sizing::Outcome::kHold);

  // 83.3% is below the SLO's own 90%: no waiting.
  b.miss_seen_at_base = false;
  KnownForecaster deep(12, 14, 1.0);
  const Sizing at_once = SizeFleet(Question(), deep, b);
  EXPECT_EQ(at_once.outcome, Sizing::Outcome::kScaleUp);
  EXPECT_EQ(at_once.replicas, 12);

  // Without an SLO percentile (the decision corpus's offline check) every clear miss acts.
  b.slo_percentile = 0;
  KnownForecaster plain(11, 14, 1.0);
  EXPECT_EQ(SizeFleet(Question(), plain, b).outcome, Sizing::Outcome::kScaleUp);
}

TEST(FleetSizingTest, AConfirmedMissIsNeitherHeldNorTakenOneReplicaAtATime) {
  // The cases the two tests above hold, with the miss confirmed by the last minute missed in the
  // fleet's own record (SizingBounds::miss_observed) or by a rise on record (rise_on_record):
  // each scales up at once to the smallest size meeting the aim.
  for (const bool observed : {true, false}) {
    SCOPED_TRACE(observed ? "a missed minute" : "a rise on record");
    SizingBounds b = Bounds(10, 0, false);
    (observed ? b.miss_observed : b.rise_on_record) = true;
    KnownForecaster noisy(11, 14, 1.0);
    noisy.unclear_band = 3;  // 90.9% within 3 points of 93%: held without the record
    const Sizing within = SizeFleet(Question(), noisy, b);
    EXPECT_EQ(within.outcome, Sizing::Outcome::kScaleUp);
    EXPECT_EQ(within.replicas, 11);
    EXPECT_FALSE(within.miss_within_noise);
    EXPECT_EQ(within.rise_on_record, !observed);

    b.slo_percentile = 90;  // 90.9% meets the SLO's own 90%: a shallow miss, first seen
    KnownForecaster shallow(11, 14, 1.0);
    const Sizing first = SizeFleet(Question(), shallow, b);
    EXPECT_EQ(first.outcome, Sizing::Outcome::kScaleUp);
    EXPECT_FALSE(first.miss_unconfirmed);

    // A shallow miss asking for two more replicas takes both (the test above takes one).
    ForecastQuestion aim92 = Question();
    aim92.percentile = 92;
    b.slo_percentile = 80;
    b.miss_seen_at_base = true;
    KnownForecaster far(12, 14, 1.0);
    const Sizing whole = SizeFleet(aim92, far, b);
    EXPECT_EQ(whole.outcome, Sizing::Outcome::kScaleUp);
    EXPECT_EQ(whole.replicas, 12);
    EXPECT_FALSE(whole.shallow_step);
  }
}

TEST(FleetSizingTest, ARiseOnRecordLeavesScaleInAlone) {
  // Where base meets the aim, the rise changes nothing: 8 replicas meet at the margin and the
  // fleet scales in to them, as without it (a missed minute, by contrast, shuts scale-in:
  // BoundsFor's scale_in_allowed).
  SizingBounds in = Bounds(10, 0, true);
  KnownForecaster roomy(8, 8, 1.0);
  const Sizing plain = SizeFleet(Question(), roomy, in);
  in.rise_on_record = true;
  const Sizing rising = SizeFleet(Question(), roomy, in);
  EXPECT_EQ(plain.outcome, Sizing::Outcome::kScaleIn);
  EXPECT_EQ(plain.replicas, 8);
  EXPECT_EQ(rising.outcome, plain.outcome);
  EXPECT_EQ(rising.replicas, plain.replicas);
}

TEST(FleetSizingTest, PoolingWeighsEachDrawByItsVarianceWorkedByHand) {
  Forecast own;
  own.attainment = 0.94;
  own.attainment_se = 0.01;
  own.requests = 1000;
  own.meets_slo = false;
  own.verdict_clear = false;
  int32_t pooled = -1;
  // Equal variances: the plain mean, 0.95, with the standard error over root 2; a draw at another
  // size is not evidence for this one.
  const std::vector<MarginForecast> equal = {{9, 0.96, 0.01, 1000}, {8, 0.10, 0.01, 1000}};
  Forecast f = PoolMarginForecasts(own, 9, equal, 0.95, pooled);
  EXPECT_EQ(pooled, 1);
  EXPECT_NEAR(f.attainment, 0.95, 1e-12);
  EXPECT_NEAR(f.attainment_se, 0.01 / std::sqrt(2.0), 1e-12);
  EXPECT_EQ(f.requests, 2000);
  EXPECT_TRUE(f.meets_slo);
  EXPECT_FALSE(f.verdict_clear);  // on the target: within any noise

  // A draw without its own noise estimate counts with the binomial's: 0.9 of 100 requests
  // (variance 0.0009) against 0.98 of 10,000 (1.96e-6). Weights 1,111.1 and 510,204.1:
  // (1,000 + 500,000) / 511,315.2 = 0.97983.
  own.attainment = 0.90;
  own.attainment_se = 0;
  own.requests = 100;
  f = PoolMarginForecasts(own, 9, {{9, 0.98, 0, 10000}}, 0.95, pooled);
  EXPECT_NEAR(f.attainment, 0.97983, 1e-5);
  EXPECT_TRUE(f.meets_slo);
  EXPECT_TRUE(f.verdict_clear);

  // A clear miss stands when the evidence was drawn at an unknown or lower rate: the load may
  // have risen since.
  own.verdict_clear = true;
  f = PoolMarginForecasts(own, 9, {{9, 0.99, 0.001, 10000}}, 0.95, pooled);
  EXPECT_EQ(pooled, 0);
  EXPECT_DOUBLE_EQ(f.attainment, 0.90);
  EXPECT_FALSE(f.meets_slo);
  f = PoolMarginForecasts(own, 9, {{9, 0.99, 0.001, 10000, 90.0}}, 0.95, pooled,
                          /*arrival_rate=*/100);
  EXPECT_EQ(pooled, 0);  // 90 req/s < 0.95 x 100
  EXPECT_DOUBLE_EQ(f.attainment, 0.90);
  EXPECT_FALSE(f.meets_slo);

  // Drawn at 96 req/s or more (0.95 x 100), earlier draws count against it as against any draw:
  // 0.90 of 100 requests (binomial variance 0.0009) and 0.99 +- 0.001 (variance 1e-6): weights
  // 1,111.1 and 1,000,000: (1,000 + 990,000) / 1,001,111.1 = 0.98990, a clear pass; the draw at
  // 90 req/s is left out.
  f = PoolMarginForecasts(own, 9, {{9, 0.99, 0.001, 10000, 96.0}, {9, 0.10, 0.001, 10000, 90.0}},
                          0.95, pooled, /*arrival_rate=*/100);
  EXPECT_EQ(pooled, 1);
  EXPECT_NEAR(f.attainment, 0.98990, 1e-5);
  EXPECT_TRUE(f.meets_slo);
  EXPECT_TRUE(f.verdict_clear);

  // No evidence at this size: the draw as it is.
  own.verdict_clear = false;
  f = PoolMarginForecasts(own, 9, {{8, 0.99, 0.001, 10000}}, 0.95, pooled);
  EXPECT_EQ(pooled, 0);
  EXPECT_DOUBLE_EQ(f.attainment, 0.90);
}

TEST(FleetSizingTest, EarlierDrawsDecideAScaleInTheLatestDrawLeavesUnclear) {
  // Steady at 10. At the margin 9 replicas show 90% of a 93% aim: within the forecaster's 3.1
  // points of noise, so alone it is no scale-in. With three earlier draws at 9 near 97% (1,000
  // requests each) the pooled answer holds: scale in to 9; 8 (80%) is a clear miss either way.
  SizingBounds b = Bounds(10, 10);
  KnownForecaster alone(10, 10, 1.0);
  alone.unclear_band = 3.1;
  EXPECT_EQ(SizeFleet(Question(), alone, b).outcome, Sizing::Outcome::kHold);

  b.scale_in_evidence = {{9, 0.97, 0.005, 1000}, {9, 0.965, 0.005, 1000}, {9, 0.975, 0.005, 1000}};
  KnownForecaster pooled(10, 10, 1.0);
  pooled.unclear_band = 3.1;
  const Sizing s = SizeFleet(Question(), pooled, b);
  EXPECT_EQ(s.outcome, Sizing::Outcome::kScaleIn);
  EXPECT_EQ(s.replicas, 9);
  EXPECT_GT(s.at_answer.attainment, 0.96);
  ASSERT_FALSE(s.asked.empty());
  EXPECT_EQ(s.asked.front().replicas, 9);
  EXPECT_EQ(s.asked.front().pooled, 3);
  EXPECT_DOUBLE_EQ(s.asked.front().own.attainment, 0.9);  // its own draw, kept for the next ones

  // Each scale-in question carried the earlier draws at its size as its prior, so a sampling twin
  // can stop once the pool is decided: at 9 the three draws (variances the binomial's 2.91e-5 and
  // 3.3775e-5 for the first two, 2.5e-5 for the third: mean 0.970500, standard error 0.003101);
  // at 8 none.
  ASSERT_EQ(pooled.margin_priors_.size(), 2u);
  EXPECT_EQ(pooled.margin_priors_[0].draws(), 3);
  EXPECT_NEAR(pooled.margin_priors_[0].mean(), 0.970500, 1e-6);
  EXPECT_NEAR(pooled.margin_priors_[0].se(), 0.003101, 1e-6);
  EXPECT_TRUE(pooled.margin_priors_[1].empty());
}

// The clearly safe size (Sizing::clearly_safe): the smallest size asked at the margin whose answer
// meets the target by more than its noise. A forecaster whose attainment at the margin climbs two
// points a replica (0.80 + 0.02 n; the full threshold four points above) and calls a verdict clear
// two points or more from the target (93%): 6 misses (92%), 7 meets but not clearly (94%), 8 and
// up meet clearly (96%).
class LinearForecaster : public Forecaster {
 public:
  Forecast Evaluate(const ForecastQuestion& q) const override {
    const bool at_margin = q.slack_margin < 1.0;
    if (q.attainment_tolerance == 0) asked_.push_back(q.candidate_replicas);
    Forecast f;
    f.attainment = std::min(1.0, (at_margin ? 0.80 : 0.84) + 0.02 * q.candidate_replicas);
    f.meets_slo = 100 * f.attainment + 1e-9 >= q.percentile;
    f.verdict_clear = std::abs(100 * f.attainment - q.percentile) >= 2 - 1e-9;
    return f;
  }
  mutable std::vector<int32_t> asked_;
};

TEST(FleetSizingTest, TheClearlySafeSizeIsTheSmallestClearMeetAsked) {
  const LinearForecaster f;
  // From 12, steady: 11 at the margin (1.0, clear), so 12 is not asked; down from 11: 10, 9, 7
  // (the gallop: 11 - 1, 11 - 2, 11 - 4, all meeting; the line through 10 and 9 crosses the
  // target at 6.5, predicting 7 as the smallest that meets), then 6 (the line through 9 and 7
  // again: a guided probe short of the plain 3) misses. The answer is 7, which meets unclearly;
  // the clear meets asked are 11, 10, 9: the smallest is 9 (8 was never asked).
  const Sizing s = SizeFleet(Question(), f, Bounds(12, 12));
  EXPECT_EQ(s.outcome, Sizing::Outcome::kScaleIn);
  EXPECT_EQ(s.replicas, 7);
  EXPECT_EQ(f.asked_, (std::vector<int32_t>{11, 10, 9, 7, 6}));
  EXPECT_EQ(s.clearly_safe, 9);

  // No scale-in allowed: no clearly safe size, whatever was asked.
  const LinearForecaster g;
  EXPECT_EQ(SizeFleet(Question(), g, Bounds(12, 12, /*scale_in_allowed=*/false)).clearly_safe, 0);
  // A fleet that already needs all it has (6 misses at the full threshold, 7 at the margin): no
  // scale-in, none.
  const LinearForecaster h;
  const Sizing held = SizeFleet(Question(), h, Bounds(7, 7));
  EXPECT_NE(held.outcome, Sizing::Outcome::kScaleIn);
  EXPECT_EQ(held.clearly_safe, 0);
}

}  // namespace
}  // namespace twinscale::policy
