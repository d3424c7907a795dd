// Recommend, table-tested with a hand-made forecaster whose answers can be worked by hand: each
// replica serving during (most of) the horizon holds `per_replica` req/s within the full TTFT
// threshold, and `per_replica x margin` at a tighter threshold (margin = threshold / configured).
// A replica counts if it is Ready or becomes Ready within the first half of the horizon.
#include "controller/policy/recommend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace twinscale::policy {
namespace {

using state::FleetSnapshot;
using state::Input;
using state::PodView;
using state::ReplicaState;

class CapacityForecaster : public Forecaster {
 public:
  explicit CapacityForecaster(double per_replica) : per_replica_(per_replica) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    ++calls_;
    const double half = absl::ToDoubleSeconds(q.horizon) / 2;
    const int32_t ready =
        std::min<int32_t>(static_cast<int32_t>(q.ready.size()), q.candidate_replicas);
    int32_t serving = ready, pending = 0;
    for (const absl::Duration& p : q.pending_ready_in) {
      if (ready + pending >= q.candidate_replicas) break;
      ++pending;
      if (absl::ToDoubleSeconds(p) <= half) ++serving;
    }
    const int32_t others = q.candidate_replicas - ready - pending;
    if (others > 0 && absl::ToDoubleSeconds(q.new_replica_warmup) <= half) serving += others;
    const double margin = q.slack_margin;
    const double capacity = serving * per_replica_ * margin;
    Forecast f;
    f.requests = 1000;
    f.attainment = q.arrival_rate <= 0 ? 1.0 : std::min(1.0, capacity / q.arrival_rate);
    f.meets_slo = q.arrival_rate <= capacity;
    return f;
  }
  mutable int calls_ = 0;

 private:
  double per_replica_;
};

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

ReplicaState Pod(PodView::Stage stage, absl::Duration age = absl::Minutes(10), double waiting = 0,
                 double kv = 0.3) {
  ReplicaState r;
  r.stage = stage;
  r.age = age;
  r.fresh = stage == PodView::Stage::kReady;
  r.waiting = waiting;
  r.running = 10;
  r.kv_usage = kv;
  return r;
}

FleetSnapshot Snap(int ready, double rate, absl::Time at) {
  FleetSnapshot s;
  s.at = at;
  s.spec_replicas = ready;
  for (int i = 0; i < ready; ++i) s.replicas.push_back(Pod(PodView::Stage::kReady));
  s.workload.arrival_rate = rate > 0 ? Input<double>::Value(rate) : Input<double>::NoEvents(0.0);
  return s;
}

PolicyConfig Config() {
  PolicyConfig c;
  c.min_replicas = 1;
  c.max_replicas = 20;
  c.warmup_expected = absl::Seconds(60);
  c.interval = absl::Seconds(15);
  return c;
}

// A history in which `n` was recommended every 15 s for the last `seconds`.
PolicyHistory Steady(int n, int seconds, absl::Time now) {
  PolicyHistory h;
  for (int s = seconds; s > 0; s -= 15) h.recommendations.emplace_back(now - absl::Seconds(s), n);
  return h;
}

bool HasReason(const Decision& d, const std::string& code) {
  for (const Reason& r : d.reasons) {
    if (r.code == code) return true;
  }
  return false;
}

// The message of the decision's reason `code`, or empty when it has none.
std::string ReasonMessage(const Decision& d, const std::string& code) {
  for (const Reason& r : d.reasons) {
    if (r.code == code) return r.message;
  }
  return "";
}

// Capacity against the path's highest rate over the span judged: what a twin fed the forecast's
// path shows when the fleet's size is all that matters.
class PathForecaster : public Forecaster {
 public:
  explicit PathForecaster(double per_replica) : per_replica_(per_replica) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    double peak = 0;
    absl::Duration rem;
    const int64_t from = 1 + absl::IDivDuration(q.judge_from, q.rate_interval, &rem);
    const int64_t to = absl::IDivDuration(q.horizon, q.rate_interval, &rem);
    const double baseline = q.arrival_rate_baseline > 0 ? q.arrival_rate_baseline : q.arrival_rate;
    for (int64_t k = from; k <= to; ++k) {
      peak =
          std::max(peak, RateAhead(q.arrival_rate, baseline, q.rate_persistence, q.rate_season, k));
    }
    Forecast f;
    f.requests = 1000;
    const double capacity = q.candidate_replicas * per_replica_ * q.slack_margin;
    f.attainment = peak <= 0 ? 1.0 : std::min(1.0, capacity / peak);
    f.meets_slo = peak <= capacity;
    return f;
  }

 private:
  double per_replica_;
};

TEST(RecommendTest, ASeasonalRampIsSizedForBeforeItArrives) {
  // 100 req/s on 10 replicas of 10 req/s. The days before say the rate is 30% higher from the
  // fifth interval ahead on: inside the span judged (warm-up 60 s to horizon 120 s), so the fleet
  // is sized for 130 req/s now, a warm-up before the rise, and the decision says why.
  const PolicyConfig c = Config();
  FleetSnapshot flat = Snap(10, 100, T(0));
  FleetSnapshot ramp = flat;
  ramp.workload.rate_season = {1.0, 1.0, 1.0, 1.0, 1.3};
  const PathForecaster f(10);
  const Decision hold = Recommend(flat, c, f, T(0), Steady(10, 600, T(0)));
  EXPECT_EQ(hold.recommendation, 10);
  EXPECT_FALSE(HasReason(hold, "SeasonalForecast"));
  const Decision up = Recommend(ramp, c, f, T(0), Steady(10, 600, T(0)));
  EXPECT_EQ(up.recommendation, 13);
  EXPECT_EQ(up.replicas, 13);
  EXPECT_EQ(up.question.rate_season, ramp.workload.rate_season);
  EXPECT_NE(ReasonMessage(up, "SeasonalForecast").find("+30.0%"), std::string::npos)
      << ReasonMessage(up, "SeasonalForecast");
  // A falling season lets the same fleet shrink: 70 req/s from the first interval on; the scale-in
  // question's safety margin (0.8, applied here to the whole capacity) makes that 70 / 8 -> 9
  // replicas, and the stabilization window (10 recommended throughout) holds the fleet at 10.
  FleetSnapshot fall = flat;
  fall.workload.rate_season = {0.7};
  const Decision down = Recommend(fall, c, f, T(0), Steady(10, 600, T(0)));
  EXPECT_EQ(down.recommendation, 9);
  EXPECT_EQ(down.replicas, 10);
}

