// SnapshotBuilder: arrivals from finished + the change in waiting + running (so overload can't hide
// them), NoEvents vs Stale, counter resets, fleet-wide TTFT summed before the quantile, and lengths
// from the histograms' sum/count increases. Expected values worked by hand.
#include "controller/state/fleet_snapshot.h"

#include <gtest/gtest.h>

#include <cmath>

namespace twinscale::state {
namespace {

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

metrics::CumulativeHistogram Hist(std::vector<double> bounds, std::vector<double> cumulative,
                                  double sum) {
  metrics::CumulativeHistogram h;
  h.upper_bounds = std::move(bounds);
  h.cumulative = std::move(cumulative);
  h.count = h.cumulative.back();
  h.sum = sum;
  return h;
}

PodView Ready(std::string name, absl::Time scraped, double waiting, double running,
              double finished, double kv = 0.5) {
  PodView p;
  p.name = std::move(name);
  p.stage = PodView::Stage::kReady;
  p.scrape_ok = true;
  p.scraped_at = scraped;
  metrics::EngineObservation e;
  e.engine = "0";
  e.waiting = waiting;
  e.running = running;
  e.kv_cache_usage = kv;
  e.requests_finished_total = finished;
  p.observation.engines.push_back(e);
  return p;
}

ClusterView View(absl::Time now, std::vector<PodView> pods) {
  ClusterView v;
  v.now = now;
  v.spec_replicas = static_cast<int32_t>(pods.size());
  v.pods = std::move(pods);
  return v;
}

TEST(SnapshotBuilderTest, ArrivalsCountFinishedPlusGrowthInsideTheServer) {
  // Pod a: finished 100 -> 160, in flight 10 -> 30; pod b: finished 50 -> 80, in flight 5 -> 5.
  // Arrivals over 15 s = (60 + 20) + (30 + 0) = 110 -> 7.333 req/s. Finished alone (90) would
  // understate an overloaded fleet whose queue grows.
  SnapshotBuilder b({});
  b.Build(View(T(0), {Ready("a", T(0), 4, 6, 100), Ready("b", T(0), 0, 5, 50)}));
  const FleetSnapshot s =
      b.Build(View(T(15), {Ready("a", T(15), 20, 10, 160), Ready("b", T(15), 1, 4, 80)}));
  ASSERT_EQ(s.workload.arrival_rate.kind(), Input<double>::Kind::kValue);
  EXPECT_NEAR(s.workload.arrival_rate.value(), 110.0 / 15, 1e-9);
  EXPECT_FALSE(s.stale);
  EXPECT_EQ(s.ready(), 2);
  EXPECT_DOUBLE_EQ(s.total_waiting(), 21);
}

TEST(SnapshotBuilderTest, AQuietFleetIsNoEventsNotStale) {
  SnapshotBuilder b({});
  b.Build(View(T(0), {Ready("a", T(0), 0, 0, 100)}));
  const FleetSnapshot s = b.Build(View(T(15), {Ready("a", T(15), 0, 0, 100)}));
  EXPECT_EQ(s.workload.arrival_rate.kind(), Input<double>::Kind::kNoEvents);
  EXPECT_TRUE(s.workload.arrival_rate.usable());
  EXPECT_FALSE(s.stale);
}

TEST(SnapshotBuilderTest, AFailedOrOldScrapeOfAReadyPodIsStale) {
  SnapshotBuilder b({absl::Seconds(45), 0.5, 20});
  PodView failed = Ready("b", T(0), 0, 0, 0);
  failed.scrape_ok = false;
  FleetSnapshot s = b.Build(View(T(0), {Ready("a", T(0), 0, 1, 0), failed}));
  EXPECT_TRUE(s.stale);
  EXPECT_NE(s.stale_reason.find("pod b"), std::string::npos);
  // 60 s old > staleAfter 45 s.
  s = b.Build(View(T(60), {Ready("a", T(60), 0, 1, 0), Ready("b", T(0), 0, 0, 0)}));
  EXPECT_TRUE(s.stale);
  EXPECT_NE(s.stale_reason.find("old"), std::string::npos);
}

TEST(SnapshotBuilderTest, ACounterResetCountsTheNewValueAsPrometheusIncreaseDoes) {
  // Pod restarted: finished 500 -> 12 (reset): increase = 12; in flight 0 -> 3: arrivals 15.
  SnapshotBuilder b({});
  b.Build(View(T(0), {Ready("a", T(0), 0, 0, 500)}));
  const FleetSnapshot s = b.Build(View(T(15), {Ready("a", T(15), 1, 2, 12)}));
  EXPECT_NEAR(s.workload.arrival_rate.value(), 15.0 / 15, 1e-9);
}

TEST(SnapshotBuilderTest, FleetTtftIsSummedBeforeTheQuantileAndLengthsComeFromHistograms) {
  // TTFT buckets le 0.1, 0.5, +Inf. Window increases: pod a 90 requests all <= 0.1 s; pod b 10
  // requests all in (0.5, +Inf). Fleet: 100 requests, 90 within 0.1 s: p90 at rank 90 falls at
  // the top of the first bucket = 0.1 s; attainment at 0.5 s = 90 / 100 exactly (a bucket edge).
  // (Averaging per-pod p90s would give (0.1 + 0.5) / 2 = 0.3 s: wrong.)
  // Prompt lengths: sums grow by 90 x 1000 + 10 x 3000 = 120000 over 100 requests: mean 1200.
  SnapshotBuilder b({absl::Seconds(45), 0.5, 20});
  auto pod = [](std::string n, absl::Time t, double fast, double slow, double prompt_sum) {
    PodView p = Ready(std::move(n), t, 0, 0, fast + slow);
    p.observation.engines[0].ttft =
        Hist({0.1, 0.5}, {fast, fast, fast + slow}, 0.05 * fast + 1.0 * slow);
    p.observation.engines[0].prompt_tokens =
        Hist({1000, 5000}, {fast, fast + slow, fast + slow}, prompt_sum);
    return p;
  };
  b.Build(View(T(0), {pod("a", T(0), 0, 0, 0), pod("b", T(0), 0, 0, 0)}));
  const FleetSnapshot s = b.Build(View(
      T(15), {pod("a", T(15), 90, 0, 90 * 1000.0), pod("b", T(15), 0, 10, 10 * 3000.0)}));
  ASSERT_TRUE(s.workload.ttft_p90_seconds.usable());
  EXPECT_NEAR(s.workload.ttft_p90_seconds.value(), 0.1, 1e-9);
  EXPECT_NEAR(s.workload.ttft_attainment.value(), 0.9, 1e-12);
  ASSERT_TRUE(s.workload.prompt_tokens_mean.usable());
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 1200, 1e-9);
}

TEST(SnapshotBuilderTest, LengthsComeFromEnoughRequestsNotFromOneQuietWindow) {
  // Prompt buckets le 1000, 5000, +Inf; the options ask for at least 200 requests. Cumulative
  // counts and sums of one pod over four windows:
  // 1. 1,000 requests of 100 tokens: the window alone (mean 100).
  // 2. one request of 5,000 tokens: too few alone, so summed with window 1: 1,001 requests,
  //    105,000 tokens, mean 104.9 (the window alone would say 5,000).
  // 3. nothing finished: the same as after window 2.
  // 4. 300 requests of 2,000 tokens: enough alone, so the lengths follow the change at once.
  SnapshotBuilder b({});
  auto pod = [](absl::Time t, double le1000, double le5000, double sum) {
    PodView p = Ready("a", t, 0, 0, le5000);
    p.observation.engines[0].prompt_tokens = Hist({1000, 5000}, {le1000, le5000, le5000}, sum);
    return p;
  };
  b.Build(View(T(0), {pod(T(0), 0, 0, 0)}));
  FleetSnapshot s = b.Build(View(T(15), {pod(T(15), 1000, 1000, 100000)}));
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 100, 1e-9);
  s = b.Build(View(T(30), {pod(T(30), 1000, 1001, 105000)}));
  ASSERT_TRUE(s.workload.prompt_tokens_mean.usable());
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 105000.0 / 1001, 1e-9);
  ASSERT_TRUE(s.workload.prompt_lengths.has_value());
  EXPECT_EQ(s.workload.prompt_lengths->count, 1001);
  EXPECT_EQ(s.workload.prompt_lengths->cumulative, (std::vector<double>{1000, 1001, 1001}));
  s = b.Build(View(T(45), {pod(T(45), 1000, 1001, 105000)}));
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 105000.0 / 1001, 1e-9);
  s = b.Build(View(T(60), {pod(T(60), 1000, 1301, 705000)}));
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 2000, 1e-9);
  EXPECT_EQ(s.workload.prompt_lengths->count, 300);
}

