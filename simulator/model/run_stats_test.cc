// RunStats: the latency summaries' quantiles worked by hand, and the SLO-only detail level (what
// the twin's what-ifs keep) reporting the SLO figures exactly as the full one does, and the slack
// share of a scale-in question's targets worked by hand.
#include "simulator/model/run_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace twinscale::sim {
namespace {

TEST(SummarizeLatenciesTest, QuantilesInterpolateBetweenOrderStatistics) {
  // 1..10 in shuffled order. Linear interpolation at rank q x 9 (0-based, numpy's default):
  // p50 at 4.5 -> 5.5, p90 at 8.1 -> 9.1, p99 at 8.91 -> 9.91.
  const LatencySummary s = SummarizeLatencies({7, 3, 10, 1, 9, 2, 8, 5, 4, 6});
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
}

TEST(SummarizeLatenciesTest, TiesAndTinySamples) {
  struct Case {
    const char* name;
    std::vector<double> values;
    double p50, p90, p99;
  };
  const std::vector<Case> cases = {
      {"one value is every quantile", {4}, 4, 4, 4},
      {"two values: ranks 0.5, 0.9, 0.99", {10, 0}, 5, 9, 9.9},
      {"ties at the top", {1, 5, 5, 5}, 5, 5, 5},
      {"ties at the bottom: p50 at rank 1.5", {2, 2, 2, 8}, 2, 6.2, 7.82},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const LatencySummary s = SummarizeLatencies(c.values);
    EXPECT_NEAR(s.p50, c.p50, 1e-12);
    EXPECT_NEAR(s.p90, c.p90, 1e-12);
    EXPECT_NEAR(s.p99, c.p99, 1e-12);
  }
}

// Five requests arriving 1 s apart with TTFTs 100, 200, 300, 600 and 900 ms against a 500 ms
// target, scheduling delays 10..50 ms; only those arriving from 2 s on are judged.
void Feed(RunStats& stats) {
  const int64_t ttft_ms[] = {100, 200, 300, 600, 900};
  for (int i = 0; i < 5; ++i) {
    const SimTime arrival = SimTime::FromSecondsF(i);
    stats.OnInjected(arrival);
    stats.OnFirstToken(100, SimDuration::Millis(ttft_ms[i]), arrival);
    stats.OnInterTokenLatency(SimDuration::Millis(20), 9, arrival);
    RequestRecord r;
    r.id = static_cast<uint64_t>(i);
    r.arrival = arrival;
    r.ttft = SimDuration::Millis(ttft_ms[i]);
    r.e2e = SimDuration::Millis(ttft_ms[i] + 180);
    r.scheduling_delay = SimDuration::Millis(10 * (i + 1));
    stats.OnFinished(r);
  }
}

TEST(RunStatsTest, AnItlThresholdCountsTheJudgedGapsOverIt) {
  // Steps ending at 1, 2, 3 and 4 s with gaps of 20, 120, 80 and 150 ms for 10, 4, 6 and 2 tokens;
  // judged from 2 s with a 100 ms threshold: 4 + 6 + 2 = 12 tokens judged, 4 + 2 = 6 over it.
  // Without a threshold nothing is counted.
  for (const bool with_threshold : {true, false}) {
    RunStats stats(TtftSlo{}, StatsDetail::kSloOnly);
    stats.set_judge_from(SimTime::FromSecondsF(2));
    if (with_threshold) stats.set_itl_threshold(SimDuration::Millis(100));
    const int64_t gap_ms[] = {20, 120, 80, 150};
    const int64_t tokens[] = {10, 4, 6, 2};
    for (int i = 0; i < 4; ++i) {
      stats.OnInterTokenLatency(SimDuration::Millis(gap_ms[i]), tokens[i],
                                SimTime::FromSecondsF(i + 1));
    }
    const RunSummary s = stats.Summarize(0, 0);
    EXPECT_EQ(s.judged_itl_tokens, with_threshold ? 12 : 0);
    EXPECT_EQ(s.judged_itl_over, with_threshold ? 6 : 0);
    EXPECT_EQ(s.itl_ms.count, 22);  // the mean still counts every gap
  }
}

TEST(RunStatsTest, TheItlSummaryCountsTheGapsEndingFromItsStartOn) {
  // From 2.5 s on. One by one: gaps of 20, 120, 80 and 150 ms for 10, 4, 6 and 2 tokens, the steps
  // ending at 1, 2, 3 and 4 s: the last two count, (6 x 80 + 2 x 150) / 8 = 97.5 ms. Coalesced:
  // four steps of 3 tokens started at 2.2 s and ending at 2.4, 2.6, 2.9 and 3.0 s: the gaps of
  // the last three count (200, 300 and 100 ms for 3 tokens each), the first (200 ms, ending before
  // 2.5 s) does not. Both details alike; the judged ITL tokens keep judge-from (0 here: all 12 +
  // 22 = 34 of them, with a 100 ms threshold: 4 + 2 tokens one by one, 3 x 3 coalesced over it).
  for (const StatsDetail detail : {StatsDetail::kFull, StatsDetail::kSloOnly}) {
    RunStats stats(TtftSlo{}, detail);
    stats.set_itl_from(SimTime::FromSecondsF(2.5));
    stats.set_itl_threshold(SimDuration::Millis(100));
    const int64_t gap_ms[] = {20, 120, 80, 150};
    const int64_t tokens[] = {10, 4, 6, 2};
    for (int i = 0; i < 4; ++i) {
      stats.OnInterTokenLatency(SimDuration::Millis(gap_ms[i]), tokens[i],
                                SimTime::FromSecondsF(i + 1));
    }
    RunSummary s = stats.Summarize(0, 0);
    EXPECT_EQ(s.itl_ms.count, 8);
    EXPECT_NEAR(s.itl_ms.mean, 97.5, detail == StatsDetail::kFull ? 5 : 1e-9);
    const SimTime ends[] = {SimTime::FromSecondsF(2.4), SimTime::FromSecondsF(2.6),
                            SimTime::FromSecondsF(2.9), SimTime::FromSecondsF(3.0)};
    stats.OnDecodeSteps(ends, SimTime::FromSecondsF(2.2), 4, 3);
    s = stats.Summarize(0, 0);
    // (6 x 80 + 2 x 150 + 3 x (200 + 300 + 100)) / (8 + 9) = 2580 / 17.
    EXPECT_EQ(s.itl_ms.count, 17);
    EXPECT_NEAR(s.itl_ms.mean, 2580.0 / 17, detail == StatsDetail::kFull ? 8 : 1e-6);
    EXPECT_EQ(s.judged_itl_tokens, 34);
    EXPECT_EQ(s.judged_itl_over, 4 + 2 + 3 + 3 + 3);
  }
}

TEST(RunStatsTest, SloOnlyReportsTheSloFiguresOfTheFullDetail) {
  TtftSlo slo;
  slo.threshold = SimDuration::Millis(500);
  RunStats full(slo), lean(slo, StatsDetail::kSloOnly);
  full.set_judge_from(SimTime::FromSecondsF(2));
  lean.set_judge_from(SimTime::FromSecondsF(2));
  Feed(full);
  Feed(lean);
  const RunSummary f = full.Summarize(0, 0), l = lean.Summarize(0, 0);
  // By hand: 3 of 5 within 500 ms; judged (arrived from 2 s): 300, 600, 900 -> 1 of 3; TTFT p90 at
  // rank 3.6 of {100, 200, 300, 600, 900} -> 600 + 0.6 x 300 = 780; scheduling delay mean 30.
  for (const RunSummary& s : {f, l}) {
    EXPECT_DOUBLE_EQ(s.slo_attainment, 0.6);
    EXPECT_EQ(s.judged_requests, 3);
    EXPECT_DOUBLE_EQ(s.judged_attainment, 1.0 / 3);
    EXPECT_EQ(s.ttft_ms.count, 5);
    EXPECT_NEAR(s.ttft_ms.p90, 780, 1e-9);
    EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 420);
    EXPECT_EQ(s.scheduling_delay_ms.count, 5);
    EXPECT_DOUBLE_EQ(s.scheduling_delay_ms.mean, 30);
    EXPECT_EQ(s.completed, 5);
    // 5 requests x 9 gaps of 20 ms: what calibration matches.
    EXPECT_EQ(s.itl_ms.count, 45);
    EXPECT_DOUBLE_EQ(s.itl_ms.mean, 20);
  }
  // What only the full detail keeps.
  EXPECT_EQ(f.e2e_ms.count, 5);
  EXPECT_NEAR(f.itl_ms.p50, 20, 2);  // a log bucket's middle
  EXPECT_DOUBLE_EQ(f.scheduling_delay_ms.p50, 30);
  EXPECT_EQ(l.e2e_ms.count, 0);
  EXPECT_EQ(l.itl_ms.p50, 0);
}

}  // namespace
}  // namespace twinscale::sim

