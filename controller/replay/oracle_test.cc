// The zero-lag oracle: on a constant-rate trace every minute needs what sim::FindReplicas says
// that rate needs; empty minutes take the minimum; bad ranges are refused. The request-share
// allocation against hand-worked tables, and the share oracle against minutes simulated directly.
#include "controller/replay/oracle.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "simulator/whatif/capacity.h"
#include "simulator/whatif/simulate.h"

namespace twinscale::replay {
namespace {

using sim::SimTime;

// `rate` requests per second, evenly spaced, for `seconds`, starting at `from` seconds.
void AddConstant(sim::Trace& trace, double from, double seconds, double rate) {
  const int64_t n = std::llround(seconds * rate);
  for (int64_t i = 0; i < n; ++i) {
    sim::RequestSpec r;
    r.id = trace.requests.size();
    r.arrival = SimTime::FromSecondsF(from + static_cast<double>(i) / rate);
    r.prompt_tokens = 1024;
    r.output_tokens = 128;
    trace.requests.push_back(r);
  }
}

// Poisson arrivals at `rate` for `seconds` from `from`, the same ones for the same `seed`.
void AddPoisson(sim::Trace& trace, double from, double seconds, double rate, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  for (double t = gap(rng); t < seconds; t += gap(rng)) {
    sim::RequestSpec r;
    r.id = trace.requests.size();
    r.arrival = SimTime::FromSecondsF(from + t);
    r.prompt_tokens = 1024;
    r.output_tokens = 128;
    trace.requests.push_back(r);
  }
}

sim::DeploymentSpec Deployment() {
  sim::DeploymentSpec d;  // the built-in Llama-3.1-8B on one H100 SXM, roofline
  return d;
}

TEST(OracleTest, ConstantRateNeedsWhatFindReplicasSaysEveryMinute) {
  // 60 req/s for 3 minutes: each minute holds the same 3600 requests at the same offsets.
  auto trace = std::make_shared<sim::Trace>();
  AddConstant(*trace, 0, 180, 60);
  const sim::TtftSlo slo;  // 500 ms at p90

  // One minute of that rate, asked directly.
  auto minute = std::make_shared<sim::Trace>();
  AddConstant(*minute, 0, 60, 60);
  sim::CapacityQuestion q;
  q.base.fleet.deployment = Deployment();
  q.base.fleet.router.kind = sim::RouterKind::kLeastRequests;
  q.base.fleet.seed = 3;
  q.base.slo = slo;
  q.make_source = [&] { return sim::MakeTraceSource(minute); };
  absl::StatusOr<sim::CapacityAnswer> want = sim::FindReplicas(q);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_GE(want->replicas, 2);  // a real search, not the floor

  absl::StatusOr<OracleResult> got = Oracle(*trace, Deployment(), Truth{}, slo, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->minutes.size(), 3u);
  for (const OracleMinute& m : got->minutes) {
    EXPECT_EQ(m.replicas, want->replicas);
    EXPECT_EQ(m.requests, 3600);
    EXPECT_TRUE(m.meets_slo);
    EXPECT_DOUBLE_EQ(m.attainment, want->summary.slo_attainment);
  }
  EXPECT_EQ(got->max_replicas, want->replicas);
  EXPECT_EQ(got->unmeetable_minutes, 0);
  // TP 1, two whole minutes and the last one up to the last arrival, 1/60 s before 180 s: in whole
  // seconds rounded up (minutes.h), all of it.
  EXPECT_NEAR(trace->requests.back().arrival.seconds(), 180 - 1.0 / 60, 1e-9);
  EXPECT_DOUBLE_EQ(got->minutes[2].weight, 1);
  EXPECT_NEAR(got->gpu_hours, 3.0 * want->replicas / 60.0, 1e-12);
}

TEST(OracleTest, QuietMinutesTakeTheMinimumAndBusyOnesMore) {
  // Minute 0: 60 req/s; minute 1: nothing; minute 2: one request. min_replicas 2.
  sim::Trace trace;
  AddConstant(trace, 0, 60, 60);
  AddConstant(trace, 150, 1, 1);
  OracleOptions options;
  options.min_replicas = 2;
  absl::StatusOr<OracleResult> got =
      Oracle(trace, Deployment(), Truth{}, sim::TtftSlo{}, 1, options);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->minutes.size(), 3u);
  EXPECT_GE(got->minutes[0].replicas, 2);
  EXPECT_EQ(got->minutes[1].replicas, 2);
  EXPECT_EQ(got->minutes[1].requests, 0);
  EXPECT_EQ(got->minutes[2].replicas, 2);
  EXPECT_EQ(got->minutes[2].requests, 1);
  // Minute 2 ends at its one request, 30 s in: half a minute.
  EXPECT_DOUBLE_EQ(got->minutes[2].weight, 0.5);
  EXPECT_DOUBLE_EQ(got->gpu_hours, (got->minutes[0].replicas + 2 + 2 * 0.5) / 60.0);
}

TEST(OracleTest, AnUnmeetableMinuteTakesTheSmallestFleetDoingAsWellAsAny) {
  // One request whose 100,000-token prompt alone takes seconds to prefill: no fleet meets a
  // 500 ms TTFT; one replica does as well as 8.
  sim::Trace trace;
  sim::RequestSpec r;
  r.prompt_tokens = 100000;
  r.output_tokens = 1;
  trace.requests.push_back(r);
  OracleOptions options;
  options.max_replicas = 8;
  absl::StatusOr<OracleResult> got =
      Oracle(trace, Deployment(), Truth{}, sim::TtftSlo{}, 1, options);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->minutes.size(), 1u);
  EXPECT_FALSE(got->minutes[0].meets_slo);
  EXPECT_EQ(got->minutes[0].replicas, 1);
  EXPECT_EQ(got->unmeetable_minutes, 1);
}

