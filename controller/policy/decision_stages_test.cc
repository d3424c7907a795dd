// The decision's stages (recommend.h), each alone, table-tested against hand-worked cases: the
// observed question, the forecast of the judged span, the aim, what a sizing says, the
// stabilization windows, the rate limits and the admission advice. Recommend's own tests
// (recommend_test.cc) check the chain as a whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "controller/policy/admission_advice.h"
#include "controller/policy/admission_search.h"
#include "controller/policy/aim.h"
#include "controller/policy/forecast_stage.h"
#include "controller/policy/observed_question.h"
#include "controller/policy/rate_limit.h"
#include "controller/policy/reason.h"
#include "controller/policy/size_on_twin.h"
#include "controller/policy/stabilize.h"

namespace twinscale::policy {
namespace {

using state::FleetSnapshot;
using state::Input;
using state::PodView;
using state::ReplicaState;
using History = std::deque<std::pair<absl::Time, int32_t>>;

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

PolicyConfig Config() {
  PolicyConfig c;
  c.min_replicas = 1;
  c.max_replicas = 40;
  c.warmup_expected = absl::Seconds(60);
  c.interval = absl::Seconds(15);
  return c;
}

std::vector<ReasonCode> Kinds(const std::vector<Reason>& reasons) {
  std::vector<ReasonCode> kinds;
  for (const Reason& r : reasons) kinds.push_back(r.kind);
  return kinds;
}

// ---- reasons ----------------------------------------------------------------------------------

TEST(ReasonTest, APolicyReasonCarriesItsCodesStableName) {
  const Reason r = MakeReason(ReasonCode::kScaleDownStabilized, "holding");
  EXPECT_EQ(r.code, "ScaleDownStabilized");
  EXPECT_EQ(r.kind, ReasonCode::kScaleDownStabilized);
  EXPECT_EQ(ReasonName(ReasonCode::kForecastMissesSlo), "ForecastMissesSlo");
  EXPECT_EQ(ReasonName(ReasonCode::kOther), "");
  EXPECT_TRUE(HasReason({r}, ReasonCode::kScaleDownStabilized));
  EXPECT_FALSE(HasReason({r}, ReasonCode::kScaleDownLimit));
  // A reason from outside the policy (a scripted decider's) has no typed code.
  EXPECT_FALSE(
      HasReason({Reason{"ScaleDownStabilized", "by hand"}}, ReasonCode::kScaleDownStabilized));
}

// ---- 1. the observed question -----------------------------------------------------------------

ReplicaState Pod(PodView::Stage stage, absl::Duration age, bool unschedulable = false) {
  ReplicaState r;
  r.name = "pod";
  r.stage = stage;
  r.age = age;
  r.unschedulable = unschedulable;
  r.fresh = stage == PodView::Stage::kReady;
  r.waiting = 2;
  r.running = 10;
  r.kv_usage = 0.3;
  return r;
}

TEST(ObserveFleetTest, StartingPodsCountWithTheirRemainingWarmupUntilTheyAreStuck) {
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(60);
  c.warmup_p99 = absl::Seconds(180);
  FleetSnapshot s;
  s.at = T(0);
  s.replicas = {Pod(PodView::Stage::kReady, absl::Minutes(10)),
                Pod(PodView::Stage::kReady, absl::Minutes(10)),
                Pod(PodView::Stage::kLoading, absl::Seconds(20)),    // 40 s left
                Pod(PodView::Stage::kWarmingUp, absl::Seconds(55)),  // 5 s: at least interval / 2
                Pod(PodView::Stage::kPending, absl::Seconds(200)),   // past the p99: not counted
                Pod(PodView::Stage::kPending, absl::Seconds(10), /*unschedulable=*/true)};
  s.workload.arrival_rate = Input<double>::Value(120);
  s.workload.arrival_rate_level = 100;  // the level, not the last interval, is forecast from
  s.workload.rate_cv = 1.7;             // capped at 1
  const ObservedFleet o = ObserveFleet(s, c, T(0));
  EXPECT_EQ(o.question.ready.size(), 2u);
  ASSERT_EQ(o.question.pending_ready_in.size(), 2u);
  EXPECT_EQ(o.question.pending_ready_in[0], absl::Seconds(40));
  EXPECT_EQ(o.question.pending_ready_in[1], absl::Seconds(7.5));
  ASSERT_EQ(o.not_counted.size(), 2u);
  EXPECT_FALSE(o.not_counted[0].unschedulable);
  EXPECT_TRUE(o.not_counted[1].unschedulable);
  EXPECT_EQ(Kinds(o.reasons), std::vector<ReasonCode>{ReasonCode::kPendingNotCounted});
  EXPECT_DOUBLE_EQ(o.question.arrival_rate, 100);
  EXPECT_DOUBLE_EQ(o.question.arrival_rate_cv, 1.0);
  // The horizon: the warm-up, then a minute (four 15 s intervals).
  EXPECT_EQ(o.question.horizon, absl::Seconds(120));
  // The aim before the record moves it: the target's share, at least percentile + headroom.
  EXPECT_DOUBLE_EQ(o.question.percentile, 95);
  EXPECT_EQ(o.question.seed, DecisionSeed(c.seed, T(0)));
  EXPECT_NE(DecisionSeed(c.seed, T(0)), DecisionSeed(c.seed, T(15)));
}

TEST(ObserveFleetTest, TheFullAimIsTheTargetsShareWithinItsFloorAndCeiling) {
  struct Case {
    double target, percentile, headroom, want;
  };
  for (const Case& tc : std::vector<Case>{{95, 90, 1, 95},      // the target's share
                                          {90, 90, 1, 91},      // at least percentile + headroom
                                          {99.9, 90, 1, 99.5},  // at most 99.5
                                          {95, 95, 2, 97}}) {
    PolicyConfig c = Config();
    c.target_requests = tc.target;
    c.percentile = tc.percentile;
    c.min_forecast_headroom = tc.headroom;
    EXPECT_DOUBLE_EQ(FullAim(c), tc.want) << tc.target << " " << tc.percentile;
  }
}

// ---- 2. the forecast of the judged span --------------------------------------------------------

TEST(ForecastStageTest, TheMeanRateOverTheJudgedSpanFollowsThePath) {
  ForecastQuestion q;
  q.arrival_rate = 100;
  q.rate_interval = absl::Seconds(15);
  q.horizon = absl::Seconds(120);
  EXPECT_DOUBLE_EQ(MeanForecastRate(q, absl::Seconds(60)), 100);  // the level holds
  q.arrival_rate_baseline = 80;
  q.rate_persistence = {0.5};  // half the departure lasts, at every lag
  EXPECT_DOUBLE_EQ(MeanForecastRate(q, absl::Seconds(60)), 90);
  q.rate_season = {1.1};
  EXPECT_DOUBLE_EQ(MeanForecastRate(q, absl::Seconds(60)), 99);
  EXPECT_DOUBLE_EQ(MeanForecastRate(q, absl::Seconds(120)), 0);  // an empty span
}

// A history whose rate checks matured over the last minutes: each forecast `forecasts[i]` req/s
// for [T(800 + 15 i), T(860 + 15 i)), where 120 req/s came throughout.
PolicyHistory CheckedHistory(const std::vector<double>& forecasts) {
  PolicyHistory h;
  for (int end = 700; end <= 1000; end += 15) h.arrivals.push_back({T(end), 15, 15 * 120.0});
  for (size_t i = 0; i < forecasts.size(); ++i) {
    const int from = 800 + 15 * static_cast<int>(i);
    h.rate_checks.push_back({T(from), T(from + 60), forecasts[i]});
  }
  return h;
}

TEST(ForecastStageTest, ARunOfShortfallsScalesTheForecastByTheLeastOfThem) {
  const PolicyConfig c = Config();  // 3 minutes of checks, at least 4, capped at 2x
  FleetSnapshot s;
  s.at = T(1000);
  s.workload.arrival_rate = Input<double>::Value(100);
  s.workload.rate_interval = absl::Seconds(15);
  ForecastQuestion q = ObserveFleet(s, c, T(1000)).question;
  q.arrival_rate = 100;
  struct Case {
    std::vector<double> forecasts;
    double want_margin;
  };
  for (const Case& tc :
       std::vector<Case>{{{100, 100, 100, 100, 120 / 1.1}, 1.1},  // all short, the least by 10%
                         {{100, 100, 100, 130, 100}, 1.0},        // one check saw fewer: no run
                         {{100, 100, 100}, 1.0},                  // too few checks
                         {{40, 40, 40, 40}, 2.0}}) {              // capped
    const ForecastAhead f = ForecastTheSpan(q, s, c, CheckedHistory(tc.forecasts), T(1000));
    EXPECT_NEAR(f.margin, tc.want_margin, 1e-9);
    EXPECT_NEAR(f.question.arrival_rate, 100 * tc.want_margin, 1e-6);
    EXPECT_EQ(HasReason(f.reasons, ReasonCode::kForecastMargin), tc.want_margin > 1);
    // The check this decision leaves is its forecast before the margin, over [warm-up, horizon).
    ASSERT_TRUE(f.rate_check.has_value());
    EXPECT_DOUBLE_EQ(f.rate_check->forecast, 100);
    EXPECT_EQ(f.rate_check->from, T(1060));
    EXPECT_EQ(f.rate_check->to, T(1120));
    ASSERT_TRUE(f.arrivals_seen.has_value());
    EXPECT_DOUBLE_EQ(f.arrivals_seen->requests, 1500);
  }
}

TEST(ForecastStageTest, TheSeasonIsSaidWhereItMovesTheSpanByAPercentOrMore) {
  const PolicyConfig c = Config();
  FleetSnapshot s;
  s.at = T(0);
  s.workload.arrival_rate = Input<double>::Value(100);
  for (const auto& [season, said] :
       std::vector<std::pair<double, bool>>{{1.2, true}, {1.005, false}, {0.9, true}}) {
    ForecastQuestion q = ObserveFleet(s, c, T(0)).question;
    q.rate_season = {season};
    const ForecastAhead f = ForecastTheSpan(q, s, c, PolicyHistory{}, T(0));
    EXPECT_EQ(f.season.has_value(), said) << season;
    EXPECT_EQ(HasReason(f.reasons, ReasonCode::kSeasonalForecast), said);
    if (said) {
      EXPECT_DOUBLE_EQ(f.season->with_season, 100 * season);
      EXPECT_DOUBLE_EQ(f.season->without, 100);
    }
  }
}

// ---- 3. the aim -------------------------------------------------------------------------------

// `minutes` of 15 s intervals ending at `now`, 100 requests each, `percent` of them in time.
PolicyHistory Served(int minutes, double percent, absl::Time now) {
  PolicyHistory h;
  for (int s = minutes * 60; s > 0; s -= 15) {
    h.served.push_back({now - absl::Seconds(s - 15), 100, percent});
  }
  return h;
}

TEST(AimTest, TheRecordMovesTheAimByItsDistanceFromTheSetPoint) {
  // Target 95%, set point 96% (the 1-point cushion); the aim may go down to percentile +
  // headroom and up by 2 points; no move on less than 10 minutes of record.
  struct Case {
    const char* name;
    int minutes;
    double served_percent;
    double percentile;  // the SLO's
    double want_aim;
    ReasonCode want;
  };
  for (const Case& tc :
       std::vector<Case>{{"no record", 0, 0, 90, 95, ReasonCode::kOther},
                         {"too short a record", 5, 98, 90, 95, ReasonCode::kOther},
                         {"a surplus lowers it", 20, 98, 90, 93, ReasonCode::kSurplusSpent},
                         {"to its floor", 20, 100, 92, 93, ReasonCode::kSurplusSpent},
                         {"a shortfall raises it", 20, 95, 90, 96, ReasonCode::kShortfallOnRecord},
                         {"by at most 2 points", 20, 90, 90, 97, ReasonCode::kShortfallOnRecord},
                         {"on the set point", 20, 96, 90, 95, ReasonCode::kOther}}) {
    PolicyConfig c = Config();
    c.percentile = tc.percentile;
    const Aim aim = AimAt(Served(tc.minutes, tc.served_percent, T(3600)), c, T(3600));
    EXPECT_NEAR(aim.percentile, tc.want_aim, 1e-9) << tc.name;
    EXPECT_NEAR(aim.lowered_by, 95 - tc.want_aim, 1e-9) << tc.name;
    if (tc.want == ReasonCode::kOther) {
      EXPECT_TRUE(aim.reasons.empty()) << tc.name;
    } else {
      EXPECT_EQ(Kinds(aim.reasons), std::vector<ReasonCode>{tc.want}) << tc.name;
    }
  }
}

// Four 15 s interval checks ending at `now`, 3,000 requests each: the twin forecast `predicted`
// of each, the fleet served `served`.
PolicyHistory Checked(double predicted, double served, absl::Time now) {
  PolicyHistory h;
  for (int s = 45; s >= 0; s -= 15) {
    h.interval_checks.push_back({now - absl::Seconds(s), 3000, predicted, 0, served});
  }
  return h;
}

TEST(AimTest, AMinuteMissedOrAtRiskRaisesTheAimByTheTwinsOptimism) {
  // The full aim is 95% (no record to move it). The SLO's percentile is 90: a minute serving
  // less than 90% in time missed it. Noise over 12,000 requests is well under a point.
  struct Case {
    const char* name;
    double predicted, served;
    double want_aim;
    bool want_reason;
  };
  for (const Case& tc : std::vector<Case>{
           {"met by a margin the optimism leaves", 0.98, 0.96, 95, false},
           {"missed, twin right", 0.86, 0.86, 95, true},
           {"missed, twin pessimistic", 0.80, 0.86, 95, true},
           {"missed, twin 3 points optimistic", 0.89, 0.86, 98, true},
           {"missed, twin 10 points optimistic: at most 99.5%", 0.96, 0.86, 99.5, true},
       }) {
    SCOPED_TRACE(tc.name);
    const PolicyConfig c = Config();
    const Aim aim = AimAt(Checked(tc.predicted, tc.served, T(3600)), c, T(3600));
    EXPECT_NEAR(aim.percentile, tc.want_aim, 1e-9);
    EXPECT_NEAR(aim.lowered_by, 95 - tc.want_aim, 1e-9);
    EXPECT_NEAR(aim.optimism_raise, tc.want_aim - 95, 1e-9);
    EXPECT_EQ(HasReason(aim.reasons, ReasonCode::kMinuteMissed), tc.want_reason);
    ASSERT_TRUE(aim.minute.has_value());
    EXPECT_EQ(aim.minute->missed, tc.served < 0.90);
  }
  // A minute met by 3 points, which the twin forecast 6 points better: the same error on the next
  // minute misses it, and the aim rises by the 6 points now (MinuteAtRisk), not after the miss.
  {
    const Aim aim = AimAt(Checked(0.99, 0.93, T(3600)), Config(), T(3600));
    EXPECT_NEAR(aim.percentile, 99.5, 1e-9);  // 95 + 6, at most 99.5
    EXPECT_NEAR(aim.optimism_raise, 4.5, 1e-9);
    EXPECT_EQ(Kinds(aim.reasons), std::vector<ReasonCode>{ReasonCode::kMinuteAtRisk});
    const Aim two = AimAt(Checked(0.955, 0.93, T(3600)), Config(), T(3600));  // 93 - 2.5 < 91
    EXPECT_NEAR(two.percentile, 97.5, 1e-9);
    EXPECT_EQ(Kinds(two.reasons), std::vector<ReasonCode>{ReasonCode::kMinuteAtRisk});
  }
  // On a lowered aim the raise adds to it: 20 minutes at 98% lower the aim by 2 points (the
  // record's test above), 3 points of optimism raise it back past the full aim.
  PolicyHistory h = Served(20, 98, T(3600));
  h.interval_checks = Checked(0.89, 0.86, T(3600)).interval_checks;
  const Aim both = AimAt(h, Config(), T(3600));
  EXPECT_NEAR(both.percentile, 96, 1e-9);
  EXPECT_EQ(Kinds(both.reasons),
            (std::vector<ReasonCode>{ReasonCode::kSurplusSpent, ReasonCode::kMinuteMissed}));
  // No check window: nothing is checked.
  PolicyConfig off = Config();
  off.minute_check_window = absl::ZeroDuration();
  EXPECT_FALSE(AimAt(Checked(0.96, 0.86, T(3600)), off, T(3600)).minute.has_value());
}

// ---- 4. what a sizing says --------------------------------------------------------------------

TEST(ReadSizingTest, EachOutcomeGivesItsRecommendationAndReasons) {
  using O = Sizing::Outcome;
  struct Case {
    const char* name;
    O outcome;
    int32_t replicas;
    bool within_noise = false, unconfirmed = false, unattainable = false;
    bool over_limits = false, enforce = false, stale = false;
    int32_t want_recommendation;
    bool want_at_risk;
    std::vector<ReasonCode> want;
  };
  const int32_t base = 10;
  for (const Case& tc :
       std::vector<Case>{{"scale up",
                          O::kScaleUp,
                          14,
                          false,
                          false,
                          false,
                          false,
                          false,
                          false,
                          14,
                          false,
                          {ReasonCode::kForecastMissesSlo}},
                         {"max insufficient",
                          O::kMaxInsufficient,
                          40,
                          false,
                          false,
                          false,
                          false,
                          false,
                          false,
                          40,
                          true,
                          {ReasonCode::kMaxReplicasInsufficient}},
                         {"unattainable",
                          O::kMaxInsufficient,
                          40,
                          false,
                          false,
                          true,
                          false,
                          false,
                          false,
                          40,
                          true,
                          {ReasonCode::kSloUnattainable, ReasonCode::kMaxReplicasInsufficient}},
                         {"scale in",
                          O::kScaleIn,
                          8,
                          false,
                          false,
                          false,
                          false,
                          false,
                          false,
                          8,
                          false,
                          {ReasonCode::kScaleInSafe}},
                         {"within noise",
                          O::kHold,
                          base,
                          true,
                          false,
                          false,
                          false,
                          false,
                          false,
                          base,
                          false,
                          {ReasonCode::kMissWithinNoise}},
                         {"unconfirmed",
                          O::kHold,
                          base,
                          false,
                          true,
                          false,
                          false,
                          false,
                          false,
                          base,
                          false,
                          {ReasonCode::kMissUnconfirmed}},
                         {"limits enforced",
                          O::kHold,
                          base,
                          false,
                          false,
                          false,
                          true,
                          true,
                          false,
                          base + 1,
                          false,
                          {ReasonCode::kLimitsExceeded}},
                         {"stale",
                          O::kHold,
                          base,
                          false,
                          false,
                          false,
                          false,
                          false,
                          true,
                          base,
                          false,
                          {ReasonCode::kScaleInFrozen}},
                         {"over limits",
                          O::kHold,
                          base,
                          false,
                          false,
                          false,
                          true,
                          false,
                          false,
                          base,
                          false,
                          {ReasonCode::kScaleInBlockedByLimits}},
                         {"steady",
                          O::kHold,
                          base,
                          false,
                          false,
                          false,
                          false,
                          false,
                          false,
                          base,
                          false,
                          {ReasonCode::kSteady}}}) {
    PolicyConfig c = Config();
    c.enforce_limits_on_scale_up = tc.enforce;
    Sizing s;
    s.outcome = tc.outcome;
    s.replicas = tc.replicas;
    s.miss_within_noise = tc.within_noise;
    s.miss_unconfirmed = tc.unconfirmed;
    s.slo_unattainable = tc.unattainable;
    s.keep_ceiling = 80;
    ForecastQuestion q;
    q.arrival_rate = 100;
    FleetLoad load;
    load.over_limits = tc.over_limits;
    const SizingVerdict v = ReadSizing(s, q, c, load, tc.stale, "a scrape failed", base, 0);
    EXPECT_EQ(v.recommendation, tc.want_recommendation) << tc.name;
    EXPECT_EQ(v.slo_at_risk, tc.want_at_risk) << tc.name;
    EXPECT_EQ(Kinds(v.reasons), tc.want) << tc.name;
  }
}

TEST(ReadSizingTest, AFleetHeldAfterAMissedMinuteIsNotSteady) {
  // The aim's MinuteMissed says why it holds; nothing else is said of a hold that met the aim.
  Sizing s;
  s.outcome = Sizing::Outcome::kHold;
  s.replicas = 10;
  s.miss_observed = true;
  const SizingVerdict v =
      ReadSizing(s, ForecastQuestion{}, Config(), FleetLoad{}, false, "", 10, 0);
  EXPECT_EQ(v.recommendation, 10);
  EXPECT_TRUE(v.reasons.empty());
  s.miss_observed = false;
  EXPECT_EQ(
      Kinds(ReadSizing(s, ForecastQuestion{}, Config(), FleetLoad{}, false, "", 10, 0).reasons),
      std::vector<ReasonCode>{ReasonCode::kSteady});
}

TEST(BoundsForTest, ScaleInNeedsFreshInputsUnderTheLimitsAndPoolsOnlyComparableDraws) {
  const PolicyConfig c = Config();  // a 300 s scale-down window, margin 0.8
  FleetSnapshot s;
  PolicyHistory h;
  h.recommendations = {{T(900), 12}, {T(985), 11}};
  h.last_missed_at = 10;
  auto draw = [&](int at, int32_t base, double margin, int32_t not_counted) {
    PolicyHistory::MarginDraw m;
    m.at = T(at);
    m.base = base;
    m.safety_margin = margin;
    m.ttft_threshold = c.ttft_threshold;
    m.ttft_per_prompt_token = c.ttft_per_prompt_token;
    m.forecast.replicas = 9;
    m.not_counted = not_counted;
    return m;
  };
  h.margin_draws = {draw(990, 10, 0.8, 0),   // pooled
                    draw(600, 10, 0.8, 0),   // outside the window
                    draw(990, 11, 0.8, 0),   // another base
                    draw(990, 10, 0.7, 0),   // another margin
                    draw(990, 10, 0.8, 1),   // other pods left out
                    draw(1000, 10, 0.8, 0),  // this very decision's time
                    draw(800, 10, 0.8, 0)};  // pooled (200 s ago)
  const SizingBounds b = BoundsFor(s, c, h, 10, 0, FleetLoad{}, T(1000));
  EXPECT_TRUE(b.scale_in_allowed);
  EXPECT_EQ(b.hint, 11);
  EXPECT_TRUE(b.miss_seen_at_base);
  EXPECT_EQ(b.scale_in_evidence.size(), 2u);
  FleetLoad over;
  over.over_limits = true;
  EXPECT_FALSE(BoundsFor(s, c, h, 10, 0, over, T(1000)).scale_in_allowed);
  s.stale = true;
  EXPECT_FALSE(BoundsFor(s, c, h, 10, 0, FleetLoad{}, T(1000)).scale_in_allowed);
  s.stale = false;
  EXPECT_FALSE(b.miss_observed);
  // The last minute served 85% in time (the SLO's percentile is 90): the miss is observed, and
  // nothing scales in.
  h.interval_checks = Checked(0.95, 0.85, T(1000)).interval_checks;
  const SizingBounds missed = BoundsFor(s, c, h, 10, 0, FleetLoad{}, T(1000));
  EXPECT_TRUE(missed.miss_observed);
  EXPECT_FALSE(missed.scale_in_allowed);
}

TEST(LoadOfTest, QueuePerReadyReplicaAndTheHighestKvUseAgainstTheLimits) {
  PolicyConfig c = Config();  // limits: 4 waiting per replica, 85% KV
  FleetSnapshot s;
  s.replicas = {Pod(PodView::Stage::kReady, absl::Minutes(1)),
                Pod(PodView::Stage::kReady, absl::Minutes(1))};
  s.replicas[0].waiting = 3;
  s.replicas[1].waiting = 7;  // (3 + 7) / 2 = 5 per replica
  s.replicas[1].kv_usage = 0.5;
  FleetLoad load = LoadOf(s, c);
  EXPECT_DOUBLE_EQ(load.queue_per_replica, 5);
  EXPECT_DOUBLE_EQ(load.kv_usage, 0.5);
  EXPECT_TRUE(load.over_limits);
  c.queue_depth_per_replica = 6;
  EXPECT_FALSE(LoadOf(s, c).over_limits);
  s.replicas[0].kv_usage = 0.9;
  EXPECT_TRUE(LoadOf(s, c).over_limits);
}

// ---- 5. the stabilization windows --------------------------------------------------------------

TEST(StabilizeTest, AScaleDownWaitsForTheWholeWindowToAgree) {
  // Scale-down window 300 s (twinscale's default); scale-up window as set per case.
  struct Case {
    const char* name;
    int32_t recommendation;
    History history;
    absl::Duration up_window;
    int32_t want;
    bool want_reason;
  };
  const int32_t base = 10;
  History agreeing, one_higher, uncovered, old_high;
  for (int s = 300; s >= 15; s -= 15) agreeing.emplace_back(T(1000 - s), 8);
  one_higher = agreeing;
  one_higher[10].second = 9;
  for (int s = 100; s >= 15; s -= 15) uncovered.emplace_back(T(1000 - s), 8);
  old_high = agreeing;
  old_high.push_front({T(600), 20});  // outside the window: covers it, does not count
  for (const Case& tc : std::vector<Case>{
           {"the window agreed", 8, agreeing, absl::ZeroDuration(), 8, false},
           {"one higher in it", 8, one_higher, absl::ZeroDuration(), 9, true},
           {"not yet observed in full", 8, uncovered, absl::ZeroDuration(), base, true},
           {"older than the window", 8, old_high, absl::ZeroDuration(), 8, false},
           {"never above base", 8, History{{T(900), 30}, {T(600), 8}}, absl::ZeroDuration(), base,
            true},
           {"scale up, no window", 14, agreeing, absl::ZeroDuration(), 14, false},
           {"scale up, the window's least", 14, History{{T(970), 12}}, absl::Seconds(60), 12,
            false},
           {"scale up, never below base", 14, History{{T(970), 9}}, absl::Seconds(60), base, false},
           {"hold", base, agreeing, absl::ZeroDuration(), base, false}}) {
    PolicyConfig c = Config();
    c.scale_up.stabilization_window = tc.up_window;
    const Stabilized s = Stabilize(tc.recommendation, base, tc.history, c, T(1000));
    EXPECT_EQ(s.replicas, tc.want) << tc.name;
    EXPECT_EQ(s.reason.has_value(), tc.want_reason) << tc.name;
    if (s.reason) {
      EXPECT_EQ(s.reason->kind, ReasonCode::kScaleDownStabilized);
    }
  }
  PolicyConfig none = Config();
  none.scale_down.stabilization_window = absl::ZeroDuration();
  EXPECT_EQ(Stabilize(8, base, History{}, none, T(1000)).replicas, 8);
}

// Clear evidence (Sizing::clearly_safe) shortens the wait to clear_scale_in_window (180 s) down to
// the clearly safe size; below it the whole window still holds. Base 20; the window's
// recommendations: 18 from 300 s to 195 s ago, then 12 over the last 180 s; this decision
// recommends 10.
TEST(StabilizeTest, ClearEvidenceScalesInAfterTheShorterWindow) {
  struct Case {
    const char* name;
    int32_t clearly_safe;
    History history;
    int32_t want;
    ReasonCode want_reason;
  };
  const int32_t base = 20;
  History falling, recent_high, uncovered;
  for (int s = 300; s >= 15; s -= 15) falling.emplace_back(T(1000 - s), s > 180 ? 18 : 12);
  recent_high = falling;
  recent_high.back().second = 15;  // 15 s ago
  for (int s = 100; s >= 15; s -= 15) uncovered.emplace_back(T(1000 - s), 12);
  for (const Case& tc : std::vector<Case>{
           // The whole window holds 18; the clear 11 lets the last three minutes' 12 through.
           {"clear below the shorter window's: that window holds", 11, falling, 12,
            ReasonCode::kScaleInClear},
           {"clear above the shorter window's: the clear size holds", 14, falling, 14,
            ReasonCode::kScaleInClear},
           {"a higher recommendation within the shorter window holds", 11, recent_high, 15,
            ReasonCode::kScaleInClear},
           {"no clear size: the whole window", 0, falling, 18, ReasonCode::kScaleDownStabilized},
           {"clear, but no lower than the whole window's hold", 19, falling, 18,
            ReasonCode::kScaleDownStabilized},
           // After a restart the window is not observed in full: base, clear or not.
           {"window not yet observed", 11, uncovered, base, ReasonCode::kScaleDownStabilized}}) {
    const Stabilized s = Stabilize(10, base, tc.history, Config(), T(1000), tc.clearly_safe);
    EXPECT_EQ(s.replicas, tc.want) << tc.name;
    ASSERT_TRUE(s.reason.has_value()) << tc.name;
    EXPECT_EQ(s.reason->kind, tc.want_reason) << tc.name;
  }
  // A recommendation the shorter window and the clear size both allow is taken as it is.
  History agreeing;
  for (int s = 300; s >= 15; s -= 15) agreeing.emplace_back(T(1000 - s), s > 180 ? 18 : 10);
  const Stabilized at_rec = Stabilize(10, base, agreeing, Config(), T(1000), 10);
  EXPECT_EQ(at_rec.replicas, 10);
  // Scale-up and a shorter window switched off: clear evidence changes nothing.
  EXPECT_EQ(Stabilize(25, base, falling, Config(), T(1000), 11).replicas, 25);
  PolicyConfig off = Config();
  off.clear_scale_in_window = absl::ZeroDuration();
  EXPECT_EQ(Stabilize(10, base, falling, off, T(1000), 11).replicas, 18);
}

// Whether a change of level outlasts the warm-up, from the persistence weights (one per 15 s
// interval ahead): the weight at the interval after the 60 s warm-up, the fourth, decides.
TEST(StabilizeTest, ARaiseForAMissedMinuteIsHeldAMinuteWhereLevelsLast) {
  // Recommendations at 700-940 s; the one at 850 s (30 replicas) came from an aim MinuteMissed
  // raised. At 1000 s, 150 s later (more than the one-minute check window), a lasting level drops
  // it; bursty traffic keeps it, as does a raise 45 s old.
  const History recs = {{T(700), 20}, {T(850), 30}, {T(880), 22}, {T(940), 21}};
  const std::deque<absl::Time> raised = {T(850)};
  const PolicyConfig c = Config();
  EXPECT_EQ(HeldRecommendations(recs, raised, true, c, T(1000)),
            (History{{T(700), 20}, {T(880), 22}, {T(940), 21}}));
  EXPECT_EQ(HeldRecommendations(recs, raised, false, c, T(1000)), recs);
  EXPECT_EQ(HeldRecommendations(recs, raised, true, c, T(895)), recs);
  EXPECT_EQ(HeldRecommendations(recs, {}, true, c, T(1000)), recs);
  // Through Stabilize: base 30, now 20; the 300 s window holds 30 with the raise, 22 without.
  EXPECT_EQ(Stabilize(20, 30, recs, c, T(1000)).replicas, 30);
  EXPECT_EQ(
      Stabilize(20, 30, HeldRecommendations(recs, raised, true, c, T(1000)), c, T(1000)).replicas,
      22);
}

TEST(StabilizeTest, TheWindowHoldsEachRecommendationScaledToTheRateNow) {
  // Recommendations for 300, 280, 200 and 150 req/s; the one at 940 s has no rate on record (stale
  // inputs), the one at 700 s none at all. At 150 req/s now, where levels last:
  // 36 * 150/300 = 18; 30 * 150/280 = 16.07 -> 17 (rounded up); 24 * 150/200 = 18; 20 at 150 req/s
  // stays (the same rate); 25 and 19 without a rate stay.
  const History recs = {{T(700), 19}, {T(760), 36}, {T(820), 30},
                        {T(880), 24}, {T(910), 20}, {T(940), 25}};
  const std::deque<std::pair<absl::Time, double>> rates = {
      {T(760), 300}, {T(820), 280}, {T(880), 200}, {T(910), 150}, {T(940), 0}};
  EXPECT_EQ(
      ScaledToTheRateNow(recs, rates, 150, true),
      (History{
          {T(700), 19}, {T(760), 18}, {T(820), 17}, {T(880), 18}, {T(910), 20}, {T(940), 25}}));
  // A higher rate now never raises a recommendation; bursty traffic, or no rate now, scales none.
  EXPECT_EQ(ScaledToTheRateNow(recs, rates, 400, true), recs);
  EXPECT_EQ(ScaledToTheRateNow(recs, rates, 150, false), recs);
  EXPECT_EQ(ScaledToTheRateNow(recs, rates, 0, true), recs);
  // An exact product is not rounded past itself: 30 at 300 req/s, 150 now: 15.
  EXPECT_EQ(ScaledToTheRateNow({{T(760), 30}}, {{T(760), 300}}, 150, true),
            (History{{T(760), 15}}));
  // Through Stabilize: base 36, recommendation 14 at 1000 s; the 300 s window holds 36 as
  // recommended, 25 scaled (the largest: the one without a rate).
  const PolicyConfig c = Config();
  EXPECT_EQ(Stabilize(14, 36, recs, c, T(1000)).replicas, 36);
  EXPECT_EQ(Stabilize(14, 36, ScaledToTheRateNow(recs, rates, 150, true), c, T(1000)).replicas, 25);
}

TEST(StabilizeTest, ALevelLastsThroughTheWarmupWhenItsFourthWeightIsHalfOrMore) {
  struct Case {
    const char* name;
    std::vector<double> weights;
    absl::Duration interval;
    bool want;
  };
  for (const Case& tc : std::vector<Case>{
           {"no weights: no record", {}, absl::Seconds(15), false},
           {"a ramp's weights", {1, 1, 0.95, 0.9, 0.9}, absl::Seconds(15), true},
           {"bursts gone within a minute", {0.4, 0.2, 0.2, 0.05, 0}, absl::Seconds(15), false},
           {"exactly half at the fourth", {0.9, 0.8, 0.6, 0.5, 0.1}, absl::Seconds(15), true},
           {"fewer weights than the warm-up: the last stands", {1, 0.7}, absl::Seconds(15), true},
           // 30 s intervals: the warm-up ends in the second.
           {"longer intervals", {0.9, 0.6, 0.1, 0}, absl::Seconds(30), true},
           {"no interval", {1, 1, 1, 1}, absl::ZeroDuration(), false}}) {
    ForecastQuestion q;
    q.rate_persistence = tc.weights;
    q.rate_interval = tc.interval;
    EXPECT_EQ(LastsThroughWarmup(q, Config()), tc.want) << tc.name;
  }
}

// The early path opens only with both: a level that lasts through the warm-up (weights as above)
// and minutes to spare over the target's window and the recent record (target 95% of minutes;
// slo_budget.h MinutesToSpare, which a rise on record also reads).
TEST(StabilizeTest, TheEarlyPathNeedsALastingLevelAndMinutesToSpare) {
  auto ledger = [](int32_t minutes, int32_t met) {
    BudgetLedger l;
    l.minutes = minutes;
    l.minutes_met = met;
    return l;
  };
  struct Case {
    const char* name;
    std::vector<double> weights;
    BudgetLedger window, recent;
    bool want;
  };
  const std::vector<double> lasting = {1, 1, 0.9, 0.9}, fading = {0.4, 0.2, 0.1, 0};
  for (const Case& tc : std::vector<Case>{
           {"lasting, both records at 100%", lasting, ledger(600, 600), ledger(30, 30), true},
           {"lasting, exactly the target share", lasting, ledger(100, 95), ledger(20, 19), true},
           {"lasting, no minutes counted yet", lasting, ledger(0, 0), ledger(0, 0), true},
           {"lasting, the window short", lasting, ledger(100, 94), ledger(30, 30), false},
           {"lasting, the recent record short", lasting, ledger(600, 590), ledger(30, 28), false},
           {"fading, records full", fading, ledger(600, 600), ledger(30, 30), false}}) {
    ForecastQuestion q;
    q.rate_persistence = tc.weights;
    q.rate_interval = absl::Seconds(15);
    EXPECT_EQ(MayScaleInEarly(q, Config(), tc.window, tc.recent), tc.want) << tc.name;
  }
}

// ---- 6. the rate limits ------------------------------------------------------------------------

TEST(RateLimitTest, TheHpasPoliciesBoundEachStep) {
  struct Case {
    const char* name;
    int32_t desired, current;
    History events;
    bool disabled;
    int32_t want;
    ReasonCode want_reason;
  };
  for (const Case& tc : std::vector<Case>{
           // Up (the HPA's default): max(4 pods, 100%) per 15 s: from 10, up to 20.
           {"up within", 15, 10, {}, false, 15, ReasonCode::kOther},
           {"up limited", 30, 10, {}, false, 20, ReasonCode::kScaleUpLimit},
           // 5 added 10 s ago: the period began at 5, so 100% allows 10 now.
           {"up after a step", 30, 10, {{T(990), 5}}, false, 10, ReasonCode::kScaleUpLimit},
           {"up from zero", 30, 0, {}, false, 30, ReasonCode::kOther},
           // Down (a conservative spec's): max(10%, 1 pod) per 60 s: from 20, down to 18.
           {"down limited", 10, 20, {}, false, 18, ReasonCode::kScaleDownLimit},
           {"down within", 19, 20, {}, false, 19, ReasonCode::kOther},
           // 2 removed 30 s ago: the period began at 20, 18 is all it allows: no move.
           {"down after a step", 10, 18, {{T(970), -2}}, false, 18, ReasonCode::kScaleDownLimit},
           {"down disabled", 10, 20, {}, true, 20, ReasonCode::kScaleDownLimit}}) {
    PolicyConfig c = Config();
    c.scale_up = api::HpaDefaultScaleUp();
    c.scale_down = {absl::Seconds(300),
                    {{api::ScalingPolicy::Type::kPercent, 10, absl::Seconds(60)},
                     {api::ScalingPolicy::Type::kPods, 1, absl::Seconds(60)}},
                    api::SelectPolicy::kMax};
    if (tc.disabled) c.scale_down.select = api::SelectPolicy::kDisabled;
    const RateLimited r = LimitRate(tc.desired, tc.current, tc.events, c, std::nullopt, T(1000));
    EXPECT_EQ(r.replicas, tc.want) << tc.name;
    if (tc.want_reason == ReasonCode::kOther) {
      EXPECT_FALSE(r.reason.has_value()) << tc.name;
      EXPECT_FALSE(r.limit.has_value()) << tc.name;
    } else {
      ASSERT_TRUE(r.reason.has_value()) << tc.name;
      EXPECT_EQ(r.reason->kind, tc.want_reason) << tc.name;
      EXPECT_EQ(r.limit, tc.want) << tc.name;
    }
  }
}

TEST(RateLimitTest, TwinscalesOwnScaleDownRateStepsOrFollowsTheLoadsFall) {
  // A spec that writes no scaleDown.policies (the default) gets twinscale's own rate: 10% or 1
  // pod per 60 s, or at once down to the fall floor (the fleet scaled by the load's fall).
  PolicyConfig c = Config();
  c.scale_up = api::HpaDefaultScaleUp();
  c.scale_down = api::TwinscaleDefaultScaleDown();
  ASSERT_TRUE(c.scale_down.policies.empty());
  // No floor: a step. From 36, trunc(32.4) = 32; from 5, 10% leaves trunc(4.5) = 4 and the pod 4.
  RateLimited r = LimitRate(12, 36, {}, c, std::nullopt, T(1000));
  EXPECT_EQ(r.replicas, 32);
  ASSERT_TRUE(r.reason.has_value());
  EXPECT_EQ(r.reason->kind, ReasonCode::kScaleDownLimit);
  EXPECT_NE(r.reason->message.find("twinscale's scale-down rate allows 32"), std::string::npos);
  EXPECT_EQ(LimitRate(2, 5, {}, c, std::nullopt, T(1000)).replicas, 4);
  // A floor under the step: down to it at once (to 10 for a desired 12: the floor bounds, the
  // twin's answer decides).
  r = LimitRate(12, 36, {}, c, 10, T(1000));
  EXPECT_EQ(r.replicas, 12);
  EXPECT_FALSE(r.reason.has_value());
  r = LimitRate(8, 36, {}, c, 10, T(1000));
  EXPECT_EQ(r.replicas, 10);
  EXPECT_NE(r.reason->message.find("or at once to 10, as far as the load has fallen"),
            std::string::npos);
  // A floor above the step changes nothing: the load fell less than a step's worth.
  EXPECT_EQ(LimitRate(12, 36, {}, c, 34, T(1000)).replicas, 32);
  // A step taken 30 s ago (36 -> 32): the 60 s period allows nothing more, the floor still does.
  EXPECT_EQ(LimitRate(12, 32, {{T(970), -4}}, c, std::nullopt, T(1000)).replicas, 32);
  EXPECT_EQ(LimitRate(12, 32, {{T(970), -4}}, c, 20, T(1000)).replicas, 20);
  // Policies the spec writes are used as written, the floor aside; Disabled never moves.
  c.scale_down.policies = {{api::ScalingPolicy::Type::kPods, 2, absl::Seconds(60)}};
  EXPECT_EQ(LimitRate(12, 36, {}, c, 10, T(1000)).replicas, 34);
  c.scale_down = api::TwinscaleDefaultScaleDown();
  c.scale_down.select = api::SelectPolicy::kDisabled;
  EXPECT_EQ(LimitRate(12, 36, {}, c, 10, T(1000)).replicas, 36);
}

TEST(RateLimitTest, TheFallFloorIsTheFleetScaledByTheRatesFallSinceItLastChangedSize) {
  // Sized to 40 at t = 100 s when the rate was 340 req/s (decisions every 15 s); now 90 req/s:
  // ceil(40 x 90 / 340) = ceil(10.59) = 11.
  const History events = {{T(40), +4}, {T(100), +3}};
  std::deque<std::pair<absl::Time, double>> rates;
  for (int t = 10; t <= 400; t += 15) rates.emplace_back(T(t), t <= 100 ? 340.0 : 90.0);
  EXPECT_EQ(FallFloor(40, events, rates, 90.0), 11);
  // Now 170: ceil(40 x 170 / 340) = 20. The rate then is the decision's at or before the event,
  // here the one at 100 s itself.
  EXPECT_EQ(FallFloor(40, events, rates, 170.0), 20);
  // A rate that has not fallen, or risen: no floor.
  EXPECT_EQ(FallFloor(40, events, rates, 340.0), std::nullopt);
  EXPECT_EQ(FallFloor(40, events, rates, 400.0), std::nullopt);
  // No scale event on record, no rate before it, or a stale decision's 0 there: no floor.
  EXPECT_EQ(FallFloor(40, {}, rates, 90.0), std::nullopt);
  EXPECT_EQ(FallFloor(40, {{T(5), -1}}, rates, 90.0), std::nullopt);
  rates.emplace_back(T(500), 0.0);
  EXPECT_EQ(FallFloor(40, {{T(505), -1}}, rates, 90.0), std::nullopt);
}

// ---- 7. the admission advice -------------------------------------------------------------------

// Each Ready replica asked about holds `per_replica` req/s within the SLO.
class PerReplica : public Forecaster {
 public:
  explicit PerReplica(double per_replica) : per_replica_(per_replica) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f;
    f.meets_slo = q.arrival_rate <= per_replica_ * q.candidate_replicas;
    return f;
  }

