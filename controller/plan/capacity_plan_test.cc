// The review run on the twin, on the linear (BLIS) profile with synthetic traffic: the warm
// reserve of a step burst counted by hand from the scenario's own arrivals, costs from the
// replicas, determinism across threads, and the errors that name the review's line.
#include "controller/plan/capacity_plan.h"

#include <cmath>
#include <string>

#include "controller/plan/plan_output.h"
#include "controller/plan/scenario.h"
#include "gtest/gtest.h"

namespace twinscale::plan {
namespace {

Review Synthetic(double rate) {
  Review r;
  r.source = "review.yaml";
  r.baseline.kind = Baseline::Kind::kSynthetic;
  r.baseline.synthetic.rate = rate;
  r.baseline.synthetic.duration = absl::Minutes(10);
  r.baseline.synthetic.prompt.kind = sim::LengthDistribution::Kind::kConstant;
  r.baseline.synthetic.prompt.mean = 512;
  r.baseline.synthetic.output.kind = sim::LengthDistribution::Kind::kConstant;
  r.baseline.synthetic.output.mean = 128;
  ProfileChoice p;
  p.name = "blis";
  p.profile = "blis-llama-3.1-8b-h100-tp2";
  p.gpu_hour_price = 2;
  p.line = 7;
  r.profiles.push_back(p);
  r.seeds = 2;
  r.max_replicas = 64;
  return r;
}

Scenario Burst() {
  Scenario s;
  s.name = "burst";
  s.line = 12;
  s.burst = Scenario::Burst{.peak_to_mean = 3, .window = absl::Minutes(3), .at = absl::Minutes(4)};
  return s;
}

TEST(RunPlan, AStepBurstsWarmReserveIsItsRiseOverWhatAReplicaServes) {
  Review review = Synthetic(30);
  review.scenarios.push_back(Burst());
  absl::StatusOr<PlanResult> plan = RunPlan(review, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 2u);
  const Cell& base = plan->at(0, 0);
  const Cell& burst = plan->at(1, 0);
  ASSERT_TRUE(base.found && burst.found);
  // The burst copies the baseline's requests, so one replica serves what it serves there.
  EXPECT_DOUBLE_EQ(burst.per_replica_rps, base.per_replica_rps);
  EXPECT_NEAR(base.per_replica_rps, plan->scenarios[0].p95_rps / base.replicas, 1e-12);
  // By hand, from the scenario's arrivals counted per minute: the fleet sized for the minute
  // before the burst meets the burst's minutes with what it has (the lag, 45 s, is within a
  // minute): ceil(burst / mu) - ceil(before / mu), the largest over the seeds.
  int32_t expected = 0;
  for (uint64_t seed : plan->seeds) {
    absl::StatusOr<sim::Trace> b = BaselineTrace(review, seed);
    ASSERT_TRUE(b.ok());
    absl::StatusOr<sim::Trace> t = ApplyScenario(*b, Burst(), seed);
    ASSERT_TRUE(t.ok());
    // Whole minutes from the first arrival (the last, partial one is not a minute).
    std::vector<double> per_minute(
        static_cast<size_t>(std::floor(t->requests.back().arrival.seconds() / 60)), 0);
    for (const sim::RequestSpec& r : t->requests) {
      const size_t m = static_cast<size_t>(r.arrival.seconds() / 60);
      if (m < per_minute.size()) per_minute[m] += 1.0 / 60;
    }
    const double mu = burst.per_replica_rps;
    int32_t worst = 0;
    for (size_t m = 0; m + 1 < per_minute.size(); ++m) {
      const double peak = std::max(per_minute[m], per_minute[m + 1]);
      worst = std::max(worst, static_cast<int32_t>(std::ceil(peak / mu - 1e-9) -
                                                   std::ceil(per_minute[m] / mu - 1e-9)));
    }
    expected = std::max(expected, worst);
  }
  EXPECT_EQ(burst.warm_reserve, expected);
  EXPECT_GE(burst.warm_reserve, 2);  // three times the rate needs more than a replica's slack
}

TEST(RunPlan, CostsFollowFromTheReplicasAndThePrice) {
  absl::StatusOr<PlanResult> plan = RunPlan(Synthetic(30), {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Cell& c = plan->at(0, 0);
  ASSERT_TRUE(c.found);
  // TP2: two GPUs a replica at 2 a GPU-hour.
  EXPECT_DOUBLE_EQ(c.cost_per_hour, c.replicas * 2 * 2.0);
  EXPECT_NEAR(c.cost_per_1k_successful, c.cost_per_hour / 3600 / c.goodput_rps * 1000, 1e-12);
  EXPECT_NEAR(c.goodput_per_gpu_rps, c.goodput_rps / (2.0 * c.replicas), 1e-12);
  // The fleet meets the SLO: at least 90% of the 30 req/s within it.
  EXPECT_GE(c.attainment_min, 0.9);
  EXPECT_GT(c.goodput_rps, 0.9 * 30 * 0.95);
  EXPECT_LE(c.replicas_fewest, c.replicas);
  EXPECT_EQ(c.replicas_per_seed.size(), 2u);
}

TEST(RunPlan, TwiceTheTrafficNeedsMoreReplicasButNoMoreThanTwiceAsMany) {
  // A linear replica serves about 78 req/s of these at most (its steady mixed step), so 150 req/s
  // needs a few.
  Review review = Synthetic(150);
  review.baseline.synthetic.duration = absl::Minutes(4);
  Scenario twice;
  twice.name = "twice";
  twice.rate = 2;
  review.scenarios.push_back(twice);
  absl::StatusOr<PlanResult> plan = RunPlan(review, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int32_t one = plan->at(0, 0).replicas, two = plan->at(1, 0).replicas;
  EXPECT_GT(two, one);
  EXPECT_LE(two, 2 * one);  // pooling: a larger fleet runs at least as busy within the SLO
  EXPECT_NE(plan->at(1, 0).worsens, "nothing");
}

TEST(RunPlan, ACacheMissOnTrafficWithoutPrefixIdsChangesNothing) {
  Review review = Synthetic(20);
  Scenario miss;
  miss.name = "miss";
  miss.prefix_cache_miss = true;
  review.scenarios.push_back(miss);
  absl::StatusOr<PlanResult> plan = RunPlan(review, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->at(1, 0).replicas, plan->at(0, 0).replicas);
  EXPECT_DOUBLE_EQ(plan->at(1, 0).goodput_rps, plan->at(0, 0).goodput_rps);
  EXPECT_EQ(plan->at(1, 0).improves, "nothing");
  EXPECT_EQ(plan->at(1, 0).worsens, "nothing");
}

TEST(RunPlan, TheAnswerDoesNotDependOnTheThreads) {
  Review review = Synthetic(25);
  review.scenarios.push_back(Burst());
  Scenario longer;
  longer.name = "longer";
  longer.prompt_length = 2;
  review.scenarios.push_back(longer);
  ProfileChoice h200;
  h200.name = "h200";
  h200.profile = "llama-3.1-8b-h200-tp1";
  h200.gpu_hour_price = 3.5;
  review.profiles.push_back(h200);
  absl::StatusOr<PlanResult> one = RunPlan(review, {.threads = 1, .on_cell = {}, .check_size = {}});
  absl::StatusOr<PlanResult> two = RunPlan(review, {.threads = 2, .on_cell = {}, .check_size = {}});
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(PlanJson(*one, std::nullopt).dump(), PlanJson(*two, std::nullopt).dump());
}

TEST(RunPlan, ThePlannedFleetIsTheReviewsWhenGiven) {
  Review review = Synthetic(20);
  review.planned_replicas = 9;
  absl::StatusOr<PlanResult> plan = RunPlan(review, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->at(0, 0).headroom.planned_replicas, 9);
}

TEST(BaselineTrace, ARateCurveWithLengthsFromATrace) {
  // ServeGen's m-large curve, two hours from 72 h played in 15 minutes (x0.125), its peak at 30
  // req/s; lengths drawn from the Azure conversation trace. The count is the curve's integral, a
  // Poisson draw of it: within 5 standard deviations.
  Review review = Synthetic(1);
  review.baseline.kind = Baseline::Kind::kRateCurve;
  review.baseline.rate_curve.path =
      "tests/data/traces/servegen_language_m-large_aggregate_rate.csv";
  review.baseline.rate_curve.lengths_from = "tests/data/traces/AzureLLMInferenceTrace_conv.csv";
  review.baseline.rate_curve.start = absl::Hours(72);
  review.baseline.rate_curve.span = absl::Hours(2);
  review.baseline.rate_curve.time_scale = 0.125;
  review.baseline.rate_curve.peak_rate = 30;
  absl::StatusOr<sim::Trace> a = BaselineTrace(review, 1);
  ASSERT_TRUE(a.ok()) << a.status();
  const sim::TraceSummary s = sim::Summarize(*a);
  EXPECT_NEAR(s.span_seconds, 900, 5);
  EXPECT_LE(s.peak_minute_rps, 30 * 1.15);
  EXPECT_GT(s.requests, 900 * 30 * 0.3);  // a two-hour stretch of a day never falls that low
  // Another seed draws other arrivals from the same curve.
  absl::StatusOr<sim::Trace> b = BaselineTrace(review, 2);
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(static_cast<double>(b->requests.size()), static_cast<double>(s.requests),
              5 * std::sqrt(static_cast<double>(s.requests)));
  EXPECT_NE(b->requests[1].arrival, a->requests[1].arrival);  // the first is at 0 in both
  // A missing lengths trace names the key.
  review.baseline.rate_curve.lengths_from = "/nonexistent.csv";
  EXPECT_NE(BaselineTrace(review, 1).status().message().find("baseline.rateCurve.lengthsFrom"),
            std::string::npos);
}

TEST(RunPlan, ErrorsNameTheReviewsLine) {
  Review review = Synthetic(20);
  review.profiles[0].profile = "no-such-profile";
  absl::StatusOr<PlanResult> plan = RunPlan(review, {});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("review.yaml:7: profiles[0]"), std::string::npos)
      << plan.status();

  review = Synthetic(20);
  Scenario late = Burst();
  late.burst->at = absl::Minutes(9);  // 9 + 3 minutes is past the 10-minute trace
  review.scenarios.push_back(late);
  plan = RunPlan(review, {});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("review.yaml:12: scenario burst"), std::string::npos)
      << plan.status();
}

TEST(RunPlan, TheSizeCheckSeesEveryScenarioAndSeedAndCanStopTheRun) {
  Review review = Synthetic(10);  // about 6,000 requests a seed
  Scenario twice;
  twice.name = "twice";
  twice.rate = 2;
  review.scenarios.push_back(twice);
  double asked = 0;
  PlanOptions options;
  options.check_size = [&](double requests, const std::vector<ProfileSummary>& profiles) {
    EXPECT_EQ(profiles.size(), 1u);
    asked = requests;
    return absl::ResourceExhaustedError("too big");
  };
  absl::StatusOr<PlanResult> plan = RunPlan(review, options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  // (1 + 2) x the baseline's requests, for each of the two seeds.
  EXPECT_NEAR(asked, 3 * 6000 * 2, 0.05 * 3 * 6000 * 2);
}

}  // namespace
}  // namespace twinscale::plan