namespace twinscale::sim {
namespace {

TEST(TtftSloTest, ASlackShareJudgesTheWaitAndLeavesTheUnloadedTtft) {
  TtftSlo slo;
  slo.threshold = SimDuration::Millis(500);
  slo.per_prompt_token = SimDuration::Micros(10);
  // Unloaded TTFT: 50 ms per 1,000 prompt tokens.
  slo.unloaded = [](int32_t prompt) { return SimDuration::Micros(50 * int64_t{prompt}); };
  // Without a share the targets are the SLO's: 500 ms + 10 us per token.
  EXPECT_EQ(slo.TargetFor(1000), SimDuration::Millis(510));
  slo.slack_share = 0.8;
  // 1,000 tokens: target 510 ms, unloaded 50 ms, slack 460 ms: 50 + 0.8 x 460 = 418 ms (0.8 x 510
  // would be 408).
  EXPECT_EQ(slo.TargetFor(1000), SimDuration::Millis(418));
  // 8,000 tokens: target 580 ms, unloaded 400 ms: 400 + 0.8 x 180 = 544 ms. A margin on the
  // whole target (464 ms) would fail this request on any fleet: its prefill alone takes 400.
  EXPECT_EQ(slo.TargetFor(8000), SimDuration::Millis(544));
  // 12,000 tokens: unloaded 600 ms, target 620 ms: 600 + 0.8 x 20 = 616 ms. At 20,000 tokens the
  // unloaded 1,000 ms is past the 700 ms target: a miss whatever the wait.
  EXPECT_EQ(slo.TargetFor(12000), SimDuration::Millis(616));
  EXPECT_LT(slo.TargetFor(20000), SimDuration::Millis(1000));
  // Share 1: the target itself, whatever the unloaded TTFT.
  slo.slack_share = 1.0;
  EXPECT_EQ(slo.TargetFor(20000), SimDuration::Millis(700));
}

TEST(TtftLogTest, ALoggedRunIsJudgedAgainAsItsOwnStatsWouldJudgeIt) {
  // Four requests arrive at 0, 1, 2 and 3 s with prompts of 1,000 tokens; three get a first token
  // after 100, 300 and 450 ms, the last none. Hand-worked: the target 400 ms is met by the first
  // two; from 1.5 s on two requests are judged and neither meets it; at a 0.5 share of the slack
  // (unloaded 100 ms: target 100 + 0.5 x 300 = 250 ms) only the first does.
  TtftSlo slo;
  slo.threshold = SimDuration::Millis(400);
  TtftLog log;
  RunStats stats(slo, StatsDetail::kSloOnly);
  stats.set_ttft_log(&log);
  const int64_t ttft_ms[] = {100, 300, 450};
  for (int64_t i = 0; i < 4; ++i) stats.OnInjected(SimTime::FromNanos(i * 1'000'000'000));
  for (int64_t i = 0; i < 3; ++i) {
    stats.OnFirstToken(1000, SimDuration::Millis(ttft_ms[i]),
                       SimTime::FromNanos(i * 1'000'000'000));
  }
  ASSERT_EQ(log.requests(), 4u);
  ASSERT_EQ(log.first_tokens.size(), 3u);
  const RunSummary own = stats.Summarize(0, 0);
  const JudgedCount all = Judge(log, slo, SimTime::Zero());
  EXPECT_EQ(all.judged, 4);
  EXPECT_EQ(all.met, 2);
  EXPECT_EQ(all.judged, own.judged_requests);
  EXPECT_DOUBLE_EQ(static_cast<double>(all.met) / static_cast<double>(all.judged),
                   own.judged_attainment);
  const JudgedCount late = Judge(log, slo, SimTime::FromNanos(1'500'000'000));
  EXPECT_EQ(late.judged, 2);
  EXPECT_EQ(late.met, 0);
  TtftSlo margin = slo;
  margin.slack_share = 0.5;
  margin.unloaded = [](int32_t) { return SimDuration::Millis(100); };
  const JudgedCount strict = Judge(log, margin, SimTime::Zero());
  EXPECT_EQ(strict.judged, 4);
  EXPECT_EQ(strict.met, 1);
  // And each agrees with a run judged that way from the start.
  RunStats late_stats(slo, StatsDetail::kSloOnly), strict_stats(margin, StatsDetail::kSloOnly);
  late_stats.set_judge_from(SimTime::FromNanos(1'500'000'000));
  for (RunStats* s : {&late_stats, &strict_stats}) {
    for (int64_t i = 0; i < 4; ++i) s->OnInjected(SimTime::FromNanos(i * 1'000'000'000));
    for (int64_t i = 0; i < 3; ++i) {
      s->OnFirstToken(1000, SimDuration::Millis(ttft_ms[i]), SimTime::FromNanos(i * 1'000'000'000));
    }
  }
  EXPECT_EQ(late_stats.Summarize(0, 0).judged_requests, late.judged);
  EXPECT_DOUBLE_EQ(late_stats.Summarize(0, 0).judged_attainment, 0.0);
  EXPECT_DOUBLE_EQ(strict_stats.Summarize(0, 0).judged_attainment, 0.25);
}

}  // namespace
}  // namespace twinscale::sim
