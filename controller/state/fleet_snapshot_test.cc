// SnapshotBuilder: arrivals from finished + the change in waiting + running (so overload can't hide
// them), NoEvents vs Stale, counter resets, fleet-wide TTFT summed before the quantile, and lengths
// from the histograms' sum/count increases. Expected values worked by hand.
#include "controller/state/fleet_snapshot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

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

PodView Ready(std::string name, absl::Time scraped, double waiting, double running, double finished,
              double kv = 0.5) {
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

PodView WithPrefixCounters(PodView p, double queried, double hit) {
  p.observation.engines.front().prefix_cache_queries_total = queried;
  p.observation.engines.front().prefix_cache_hits_total = hit;
  return p;
}

TEST(SnapshotBuilderTest, ThePrefixCacheHitShareIsTheWindowsHitTokensOverQueriedTokens) {
  // Pod a: queried 10,000 -> 40,000 tokens, hit 2,000 -> 14,000; pod b: 0 -> 10,000 and 0 -> 0.
  // The window: (12,000 + 0) / (30,000 + 10,000) = 0.3. The next window adds 20,000 queried and
  // 16,000 hit on pod a alone (b's counters are gone from its scrape): pooled over both windows,
  // (12,000 + 16,000) / (40,000 + 20,000) = 0.4667; the second window alone would say 0.8.
  SnapshotOptions o;
  o.dispersion_history = 20;
  SnapshotBuilder b(o);
  FleetSnapshot s = b.Build(View(T(0), {WithPrefixCounters(Ready("a", T(0), 0, 1, 0), 10000, 2000),
                                        WithPrefixCounters(Ready("b", T(0), 0, 1, 0), 0, 0)}));
  EXPECT_FALSE(s.workload.prefix_cache_hit_share.usable());  // no window yet
  s = b.Build(View(T(15), {WithPrefixCounters(Ready("a", T(15), 0, 1, 0), 40000, 14000),
                           WithPrefixCounters(Ready("b", T(15), 0, 1, 0), 10000, 0)}));
  ASSERT_TRUE(s.workload.prefix_cache_hit_share.usable());
  EXPECT_NEAR(s.workload.prefix_cache_hit_share.value(), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(s.workload.prefix_cache_queried_tokens, 40000);
  s = b.Build(View(T(30), {WithPrefixCounters(Ready("a", T(30), 0, 1, 0), 60000, 30000),
                           Ready("b", T(30), 0, 1, 0)}));
  EXPECT_NEAR(s.workload.prefix_cache_hit_share.value(), 28000.0 / 60000.0, 1e-12);
  // With one window kept, the latest alone.
  o.dispersion_history = 1;
  SnapshotBuilder one(o);
  one.Build(View(T(0), {WithPrefixCounters(Ready("a", T(0), 0, 1, 0), 10000, 2000)}));
  one.Build(View(T(15), {WithPrefixCounters(Ready("a", T(15), 0, 1, 0), 40000, 14000)}));
  s = one.Build(View(T(30), {WithPrefixCounters(Ready("a", T(30), 0, 1, 0), 60000, 30000)}));
  EXPECT_NEAR(s.workload.prefix_cache_hit_share.value(), 0.8, 1e-12);
}

TEST(SnapshotBuilderTest, PodsWithoutPrefixCountersLeaveTheShareStale) {
  SnapshotBuilder b({});
  b.Build(View(T(0), {Ready("a", T(0), 0, 1, 0)}));
  const FleetSnapshot s = b.Build(View(T(15), {Ready("a", T(15), 0, 1, 10)}));
  EXPECT_FALSE(s.workload.prefix_cache_hit_share.usable());
  EXPECT_DOUBLE_EQ(s.workload.prefix_cache_queried_tokens, 0);
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
  const FleetSnapshot s = b.Build(
      View(T(15), {pod("a", T(15), 90, 0, 90 * 1000.0), pod("b", T(15), 0, 10, 10 * 3000.0)}));
  ASSERT_TRUE(s.workload.ttft_p90_seconds.usable());
  EXPECT_NEAR(s.workload.ttft_p90_seconds.value(), 0.1, 1e-9);
  EXPECT_NEAR(s.workload.ttft_attainment.value(), 0.9, 1e-12);
  ASSERT_TRUE(s.workload.prompt_tokens_mean.usable());
  EXPECT_NEAR(s.workload.prompt_tokens_mean.value(), 1200, 1e-9);
}

TEST(SnapshotBuilderTest, ATargetThatGrowsWithThePromptLeavesTheAttainmentUnjudged) {
  // The same window as above (90 first tokens within 0.1 s, 10 over 0.5 s) under an SLO of
  // 0.5 s + 0.1 ms per prompt token: the 10 slow first tokens may be 3000-token prompts whose
  // target is 0.8 s, or not; the histograms do not pair a first token with its prompt. Judged
  // against 0.5 s alone the window would read 90%, and a fleet of 10k-token prompts 0%: every
  // minute "missed". The attainment is Stale; the p90 and the lengths are as without.
  SnapshotOptions o{absl::Seconds(45), 0.5, 20};
  o.slo_per_prompt_token_seconds = 1e-4;
  SnapshotBuilder b(o);
  auto pod = [](std::string n, absl::Time t, double fast, double slow) {
    PodView p = Ready(std::move(n), t, 0, 0, fast + slow);
    p.observation.engines[0].ttft =
        Hist({0.1, 0.5}, {fast, fast, fast + slow}, 0.05 * fast + 1.0 * slow);
    return p;
  };
  b.Build(View(T(0), {pod("a", T(0), 0, 0), pod("b", T(0), 0, 0)}));
  const FleetSnapshot s = b.Build(View(T(15), {pod("a", T(15), 90, 0), pod("b", T(15), 0, 10)}));
  EXPECT_FALSE(s.workload.ttft_attainment.usable());
  EXPECT_NE(s.workload.ttft_attainment.why_stale().find("perPromptToken"), std::string::npos);
  ASSERT_TRUE(s.workload.ttft_p90_seconds.usable());
  EXPECT_NEAR(s.workload.ttft_p90_seconds.value(), 0.1, 1e-9);
  ASSERT_TRUE(s.workload.ttft_window.has_value());
  EXPECT_DOUBLE_EQ(s.workload.ttft_window->count, 100);
}

TEST(SnapshotBuilderTest, PrefillTimeIsTheSettledPodsMeanOverTheWindow) {
  // vllm:request_prefill_time_seconds, sum / count of the window's increase over settled Ready
  // pods (Ready for settled_after, 90 s, or longer), as the inter-token latency is. Pod a, settled:
  // 20 requests taking 0.2 s each (sum +4). Pod b, Ready for 30 s (a replica still warming its
  // caches): 10 requests of 3 s (sum +30), left out. Mean: 4 / 20 = 0.2 s over 20 requests. Per
  // prompt token, over the same requests' prompt tokens (pod a: 20 of 2,000): 4 / 40,000.
  SnapshotBuilder b({absl::Seconds(45), 0.5, 20});
  auto pod = [](std::string n, absl::Time t, absl::Duration ready_for, double count, double sum) {
    PodView p = Ready(std::move(n), t, 0, 0, count);
    p.ready_for = ready_for;
    p.observation.engines[0].prefill_time = Hist({0.3, 5}, {count, count, count}, sum);
    p.observation.engines[0].prompt_tokens = Hist({1000, 5000}, {0, count, count}, 2000 * count);
    return p;
  };
  b.Build(View(
      T(0), {pod("a", T(0), absl::Minutes(10), 100, 20), pod("b", T(0), absl::Seconds(15), 0, 0)}));
  const FleetSnapshot s = b.Build(View(T(15), {pod("a", T(15), absl::Minutes(10), 120, 24),
                                               pod("b", T(15), absl::Seconds(30), 10, 30)}));
  ASSERT_TRUE(s.workload.prefill_mean_seconds.usable());
  EXPECT_NEAR(s.workload.prefill_mean_seconds.value(), 0.2, 1e-12);
  EXPECT_EQ(s.workload.prefill_requests, 20);
  ASSERT_TRUE(s.workload.prefill_seconds_per_prompt_token.usable());
  EXPECT_NEAR(s.workload.prefill_seconds_per_prompt_token.value(), 4.0 / 40000, 1e-15);
  // A window where no settled pod finished a request says nothing.
  SnapshotBuilder quiet({absl::Seconds(45), 0.5, 20});
  quiet.Build(View(T(0), {pod("a", T(0), absl::Minutes(10), 100, 20)}));
  EXPECT_FALSE(quiet.Build(View(T(15), {pod("a", T(15), absl::Minutes(10), 100, 20)}))
                   .workload.prefill_mean_seconds.usable());
}

TEST(SnapshotBuilderTest, TheFrontEndIsEndToEndLessQueuePrefillAndDecode) {
  // Over the requests the settled pods finished in the window, end-to-end latency less queue,
  // prefill and decode time (vLLM observes all four as a request finishes). Pod a, settled,
  // finishes 20 requests in the window: e2e +90 s (4.5 s each), queue +2 (0.1), prefill +4
  // (0.2), decode +83.4 (4.17): 4.5 - 0.1 - 0.2 - 4.17 = 0.03 s. Pod b, Ready for 30 s, finishes
  // 10 with a 1 s front end each; left out as its prefill times are.
  SnapshotBuilder b({absl::Seconds(45), 0.5, 20});
  auto pod = [](std::string n, absl::Time t, absl::Duration ready_for, double count, double e2e,
                double queue, double prefill, double decode) {
    PodView p = Ready(std::move(n), t, 0, 0, count);
    p.ready_for = ready_for;
    metrics::EngineObservation& e = p.observation.engines[0];
    e.e2e = Hist({1, 10}, {0, count, count}, e2e);
    e.queue_time = Hist({1, 10}, {count, count, count}, queue);
    e.prefill_time = Hist({1, 10}, {count, count, count}, prefill);
    e.decode_time = Hist({1, 10}, {0, count, count}, decode);
    return p;
  };
  const absl::Duration settled = absl::Minutes(10);
  b.Build(View(T(0), {pod("a", T(0), settled, 100, 450, 10, 20, 417),
                      pod("b", T(0), absl::Seconds(15), 0, 0, 0, 0, 0)}));
  const FleetSnapshot s =
      b.Build(View(T(15), {pod("a", T(15), settled, 120, 540, 12, 24, 500.4),
                           pod("b", T(15), absl::Seconds(30), 10, 50, 1, 2, 37)}));
  ASSERT_TRUE(s.workload.front_end_seconds.usable());
  EXPECT_NEAR(s.workload.front_end_seconds.value(), 0.03, 1e-9);
  EXPECT_EQ(s.workload.front_end_requests, 20);
  // Histograms that counted different requests (a decode histogram 5% short: a scrape that
  // caught the page mid-update) say nothing.
  SnapshotBuilder torn({absl::Seconds(45), 0.5, 20});
  torn.Build(View(T(0), {pod("a", T(0), settled, 100, 450, 10, 20, 417)}));
  PodView later = pod("a", T(15), settled, 120, 540, 12, 24, 500.4);
  later.observation.engines[0].decode_time = Hist({1, 10}, {0, 119, 119}, 500.4);
  EXPECT_FALSE(torn.Build(View(T(15), {later})).workload.front_end_seconds.usable());
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

TEST(SnapshotBuilderTest, TheEngineIsWhatMostPodsRunAndTheMedianEnginesKvCapacity) {
  // Three pods: two run --max-num-seqs 128, one (mid-rollout) 256, a terminating one 64 with a
  // flag vLLM would refuse on another: the flags of the two, and no error from the terminating pod.
  // KV capacity per engine from vllm:cache_config_info: 100 / 200 / 300 blocks of 16 -> the median,
  // 3,200 tokens.
  EngineArgs a, b, c;
  a.max_num_seqs = 128;
  b.max_num_seqs = 256;
  c.max_num_seqs = 64;
  std::vector<PodView> pods;
  const int64_t blocks[] = {300, 100, 200};
  for (int i = 0; i < 3; ++i) {
    PodView p = Ready(absl::StrCat("p", i), T(0), 0, 0, 10);
    p.engine_args = i == 1 ? b : a;
    p.observation.engines[0].num_gpu_blocks = blocks[i];
    p.observation.engines[0].block_size = 16;
    pods.push_back(std::move(p));
  }
  PodView gone = Ready("p3", T(0), 0, 0, 10);
  gone.stage = PodView::Stage::kTerminating;
  gone.engine_args = c;
  gone.engine_args_error = "pod p3 container vllm: vLLM flag --block-size has no value";
  pods.push_back(std::move(gone));
  SnapshotBuilder builder({});
  FleetSnapshot s = builder.Build(View(T(0), pods));
  ASSERT_TRUE(s.engine_args.has_value());
  EXPECT_EQ(*s.engine_args, a);
  EXPECT_EQ(s.engine_args_error, "");
  EXPECT_EQ(s.kv_capacity_tokens_per_engine, 3200);
  // The other way round, 256 on two pods: the majority follows the rollout. A tie goes to the
  // first pod's flags, and a live pod's unreadable flags are said.
  pods[0].engine_args = b;
  pods[2].engine_args = std::nullopt;
  pods[2].engine_args_error = "pod p2 container vllm: vLLM flag --block-size has no value";
  s = SnapshotBuilder({}).Build(View(T(0), pods));
  EXPECT_EQ(*s.engine_args, b);
  EXPECT_EQ(s.engine_args_error, "pod p2 container vllm: vLLM flag --block-size has no value");
  pods[1].engine_args = a;
  s = SnapshotBuilder({}).Build(View(T(0), pods));
  EXPECT_EQ(*s.engine_args, b);  // one each: the first pod's
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

TEST(SnapshotBuilderTest, RateCvAndLevelComeFromTheSameCounts) {
  // Counts per 15 s of 0, 60, 0, 60, 0, 60: mean 30, unclamped dispersion 60 (above), so the
  // rate's CV beyond Poisson noise is sqrt((60 - 1) / 30) = 1.4024. The level: the last minute
  // (0 + 60 + 0 + 60 = 120 requests in 60 s, 2 req/s) against the 30 s before it (60 in 30 s,
  // 2 req/s) is no shift, so the level is the mean of all six, 180 / 90 s = 2 req/s, while the last
  // interval alone says 4. Constant counts are smoother than Poisson: no rate variation at all.
  auto run = WorkloadAfterCounts;
  const WorkloadEstimate bursty = run({0, 60, 0, 60, 0, 60});
  EXPECT_NEAR(bursty.rate_cv, std::sqrt(59.0 / 30.0), 1e-12);
  EXPECT_EQ(bursty.rate_interval, absl::Seconds(15));
  EXPECT_NEAR(bursty.arrival_rate_level, 2.0, 1e-12);
  EXPECT_EQ(bursty.rate_level_intervals, 6);
  EXPECT_FALSE(bursty.rate_level_shifted);
  EXPECT_NEAR(bursty.arrival_rate.value(), 4.0, 1e-12);
  const WorkloadEstimate steady = run({30, 30, 30, 30, 30, 30});
  EXPECT_EQ(steady.rate_cv, 0);
  EXPECT_NEAR(steady.arrival_rate_level, 2.0, 1e-12);
}

TEST(SnapshotBuilderTest, TheLevelRestartsAtAStepAndGrowsBackToFiveMinutes) {
  // 16 intervals of 30 then 4 of 90 (2 -> 6 req/s). At the step's first interval the last minute
  // (30, 30, 30, 90: 3 req/s) against the 13 intervals before it (2 req/s), with the Allan
  // dispersion of the 17 counts (one jump of 60 in 16 differences: 3600 / (2 x 16 x 33.53) =
  // 3.355), has pooled rate 2.235 req/s and SE sqrt(3.355 x 2.235 x (1/60 + 1/195)) = 0.404: 1
  // req/s is 2.5 SE, under 3, so one interval of 90 is still a swing and the level is all 17
  // intervals.
  //   At the second (30, 30, 90, 90: 4 req/s against 14 intervals at 2; dispersion 2.888, pooled
  // 2.444, SE 0.389) it is 5.1 SE: a step, and the level restarts at the last minute, 4 req/s.
  //   Each interval after it restarts the level again (5 req/s against the one 30 still inside
  // it: SE 0.964, 3.1 SE), until the last minute is all 90s: 4 req/s over SE sqrt(2.2556 x 5.2 x
  // (1/60 + 1/15)) = 0.989 is 4 SE, and the level is that minute, 6 req/s.
  //   It then averages every interval since the step, one more each time, up to 20 (5 minutes):
  // after 30 more intervals at 90 the history holds nothing else.
  struct Step {
    int more_at_90;  // intervals of 90 added before this check
    bool shifted;
    int32_t intervals;
    double level;
  };
  const Step steps[] = {
      {1, false, 17, 570.0 / 255.0}, {1, true, 4, 4.0}, {2, true, 4, 6.0}, {1, false, 5, 6.0},
      {30, false, 20, 6.0},
  };
  std::vector<double> counts(16, 30);
  for (const Step& step : steps) {
    counts.insert(counts.end(), step.more_at_90, 90);
    SCOPED_TRACE(counts.size());
    const WorkloadEstimate w = WorkloadAfterCounts(counts);
    EXPECT_EQ(w.rate_level_shifted, step.shifted);
    EXPECT_EQ(w.rate_level_intervals, step.intervals);
    EXPECT_NEAR(w.arrival_rate_level, step.level, 1e-12);
  }
}

// LevelOf on 15 s windows: 16 intervals at 50 req/s (750 each) then the last minute at 60 req/s.
TEST(RateLevelTest, AMinuteInsideTheMeasuredBurstinessIsNoStep) {
  const std::deque<double> windows(20, 15.0);
  std::deque<double> counts(16, 750);
  counts.insert(counts.end(), 4, 900);
  // Pooled rate (3600 + 12000) / 300 s = 52 req/s. With the dispersion a bursty trace measures (65:
  // the Azure code trace at x20), the SE of the difference is sqrt(65 x 52 x (1/60 + 1/240)) =
  // 8.39 req/s and 10 req/s is 1.19 SE: a swing, and the level is the whole 5 minutes, 52 req/s.
  RateLevel bursty = LevelOf(counts, windows, 20, 4, 20, 65, 3.0);
  EXPECT_FALSE(bursty.shifted);
  EXPECT_EQ(bursty.intervals, 20);
  EXPECT_NEAR(bursty.rate, 52.0, 1e-12);
  // Poisson counts (dispersion 1): SE 1.04 req/s, 10 req/s is 9.6 SE: a step to 60 req/s.
  RateLevel poisson = LevelOf(counts, windows, 20, 4, 20, 1, 3.0);
  EXPECT_TRUE(poisson.shifted);
  EXPECT_EQ(poisson.intervals, 4);
  EXPECT_NEAR(poisson.rate, 60.0, 1e-12);
}

TEST(RateLevelTest, TrafficStoppingIsAStepEvenWhenBursty) {
  // 16 x 750 then 4 x 0: pooled 12000 / 300 s = 40 req/s, SE sqrt(65 x 40 x 0.0208333) = 7.36;
  // 50 req/s is 6.8 SE: the level is 0, so the fleet can scale in without waiting 5 minutes out.
  std::deque<double> counts(16, 750);
  counts.insert(counts.end(), 4, 0);
  const RateLevel l = LevelOf(counts, std::deque<double>(20, 15.0), 20, 4, 20, 65, 3.0);
  EXPECT_TRUE(l.shifted);
  EXPECT_EQ(l.rate, 0);
}

TEST(RateLevelTest, SpanIsCappedByTheHistoryAndTheMaximum) {
  // Six counts and a span of 10 asked: all six. Windows of unequal length weigh by their seconds:
  // 1350 requests / 105 s = 12.857 req/s, where the mean of the six rates would say 11.67. (The
  // last minute, 1050 / 75 s = 14 req/s, against 10 before it: SE sqrt(65 x 12.857 x (1/75 + 1/30))
  // = 6.2, no step.)
  const std::deque<double> counts = {150, 150, 150, 150, 600, 150};
  const std::deque<double> windows = {15, 15, 15, 15, 30, 15};
  RateLevel l = LevelOf(counts, windows, 10, 4, 20, 65, 3.0);
  EXPECT_FALSE(l.shifted);
  EXPECT_EQ(l.intervals, 6);
  EXPECT_NEAR(l.rate, 1350.0 / 105.0, 1e-12);
  l = LevelOf(counts, windows, 10, 4, 5, 65, 3.0);  // at most 5: the oldest is left out
  EXPECT_EQ(l.intervals, 5);
  EXPECT_NEAR(l.rate, 1200.0 / 90.0, 1e-12);
  // A span no longer than the short window has nothing before it to test against.
  l = LevelOf(counts, windows, 3, 4, 20, 0.25, 3.0);
  EXPECT_FALSE(l.shifted);
  EXPECT_EQ(l.intervals, 3);
  EXPECT_NEAR(l.rate, 900.0 / 60.0, 1e-12);
  EXPECT_EQ(LevelOf({}, {}, 5, 4, 20, 1, 2.0).intervals, 0);
  EXPECT_EQ(LevelOf({}, {}, 5, 4, 20, 1, 2.0).rate, 0);
}

// RatePersistence, worked by hand: traffic alternating 0, 2, 0, 2 ... per second, the departure
// taken over 1 interval against a baseline of 2 (always 1 req/s): each departure is +-1, the next
// interval departs the other way (slope -1, clamped to 0) and the one after the same way (1).
TEST(RatePersistenceTest, APeriodicRateIsFollowedLagByLag) {
  std::deque<double> counts, windows;
  for (int i = 0; i < 40; ++i) {
    counts.push_back(i % 2 == 0 ? 0 : 2);
    windows.push_back(1);
  }
  const std::vector<double> w = RatePersistence(counts, windows, 1, 2, 4, 10);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_DOUBLE_EQ(w[0], 0);
  EXPECT_DOUBLE_EQ(w[1], 1);
  EXPECT_DOUBLE_EQ(w[2], 0);
  EXPECT_DOUBLE_EQ(w[3], 1);
}

// A step from 40 to 60 req/s that stays: every departure from the 5-minute baseline after it is
// followed by 60, at least as far from the baseline as the departure (the minute's mean reaches 60
// before the baseline does), so every weight is 1: the new level is forecast to hold.
TEST(RatePersistenceTest, AStepThatStaysIsForecastToStay) {
  std::deque<double> counts, windows;
  for (int i = 0; i < 140; ++i) {
    counts.push_back(i < 70 ? 600 : 900);
    windows.push_back(15);
  }
  const std::vector<double> w = RatePersistence(counts, windows, 4, 20, 16, 40);
  ASSERT_EQ(w.size(), 16u);
  for (double x : w) EXPECT_DOUBLE_EQ(x, 1);
}

// Bursts that do not last: each 15 s interval's rate drawn independently (50 +- 20 req/s). The next
// interval is independent of the minute before it and of the baseline, so the fitted weights are
// about 0 at every lag (each an estimate from about 120 pairs: its standard error is about 0.2 x
// the departure's spread over its own, so a bound of 0.3 holds with room).
TEST(RatePersistenceTest, BurstsThatDoNotLastAreForecastToPass) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> rate(30, 70);
  std::deque<double> counts, windows;
  for (int i = 0; i < 140; ++i) {
    counts.push_back(std::round(15 * rate(rng)));
    windows.push_back(15);
  }
  const std::vector<double> w = RatePersistence(counts, windows, 4, 20, 16, 40);
  ASSERT_EQ(w.size(), 16u);
  double sum = 0;
  for (double x : w) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 0.3);
    sum += x;
  }
  EXPECT_LT(sum / 16, 0.15);
}

TEST(RatePersistenceTest, TooLittleHistoryOrNoDepartureLeavesTheLevelAlone) {
  std::deque<double> counts, windows;
  for (int i = 0; i < 50; ++i) {
    counts.push_back(i % 3 == 0 ? 900 : 600);
    windows.push_back(15);
  }
  // 50 intervals, the first 20 filling the first baseline: 31 - k pairs at lag k, 30 at lag 1,
  // fewer than 40.
  EXPECT_TRUE(RatePersistence(counts, windows, 4, 20, 16, 40).empty());
  // At least 25 pairs for lags 1-6, not for lags 7 and 8: those repeat lag 6's weight. (The
  // pattern repeats every third interval: lag 6 follows it in full.)
  const std::vector<double> w = RatePersistence(counts, windows, 4, 20, 8, 25);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_DOUBLE_EQ(w[5], 1);
  EXPECT_EQ(w[6], w[5]);
  EXPECT_EQ(w[7], w[5]);
  // A constant rate never departs from its baseline: nothing to fit.
  const std::deque<double> flat(140, 750), flat_windows(140, 15);
  EXPECT_TRUE(RatePersistence(flat, flat_windows, 4, 20, 16, 40).empty());
}

// The snapshot carries the baseline (the plain 5-minute mean: counts of 1200, 600, 600, 600, 750
// per 15 s repeated, 750 a count, 50 req/s) and the weights once 40 pairs fit lag 1: 20 intervals
// for the first baseline, then 40 more (59 counts make 39 pairs).
TEST(SnapshotBuilderTest, BaselineAndPersistenceComeWithHistory) {
  const double pattern[] = {1200, 600, 600, 600, 750};
  std::vector<double> counts;
  for (int i = 0; i < 60; ++i) counts.push_back(pattern[i % 5]);
  const WorkloadEstimate full = WorkloadAfterCounts(counts);
  EXPECT_NEAR(full.arrival_rate_baseline, 50, 1e-9);
  EXPECT_EQ(full.rate_persistence.size(), 16u);
  counts.pop_back();
  const WorkloadEstimate short_history = WorkloadAfterCounts(counts);
  EXPECT_NEAR(short_history.arrival_rate_baseline, 50, 1e-9);
  EXPECT_TRUE(short_history.rate_persistence.empty());
}

}  // namespace
}  // namespace twinscale::state