TEST(RecommendTest, Table) {
  // Each replica holds 10 req/s (8 at the 0.8 safety margin).
  struct Case {
    const char* name;
    FleetSnapshot snapshot;
    PolicyConfig config;
    PolicyHistory history;
    int want;
    const char* want_reason;
  };
  const absl::Time now = T(1000);
  std::vector<Case> cases;
  {
    // 4 replicas, 35 req/s: 4 x 10 = 40 >= 35 meets; 3 x 8 = 24 < 35 at the margin: steady.
    cases.push_back({"steady: enough capacity, one less would not hold the margin",
                     Snap(4, 35, now), Config(), Steady(4, 600, now), 4, "Steady"});
  }
  {
    // 4 replicas, 65 req/s: needs ceil(65 / 10) = 7; new ones warm up in 60 s, within half of
    // the 75 s horizon (37.5 s)? No: 60 > 37.5, so new replicas don't count in this forecaster...
    // use a 30 s warm-up: horizon 45 s, half 22.5 s: still no. Warm-up 15 s: horizon 30, half 15.
    PolicyConfig c = Config();
    c.warmup_expected = absl::Seconds(15);
    cases.push_back({"scale up: 65 req/s at 10 per replica needs 7", Snap(4, 65, now), c,
                     Steady(4, 600, now), 7, "ForecastMissesSlo"});
  }
  {
    // Stale: a Ready pod's scrape failed and there is no usable rate: hold at 5.
    FleetSnapshot s = Snap(5, 0, now);
    s.stale = true;
    s.stale_reason = "pod a: scrape failed";
    s.workload.arrival_rate = Input<double>::Stale("pod a: scrape failed");
    cases.push_back({"stale data holds", s, Config(), Steady(1, 600, now), 5, "InputsStale"});
  }
  {
    // Stale scrape of one pod but a usable rate of 5 req/s: scale-in would be allowed (1 replica
    // holds 8 at the margin) but stale inputs freeze it.
    FleetSnapshot s = Snap(5, 5, now);
    s.stale = true;
    s.stale_reason = "pod b: last scrape 2m old";
    cases.push_back({"stale inputs freeze scale-in even when the twin says it is safe", s, Config(),
                     Steady(1, 600, now), 5, "ScaleInFrozen"});
  }
  {
    // Night: NoEvents (a fresh scrape, no requests): the twin shows 1 replica holds; the window
    // agreed for 300 s; the default scale-down policy allows max(10% of 6 -> 0, 1 pod) = 1 per
    // 60 s: 6 -> 5.
    cases.push_back({"NoEvents at night lets the fleet scale in, one pod per minute",
                     Snap(6, 0, now), Config(), Steady(1, 600, now), 5, "ScaleDownLimit"});
  }
  {
    // Slow decay: 6 replicas at 20 req/s: 3 hold at the margin (24 >= 20); the window agreed on 3;
    // a scale event of -1 happened 30 s ago, so the 60 s period allows no more: hold at 6.
    PolicyHistory h = Steady(3, 600, now);
    h.scale_events.emplace_back(now - absl::Seconds(30), -1);
    cases.push_back({"slow decay: one safe step per scale-down period", Snap(6, 20, now), Config(),
                     h, 6, "ScaleDownLimit"});
  }
  {
    // Scale-in wanted but the window has seen 5 within its 300 s: stabilized at 5.
    PolicyHistory h = Steady(2, 600, now);
    h.recommendations.emplace_back(now - absl::Seconds(100), 5);
    cases.push_back({"scale-in waits out the stabilization window", Snap(6, 10, now), Config(), h,
                     5, "ScaleDownStabilized"});
  }
  {
    // A controller restart: no history at all. Scale-in waits until a whole window is observed.
    cases.push_back({"after a restart scale-in waits for a full window", Snap(6, 10, now), Config(),
                     PolicyHistory{}, 6, "ScaleDownStabilized"});
  }
  {
    // Burst while 3 pods are still warming. Warm-up 15 s: horizon 30 s; the pending pods have
    // max(15 - 50, 7.5) = 7.5 s left and new ones 15 s, both within half the horizon, so they
    // count. 3 Ready + 3 pending = 6 x 10 = 60 < 90 req/s: scale up to 9 now, not after warm-up
    // (search: 7 -> 70, 8 -> 80 miss, 10 -> 100 meets, bisect: 9 -> 90 meets).
    PolicyConfig warm = Config();
    warm.warmup_expected = absl::Seconds(15);
    FleetSnapshot s = Snap(3, 90, now);
    s.spec_replicas = 6;
    for (int i = 0; i < 3; ++i) {
      s.replicas.push_back(Pod(PodView::Stage::kWarmingUp, absl::Seconds(50)));
    }
    cases.push_back({"a burst during warm-up scales up early", s, warm, Steady(6, 600, now), 9,
                     "ForecastMissesSlo"});
  }
  {
    // Two pods unschedulable for 20 min: they stop counting but still hold 2 of the 6 slots, so
    // 6 replicas serve only 4 x 10 = 40 < 50 req/s; 7 adds one new replica (warm-up 15 s,
    // counted): 5 x 10 = 50 >= 50 -> 7.
    PolicyConfig c = Config();
    c.warmup_expected = absl::Seconds(15);
    FleetSnapshot s = Snap(4, 50, now);
    s.spec_replicas = 6;
    for (int i = 0; i < 2; ++i) {
      ReplicaState p = Pod(PodView::Stage::kPending, absl::Minutes(20));
      p.unschedulable = true;
      s.replicas.push_back(p);
    }
    cases.push_back({"pods that never become ready stop counting", s, c, Steady(6, 600, now), 7,
                     "PendingNotCounted"});
  }
  {
    // The spec lowered maxReplicas to 3 while 6 run: the decision obeys at once.
    PolicyConfig c = Config();
    c.max_replicas = 3;
    cases.push_back(
        {"a spec change takes effect at once", Snap(6, 30, now), c, Steady(6, 600, now), 3, ""});
  }
  {
    // Limits guard scale-in: 1 replica would hold but the queue is 9 per replica (> 4).
    FleetSnapshot s = Snap(4, 5, now);
    for (auto& r : s.replicas) r.waiting = 9;
    cases.push_back({"queue above the limit blocks scale-in", s, Config(), Steady(1, 600, now), 4,
                     "ScaleInBlockedByLimits"});
  }
  {
    // Even maxReplicas = 5 can't hold 80 req/s (5 x 10 = 50): go to 5 and say so.
    PolicyConfig c = Config();
    c.max_replicas = 5;
    c.warmup_expected = absl::Seconds(15);
    cases.push_back({"max replicas insufficient", Snap(3, 80, now), c, Steady(3, 600, now), 5,
                     "MaxReplicasInsufficient"});
  }
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    CapacityForecaster f(10);
    const Decision d = Recommend(tc.snapshot, tc.config, f, now, tc.history);
    EXPECT_EQ(d.replicas, tc.want);
    if (tc.want_reason[0] != '\0') {
      EXPECT_TRUE(HasReason(d, tc.want_reason)) << d.reasons.size();
    }
    EXPECT_EQ(d.forecasts, f.calls_);
  }
}