TEST(OracleTest, RefusesBadRanges) {
  sim::Trace trace;
  OracleOptions zero;
  zero.min_replicas = 0;
  EXPECT_EQ(Oracle(trace, Deployment(), Truth{}, {}, 1, zero).status().code(),
            absl::StatusCode::kInvalidArgument);
  OracleOptions inverted;
  inverted.min_replicas = 4;
  inverted.max_replicas = 2;
  EXPECT_EQ(Oracle(trace, Deployment(), Truth{}, {}, 1, inverted).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<OracleResult> empty = Oracle(trace, Deployment(), Truth{}, {}, 1);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->gpu_hours, 0);
  EXPECT_TRUE(empty->minutes.empty());
}

// Attainment tables by (minute, replicas), counting the calls AllocateForShare makes.
struct Tables {
  std::map<std::pair<size_t, int32_t>, double> a;
  std::map<std::pair<size_t, int32_t>, int> calls;
  double operator()(size_t m, int32_t n) {
    ++calls[{m, n}];
    auto it = a.find({m, n});
    EXPECT_NE(it, a.end()) << "asked minute " << m << " at " << n << ", not in the table";
    return it == a.end() ? 0 : it->second;
  }
};

TEST(AllocateForShareTest, AddsReplicasWhereTheyBringMostRequestsIn) {
  // 100 requests a minute. Minute 0: 80%, 95%, 99% at 3, 4, 5 replicas; minute 1: 90%, 97%,
  // 99%. From 3 and 3 they serve 170 of 200; 95% is 190. The 4th replica brings 15 into minute
  // 0 and 7 into minute 1: minute 0 first (185). Then 4 (minute 0's 5th) against 7: minute 1
  // (192 >= 190). Nothing else.
  Tables t;
  t.a = {{{0, 3}, 0.80}, {{0, 4}, 0.95}, {{0, 5}, 0.99}, {{0, 6}, 0.995},
         {{1, 3}, 0.90}, {{1, 4}, 0.97}, {{1, 5}, 0.99}, {{1, 6}, 0.995}};
  const ShareAllocation got = AllocateForShare({100, 100}, {3, 3}, 8, 0.95, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{4, 4}));
  EXPECT_NEAR(got.attainment, 192.0 / 200, 1e-12);
  for (const auto& [key, n] : t.calls) EXPECT_EQ(n, 1) << key.first << "," << key.second;
}