// The workload estimate after one Ready replica finished `counts` requests in successive 15 s
// intervals (nothing waiting or running).
WorkloadEstimate WorkloadAfterCounts(const std::vector<double>& counts) {
  SnapshotBuilder b({});
  double finished = 0;
  b.Build(View(T(0), {Ready("a", T(0), 0, 0, finished)}));
  FleetSnapshot s;
  for (size_t i = 0; i < counts.size(); ++i) {
    finished += counts[i];
    const absl::Time t = T(static_cast<int>(15 * (i + 1)));
    s = b.Build(View(t, {Ready("a", t, 0, 0, finished)}));
  }
  return s.workload;
}

TEST(SnapshotBuilderTest, DispersionOfPoissonLikeCountsIsNearOneAndBurstsRaiseIt) {
  // Dispersion from successive differences: sum (c_i - c_{i-1})^2 / (2 (n - 1) mean).
  // Constant 30 -> 0 -> clamped to 0.25 (smoother than Poisson); alternating 0 / 60 -> 5 x 3600 /
  // (2 x 5 x 30) = 60 -> clamped to 16; a steady ramp 10, 20, ..., 60 (a trend, not bursts) ->
  // 5 x 100 / (2 x 5 x 35) = 1.43, where the plain variance / mean would say 10.
  auto run = [](std::vector<double> counts) { return WorkloadAfterCounts(counts).dispersion; };
  EXPECT_DOUBLE_EQ(run({30, 30, 30, 30, 30, 30}), 0.25);
  EXPECT_DOUBLE_EQ(run({0, 60, 0, 60, 0, 60}), 16.0);
  EXPECT_NEAR(run({10, 20, 30, 40, 50, 60}), 500.0 / 350.0, 1e-12);
}