TEST(RecommendTest, ScaleUpIsRateLimitedByTheScaleUpPolicies) {
  // From 2 to a forecast need of 20 (200 req/s): the HPA-default scale-up rules allow
  // max(2 + 4 pods, 2 x 2 = 4) = 6 within 15 s.
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  CapacityForecaster f(10);
  const absl::Time now = T(0);
  const Decision d = Recommend(Snap(2, 200, now), c, f, now, {});
  EXPECT_EQ(d.recommendation, 20);
  EXPECT_EQ(d.replicas, 6);
  EXPECT_TRUE(HasReason(d, "ScaleUpLimit"));
}

TEST(RecommendTest, ReasonsQuoteTheAimNotJustThePercentile) {
  // p90 plus the default 5 points of forecast headroom: the what-ifs aim at 95%, and the reason
  // must say so (quoting 90% when the twin asked for 95% misled an operator reading the status).
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  CapacityForecaster f(10);
  const absl::Time now = T(0);
  const Decision d = Recommend(Snap(4, 65, now), c, f, now, Steady(4, 600, now));
  const std::string message = ReasonMessage(d, "ForecastMissesSlo");
  EXPECT_NE(message.find("aim 95.0%"), std::string::npos) << message;
}

// 4 replicas at 43 req/s keep 40 / 43 = 93% of requests: short of the 95% aim, above the 90% SLO.
// The first such miss holds (the next decision draws its own random numbers); a second in a row
// at the same size scales up; a miss below the SLO itself scales up at once.
TEST(RecommendTest, AShallowMissScalesUpOnlyWhenTheNextDecisionConfirmsIt) {
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  CapacityForecaster f(10);
  PolicyHistory h = Steady(4, 600, T(0));
  const Decision first = Recommend(Snap(4, 43, T(0)), c, f, T(0), h);
  EXPECT_EQ(first.replicas, 4);
  EXPECT_EQ(first.missed_at, 4);
  ASSERT_TRUE(HasReason(first, "MissUnconfirmed"));
  EXPECT_FALSE(HasReason(first, "Steady"));
  EXPECT_TRUE(first.slo_at_risk);  // a clear miss of the aim, even if not acted on yet
  RecordDecision(first, c, h);
  EXPECT_EQ(h.last_missed_at, 4);
  const Decision second = Recommend(Snap(4, 43, T(15)), c, f, T(15), h);
  EXPECT_EQ(second.replicas, 5);
  EXPECT_TRUE(HasReason(second, "ForecastMissesSlo"));

  // A decision that met in between clears the record: the next shallow miss waits again.
  RecordDecision(Recommend(Snap(4, 30, T(30)), c, f, T(30), h), c, h);
  EXPECT_EQ(h.last_missed_at, 0);
  EXPECT_EQ(Recommend(Snap(4, 43, T(45)), c, f, T(45), h).replicas, 4);

  // 40 / 50 = 80%, below the 90% SLO: at once.
  const Decision deep = Recommend(Snap(4, 50, T(60)), c, f, T(60), Steady(4, 600, T(60)));
  EXPECT_EQ(deep.replicas, 5);
}

TEST(RecommendTest, ARiseOnRecordWithNoMinutesToSpareActsOnAShallowMissAtOnce) {
  // 4 replicas of 10 req/s at 43 req/s. The rate checks of the last minutes all saw 2% more
  // arrivals than forecast (120 where 117.6 was forecast): the twin is asked about 43.86 req/s,
  // and 4 replicas reach 40 / 43.86 = 91.2%, a shallow miss (above the SLO's 90%).
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  CapacityForecaster f(10);
  const absl::Time now = T(1000);
  auto rising = [&](PolicyHistory h) {
    for (int end = 700; end <= 985; end += 15) h.arrivals.push_back({T(end), 15, 15 * 120.0});
    for (int i = 0; i < 5; ++i) {
      const int from = 800 + 15 * i;
      h.rate_checks.push_back({T(from), T(from + 60), 120 / 1.02});
    }
    return h;
  };
  // The record: 1,000 first tokens every 15 s since 700 s, 80% of them in time at 820-865 s.
  auto short_of_minutes = [&](PolicyHistory h) {
    for (int at = 700; at <= 985; at += 15) {
      h.served.push_back({T(at), 1000, at >= 820 && at <= 865 ? 800.0 : 1000.0});
    }
    return h;
  };
  const Decision both =
      Recommend(Snap(4, 43, now), c, f, now, short_of_minutes(rising(Steady(4, 600, now))));
  ASSERT_TRUE(HasReason(both, "ForecastMargin"));
  EXPECT_EQ(both.replicas, 5);
  EXPECT_FALSE(HasReason(both, "MissUnconfirmed"));
  EXPECT_NE(ReasonMessage(both, "ForecastMissesSlo").find("confirmed by arrivals above the rate"),
            std::string::npos);
  // The rise alone, with every minute met (no record yet: 100%): held for the next draw.
  const Decision minutes_to_spare =
      Recommend(Snap(4, 43, now), c, f, now, rising(Steady(4, 600, now)));
  ASSERT_TRUE(HasReason(minutes_to_spare, "ForecastMargin"));
  EXPECT_EQ(minutes_to_spare.replicas, 4);
  EXPECT_TRUE(HasReason(minutes_to_spare, "MissUnconfirmed"));
  // The minutes short without the rise: held as well.
  const Decision no_rise =
      Recommend(Snap(4, 43, now), c, f, now, short_of_minutes(Steady(4, 600, now)));
  EXPECT_FALSE(HasReason(no_rise, "ForecastMargin"));
  EXPECT_EQ(no_rise.replicas, 4);
  EXPECT_TRUE(HasReason(no_rise, "MissUnconfirmed"));
}

TEST(RecommendTest, TheWindowFollowsAFallInTheRateWhereLevelsLast) {
  // 300 s of recommendations of 10 replicas at 100 req/s; now the rate is 50, and 5 replicas meet
  // it at the margin (12.5 req/s a replica, 80% of it: 10). Where levels last (persistence weights
  // of 1) the window holds ceil(10 * 50/100) = 5, and the scale-down policy (10% or one pod a
  // minute) takes one pod: 9. On bursty traffic (weights of 0) the window holds 10.
  PolicyConfig c = Config();
  CapacityForecaster f(12.5);
  const absl::Time now = T(1000);
  PolicyHistory h = Steady(10, 300, now);
  for (const auto& [t, r] : h.recommendations) h.recommendation_rates.emplace_back(t, 100.0);
  FleetSnapshot s = Snap(10, 50, now);
  s.workload.arrival_rate_baseline = 50;
  for (const double w : {1.0, 0.0}) {
    s.workload.rate_persistence = std::vector<double>(8, w);
    const Decision d = Recommend(s, c, f, now, h);
    EXPECT_EQ(d.recommendation, 5) << w;
    EXPECT_EQ(d.replicas, w > 0 ? 9 : 10) << w;
    EXPECT_TRUE(HasReason(d, w > 0 ? "ScaleDownLimit" : "ScaleDownStabilized")) << w;
  }
}