namespace twinscale::state {
namespace {

// A one-pod fleet observed every 15 s over [from, to) seconds after T(0), its arrivals at
// rate(t) req/s (t in seconds after T(0)) counted as finished requests. The last snapshot.
FleetSnapshot Observe(SnapshotBuilder& b, int from, int to, double (*rate)(double)) {
  FleetSnapshot last;
  double finished = 0;
  for (int t = from; t <= to; t += 15) {
    if (t > from) finished += 7.5 * (rate(t - 15) + rate(t));  // the trapezoid: exact on a ramp
    last = b.Build(View(T(t), {Ready("a", T(t), 0, 0, finished)}));
  }
  return last;
}

double Ramp(double t) { return 50 + t / 60; }  // +1 req/s per minute
double Flat(double) { return 50; }

SnapshotOptions SeasonTestOptions() {
  SnapshotOptions o;
  o.season_lead = absl::Minutes(5);
  o.season_judged_from = absl::Minutes(1);
  return o;
}

// Yesterday's ramp, as replay or a Prometheus history would seed it.
void SeedYesterday(SnapshotBuilder& b, double (*rate)(double)) {
  std::vector<double> yesterday;
  for (int t = 0; t < 2 * 3600; t += 15) yesterday.push_back(7.5 * (rate(t) + rate(t + 15)));
  b.SeedArrivals(T(0) - absl::Hours(24), absl::Seconds(15), yesterday);
}

TEST(SnapshotBuilderTest, ADayThatRepeatsIsForecastWithItsSeason) {
  // Today ramps as yesterday did. The level averages the last minutes, so it trails the ramp;
  // the season says how far the rate climbed yesterday from that window to the span ahead, and
  // its forecasts come out closer than the level's once they have been checked (after an hour:
  // a dozen spans of 4 minutes). The ratios then rise with the lead: the k-th interval is read
  // centred (k - 1/2) x 15 s ahead, the level's window behind now.
  SnapshotBuilder b(SeasonTestOptions());
  SeedYesterday(b, Ramp);
  const FleetSnapshot s = Observe(b, 0, 60 * 60, Ramp);
  const SeasonSkill::Score& skill = s.workload.season_skill;
  EXPECT_GE(skill.checks, 8);
  EXPECT_LT(skill.seasonal_error, skill.level_error);
  EXPECT_TRUE(skill.use_season);
  ASSERT_EQ(s.workload.rate_season.size(), 20u);  // 5 minutes of 15 s intervals
  EXPECT_GT(s.workload.rate_season.front(), 1.0);
  for (size_t k = 1; k < s.workload.rate_season.size(); ++k) {
    EXPECT_GT(s.workload.rate_season[k], s.workload.rate_season[k - 1]);
  }
  // The history also holds today's observations, for tomorrow: over the hour, the ramp's
  // mean.
  EXPECT_NEAR(*b.arrival_history().MeanRate(T(0), T(60 * 60)), Ramp(30 * 60), 1e-9);
}

TEST(SnapshotBuilderTest, ASeasonThatDoesNotRepeatIsNotUsed) {
  // Yesterday ramped; today stays flat. The season forecasts a climb that does not come, its
  // checks err more than the level's, and the forecast is the level's alone. Without a day
  // before there is no season at all.
  SnapshotBuilder b(SeasonTestOptions()), fresh(SeasonTestOptions());
  SeedYesterday(b, Ramp);
  const FleetSnapshot s = Observe(b, 0, 60 * 60, Flat);
  EXPECT_GE(s.workload.season_skill.checks, 8);
  EXPECT_GT(s.workload.season_skill.seasonal_error, s.workload.season_skill.level_error);
  EXPECT_TRUE(s.workload.rate_season.empty());
  const FleetSnapshot f = Observe(fresh, 0, 60 * 60, Flat);
  EXPECT_EQ(f.workload.season_skill.checks, 0);
  EXPECT_TRUE(f.workload.rate_season.empty());
}

}  // namespace
}  // namespace twinscale::state
