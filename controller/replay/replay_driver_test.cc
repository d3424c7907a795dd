// The replay loop: a static fleet costs N x TP x the run and delivers what a plain simulation of
// the same fleet delivers; hand-worked attainment, minute shares and timeline rows on a serial
// toy engine; a KEDA queue baseline reacting to a burst one sync period later; the drain limit;
// determinism for a seed; the pre-roll (played first, counted nowhere).
#include "controller/replay/replay_driver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "controller/replay/baseline_autoscaler.h"
#include "controller/replay/minutes.h"
#include "controller/replay/oracle.h"
#include "controller/replay/report.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/simulate.h"
#include "tests/util/engine_test_util.h"

namespace twinscale::replay {
namespace {

using sim::SimDuration;
using sim::SimTime;
using sim::testing::HandDeployment;
using sim::testing::Req;

sim::DeploymentSpec Profile(std::string_view name) {
  absl::StatusOr<sim::ProfileRegistry> r = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(r.ok()) << r.status();
  absl::StatusOr<sim::DeploymentSpec> d = r->Resolve(name, {});
  EXPECT_TRUE(d.ok()) << d.status();
  return *d;
}

policy::BaselineSpec Spec(const char* family) {
  absl::StatusOr<std::vector<policy::BaselineSpec>> specs =
      policy::ParseBaselineFamily(family, 1, 20);
  EXPECT_TRUE(specs.ok()) << specs.status();
  return specs->front();
}

// Piecewise-constant rates: `segments` of (seconds, requests per second), evenly spaced arrivals;
// lengths cycle through a few values so batches are mixed.
std::shared_ptr<const sim::Trace> StepTrace(std::vector<std::pair<double, double>> segments,
                                            std::vector<int32_t> prompts,
                                            std::vector<int32_t> outputs) {
  auto trace = std::make_shared<sim::Trace>();
  trace->source = "step";
  double t0 = 0;
  for (const auto& [seconds, rate] : segments) {
    const int64_t n = std::llround(seconds * rate);
    for (int64_t i = 0; i < n; ++i) {
      sim::RequestSpec r;
      r.id = trace->requests.size();
      r.arrival = SimTime::FromSecondsF(t0 + static_cast<double>(i) / rate);
      r.prompt_tokens = prompts[r.id % prompts.size()];
      r.output_tokens = outputs[r.id % outputs.size()];
      trace->requests.push_back(r);
    }
    t0 += seconds;
  }
  return trace;
}

TEST(ReplayDriverTest, StaticFleetCostsNTimesTpTimesTheRunAndMatchesAPlainSimulation) {
  ReplayConfig config;
  config.trace =
      StepTrace({{60, 5}, {60, 200}, {60, 5}}, {256, 1024, 2048, 512}, {64, 256, 128, 512});
  config.deployment = Profile("blis-llama-3.1-8b-h100-tp2");
  config.seed = 7;
  config.initial_replicas = 2;
  BaselineAutoscaler fixed(Spec("static:2"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;

  // The same fleet in one plain run.
  sim::SimulateOptions o;
  o.fleet.deployment = config.deployment;
  o.fleet.router.kind = sim::RouterKind::kLeastRequests;
  o.fleet.initial_replicas = 2;
  o.fleet.seed = 7;
  o.slo = config.slo;
  std::unique_ptr<sim::RequestSource> source = sim::MakeTraceSource(config.trace);
  const sim::RunSummary want = sim::Simulate(o, *source).summary;

  EXPECT_EQ(s.requests, want.injected);
  EXPECT_EQ(s.served, want.completed);
  EXPECT_EQ(s.rejected, want.rejected);
  EXPECT_EQ(s.unfinished, 0);
  EXPECT_DOUBLE_EQ(s.attainment, want.slo_attainment);
  EXPECT_DOUBLE_EQ(s.ttft_p50_ms, want.ttft_ms.p50);
  EXPECT_DOUBLE_EQ(s.ttft_p90_ms, want.ttft_ms.p90);
  EXPECT_DOUBLE_EQ(s.ttft_p99_ms, want.ttft_ms.p99);
  EXPECT_LT(s.attainment, 1.0);  // the burst hurts: the comparison is not vacuous
  // The run ends at the first decision (every 15 s) after the last token: 2 replicas x TP 2 x that.
  const double end = std::ceil(want.simulated_seconds / 15.0) * 15.0;
  EXPECT_DOUBLE_EQ(s.simulated_seconds, end);
  EXPECT_DOUBLE_EQ(s.gpu_hours, 2 * 2 * end / 3600.0);
  EXPECT_EQ(s.scale_events, 0);
  EXPECT_EQ(s.max_replicas, 2);
  EXPECT_EQ(s.policy, "static-2");
  EXPECT_EQ(s.family, "static");

  int64_t arrivals = 0;
  for (const TimelineRow& row : got->timeline) {
    arrivals += row.arrivals;
    EXPECT_EQ(row.desired, 2);
    EXPECT_EQ(row.ready, 2);
    EXPECT_EQ(row.warming, 0);
  }
  EXPECT_EQ(arrivals, s.requests);
  EXPECT_EQ(static_cast<int64_t>(got->timeline.size()), s.decisions);
  EXPECT_EQ(got->timeline.back().time, absl::Seconds(end));
}

// One replica that runs one request per 100 ms step (max_num_seqs 1), outputs of 1 token, SLO
// 500 ms at p90. Minute 0: 10 requests 1 s apart, each TTFT 100 ms. Minute 1: 10 requests at
// once at 60 s, served one after another: TTFT 100, 200, ..., 1000 ms, so 5 meet (50% < 90%).
// Minute 2: none. Minute 3: one request at `last_ms` (180 s), 100 ms.
ReplayConfig SerialEngineConfig(double last_ms = 180000) {
  auto trace = std::make_shared<sim::Trace>();
  for (int i = 0; i < 10; ++i) trace->requests.push_back(Req(i, 1000.0 * i, 16, 1));
  for (int i = 10; i < 20; ++i) trace->requests.push_back(Req(i, 60000, 16, 1));
  trace->requests.push_back(Req(20, last_ms, 16, 1));
  ReplayConfig config;
  config.trace = trace;
  config.deployment = HandDeployment(1, 2048, 100000, 100000);
  config.initial_replicas = 1;
  return config;
}

// A summary's minutes as a hand-worked case has them.
struct Minutes {
  int64_t with_traffic, meeting;
  double last_weight, weighted, met_weighted, share;
};
void ExpectMinutes(const ReplaySummary& s, const Minutes& want) {
  EXPECT_EQ(s.minutes_with_traffic, want.with_traffic);
  EXPECT_EQ(s.minutes_meeting_slo, want.meeting);
  EXPECT_DOUBLE_EQ(s.last_minute_weight, want.last_weight);
  EXPECT_DOUBLE_EQ(s.minutes_weighted, want.weighted);
  EXPECT_DOUBLE_EQ(s.minutes_met_weighted, want.met_weighted);
  EXPECT_DOUBLE_EQ(s.minute_share, want.share);
}

TEST(ReplayDriverTest, AttainmentMinutesAndTimelineOnASerialEngine) {
  const ReplayConfig config = SerialEngineConfig();
  BaselineAutoscaler fixed(Spec("static:1"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;
  EXPECT_EQ(s.requests, 21);
  EXPECT_EQ(s.served, 21);
  EXPECT_DOUBLE_EQ(s.attainment, 16.0 / 21.0);
  // The trace ends at its last arrival, 180 s, which opens minute 3: that minute covers none of
  // the trace and weighs 0 (ReplaySummary::last_minute_weight), so the share is minute 0's met
  // against minute 1's missed, 1 / 2.
  ExpectMinutes(s, {3, 2, 0, 2, 1, 0.5});
  // Sorted TTFTs: twelve of 100 ms, then 200 ... 1000. p50 at rank 10 -> 100; p90 at rank 18 ->
  // 800; p99 at rank 19.8 -> 900 + 0.8 x 100.
  EXPECT_DOUBLE_EQ(s.ttft_p50_ms, 100);
  EXPECT_DOUBLE_EQ(s.ttft_p90_ms, 800);
  EXPECT_NEAR(s.ttft_p99_ms, 980, 1e-9);
  // Last token at 180.1 s: the run ends at the decision at 195 s, one replica all along.
  EXPECT_DOUBLE_EQ(s.simulated_seconds, 195);
  EXPECT_DOUBLE_EQ(s.gpu_hours, 195.0 / 3600.0);
  EXPECT_FALSE(MeetsTarget(s));

  ASSERT_EQ(got->timeline.size(), 13u);         // decisions at 15, 30, ..., 195 s
  const TimelineRow& first = got->timeline[0];  // [0, 15): minute 0's ten requests
  EXPECT_EQ(first.time, absl::Seconds(15));
  EXPECT_EQ(first.arrivals, 10);
  EXPECT_DOUBLE_EQ(first.arrival_rps, 10.0 / 15.0);
  EXPECT_DOUBLE_EQ(first.prompt_tokens_per_s, 160.0 / 15.0);
  EXPECT_DOUBLE_EQ(first.output_tokens_per_s, 10.0 / 15.0);
  EXPECT_EQ(first.first_tokens, 10);
  EXPECT_DOUBLE_EQ(*first.ttft_p90_ms, 100);
  const TimelineRow& burst = got->timeline[4];  // [60, 75)
  EXPECT_EQ(burst.arrivals, 10);
  EXPECT_EQ(burst.first_tokens, 10);
  // TTFTs 100 ... 1000: p90 at rank 8.1 -> 900 + 0.1 x 100.
  EXPECT_NEAR(*burst.ttft_p90_ms, 910, 1e-9);
  EXPECT_FALSE(got->timeline[5].ttft_p90_ms.has_value());
  EXPECT_EQ(got->timeline[5].arrivals, 0);
  EXPECT_EQ(got->timeline[12].arrivals, 1);
  EXPECT_EQ(burst.reason, "Static: 1 replicas");
}

// A trace's last, partial minute weighs its length in the share of minutes, as in the oracles.
// The serial engine's minutes 0 and 1, and one more request at 75 s: the trace ends 15 s into
// minute 1. Minute 0 meets (ten TTFTs of 100 ms); minute 1's ten requests at once have TTFTs of
// 100 ... 1000 ms and the one at 75 s, on an engine idle since 61 s, 100 ms: 6 of 11 in time,
// under 90%, missed. Counted whole that is 1 minute of 2; weighed, minute 1 is a quarter of one:
// 1 / 1.25 = 80%. The oracle weighs that minute alike.
TEST(ReplayDriverTest, ThePartialLastMinuteWeighsItsLength) {
  const ReplayConfig config = SerialEngineConfig(75000);
  const sim::Trace* trace = config.trace.get();
  BaselineAutoscaler fixed(Spec("static:1"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;
  EXPECT_DOUBLE_EQ(s.attainment, 16.0 / 21.0);
  ExpectMinutes(s, {2, 1, 0.25, 1.25, 1, 0.8});
  absl::StatusOr<OracleResult> oracle =
      Oracle(*trace, config.deployment, config.truth, config.slo, config.seed, {.max_replicas = 4});
  ASSERT_TRUE(oracle.ok()) << oracle.status();
  ASSERT_EQ(oracle->minutes.size(), 2u);
  EXPECT_DOUBLE_EQ(oracle->minutes[0].weight, 1);
  EXPECT_DOUBLE_EQ(oracle->minutes[1].weight, s.last_minute_weight);
  EXPECT_EQ(LastMinuteText({s}), " (the last minute, 15 s of the trace, weighs 0.25 of one)");
  // A whole last minute says nothing.
  ReplaySummary whole = s;
  whole.last_minute_weight = 0.999;
  EXPECT_EQ(LastMinuteText({whole}), "");
  EXPECT_EQ(LastMinuteText({}), "");
}

// LastMinuteWeight, worked by hand: the seconds from the minute's start to the last arrival,
// rounded up to whole seconds, over 60.
TEST(ReplayMinutesTest, TheLastMinuteWeighsTheSecondsItCovers) {
  struct Case {
    double last_arrival_s;
    double weight;
  };
  const Case cases[] = {
      {75, 15.0 / 60},      // 15 s into minute 1
      {3502.4, 23.0 / 60},  // the conversation hour x40's end: 22.4 s, rounded up
      {10799.98, 1.0},      // a day's last arrival 20 ms before its end: the minute whole
      {120, 0.0},           // opens minute 2: none of it covered
      {120.001, 1.0 / 60},  // a millisecond into it: one second
      {0, 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.last_arrival_s);
    EXPECT_DOUBLE_EQ(LastMinuteWeight(sim::SimTime::FromSecondsF(c.last_arrival_s)), c.weight);
  }
  EXPECT_EQ(MinuteOf(sim::SimTime::FromSecondsF(119.999)), 1);
  EXPECT_EQ(MinuteOf(sim::SimTime::FromSecondsF(120)), 2);
}

TEST(ReplayDriverTest, TheDrainLimitStopsTheRunAndCountsWhatIsLeftAsMisses) {
  // A request of 100,000 tokens at 100 ms a step would take hours; a 1-minute drain limit stops
  // the run at the first decision at or after 60 s. It got its first token in 100 ms but never
  // left the fleet: unfinished, counted as a miss.
  auto trace = std::make_shared<sim::Trace>();
  trace->requests.push_back(Req(0, 0, 16, 100000));
  ReplayConfig config;
  config.trace = trace;
  config.deployment = HandDeployment(1, 2048, 1000000, 100000);
  config.max_drain = absl::Minutes(1);
  BaselineAutoscaler fixed(Spec("static:1"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->summary.unfinished, 1);
  EXPECT_EQ(got->summary.served, 0);
  EXPECT_DOUBLE_EQ(got->summary.attainment, 0);
  EXPECT_DOUBLE_EQ(got->summary.simulated_seconds, 60);
  EXPECT_DOUBLE_EQ(got->summary.gpu_hours, 60.0 / 3600.0);
}

// 2 req/s for 120 s, then 40 req/s for 180 s, of 2048-token prompts: one 8B replica on an H100
// prefills about 13 of them a second, so the queue builds from 120 s on.
std::shared_ptr<const sim::Trace> BurstTrace() {
  return StepTrace({{120, 2}, {180, 40}}, {2048}, {256});
}

ReplayConfig BurstConfig() {
  ReplayConfig config;
  config.trace = BurstTrace();
  config.deployment = Profile("llama-3.1-8b-h100-sxm-tp1");
  // Constant lifecycle: Loading 20 s + WarmingUp 25 s, Ready 45 s after the scale.
  config.deployment.lifecycle.loading = {SimDuration::Seconds(20), 1.0};
  config.deployment.lifecycle.warming_up = {SimDuration::Seconds(25), 1.0};
  config.initial_replicas = 1;
  return config;
}

TEST(ReplayDriverTest, KedaQueueScalesUpOneSyncAfterABurst) {
  const ReplayConfig config = BurstConfig();
  BaselineAutoscaler keda(Spec("keda-queue:5"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, keda);
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<TimelineRow>& rows = got->timeline;
  int32_t previous = 1;
  bool ready_more = false;
  for (const TimelineRow& row : rows) {
    SCOPED_TRACE(absl::FormatDuration(row.time));
    if (row.time <= absl::Seconds(120)) {
      // 2 req/s: hardly anything waits, far under 5 per replica.
      EXPECT_EQ(row.desired, 1);
      EXPECT_EQ(row.ready, 1);
    } else if (row.time == absl::Seconds(135)) {
      // The first sync after the step sees hundreds waiting: ceil(sum / 5), capped by the HPA's
      // no-behavior scale-up limit max(2 x 1, 4) = 4.
      EXPECT_EQ(row.desired, 4);
      EXPECT_NE(row.reason.find("waiting"), std::string::npos) << row.reason;
    } else if (row.time <= absl::Seconds(300)) {
      EXPECT_GE(row.desired, previous);  // still overloaded: never down
    }
    // New pods are Ready 45 s after the scale at 135 s, not before.
    if (row.ready > 1) {
      ready_more = true;
      EXPECT_GE(row.time, absl::Seconds(180));
    }
    previous = row.desired;
  }
  EXPECT_TRUE(ready_more);
  EXPECT_GT(got->summary.max_replicas, 4);
  EXPECT_GE(got->summary.scale_events, 2);
}

TEST(ReplayDriverTest, SameSeedSameReplay) {
  // Every truth perturbation on: step noise, Random routing and log-normal warm-up all draw.
  ReplayConfig config = BurstConfig();
  config.truth = *ParseTruth("all");
  config.seed = 11;
  auto run = [&](const ReplayConfig& c) {
    BaselineAutoscaler keda(Spec("keda-queue:5"));
    absl::StatusOr<ReplayResult> r = RunReplay(c, keda);
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  };
  const ReplayResult a = run(config);
  const ReplayResult b = run(config);
  const ReportHeader header;
  EXPECT_EQ(SummaryJson(header, {a.summary}, nullptr), SummaryJson(header, {b.summary}, nullptr));
  EXPECT_EQ(TimelineCsv({a}), TimelineCsv({b}));
  EXPECT_EQ(a.summary.gpu_hours, b.summary.gpu_hours);
  EXPECT_EQ(a.summary.attainment, b.summary.attainment);
  EXPECT_EQ(a.summary.truth, "all");
  config.seed = 12;
  EXPECT_NE(TimelineCsv({run(config)}), TimelineCsv({a}));
}

TEST(ReplayDriverTest, WithPreRollPlaysTheTracesFirstMinutesWithIdsOfTheirOwnThenTheTrace) {
  // Arrivals at 0, 10, 20 and 30 s; the first two share their first prefix id, as turns of one
  // conversation do. A 25 s pre-roll plays the first three (0, 10, 20 s), then the trace at
  // 25, 35, 45 and 55 s.
  sim::Trace trace;
  trace.source = "four";
  for (int i = 0; i < 4; ++i) {
    sim::RequestSpec r = Req(i, 10000.0 * i, 100 + i, 10 + i);
    r.prefix_hashes = {7, static_cast<uint64_t>(100 + i)};
    if (i == 1) r.prefix_hashes = {7, 100, 101};
    trace.requests.push_back(r);
  }
  const sim::Trace got = WithPreRoll(trace, SimDuration::Seconds(25));
  EXPECT_EQ(got.source, "four");
  ASSERT_EQ(got.requests.size(), 7u);
  const double want_at_s[] = {0, 10, 20, 25, 35, 45, 55};
  const int want_prompt[] = {100, 101, 102, 100, 101, 102, 103};
  for (size_t i = 0; i < got.requests.size(); ++i) {
    SCOPED_TRACE(i);
    const sim::RequestSpec& r = got.requests[i];
    EXPECT_EQ(r.id, i);
    EXPECT_EQ(r.arrival, SimTime::FromSecondsF(want_at_s[i]));
    EXPECT_EQ(r.prompt_tokens, want_prompt[i]);
    EXPECT_EQ(r.output_tokens, want_prompt[i] - 90);
  }
  // The trace's own requests keep their ids; the pre-roll's get others, equal where the trace's
  // were equal (a conversation stays one) and shared with none of the trace's.
  for (size_t i = 3; i < 7; ++i)
    EXPECT_EQ(got.requests[i].prefix_hashes, trace.requests[i - 3].prefix_hashes);
  const std::vector<uint64_t>& a = got.requests[0].prefix_hashes;
  const std::vector<uint64_t>& b = got.requests[1].prefix_hashes;
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  for (size_t i = 0; i < 3; ++i) {
    for (uint64_t id : got.requests[i].prefix_hashes) {
      for (const sim::RequestSpec& r : trace.requests) {
        for (uint64_t own : r.prefix_hashes) EXPECT_NE(id, own);
      }
    }
  }
  // No pre-roll: the trace as it is.
  EXPECT_EQ(WithPreRoll(trace, SimDuration::Zero()).requests.size(), 4u);
}

TEST(ReplayDriverTest, WithAHistoryThePreRollPlaysItsLastStretchEndingWhereTheTraceBegins) {
  // A history of 40 s with arrivals at 5, 20 and 35 s, and a 25 s pre-roll: history time h plays
  // at h - 15 s, so 5 s falls before the pre-roll (dropped), 20 and 35 s play at 5 and 20 s; the
  // trace (arrivals at 0 and 10 s) follows at 25 and 35 s.
  sim::Trace history;
  for (int i = 0; i < 3; ++i) {
    sim::RequestSpec r = Req(i, 5000.0 + 15000.0 * i, 200 + i, 20 + i);
    r.prefix_hashes = {static_cast<uint64_t>(300 + i)};
    history.requests.push_back(r);
  }
  sim::Trace trace;
  trace.source = "two";
  trace.requests = {Req(0, 0, 100, 10), Req(1, 10000, 101, 11)};
  const sim::Trace got =
      WithPreRoll(trace, SimDuration::Seconds(25), history, SimDuration::Seconds(40));
  EXPECT_EQ(got.source, "two");
  ASSERT_EQ(got.requests.size(), 4u);
  const double want_at_s[] = {5, 20, 25, 35};
  const int want_prompt[] = {201, 202, 100, 101};
  for (size_t i = 0; i < got.requests.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got.requests[i].id, i);
    EXPECT_EQ(got.requests[i].arrival, SimTime::FromSecondsF(want_at_s[i]));
    EXPECT_EQ(got.requests[i].prompt_tokens, want_prompt[i]);
  }
  // The history's prefix ids are its own, as the trace's own pre-roll's are.
  EXPECT_NE(got.requests[0].prefix_hashes, history.requests[1].prefix_hashes);
  // A history shorter than the pre-roll starts late: 40 s of history in a 60 s pre-roll plays
  // from 20 s on (5 s -> 25 s).
  const sim::Trace longer =
      WithPreRoll(trace, SimDuration::Seconds(60), history, SimDuration::Seconds(40));
  ASSERT_EQ(longer.requests.size(), 5u);
  EXPECT_EQ(longer.requests[0].arrival, SimTime::FromSecondsF(25));
  EXPECT_EQ(longer.requests[3].arrival, SimTime::FromSecondsF(60));
}

TEST(ReplayDriverTest, APreRollOnAnIdleStartChangesNothingCounted) {
  // The serial engine of AttainmentMinutesAndTimelineOnASerialEngine, with a 60 s pre-roll: it
  // plays minute 0's ten requests (done by 9.1 s), and the trace starts on an idle replica at
  // 60 s, exactly as it does cold. Every counted figure is that test's hand-worked one: the
  // pre-roll's requests, minute, GPU-time and decisions count nowhere.
  ReplayConfig config = SerialEngineConfig();
  config.pre_roll = absl::Seconds(60);
  BaselineAutoscaler fixed(Spec("static:1"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;
  EXPECT_DOUBLE_EQ(s.pre_roll_seconds, 60);
  EXPECT_EQ(s.requests, 21);
  EXPECT_EQ(s.served, 21);
  EXPECT_DOUBLE_EQ(s.attainment, 16.0 / 21.0);
  EXPECT_EQ(s.minutes_with_traffic, 3);
  EXPECT_EQ(s.minutes_meeting_slo, 2);
  EXPECT_DOUBLE_EQ(s.ttft_p90_ms, 800);
  EXPECT_DOUBLE_EQ(s.simulated_seconds, 195);
  EXPECT_DOUBLE_EQ(s.gpu_hours, 195.0 / 3600.0);
  EXPECT_EQ(s.decisions, 13);
  ASSERT_EQ(got->timeline.size(), 13u);
  EXPECT_EQ(got->timeline[0].time, absl::Seconds(15));
  EXPECT_EQ(got->timeline[0].arrivals, 10);
  EXPECT_EQ(got->timeline[0].first_tokens, 10);
  EXPECT_NEAR(*got->timeline[4].ttft_p90_ms, 910, 1e-9);

  // Longer than the trace (last arrival 180 s): pre-rolled once, whole, over 13 periods (195 s).
  config.pre_roll = absl::Minutes(10);
  got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_DOUBLE_EQ(got->summary.pre_roll_seconds, 195);
  EXPECT_EQ(got->summary.requests, 21);
  EXPECT_DOUBLE_EQ(got->summary.attainment, 16.0 / 21.0);
  // Not a whole number of periods: rounded up to one (20 s -> 30 s).
  config.pre_roll = absl::Seconds(20);
  got = RunReplay(config, fixed);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_DOUBLE_EQ(got->summary.pre_roll_seconds, 30);
}

TEST(ReplayDriverTest, APreRolledControllerMeetsTheTraceWithTheFleetItsRuleHolds) {
  // KEDA on the queue (threshold 5) and the burst trace: 2 req/s for 120 s, then 40 req/s for
  // 180 s. Cold, the trace starts on the single initial replica. Pre-rolled by 300 s, the
  // controller has lived through the burst (the pre-roll plays the first 300 s): at the trace's
  // start the load is 2 req/s again, but the HPA's 300 s scale-down stabilization still holds the
  // fleet the burst asked for, Ready, as a controller that had been running would have it.
  ReplayConfig config = BurstConfig();
  BaselineAutoscaler cold_keda(Spec("keda-queue:5"));
  absl::StatusOr<ReplayResult> cold = RunReplay(config, cold_keda);
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_EQ(cold->timeline.front().ready, 1);

  config.pre_roll = absl::Seconds(300);
  BaselineAutoscaler keda(Spec("keda-queue:5"));
  absl::StatusOr<ReplayResult> got = RunReplay(config, keda);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;
  EXPECT_DOUBLE_EQ(s.pre_roll_seconds, 300);
  EXPECT_GT(got->timeline.front().ready, 4);
  EXPECT_EQ(got->timeline.front().time, absl::Seconds(15));
  // Only the trace's requests count, each with exactly one fate.
  EXPECT_EQ(s.requests, static_cast<int64_t>(config.trace->requests.size()));
  EXPECT_EQ(s.served + s.rejected + s.aborted + s.unfinished, s.requests);
  int64_t arrivals = 0;
  for (const TimelineRow& row : got->timeline) arrivals += row.arrivals;
  EXPECT_EQ(arrivals, s.requests);
  // Meeting the burst with the fleet the last one left, it does better than cold.
  EXPECT_GT(s.attainment, cold->summary.attainment);
}

// A static fleet that advises a fixed arrival-rate limit.
class AdvisingStatic : public Autoscaler {
 public:
  std::string Name() const override { return "advising"; }
  absl::Duration SyncPeriod() const override { return absl::Seconds(15); }
  int32_t Decide(const ClusterView&) override { return 1; }
  sim::AdmissionLimits Admission() const override {
    sim::AdmissionLimits limits;
    limits.max_arrival_rate = 10;
    return limits;
  }
};

TEST(ReplayDriverTest, EnforcedAdmissionShedsAtTheGatewayAndCountsTheRejectedAsMisses) {
  // 30 requests at 20 s. The advice (10 req/s) is enforced from the first decision at 15 s, with a
  // full bucket of 10 tokens by 20 s: 10 pass, 20 are rejected, in the interval [15 s, 30 s).
  // Not enforced, the same autoscaler's advice changes nothing.
  auto trace = std::make_shared<sim::Trace>();
  for (int i = 0; i < 30; ++i) trace->requests.push_back(Req(i, 20000, 16, 1));
  ReplayConfig config;
  config.trace = trace;
  config.deployment = HandDeployment(256, 100000, 1000000, 1000);
  config.initial_replicas = 1;
  AdvisingStatic advising;
  absl::StatusOr<ReplayResult> open = RunReplay(config, advising);
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->summary.rejected, 0);
  EXPECT_FALSE(open->summary.admission_enforced);
  EXPECT_DOUBLE_EQ(open->summary.attainment, 1.0);

  config.enforce_admission = true;
  absl::StatusOr<ReplayResult> got = RunReplay(config, advising);
  ASSERT_TRUE(got.ok()) << got.status();
  const ReplaySummary& s = got->summary;
  EXPECT_TRUE(s.admission_enforced);
  EXPECT_EQ(s.requests, 30);
  EXPECT_EQ(s.served, 10);
  EXPECT_EQ(s.rejected, 20);
  EXPECT_DOUBLE_EQ(s.attainment, 10.0 / 30.0);
  ASSERT_GE(got->timeline.size(), 2u);
  EXPECT_EQ(got->timeline[1].time, absl::Seconds(30));
  EXPECT_EQ(got->timeline[1].rejected, 20);
  // Not in the comparison: the family table leaves it out.
  EXPECT_TRUE(CheapestPerFamily({s}, AttainmentTarget{}).empty());
}

TEST(ReplayDriverTest, RejectsBadConfigs) {
  BaselineAutoscaler fixed(Spec("static:1"));
  ReplayConfig no_trace;
  EXPECT_EQ(RunReplay(no_trace, fixed).status().code(), absl::StatusCode::kInvalidArgument);
  ReplayConfig negative;
  negative.trace = std::make_shared<sim::Trace>();
  negative.initial_replicas = -1;
  EXPECT_EQ(RunReplay(negative, fixed).status().code(), absl::StatusCode::kInvalidArgument);
  ReplayConfig bad_deployment;
  bad_deployment.trace = std::make_shared<sim::Trace>();
  bad_deployment.deployment.engine.max_num_batched_tokens = 1;  // below max_num_seqs
  EXPECT_EQ(RunReplay(bad_deployment, fixed).status().code(), absl::StatusCode::kInvalidArgument);
  ReplayConfig negative_pre_roll;
  negative_pre_roll.trace = std::make_shared<sim::Trace>();
  negative_pre_roll.pre_roll = absl::Seconds(-15);
  const absl::Status pre = RunReplay(negative_pre_roll, fixed).status();
  EXPECT_EQ(pre.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pre.message().find("pre-roll (-15s)"), std::string::npos) << pre;
}

TEST(ReplayDriverTest, PolicyFamilies) {
  const struct {
    const char* policy;
    const char* family;
  } cases[] = {{"keda-queue-5", "keda-queue"},   {"hpa-kv-0.7", "hpa-kv"},
               {"static-12", "static"},          {"twinscale", "twinscale"},
               {"twin-scale-x", "twin-scale-x"}, {"odd-", "odd-"}};
  for (const auto& c : cases) EXPECT_EQ(PolicyFamily(c.policy), c.family) << c.policy;
}

}  // namespace
}  // namespace twinscale::replay