TEST(RecommendTest, TwinscalesOwnRateFollowsTheLoadsFallAtOnceWhereLevelsLast) {
  // As above, with the fleet sized to 10 by a scale event 200 s ago at 100 req/s: the load has
  // halved since, so where levels last the fall floor is ceil(10 x 50 / 100) = 5 and the fleet
  // goes there at once; on bursty traffic the window holds 10. With the spec's own policies (the
  // same 10% or one pod a minute, written), the floor does not apply: 9.
  PolicyConfig c = Config();
  c.scale_down = api::TwinscaleDefaultScaleDown();
  CapacityForecaster f(12.5);
  const absl::Time now = T(1000);
  PolicyHistory h = Steady(10, 300, now);
  for (const auto& [t, r] : h.recommendations) h.recommendation_rates.emplace_back(t, 100.0);
  h.scale_events.emplace_back(h.recommendations.front().first, +2);
  FleetSnapshot s = Snap(10, 50, now);
  s.workload.arrival_rate_baseline = 50;
  for (const double w : {1.0, 0.0}) {
    s.workload.rate_persistence = std::vector<double>(8, w);
    const Decision d = Recommend(s, c, f, now, h);
    EXPECT_EQ(d.replicas, w > 0 ? 5 : 10) << w;
    EXPECT_FALSE(HasReason(d, "ScaleDownLimit")) << w;
  }
  c.scale_down.policies = api::TwinscaleScaleDownPolicies();
  s.workload.rate_persistence = std::vector<double>(8, 1.0);
  const Decision d = Recommend(s, c, f, now, h);
  EXPECT_EQ(d.replicas, 9);
  EXPECT_TRUE(HasReason(d, "ScaleDownLimit"));
}

// A forecaster whose verdicts are all within its own noise.
class UnsureForecaster : public CapacityForecaster {
 public:
  using CapacityForecaster::CapacityForecaster;
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f = CapacityForecaster::Evaluate(q);
    f.attainment_se = 0.02;
    f.verdict_clear = false;
    return f;
  }
};

TEST(RecommendTest, AMissWithinTheTwinsNoiseHoldsWithoutRaisingSloAtRisk) {
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  UnsureForecaster f(10);
  const Decision d = Recommend(Snap(4, 43, T(0)), c, f, T(0), Steady(4, 600, T(0)));
  EXPECT_EQ(d.replicas, 4);
  EXPECT_FALSE(d.slo_at_risk);
  const std::string message = ReasonMessage(d, "MissWithinNoise");
  EXPECT_NE(message.find("93.0%"), std::string::npos) << message;
  EXPECT_NE(message.find("standard error 2.0 points"), std::string::npos) << message;
}

// Records the seed of every question asked.
class SeedRecorder : public CapacityForecaster {
 public:
  using CapacityForecaster::CapacityForecaster;
  Forecast Evaluate(const ForecastQuestion& q) const override {
    seeds_.push_back(q.seed);
    return CapacityForecaster::Evaluate(q);
  }
  mutable std::vector<uint64_t> seeds_;
};

TEST(RecommendTest, EachDecisionDrawsItsOwnRandomNumbersSharedByItsCandidates) {
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  auto seeds_at = [&](absl::Time t, uint64_t config_seed) {
    c.seed = config_seed;
    SeedRecorder f(10);
    const Decision d = Recommend(Snap(4, 65, t), c, f, t, Steady(4, 600, t));  // a scale-up search
    EXPECT_GE(f.seeds_.size(), 3u);
    for (uint64_t s : f.seeds_) EXPECT_EQ(s, f.seeds_.front());  // common random numbers
    EXPECT_EQ(d.question.seed, f.seeds_.front());  // recorded: the decision replays alone
    return f.seeds_.front();
  };
  const uint64_t a = seeds_at(T(0), 1);
  EXPECT_EQ(seeds_at(T(0), 1), a);   // deterministic
  EXPECT_NE(seeds_at(T(15), 1), a);  // the next decision draws afresh
  EXPECT_NE(seeds_at(T(0), 2), a);   // and the configured seed matters
}

// Whatever the fleet, 80% of requests meet the SLO (the rest can't be helped by more replicas).
class CeilingForecaster : public Forecaster {
 public:
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f;
    f.requests = 1000;
    f.attainment = 0.8;
    f.meets_slo = f.attainment + 1e-12 >= q.percentile / 100;
    return f;
  }
};

TEST(RecommendTest, SloUnattainableNamesABacklogOrTheLongPrompts) {
  struct Case {
    const char* name;
    double waiting_per_replica;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"no backlog: the prompts are to blame", 0, "too long to prefill"},
      {"30 queued on 3 replicas: the backlog is", 10, "30 requests are already queued"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    const absl::Time now = T(0);
    FleetSnapshot snap = Snap(3, 20, now);
    for (ReplicaState& r : snap.replicas) r.waiting = tc.waiting_per_replica;
    const Decision d = Recommend(snap, Config(), CeilingForecaster(), now, Steady(3, 600, now));
    const std::string message = ReasonMessage(d, "SloUnattainable");
    // maxReplicas' 80% is the ceiling; the aim goes one point under it.
    EXPECT_NE(message.find("keep only 80.0%"), std::string::npos) << message;
    EXPECT_NE(message.find("aiming at 79.0%"), std::string::npos) << message;
    EXPECT_NE(message.find(tc.want), std::string::npos) << message;
  }
}

// An overload beyond maxReplicas: each replica serves `per_replica` req/s in time; what it can't
// serve queues. Attainment is the share served (n x per_replica / rate, at most 1); a fleet short
// of the rate has requests waiting far longer than the threshold on average.
class OverloadForecaster : public Forecaster {
 public:
  explicit OverloadForecaster(double per_replica) : per_replica_(per_replica) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f;
    f.requests = 1000;
    f.attainment = std::min(1.0, q.candidate_replicas * per_replica_ / q.arrival_rate);
    f.scheduling_delay_mean_ms = f.attainment < 1 ? 20000 : 10;
    f.meets_slo = f.attainment + 1e-12 >= q.percentile / 100;
    return f;
  }

 private:
  double per_replica_;
};

