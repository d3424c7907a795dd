// The fleet-size searches, against a forecaster that meets the SLO exactly from `need` replicas on:
// every search must return the smallest size that meets (or its documented fallback), for every
// start and range, and the number of what-ifs follows the galloping order worked out by hand.
#include "controller/policy/replica_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace twinscale::policy {
namespace {

// Meets the SLO iff candidate_replicas >= need; attainment rises linearly to 1 at `need`.
class ThresholdForecaster : public Forecaster {
 public:
  explicit ThresholdForecaster(int32_t need) : need_(need) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    asked_.push_back(q.candidate_replicas);
    Forecast f;
    f.meets_slo = q.candidate_replicas >= need_;
    f.attainment = f.meets_slo ? 1.0 : static_cast<double>(q.candidate_replicas) / need_;
    return f;
  }
  mutable std::vector<int32_t> asked_;

 private:
  int32_t need_;
};

TEST(ReplicaSearchTest, GallopingOrderWorkedByHand) {
  struct Case {
    const char* name;
    int32_t need, lo, hi, start;
    int32_t want;
    std::vector<int32_t> want_asked;
  };
  const std::vector<Case> cases = {
      {"scale up from 4 to 9: 5, 6, 8 miss, 12 meets, bisect 10, 9",
       9,
       1,
       20,
       4,
       9,
       {4, 5, 6, 8, 12, 10, 9}},
      {"scale up capped at hi: 20 is the last try and misses",
       30,
       1,
       20,
       4,
       20,
       {4, 5, 6, 8, 12, 20}},
      {"steady: 10 meets, 9 misses", 10, 1, 20, 10, 10, {10, 9}},
      {"scale in from 10 to 7: 9, 8 meet, 6 misses, bisect 7", 7, 1, 20, 10, 7, {10, 9, 8, 6, 7}},
      {"scale in to the floor: 9, 8, 6, 2 meet, then lo = 1 meets",
       1,
       1,
       20,
       10,
       1,
       {10, 9, 8, 6, 2, 1}},
      {"scale in stops at lo even when smaller would do", 1, 3, 20, 10, 3, {10, 9, 8, 6, 3}},
      {"start below lo is clamped", 2, 3, 20, 1, 3, {3}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    ThresholdForecaster f(tc.need);
    ForecastQuestion unguided;
    unguided.percentile = 0;  // no target to read the attainments against
    const ReplicaSearch r = SmallestMeetingReplicas(unguided, f, tc.lo, tc.hi, tc.start);
    EXPECT_EQ(r.replicas, tc.want);
    EXPECT_EQ(f.asked_, tc.want_asked);
    EXPECT_EQ(r.evaluations, static_cast<int32_t>(tc.want_asked.size()));
  }
}

TEST(ReplicaSearchTest, AlwaysTheSmallestSizeThatMeets) {
  // Exhaustive over small ranges: the answer is max(lo, need) when need <= hi, else hi (not met).
  for (int32_t lo = 1; lo <= 4; ++lo) {
    for (int32_t hi = lo; hi <= 24; ++hi) {
      for (int32_t start = lo; start <= hi; ++start) {
        for (int32_t need = 1; need <= 26; ++need) {
          ThresholdForecaster f(need);
          const ReplicaSearch r = SmallestMeetingReplicas({}, f, lo, hi, start);
          SCOPED_TRACE(testing::Message()
                       << "lo " << lo << " hi " << hi << " start " << start << " need " << need);
          if (need <= hi) {
            EXPECT_EQ(r.replicas, std::max(lo, need));
            EXPECT_TRUE(r.met);
            EXPECT_TRUE(r.forecast.meets_slo);
          } else {
            EXPECT_EQ(r.replicas, hi);
            EXPECT_FALSE(r.met);
          }
          // Galloping then bisecting: logarithmic in the distance from the start.
          EXPECT_LE(r.evaluations, 12);
        }
      }
    }
  }
}

// Attainment `shape`(n) against a target of 0.5: meets iff the attainment reaches it. With the
// linear shape 0.5 + 0.02 (n - need) the line through any two sizes crosses the target at `need`.
class CurveForecaster : public Forecaster {
 public:
  CurveForecaster(int32_t need, double (*shape)(int32_t n, int32_t need))
      : need_(need), shape_(shape) {}
  Forecast Evaluate(const ForecastQuestion& q) const override {
    asked_.push_back(q.candidate_replicas);
    Forecast f;
    f.attainment = shape_(q.candidate_replicas, need_);
    f.meets_slo = f.attainment + 1e-12 >= kTarget;
    return f;
  }
  static constexpr double kTarget = 0.5;
  mutable std::vector<int32_t> asked_;

 private:
  int32_t need_;
  double (*shape_)(int32_t, int32_t);
};

double LinearShape(int32_t n, int32_t need) { return 0.5 + 0.02 * (n - need); }
// Saturating (concave): steep below the need, flat above it, as a fleet's attainment is.
double ConcaveShape(int32_t n, int32_t need) { return 1.0 - 0.5 * std::exp(-0.3 * (n - need)); }
// Steps: flat stretches the line reads as no slope at all.
double SteppedShape(int32_t n, int32_t need) {
  return n >= need ? 0.5 + 0.1 * ((n - need) / 4) : 0.4 - 0.1 * ((need - n) / 5);
}

TEST(ReplicaSearchTest, GuidedByALinearAttainmentWorkedByHand) {
  struct Case {
    const char* name;
    int32_t need, lo, hi, start;
    std::vector<int32_t> want_asked;
  };
  const std::vector<Case> cases = {
      // Up from 4: 5 misses (one point only: plain step); the line through 4 and 5 crosses at 9,
      // beyond 6 (the doubling) and capped at 8 (one more doubling): 8 misses; then 9 meets and
      // the bracket (8, 9) is closed. Unguided: 5, 6, 8, 12, 10, 9.
      {"scale up from 4 to 9", 9, 1, 20, 4, {4, 5, 8, 9}},
      // Down from 20: 19 meets; the line crosses at 7, at most one doubling beyond the plain
      // step each time: 16, 12, then 7 itself; 6 (less far than the plain 4, a guided probe)
      // misses. Unguided: 19, 18, 16, 12, 4, 8, 6, 7.
      {"scale in from 20 to 7", 7, 1, 30, 20, {20, 19, 16, 12, 7, 6}},
      {"steady: 10 meets, 9 misses", 10, 1, 20, 10, {10, 9}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    CurveForecaster f(tc.need, LinearShape);
    ForecastQuestion q;
    q.percentile = 100 * CurveForecaster::kTarget;
    const ReplicaSearch r = SmallestMeetingReplicas(q, f, tc.lo, tc.hi, tc.start);
    EXPECT_EQ(r.replicas, tc.need);
    EXPECT_TRUE(r.met);
    EXPECT_EQ(f.asked_, tc.want_asked);
    EXPECT_EQ(r.evaluations, static_cast<int32_t>(tc.want_asked.size()));
  }
}

TEST(ReplicaSearchTest, GuidedAlwaysTheSmallestSizeThatMeetsWhateverTheCurve) {
  // Exhaustive over small ranges and three shapes of curve: the answer is the plain search's
  // (max(lo, need), or hi not met), and the guidance costs at most its bounded extra what-ifs.
  int64_t guided_total = 0, plain_total = 0;
  for (auto shape : {LinearShape, ConcaveShape, SteppedShape}) {
    for (int32_t lo = 1; lo <= 3; ++lo) {
      for (int32_t hi = lo; hi <= 40; ++hi) {
        for (int32_t start = lo; start <= hi; ++start) {
          for (int32_t need = 1; need <= 42; ++need) {
            CurveForecaster guided(need, shape), plain(need, shape);
            ForecastQuestion q;
            q.percentile = 100 * CurveForecaster::kTarget;
            const ReplicaSearch r = SmallestMeetingReplicas(q, guided, lo, hi, start);
            q.percentile = 0;  // no target: unguided
            const ReplicaSearch p = SmallestMeetingReplicas(q, plain, lo, hi, start);
            SCOPED_TRACE(testing::Message()
                         << "lo " << lo << " hi " << hi << " start " << start << " need " << need);
            EXPECT_EQ(r.replicas, need <= hi ? std::max(lo, need) : hi);
            EXPECT_EQ(r.met, need <= hi);
            EXPECT_EQ(r.replicas, p.replicas);
            EXPECT_LE(r.evaluations, p.evaluations + 2 * 2)
                << ::testing::PrintToString(guided.asked_) << " plain "
                << ::testing::PrintToString(plain.asked_);
            guided_total += r.evaluations;
            plain_total += p.evaluations;
          }
        }
      }
    }
  }
  // Over all of them the guidance saves what-ifs.
  EXPECT_LT(guided_total, plain_total);
}

TEST(ReplicaSearchTest, SearchDownKeepsWhenOneLessMisses) {
  ThresholdForecaster f(10);
  auto evaluate = [&](int32_t n) {
    ForecastQuestion q;
    q.candidate_replicas = n;
    return f.Evaluate(q);
  };
  const ReplicaSearch r = SearchDown(1, 10, evaluate);
  EXPECT_EQ(r.replicas, 10);
  EXPECT_FALSE(r.met);
  EXPECT_EQ(r.evaluations, 1);
  // Nothing below lo to try: no what-if at all.
  const ReplicaSearch none = SearchDown(5, 5, evaluate);
  EXPECT_EQ(none.replicas, 5);
  EXPECT_EQ(none.evaluations, 0);
}

TEST(ReplicaSearchTest, CandidateQuestionAsRecommendAsksIt) {
  ForecastQuestion base;
  base.new_replica_warmup = absl::Seconds(45);
  base.ttft_threshold = absl::Milliseconds(500);
  base.ttft_per_prompt_token = absl::Microseconds(100);
  // Keeping or adding: judged after the warm-up, at the full threshold; two stuck pods hold slots.
  const ForecastQuestion up = CandidateQuestion(base, 8, 6, 2, 1.0);
  EXPECT_EQ(up.candidate_replicas, 6);
  EXPECT_EQ(up.judge_from, absl::Seconds(45));
  EXPECT_EQ(up.ttft_threshold, absl::Milliseconds(500));
  EXPECT_EQ(up.slack_margin, 1.0);
  // Removing: judged from now, at the margin of each request's slack; the targets themselves
  // stay (the twin knows each request's unloaded TTFT, the policy does not).
  const ForecastQuestion down = CandidateQuestion(base, 5, 6, 0, 0.8);
  EXPECT_EQ(down.candidate_replicas, 5);
  EXPECT_EQ(down.judge_from, absl::ZeroDuration());
  EXPECT_EQ(down.slack_margin, 0.8);
  EXPECT_EQ(down.ttft_threshold, absl::Milliseconds(500));
  EXPECT_EQ(down.ttft_per_prompt_token, absl::Microseconds(100));
  // Never fewer than one replica simulated.
  EXPECT_EQ(CandidateQuestion(base, 2, 6, 5, 1.0).candidate_replicas, 1);
}

TEST(ReplicaSearchTest, CeilingQuestionIsMaxReplicasAllReadyAndIdle) {
  ForecastQuestion base;
  base.ready = {{3, 40, 0.5}, {0, 10, 0.1}};
  base.pending_ready_in = {absl::Seconds(30)};
  base.judge_from = absl::Seconds(45);
  base.ttft_threshold = absl::Milliseconds(500);
  const ForecastQuestion c = CeilingQuestion(base, 5, 0.8);
  EXPECT_EQ(c.candidate_replicas, 5);
  ASSERT_EQ(c.ready.size(), 5u);
  EXPECT_EQ(c.ready[0].running, 40);  // the observed ones keep their state
  EXPECT_EQ(c.ready[4].running, 0);   // the others are idle
  EXPECT_TRUE(c.pending_ready_in.empty());
  EXPECT_EQ(c.judge_from, absl::ZeroDuration());
  EXPECT_EQ(c.slack_margin, 0.8);
  EXPECT_EQ(c.ttft_threshold, absl::Milliseconds(500));
  Forecast f;
  f.attainment = 0.95;
  EXPECT_DOUBLE_EQ(CeilingTarget(f), 94.0);
}

}  // namespace
}  // namespace twinscale::policy