TEST(AllocateForShareTest, LooksTwoReplicasAheadWhenTheSecondBringsMoreIn) {
  // Minute 0: 80%, 81%, 99%, 99% at 3-6 (the 4th brings in 1 request, the 5th 18); minute 1:
  // 90%, 96%, 99%, 100% (6, 3, 1). 170 of 200 served; 190 needed. Two more replicas in minute 0
  // bring 9.5 each against minute 1's 6: minute 0 to 5 (189), then minute 1 to 4 (195): three
  // replicas, the fewest that reach 190 ({5, 3} serves 189). One at a time would have taken
  // minute 1's 6 and 3 and then minute 0's two: four.
  Tables t;
  t.a = {{{0, 3}, 0.80}, {{0, 4}, 0.81}, {{0, 5}, 0.99}, {{0, 6}, 0.99},
         {{1, 3}, 0.90}, {{1, 4}, 0.96}, {{1, 5}, 0.99}, {{1, 6}, 1.00}};
  const ShareAllocation got = AllocateForShare({100, 100}, {3, 3}, 6, 0.95, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{5, 4}));
  EXPECT_NEAR(got.attainment, 195.0 / 200, 1e-12);
}

TEST(AllocateForShareTest, WeighsMinutesByTheirRequests) {
  // The same gain in share is worth more in the busier minute: 5 points of 1,000 requests (50)
  // beat 10 points of 100 (10).
  Tables t;
  t.a = {{{0, 2}, 0.90}, {{0, 3}, 1.00}, {{0, 4}, 1.00},
         {{1, 2}, 0.90}, {{1, 3}, 0.95}, {{1, 4}, 0.96}};
  // 90 + 900 = 990 of 1,100; 92% is 1,012: minute 1's 50 is needed and enough.
  const ShareAllocation got = AllocateForShare({100, 1000}, {2, 2}, 4, 0.92, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{2, 3}));
}

TEST(AllocateForShareTest, AStartThatAlreadyReachesTheShareStays) {
  Tables t;
  t.a = {{{0, 4}, 0.97}, {{1, 5}, 0.96}};
  const ShareAllocation got = AllocateForShare({100, 100}, {4, 5}, 8, 0.95, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{4, 5}));
  EXPECT_NEAR(got.attainment, 0.965, 1e-12);
  EXPECT_EQ(t.calls.size(), 2u);  // only the starts were asked
}

TEST(AllocateForShareTest, EmptyMinutesAreNeverAskedAndStayAtTheirStart) {
  Tables t;
  t.a = {{{1, 2}, 0.90}, {{1, 3}, 0.99}, {{1, 4}, 0.99}};
  const ShareAllocation got = AllocateForShare({0, 100, 0}, {1, 2, 1}, 4, 0.95, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{1, 3, 1}));
  for (const auto& [key, n] : t.calls) EXPECT_EQ(key.first, 1u);
}

TEST(AllocateForShareTest, OutOfReachWhenEvenTheCapFallsShort) {
  // Minute 0 needs 8 for its own p90 but at most 5 may run: asked at 5 everywhere first (85% and
  // 90% of 100 each: 87.5%), short of 95%; the start comes back clamped, nothing else asked.
  Tables t;
  t.a = {{{0, 5}, 0.85}, {{1, 5}, 0.90}};
  const ShareAllocation got = AllocateForShare({100, 100}, {8, 3}, 5, 0.95, std::ref(t));
  EXPECT_FALSE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{5, 3}));
  EXPECT_NEAR(got.attainment, 0.875, 1e-12);
  EXPECT_EQ(t.calls.size(), 2u);
}