TEST(RecommendTest, AnOverloadBeyondMaxReplicasAsksForMaxReplicasNotLess) {
  // 3 replicas at 500 req/s, each serving 2 req/s: maxReplicas (Config(): 20) keep 40 / 500 = 8%
  // of requests in time, and every replica more serves 2 req/s more. The ceiling's requests queue
  // (20 s on average, over the 500 ms threshold), so the shortfall is capacity: the answer is
  // maxReplicas, not the smallest fleet within a point of the ceiling's 8% (18 replicas: 7.2%).
  const absl::Time now = T(0);
  const PolicyConfig c = Config();
  const Decision d =
      Recommend(Snap(3, 500, now), c, OverloadForecaster(2), now, Steady(3, 600, now));
  EXPECT_EQ(d.recommendation, c.max_replicas);
  EXPECT_TRUE(d.slo_at_risk);
  EXPECT_EQ(ReasonMessage(d, "SloUnattainable"), "");
  const std::string message = ReasonMessage(d, "MaxReplicasInsufficient");
  EXPECT_NE(message.find("requests would wait 20000 ms on average to be scheduled even there"),
            std::string::npos)
      << message;
}

// TTFT always met; the share of output tokens within the ITL threshold grows with the fleet:
// n / 10 (fewer sequences per replica, shorter steps), capped at 1.
class ItlForecaster : public Forecaster {
 public:
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f;
    f.requests = 1000;
    f.attainment = 1;
    f.meets_slo = true;
    if (q.itl_threshold > absl::ZeroDuration()) {
      f.itl_tokens = 100000;
      f.itl_within = std::min(1.0, q.candidate_replicas / 10.0);
      f.itl_met = f.itl_within + 1e-12 >= q.itl_percentile / 100;
      if (!f.itl_met) f.meets_slo = false;
    }
    return f;
  }
};

TEST(RecommendTest, AnItlObjectiveSizesTheFleetToo) {
  // spec.slo.itl at p90: 9 replicas give 90% of tokens within it. From 3: scale up to 9, and say
  // that the ITL is what misses. Without the objective the TTFT alone holds 3.
  const absl::Time now = T(0);
  PolicyConfig c = Config();
  c.itl_threshold = absl::Milliseconds(50);
  c.itl_percentile = 90;
  Decision d = Recommend(Snap(3, 20, now), c, ItlForecaster(), now, Steady(3, 600, now));
  EXPECT_EQ(d.recommendation, 9);
  EXPECT_NE(ReasonMessage(d, "ForecastMissesSlo")
                .find("; ITL: 30.0% of output tokens within 50ms (SLO: 90%)"),
            std::string::npos)
      << ReasonMessage(d, "ForecastMissesSlo");
  c.itl_threshold = absl::ZeroDuration();
  d = Recommend(Snap(3, 20, now), c, ItlForecaster(), now, Steady(3, 600, now));
  EXPECT_LE(d.recommendation, 3);
}

TEST(RecommendTest, TheDecisionNamesTheStartingPodsItDoesNotCount) {
  // warmup_p99 = 180 s. A pod exactly at the deadline still counts ("older than" is the rule); one
  // a second past it and an unschedulable young one don't; Ready pods are never listed.
  PolicyConfig c = Config();
  c.warmup_p99 = absl::Seconds(180);
  FleetSnapshot s = Snap(2, 15, T(0));
  s.spec_replicas = 5;
  ReplicaState at_deadline = Pod(PodView::Stage::kLoading, absl::Seconds(180));
  at_deadline.name = "at-deadline";
  ReplicaState past = Pod(PodView::Stage::kWarmingUp, absl::Seconds(181));
  past.name = "past-deadline";
  ReplicaState unschedulable = Pod(PodView::Stage::kPending, absl::Seconds(5));
  unschedulable.name = "unschedulable";
  unschedulable.unschedulable = true;
  s.replicas.push_back(at_deadline);
  s.replicas.push_back(past);
  s.replicas.push_back(unschedulable);
  CapacityForecaster f(10);
  const Decision d = Recommend(s, c, f, T(0), Steady(5, 600, T(0)));
  ASSERT_EQ(d.not_counted.size(), 2u);
  EXPECT_EQ(d.not_counted[0].name, "past-deadline");
  EXPECT_EQ(d.not_counted[0].age, absl::Seconds(181));
  EXPECT_FALSE(d.not_counted[0].unschedulable);
  EXPECT_EQ(d.not_counted[1].name, "unschedulable");
  EXPECT_TRUE(d.not_counted[1].unschedulable);
  EXPECT_EQ(d.warmup_deadline, absl::Seconds(180));
  EXPECT_TRUE(HasReason(d, "PendingNotCounted"));
  // Only the pod at the deadline is pending capacity.
  EXPECT_EQ(d.question.pending_ready_in.size(), 1u);
}

TEST(RecommendTest, AdmissionAdviceWhenCapacityCannotKeepUp) {
  // 3 Ready replicas hold 30 req/s; 80 arrive and max is 5: advise a rate near 30.
  PolicyConfig c = Config();
  c.max_replicas = 5;
  c.admission_enabled = true;
  CapacityForecaster f(10);
  const absl::Time now = T(0);
  const Decision d = Recommend(Snap(3, 80, now), c, f, now, Steady(3, 600, now));
  ASSERT_TRUE(d.admission.active);
  EXPECT_NEAR(d.admission.max_arrival_rate, 30, 80.0 / 64);  // bisection over [0, 80], 6 steps
  // The per-replica queue limit: limits.queueDepthPerReplica (4) rounded up, capped by
  // admission.maxQueuePerReplica when that is lower.
  EXPECT_EQ(d.admission.max_queue_per_replica, 4);
  c.queue_depth_per_replica = 2.5;
  EXPECT_EQ(
      Recommend(Snap(3, 80, now), c, f, now, Steady(3, 600, now)).admission.max_queue_per_replica,
      3);
  c.admission_max_queue_per_replica = 1;
  EXPECT_EQ(
      Recommend(Snap(3, 80, now), c, f, now, Steady(3, 600, now)).admission.max_queue_per_replica,
      1);
  c.admission_max_queue_per_replica = 10;
  EXPECT_EQ(
      Recommend(Snap(3, 80, now), c, f, now, Steady(3, 600, now)).admission.max_queue_per_replica,
      3);
}