 private:
  double per_replica_;
};

TEST(AdmissionAdviceTest, WhileAtRiskTheServingFleetsRateAndTheQueueLimitAreAdvised) {
  PolicyConfig c = Config();
  c.admission_enabled = true;
  c.queue_depth_per_replica = 3.5;  // published rounded up: 4
  ForecastQuestion q;
  q.ready = {{0, 10, 0.3}, {0, 10, 0.3}, {0, 10, 0.3}};
  q.pending_ready_in = {absl::Seconds(30)};  // warming replicas are not asked about
  q.arrival_rate = 50;
  const PerReplica twin(10);  // the 3 serving hold 30 req/s
  const AdmissionOutcome a = AdviseAdmission(q, c, /*slo_at_risk=*/true, std::nullopt, twin);
  EXPECT_TRUE(a.advice.active);
  EXPECT_LE(a.advice.max_arrival_rate, 30);
  EXPECT_GE(a.advice.max_arrival_rate, 30 - 50 * kAdmissionResolution);
  EXPECT_EQ(a.advice.max_queue_per_replica, 4);
  EXPECT_GT(a.evaluations, 0);
  ASSERT_TRUE(a.reason.has_value());
  EXPECT_EQ(a.reason->kind, ReasonCode::kAdmissionAdvised);
  c.admission_max_queue_per_replica = 2;
  EXPECT_EQ(AdviseAdmission(q, c, true, std::nullopt, twin).advice.max_queue_per_replica, 2);
  // Not at risk, disabled, or nothing serving: no advice, no what-if asked.
  for (const auto& [enabled, at_risk, ready] : std::vector<std::tuple<bool, bool, size_t>>{
           {true, false, 3}, {false, true, 3}, {true, true, 0}}) {
    PolicyConfig off = c;
    off.admission_enabled = enabled;
    ForecastQuestion x = q;
    x.ready.resize(ready);
    const AdmissionOutcome none = AdviseAdmission(x, off, at_risk, std::nullopt, twin);
    EXPECT_FALSE(none.advice.active);
    EXPECT_EQ(none.evaluations, 0);
    EXPECT_FALSE(none.reason.has_value());
  }
}

}  // namespace
}  // namespace twinscale::policy
