// The zero-lag oracle: on a constant-rate trace every minute needs what sim::FindReplicas says
// that rate needs; empty minutes take the minimum; bad ranges are refused.
#include "controller/replay/oracle.h"

#include <gtest/gtest.h>

#include <memory>

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
  // TP 1, three whole minutes.
  EXPECT_DOUBLE_EQ(got->gpu_hours, 3.0 * want->replicas / 60.0);
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
  EXPECT_DOUBLE_EQ(got->gpu_hours, (got->minutes[0].replicas + 2 + 2) / 60.0);
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

}  // namespace
}  // namespace twinscale::replay