TEST(RecommendTest, TheNextDecisionsAdviceStartsFromThisOnes) {
  // The same overloaded fleet 15 s later: the search starts at the advised rate, which still
  // holds, and one step (80 / 64) above it does not: the same advice, for 2 what-ifs instead of 6.
  PolicyConfig c = Config();
  c.max_replicas = 5;
  c.admission_enabled = true;
  CapacityForecaster f(10);
  PolicyHistory h = Steady(3, 600, T(0));
  const Decision first = Recommend(Snap(3, 80, T(0)), c, f, T(0), h);
  ASSERT_TRUE(first.admission.active);
  RecordDecision(first, c, h);
  EXPECT_EQ(h.last_admission_rate, first.admission.max_arrival_rate);
  const absl::Time next = T(0) + absl::Seconds(15);
  // The admission what-ifs are the ones asked below the arriving 80 req/s.
  struct Asked : CapacityForecaster {
    using CapacityForecaster::CapacityForecaster;
    Forecast Evaluate(const ForecastQuestion& q) const override {
      if (q.arrival_rate < 80) rates.push_back(q.arrival_rate);
      return CapacityForecaster::Evaluate(q);
    }
    mutable std::vector<double> rates;
  } asked(10);
  const Decision second = Recommend(Snap(3, 80, next), c, asked, next, h);
  ASSERT_TRUE(second.admission.active);
  EXPECT_EQ(second.admission.max_arrival_rate, first.admission.max_arrival_rate);
  EXPECT_EQ(asked.rates, (std::vector<double>{first.admission.max_arrival_rate,
                                              first.admission.max_arrival_rate + 80.0 / 64}));
  // A decision advising nothing leaves nothing to start from.
  RecordDecision(Recommend(Snap(3, 20, next), c, f, next, h), c, h);
  EXPECT_FALSE(h.last_admission_rate.has_value());
}

TEST(RecommendTest, RecordDecisionKeepsOnlyWhatTheWindowsNeed) {
  PolicyConfig c = Config();
  PolicyHistory h;
  RecordScaleEvent(T(0), 5, 4, h);
  for (int s = 0; s <= 900; s += 15) {
    if (s == 900) RecordScaleEvent(T(s), 4, 3, h);
    Decision d;
    d.at = T(s);
    d.current = 4;
    d.recommendation = d.replicas = (s == 900 ? 3 : 4);
    RecordDecision(d, c, h);
  }
  // Longest window or period: 300 s -> 21 recommendations (0, 15, ..., 300 s back); of the two
  // scale events, the one 900 s back is forgotten.
  EXPECT_EQ(h.recommendations.size(), 21u);
  ASSERT_EQ(h.scale_events.size(), 1u);
  EXPECT_EQ(h.scale_events.back(), std::make_pair(T(900), -1));
}