TEST(AllocateForShareTest, OutOfReachWhenEveryMinuteFillsUp) {
  // Within the cap, but the gains run out at 93%: every minute climbs to 4, then none is left.
  Tables t;
  t.a = {{{0, 3}, 0.90}, {{0, 4}, 0.93}, {{1, 3}, 0.90}, {{1, 4}, 0.93}};
  const ShareAllocation got = AllocateForShare({100, 100}, {3, 3}, 4, 0.95, std::ref(t));
  EXPECT_FALSE(got.reached);
  EXPECT_EQ(got.replicas, (std::vector<int32_t>{3, 3}));
  EXPECT_NEAR(got.attainment, 0.93, 1e-12);
}

TEST(FollowLateTest, TheSmallestMarginMeetingBothShares) {
  // The allocation 2, 4, 2 followed one minute late holds 2, 2, 4. At +0: 96 + 80 + 99 = 275 of
  // 300 requests (91.7%) and minute 1 under p90: short. At +1 (3, 3, 5): 98 + 93 + 99.5 = 290.5
  // (96.8%), every minute at p90: met, 11 replica-minutes at 2 GPUs each = 0.367 GPU-h.
  Tables t;
  t.a = {{{0, 2}, 0.96}, {{1, 2}, 0.80}, {{2, 4}, 0.99},
         {{0, 3}, 0.98}, {{1, 3}, 0.93}, {{2, 5}, 0.995}};
  const LateFollower got =
      FollowLate({100, 100, 100}, {2, 4, 2}, 1, 8, 16, 0.95, 0.95, 0.90, 2, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.lag_minutes, 1);
  EXPECT_EQ(got.margin, 1);
  EXPECT_NEAR(got.attainment, 290.5 / 300, 1e-12);
  EXPECT_DOUBLE_EQ(got.minute_share, 1.0);
  EXPECT_NEAR(got.gpu_hours, 11 * 2 / 60.0, 1e-12);
  for (const auto& [key, n] : t.calls) EXPECT_EQ(n, 1) << key.first << "," << key.second;
}

TEST(FollowLateTest, TheMinutesShareCanBindAlone) {
  // 95.3% of requests in time at +0, but one of three minutes under p90: 67% of minutes.
  Tables t;
  t.a = {{{0, 4}, 0.99},  {{1, 4}, 0.99},  {{2, 4}, 0.88},
         {{0, 5}, 0.995}, {{1, 5}, 0.995}, {{2, 5}, 0.95}};
  const LateFollower got =
      FollowLate({100, 100, 100}, {4, 4, 4}, 1, 8, 16, 0.95, 0.95, 0.90, 1, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.margin, 1);
}

TEST(FollowLateTest, MissingWithEveryMarginTriedSaysSo) {
  // The cap (4) stops the margin: +1 and +2 both hold 4 replicas, 90% of requests.
  Tables t;
  t.a = {{{0, 3}, 0.90}, {{1, 3}, 0.90}, {{0, 4}, 0.90}, {{1, 4}, 0.90}};
  const LateFollower got =
      FollowLate({100, 100}, {3, 3}, 2, 2, 4, 0.95, 0.95, 0.90, 1, std::ref(t));
  EXPECT_FALSE(got.reached);
  EXPECT_EQ(got.margin, 2);
  EXPECT_NEAR(got.attainment, 0.90, 1e-12);
  EXPECT_NEAR(got.gpu_hours, 8 / 60.0, 1e-12);  // 4 + 4 replica-minutes
}

TEST(FollowLateTest, EmptyMinutesCostReplicasButAreNeverAsked) {
  // Minute 1 has no requests: it still holds minute 0's 3 (lag 1), never asked.
  Tables t;
  t.a = {{{0, 3}, 0.97}, {{2, 3}, 0.96}};
  const LateFollower got =
      FollowLate({100, 0, 100}, {3, 3, 3}, 1, 8, 16, 0.95, 0.95, 0.90, 1, std::ref(t));
  EXPECT_TRUE(got.reached);
  EXPECT_EQ(got.margin, 0);
  EXPECT_NEAR(got.gpu_hours, 9 / 60.0, 1e-12);
  for (const auto& [key, n] : t.calls) EXPECT_NE(key.first, 1u);
}