TEST(SnapshotBuilderTest, RateCvAndLocalMeanComeFromTheSameCounts) {
  // Counts per 15 s of 0, 60, 0, 60, 0, 60: mean 30, unclamped dispersion 60 (above), so the
  // rate's CV beyond Poisson noise is sqrt((60 - 1) / 30) = 1.4024; the last minute (4 intervals:
  // 0 + 60 + 0 + 60 = 120 requests in 60 s) averages 2 req/s while the last interval alone says 4.
  // Constant counts are smoother than Poisson: no rate variation at all.
  auto run = WorkloadAfterCounts;
  const WorkloadEstimate bursty = run({0, 60, 0, 60, 0, 60});
  EXPECT_NEAR(bursty.rate_cv, std::sqrt(59.0 / 30.0), 1e-12);
  EXPECT_EQ(bursty.rate_interval, absl::Seconds(15));
  EXPECT_NEAR(bursty.arrival_rate_local_mean, 2.0, 1e-12);
  EXPECT_NEAR(bursty.arrival_rate.value(), 4.0, 1e-12);
  const WorkloadEstimate steady = run({30, 30, 30, 30, 30, 30});
  EXPECT_EQ(steady.rate_cv, 0);
  EXPECT_NEAR(steady.arrival_rate_local_mean, 2.0, 1e-12);
}

}  // namespace
}  // namespace twinscale::state