TEST(RecommendTest, OnlyChangesThatHappenedAreScaleEvents) {
  // A decision at T(0) for 6 on a fleet of 2, then what the actuator did about it.
  const PolicyConfig c = Config();
  struct Case {
    std::string name;
    std::vector<std::tuple<int, int, int>> scaled;  // (at s, from, to) recorded after it
    std::vector<std::pair<absl::Time, int32_t>> want;
  };
  const std::vector<Case> cases = {
      {"a decision nobody carried out (Recommend, KEDA, HPA, a failed write) is no event", {}, {}},
      {"the write of the decision is one event of +4", {{0, 2, 6}}, {{T(0), 4}}},
      {"a scale-in by someone else is an event of -1 at its time", {{7, 2, 1}}, {{T(7), -1}}},
      {"a write that changes nothing is no event", {{0, 2, 2}}, {}},
      {"each change is its own event", {{0, 2, 4}, {5, 4, 3}}, {{T(0), 2}, {T(5), -1}}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PolicyHistory h;
    Decision d;
    d.at = T(0);
    d.current = 2;
    d.recommendation = d.replicas = 6;
    RecordDecision(d, c, h);
    for (const auto& [at, from, to] : tc.scaled) RecordScaleEvent(T(at), from, to, h);
    using Events = std::vector<std::pair<absl::Time, int32_t>>;
    EXPECT_EQ(Events(h.scale_events.begin(), h.scale_events.end()), tc.want);
  }
}

TEST(RecommendTest, ADecisionNobodyCarriedOutDoesNotHoldTheNextBack) {
  // 2 replicas at 100 req/s, 10 per replica: 10 wanted (new replicas warm up in 15 s, within half
  // the 30 s horizon, so they count). Scale-up is limited to 1 pod a minute: 3 now. Recommend
  // mode: nothing is scaled, so 15 s later the fleet is still 2 and the limit still allows 3.
  // Had the first decision been carried out (2 -> 3), the minute's one pod is spent: 3 holds.
  PolicyConfig c = Config();
  c.warmup_expected = absl::Seconds(15);
  c.scale_up.policies = {{api::ScalingPolicy::Type::kPods, 1, absl::Seconds(60)}};
  CapacityForecaster f(10);
  struct Case {
    std::string name;
    bool carried_out;
    int32_t fleet_then;
    int want;
  };
  const std::vector<Case> cases = {
      {"not carried out: the next decision is the same 3", false, 2, 3},
      {"carried out: 3, held there for the rest of the minute", true, 3, 3},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PolicyHistory h;
    const Decision first = Recommend(Snap(2, 100, T(0)), c, f, T(0), h);
    ASSERT_EQ(first.replicas, 3);
    ASSERT_TRUE(HasReason(first, "ScaleUpLimit"));
    RecordDecision(first, c, h);
    if (tc.carried_out) RecordScaleEvent(T(0), 2, 3, h);
    FleetSnapshot next = Snap(2, 100, T(15));
    next.spec_replicas = tc.fleet_then;
    const Decision second = Recommend(next, c, f, T(15), h);
    EXPECT_EQ(second.replicas, tc.want);
    EXPECT_TRUE(HasReason(second, "ScaleUpLimit"));
  }
}

// A record of served windows every 15 s from `from_s` to `to_s` seconds before `now` (inclusive),
// 1,000 first tokens each, `percent` of them within the threshold.
void AddServed(PolicyHistory& h, absl::Time now, int from_s, int to_s, double percent) {
  for (int s = from_s; s >= to_s; s -= 15) {
    h.served.push_back({now - absl::Seconds(s), 1000, 10 * percent});
  }
}

TEST(RecommendTest, TheBudgetOnRecordWorkedByHand) {
  // Target 95% of requests: the aim is 95%; a point of cushion puts the set point at 96%; the aim
  // never below 90 + 1, so at most 4 points lower, and at most 2 points higher.
  // The record moving it is the last 30 minutes' (slo.ttft.surplusWindow); the ledger is the
  // target's 24 hours. Intervals every 15 s up to 15 s before now, 1,000 requests each.
  const PolicyConfig c = Config();
  const absl::Time now = T(7200);
  struct Case {
    std::string name;
    std::vector<std::tuple<int, int, double>> record;  // from s, to s before now, percent
    double want_recent, want_ledger, want_lowered, want_raised;
    std::string want_code;
  };
  const Case cases[] = {
      {"no record", {}, 100, 100, 0, 0, ""},
      {"5 minutes at 99%: too short a record to spend", {{300, 15, 99}}, 99, 99, 0, 0, ""},
      {"5 minutes at 80%: too short a record to raise", {{300, 15, 80}}, 80, 80, 0, 0, ""},
      {"20 minutes at 97%: 97 - 96", {{1200, 15, 97}}, 97, 97, 1, 0, "SurplusSpent"},
      {"20 minutes at 96%: on the set point", {{1200, 15, 96}}, 96, 96, 0, 0, ""},
      {"20 minutes at 95.3%: 96 - 95.3",
       {{1200, 15, 95.3}},
       95.3,
       95.3,
       0,
       0.7,
       "ShortfallOnRecord"},
      {"20 minutes at 90%: raised by 2 at most",
       {{1200, 15, 90}},
       90,
       90,
       0,
       2,
       "ShortfallOnRecord"},
      {"30 minutes at 99.9%: 99.9 - 96, up to 4",
       {{1800, 15, 99.9}},
       99.9,
       99.9,
       3.9,
       0,
       "SurplusSpent"},
      // 40 minutes back to 31 at 80%, then 30 minutes at 98%: only the last 30 move the aim; the
      // day's ledger holds both (80 x 40 + 98 x 120 intervals).
      {"older intervals leave the record, not the ledger",
       {{2400, 1815, 80}, {1800, 15, 98}},
       98,
       (80.0 * 40 + 98.0 * 120) / 160,
       2,
       0,
       "SurplusSpent"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PolicyHistory h;
    for (const auto& [from, to, percent] : tc.record) AddServed(h, now, from, to, percent);
    const BudgetOnRecord got = BudgetAt(h, c, now);
    EXPECT_NEAR(got.recent.request_percent(), tc.want_recent, 1e-9);
    EXPECT_NEAR(got.ledger.request_percent(), tc.want_ledger, 1e-9);
    EXPECT_NEAR(got.shift.lowered_by, tc.want_lowered, 1e-9);
    EXPECT_NEAR(got.shift.raised_by, tc.want_raised, 1e-9);
    EXPECT_EQ(BudgetReasonCode(got.shift.state), tc.want_code);
  }
  // The floor: with 3 points of headroom kept (90 + 3), 99.9% lowers the aim by 2 points only.
  PolicyConfig keep3 = c;
  keep3.min_forecast_headroom = 3;
  PolicyHistory high;
  AddServed(high, now, 1800, 15, 99.9);
  EXPECT_NEAR(BudgetAt(high, keep3, now).shift.lowered_by, 2, 1e-9);
  // A 99% target is raised only up to 99.5%.
  PolicyConfig strict = c;
  strict.target_requests = 99;
  PolicyHistory short_record;
  AddServed(short_record, now, 1200, 15, 90);
  EXPECT_NEAR(BudgetAt(short_record, strict, now).shift.raised_by, 0.5, 1e-9);
  // spec.slo.ttft.surplusWindow: 0s moves nothing; a 5-minute window needs only its 5 minutes
  // of record (5 minutes at 99%: 99 - 95 - 1 = 3).
  PolicyHistory h;
  AddServed(h, now, 300, 15, 99);
  PolicyConfig off = c;
  off.surplus_window = absl::ZeroDuration();
  EXPECT_EQ(BudgetAt(h, off, now).shift.lowered_by, 0);
  EXPECT_EQ(BudgetAt(short_record, off, now).shift.raised_by, 0);
  PolicyConfig five = c;
  five.surplus_window = absl::Minutes(5);
  EXPECT_NEAR(BudgetAt(h, five, now).shift.lowered_by, 3, 1e-9);
}

// Attainment proportional to capacity (replicas x 8.5 req/s x the slack margin) over the rate,
// judged against the question's aim.
class AimedForecaster : public Forecaster {
 public:
  Forecast Evaluate(const ForecastQuestion& q) const override {
    Forecast f;
    f.requests = 1000;
    f.attainment = std::min(1.0, q.candidate_replicas * 8.5 * q.slack_margin / q.arrival_rate);
    f.meets_slo = 100 * f.attainment + 1e-9 >= q.percentile;
    return f;
  }
};

TEST(RecommendTest, TheServedRecordMovesTheAimAndTheAnswer) {
  // 12 Ready replicas; 20 minutes of record at `served` percent move the 95% aim to the set point
  // (96%) by the difference: down by a surplus, up by a shortfall, at most 2 points.
  // - 80 req/s: at the margin (0.8) 11 replicas show 11 x 6.8 / 80 = 93.5%, short of 95: hold at
  //   12. Served 98%: the aim is 95 - (98 - 96) = 93%, which 11 meet (10 show 85%): scale in.
  // - 125 req/s: 12 x 8.5 / 125 = 81.6% (below the SLO's 90: scaled up at once); 13 show 88.4%; 14
  //   show 95.2%, which meets 95: 14. Served 94% (a twin that forecast too well): the aim is
  //   95 + (96 - 94) = 97%, which 14 no longer meet; 15 (100%) do.
  struct Case {
    std::string name;
    double rate;
    double served;  // percent over the record; < 0: no record
    double want_aim;
    int32_t want;
    std::string reason, quoted;
  };
  const Case cases[] = {
      {"no record, 80 req/s", 80, -1, 95, 12, "", ""},
      {"a surplus", 80, 98, 93, 11, "SurplusSpent", "98.00% of 80000 requests"},
      {"no record, 125 req/s", 125, -1, 95, 14, "", ""},
      {"a shortfall", 125, 94, 97, 15, "ShortfallOnRecord", "94.00% of 80000 requests"},
  };
  const PolicyConfig c = Config();
  const absl::Time now = T(7200);
  const AimedForecaster f;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    PolicyHistory h = Steady(12, 300, now);
    if (tc.served >= 0) AddServed(h, now, 1200, 15, tc.served);
    const Decision d = Recommend(Snap(12, tc.rate, now), c, f, now, h);
    EXPECT_DOUBLE_EQ(d.question.percentile, tc.want_aim);
    EXPECT_DOUBLE_EQ(d.aim_lowered_by, 95 - tc.want_aim);
    EXPECT_EQ(d.recommendation, tc.want);
    for (const std::string code : {"SurplusSpent", "ShortfallOnRecord"}) {
      EXPECT_EQ(HasReason(d, code), code == tc.reason) << code;
    }
    if (!tc.reason.empty()) {
      EXPECT_NE(ReasonMessage(d, tc.reason).find(tc.quoted), std::string::npos)
          << ReasonMessage(d, tc.reason);
    }
  }
}

TEST(RecommendTest, EachIntervalForecastIsCheckedAgainstWhatTheNextDecisionSaw) {
  PolicyConfig c = Config();  // 15 s interval; the minute check's window is a minute
  PolicyHistory h;
  Forecast f;
  f.attainment = 0.97;
  f.attainment_se = 0.01;
  for (int s = 0; s <= 120; s += 15) {
    Decision d;
    d.at = T(s);
    d.served_requests = s == 60 ? 0 : 200;  // at 60 s the window saw no first token
    d.served_met = 170;
    RecordDecision(d, c, h);
    if (s != 90) RecordIntervalForecast(T(s), f, h);  // none after the decision at 90 s
  }
  // Checked: 15, 30, 45, 75, 90 and 120 s (0 had no forecast before it, 60 served nothing, 105
  // had none made after 90); kept: those within the last minute (75, 90 and 120 s).
  ASSERT_EQ(h.interval_checks.size(), 3u);
  EXPECT_EQ(h.interval_checks.front().at, T(75));
  EXPECT_EQ(h.interval_checks[1].at, T(90));
  EXPECT_EQ(h.interval_checks.back().at, T(120));
  EXPECT_DOUBLE_EQ(h.interval_checks.back().predicted, 0.97);
  EXPECT_DOUBLE_EQ(h.interval_checks.back().predicted_se, 0.01);
  EXPECT_DOUBLE_EQ(h.interval_checks.back().served, 0.85);
  EXPECT_DOUBLE_EQ(h.interval_checks.back().requests, 200);
  // A forecast is checked by a decision at most two intervals after it, not later.
  Decision late;
  late.served_requests = 200;
  late.served_met = 170;
  late.at = T(145);  // 25 s after the forecast made at 120 s
  RecordDecision(late, c, h);
  EXPECT_EQ(h.interval_checks.back().at, T(145));
  RecordIntervalForecast(T(145), f, h);
  late.at = T(176);  // 31 s after
  RecordDecision(late, c, h);
  EXPECT_EQ(h.interval_checks.back().at, T(145));
  EXPECT_FALSE(h.interval_forecast.has_value());
}

TEST(RecommendTest, RecordDecisionRemembersWhichRecommendationsARaiseMadeAndTheirRates) {
  PolicyConfig c = Config();  // the longest window kept: the 300 s scale-down window
  PolicyHistory h;
  for (int s = 0; s <= 600; s += 15) {
    Decision d;
    d.at = T(s);
    d.recommendation = 4;
    d.aim_optimism_raise = s == 150 || s == 450 ? 3.5 : 0;
    d.question.arrival_rate = s;
    RecordDecision(d, c, h);
  }
  // 150 s is more than the window before 600 s: forgotten with its recommendation.
  EXPECT_EQ(h.raised_at, std::deque<absl::Time>{T(450)});
  EXPECT_EQ(h.recommendations.front().first, T(300));
  // The rate each recommendation was asked at, kept as long as the recommendation.
  ASSERT_EQ(h.recommendation_rates.size(), h.recommendations.size());
  EXPECT_EQ(h.recommendation_rates.front(), std::make_pair(T(300), 300.0));
  EXPECT_EQ(h.recommendation_rates.back(), std::make_pair(T(600), 600.0));
}

TEST(RecommendTest, RecordDecisionKeepsTheServedRecordAndTheScaleInDraws) {
  PolicyConfig c = Config();
  c.target_window = absl::Minutes(30);  // as long as surplusWindow: 30 minutes kept
  PolicyHistory h;
  for (int s = 0; s <= 2400; s += 15) {
    Decision d;
    d.at = T(s);
    d.current = d.recommendation = d.replicas = 4;
    d.served_requests = 100;
    d.served_met = 99;
    d.scale_in_forecasts = {{3, 0.97, 0.01, 500}};
    RecordDecision(d, c, h);
  }
  // The served record: the target's 30-minute window (120 intervals: 0, 15, ..., 1785 s back).
  EXPECT_EQ(h.served.size(), 120u);
  EXPECT_EQ(h.served.front().at, T(615));
  // Scale-in draws: the 300 s stabilization window's (21), at base 4, with their question.
  ASSERT_EQ(h.margin_draws.size(), 21u);
  EXPECT_EQ(h.margin_draws.back().base, 4);
  EXPECT_DOUBLE_EQ(h.margin_draws.back().safety_margin, c.safety_margin);
  EXPECT_EQ(h.margin_draws.back().forecast.replicas, 3);

  // A decision to scale in changes nothing by itself: the fleet is still 4 and the draws still
  // its own (2115 ... 2415 s: 21). The scale that carries it out forgets them: they were draws
  // for the fleet before the change.
  Decision scaled;
  scaled.at = T(2415);
  scaled.current = 4;
  scaled.recommendation = scaled.replicas = 3;
  scaled.scale_in_forecasts = {{3, 0.97, 0.01, 500}};
  RecordDecision(scaled, c, h);
  EXPECT_EQ(h.margin_draws.size(), 21u);
  RecordScaleEvent(T(2415), 4, 3, h);
  EXPECT_TRUE(h.margin_draws.empty());

  // A decision pools only the draws at its own base and question.
  const AimedForecaster f;
  PolicyHistory at_five = Steady(5, 300, T(3000));
  at_five.margin_draws.push_back({T(2990),
                                  5,
                                  c.safety_margin,
                                  c.ttft_threshold,
                                  c.ttft_per_prompt_token,
                                  {4, 0.99, 0.001, 1000}});
  at_five.margin_draws.push_back({T(2990),
                                  6,
                                  c.safety_margin,
                                  c.ttft_threshold,
                                  c.ttft_per_prompt_token,
                                  {4, 0.99, 0.001, 1000}});
  at_five.margin_draws.push_back(
      {T(2990), 5, 0.5, c.ttft_threshold, c.ttft_per_prompt_token, {4, 0.99, 0.001, 1000}});
  at_five.margin_draws.push_back({T(2600),
                                  5,
                                  c.safety_margin,
                                  c.ttft_threshold,
                                  c.ttft_per_prompt_token,
                                  {4, 0.99, 0.001, 1000}});
  at_five.margin_draws.push_back({T(2990),
                                  5,
                                  c.safety_margin,
                                  c.ttft_threshold,
                                  c.ttft_per_prompt_token,
                                  {4, 0.99, 0.001, 1000},
                                  /*not_counted=*/2});
  const Decision d = Recommend(Snap(5, 20, T(3000)), c, f, T(3000), at_five);
  // Base 6, margin 0.5, 400 s old, and asked while 2 starting pods (none now) were left out of
  // capacity: left out.
  ASSERT_EQ(d.scale_in_evidence.size(), 1u);
  EXPECT_EQ(d.scale_in_evidence.front().replicas, 4);
  EXPECT_FALSE(d.scale_in_forecasts.empty());
}

}  // namespace
}  // namespace twinscale::policy