TEST(FollowLateTest, APartialLastMinuteCountsByItsLength) {
  // Two whole minutes of 1,000 requests at 3 replicas (97% in time) and a last "minute" that
  // holds 2 s of the trace: 11 requests at 146 replicas, half of them in time (under p90). Lag 0,
  // no margin. Requests: 970 + 970 + 5.5 = 1,945.5 of 2,011 (96.7%) either way.
  Tables t;
  t.a = {{{0, 3}, 0.97}, {{1, 3}, 0.97}, {{2, 146}, 0.5}};
  struct Case {
    std::string name;
    std::vector<double> weights;
    bool want_reached;
    double want_minute_share, want_gpu_hours;
  };
  const Case cases[] = {
      // Weighted: minutes met 2 of 2 + 2/60 = 60/61 (98.4%); replica-minutes 3 + 3 + 146 x 2/60
      // = 10.867, 0.1811 GPU-h at one GPU per replica.
      {"weighted by its 2 s: meets the target",
       {1, 1, 2.0 / 60},
       true,
       60.0 / 61,
       (6 + 146 * 2.0 / 60) / 60},
      // Whole: 2 of 3 minutes (66.7%), and 152 replica-minutes (2.533 GPU-h), 146 of them from
      // 2 seconds.
      {"counted whole: misses on its minutes", {}, false, 2.0 / 3, 152 / 60.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const LateFollower got = FollowLate({1000, 1000, 11}, {3, 3, 146}, 0, 0, 200, 0.95, 0.95, 0.90,
                                        1, std::ref(t), c.weights);
    EXPECT_EQ(got.reached, c.want_reached);
    EXPECT_NEAR(got.attainment, 1945.5 / 2011, 1e-12);
    EXPECT_NEAR(got.minute_share, c.want_minute_share, 1e-12);
    EXPECT_NEAR(got.gpu_hours, c.want_gpu_hours, 1e-12);
  }
}

TEST(OracleTest, TheLastMinuteWeighsByTheShareOfItTheTraceCovers) {
  // A minute of Poisson arrivals at 20 req/s, then 11 requests in the next minute's first 2 s,
  // the last at exactly 62 s: minute 1 covers 2 of its 60 s. GPU-hours: minute 0's fleet for
  // 60 s plus minute 1's for 2 s.
  auto trace = std::make_shared<sim::Trace>();
  AddPoisson(*trace, 0, 60, 20, 3);
  for (int i = 0; i < 11; ++i) {
    sim::RequestSpec r;
    r.id = trace->requests.size();
    r.arrival = SimTime::FromSecondsF(60 + 0.2 * i);
    r.prompt_tokens = 1024;
    r.output_tokens = 128;
    trace->requests.push_back(r);
  }
  trace->requests.back().arrival = SimTime::FromSecondsF(62);
  absl::StatusOr<OracleResult> o = Oracle(*trace, Deployment(), Truth{}, sim::TtftSlo{}, 1);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->minutes.size(), 2u);
  EXPECT_DOUBLE_EQ(o->minutes[0].weight, 1);
  EXPECT_NEAR(o->minutes[1].weight, 2.0 / 60, 1e-12);
  EXPECT_EQ(o->minutes[1].requests, 11);
  EXPECT_NEAR(o->gpu_hours, (o->minutes[0].replicas + o->minutes[1].replicas * 2.0 / 60) / 60,
              1e-12);
}

TEST(OracleTest, ShareOracleAddsToThePerMinuteFleetsOnlyWhatTheShareNeeds) {
  // Three identical minutes of Poisson arrivals at 60 req/s, no truth perturbation: each
  // minute's attainment at N is what simulating that minute alone from N replicas gives (asked
  // directly here). A share at what the p90 fleets give changes nothing; one a third of the way
  // to N + 1 in every minute takes N + 1 in the first minute only (ties go to the earliest).
  auto trace = std::make_shared<sim::Trace>();
  for (int m = 0; m < 3; ++m) AddPoisson(*trace, 60.0 * m, 60, 60, 7);
  auto minute = std::make_shared<sim::Trace>();
  AddPoisson(*minute, 0, 60, 60, 7);
  const sim::TtftSlo slo;
  absl::StatusOr<OracleResult> p90 = Oracle(*trace, Deployment(), Truth{}, slo, 3);
  ASSERT_TRUE(p90.ok()) << p90.status();
  const int32_t n = p90->minutes[0].replicas;
  auto direct = [&](int32_t replicas, uint64_t run) {
    sim::SimulateOptions o;
    o.fleet.deployment = Deployment();
    o.fleet.router.kind = sim::RouterKind::kLeastRequests;
    o.fleet.seed = 3;
    o.fleet.run = run;
    o.fleet.initial_replicas = replicas;
    o.slo = slo;
    std::unique_ptr<sim::RequestSource> source = sim::MakeTraceSource(minute);
    return sim::Simulate(o, *source).summary.slo_attainment;
  };
  const double at_n = direct(n, 0), at_n1 = direct(n + 1, 0);
  ASSERT_GT(at_n1, at_n);  // room to add, or the case says nothing
  for (uint64_t run : {1, 2}) {
    ASSERT_DOUBLE_EQ(direct(n, run), at_n);  // the minutes are alike
    ASSERT_DOUBLE_EQ(direct(n + 1, run), at_n1);
  }

  OracleOptions same;
  same.request_share = at_n;
  absl::StatusOr<OracleResult> got = Oracle(*trace, Deployment(), Truth{}, slo, 3, same);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->for_share.has_value());
  EXPECT_TRUE(got->for_share->reached);
  EXPECT_DOUBLE_EQ(got->for_share->gpu_hours, got->gpu_hours);
  for (const OracleMinute& m : got->minutes) EXPECT_EQ(m.share_replicas, n);

  OracleOptions more;
  more.request_share = (2 * at_n + at_n1) / 3;
  got = Oracle(*trace, Deployment(), Truth{}, slo, 3, more);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->for_share.has_value());
  EXPECT_TRUE(got->for_share->reached);
  EXPECT_EQ(got->minutes[0].share_replicas, n + 1);
  EXPECT_EQ(got->minutes[1].share_replicas, n);
  EXPECT_EQ(got->minutes[2].share_replicas, n);
  EXPECT_DOUBLE_EQ(got->minutes[0].share_attainment, at_n1);
  // The last minute ends at the last arrival, under a second before 180 s: it weighs 1
  // (minutes.h).
  const double last = got->minutes[2].weight;
  EXPECT_DOUBLE_EQ(last, 1);
  EXPECT_NEAR(got->for_share->gpu_hours, ((n + 1) + n + n * last) / 60.0, 1e-12);
  EXPECT_EQ(got->for_share->max_replicas, n + 1);

  EXPECT_FALSE(got->for_share->late.has_value());  // not asked
  // Followed a minute late: the minutes are alike, so their allocation (n + 1, n, n) one minute
  // late is (n + 1, n + 1, n): at +0 it serves two minutes at n + 1, more than the share asked.
  more.follower_lag_minutes = 1;
  got = Oracle(*trace, Deployment(), Truth{}, slo, 3, more);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->for_share->late.has_value());
  EXPECT_TRUE(got->for_share->late->reached);
  EXPECT_EQ(got->for_share->late->margin, 0);
  EXPECT_NEAR(got->for_share->late->attainment, (at_n + 2 * at_n1) / 3, 1e-9);
  EXPECT_NEAR(got->for_share->late->gpu_hours, ((n + 1) + (n + 1) + n * last) / 60.0, 1e-12);

  // Capped under the p90 fleets: out of reach, named with the cap.
  OracleOptions capped;
  capped.request_share = 0.95;
  capped.share_max_replicas = n - 1;
  got = Oracle(*trace, Deployment(), Truth{}, slo, 3, capped);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->for_share->reached);
  EXPECT_EQ(got->for_share->max_replicas, n - 1);
  EXPECT_NEAR(got->for_share->attainment, direct(n - 1, 0), 1e-9);
  // Not asked: none.
  EXPECT_FALSE(p90->for_share.has_value());
}

}  // namespace
}  // namespace twinscale::replay
