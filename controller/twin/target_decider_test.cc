// TargetDecider: the decision chain simulates the engine the pods run (running_engine.h), not the
// spec's. Eight Ready pods of the sample (llama-3.1-8b on h100-sxm, maxReplicas 48) take 20 req/s
// each, 512/256-token requests until lengths are observed.
//   - Without flags the twin simulates the profile's engine (up to 1,024 sequences at once); the
//     fleet is far from that limit and the recommendation stays under 13.
//   - Pods started with --max-num-seqs 16 can run 16 requests at once. A request needs at least
//     its 256 decode steps, each at least the weights' read (16.06 GB at the H100's 3.35 TB/s:
//     4.8 ms), so at least 1.23 s: by Little's law a replica completes at most 16 / 1.23 = 13.0
//     requests per second, and 160 req/s needs at least 13 replicas before any queueing. The
//     profile's twin asks for fewer; the twin that follows the pods can't. The reason says which
//     flag it followed.
#include "controller/twin/target_decider.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/util/sample_target_test_util.h"

namespace twinscale::twin {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);

state::ClusterView View(absl::Time now, double finished_per_pod,
                        const std::optional<state::EngineArgs>& args) {
  state::ClusterView v;
  v.now = now;
  v.spec_replicas = 8;
  for (int i = 0; i < 8; ++i) {
    state::PodView p;
    p.name = absl::StrCat("vllm-", i);
    p.stage = state::PodView::Stage::kReady;
    p.age = absl::Hours(1);
    p.ready_for = absl::Hours(1);
    p.scrape_ok = true;
    p.scraped_at = now;
    p.engine_args = args;
    metrics::EngineObservation e;
    e.engine = "0";
    e.running = 10;
    e.waiting = 0;
    e.kv_cache_usage = 0.1;
    e.requests_finished_total = finished_per_pod;
    p.observation.engines.push_back(e);
    v.pods.push_back(std::move(p));
  }
  return v;
}

policy::Decision DecideAt160(const std::optional<state::EngineArgs>& args) {
  const SampleTarget t = ResolveSample("deploy/samples/llama-3.1-8b-h100.yaml");
  TargetDecider decider(t.resolved.policy, t.resolved.twin, t.spec.metrics.stale_after,
                        t.resolved.stated);
  decider.set_calibration(false);  // the profile's speed: these pods report no token timings
  decider.Decide(View(kT0, 10'000, args));
  return decider.Decide(View(kT0 + absl::Seconds(15), 10'000 + 20 * 15, args));
}

TEST(TargetDeciderTest, TheTwinSimulatesTheEngineThePodsRun) {
  const policy::Decision profile = DecideAt160(std::nullopt);
  ASSERT_FALSE(profile.reasons.empty());
  EXPECT_NE(profile.reasons[0].code, "InputsStale");
  EXPECT_NEAR(profile.question.arrival_rate, 160, 1e-9);
  EXPECT_LT(profile.recommendation, 13);
  for (const policy::Reason& reason : profile.reasons) EXPECT_NE(reason.code, "EngineFromPods");

  state::EngineArgs sixteen;
  sixteen.max_num_seqs = 16;
  const policy::Decision limited = DecideAt160(sixteen);
  EXPECT_GE(limited.recommendation, 13);
  bool said = false;
  for (const policy::Reason& reason : limited.reasons) {
    if (reason.code != "EngineFromPods") continue;
    said = true;
    EXPECT_THAT(reason.message, HasSubstr("pods run --max-num-seqs 16 (profile: 1024)"));
  }
  EXPECT_TRUE(said);

  // --max-num-seqs 4: at most 4 / 1.23 = 3.25 req/s per replica, so 160 req/s needs more than 49
  // replicas, beyond maxReplicas (48): an overload, where every replica helps, so the twin asks
  // for all 48 and says maxReplicas is not enough.
  state::EngineArgs four;
  four.max_num_seqs = 4;
  const policy::Decision overloaded = DecideAt160(four);
  EXPECT_EQ(overloaded.recommendation, 48);
  EXPECT_TRUE(overloaded.slo_at_risk);
  bool max_said = false;
  for (const policy::Reason& reason : overloaded.reasons) {
    max_said = max_said || reason.code == "MaxReplicasInsufficient";
    EXPECT_NE(reason.code, "SloUnattainable");
  }
  EXPECT_TRUE(max_said);
}

TEST(TargetDeciderTest, UnreadableFlagsAreSaidAndTheSpecsEngineKept) {
  const SampleTarget t = ResolveSample("deploy/samples/llama-3.1-8b-h100.yaml");
  TargetDecider decider(t.resolved.policy, t.resolved.twin, t.spec.metrics.stale_after,
                        t.resolved.stated);
  state::ClusterView v = View(kT0, 10'000, std::nullopt);
  v.pods[3].engine_args_error =
      "pod vllm-3 container vllm: vLLM flag --max-num-seqs: \"x\" is not an integer";
  const policy::Decision d = decider.Decide(v);
  bool said = false;
  for (const policy::Reason& reason : d.reasons) {
    if (reason.code != "EngineArgsUnreadable") continue;
    said = true;
    EXPECT_EQ(reason.message,
              absl::StrCat(v.pods[3].engine_args_error, " (the twin keeps the spec's engine)"));
  }
  EXPECT_TRUE(said);
  EXPECT_EQ(decider.forecaster().options().deployment.engine.max_num_seqs, 1024);
}

// A new leader's decider gets the old one's calibration back from the status, all of it: the
// speed factors, the gateway's random share and the server's front-end time reach the twin it
// forecasts with and come out of calibration() as they went in (what the next status write
// keeps). A front-end time no calibration fits (beyond 10 s either way) is clamped.
TEST(TargetDeciderTest, RestoredCalibrationReachesTheTwin) {
  const SampleTarget t = ResolveSample("deploy/samples/llama-3.1-8b-h100.yaml");
  TargetDecider decider(t.resolved.policy, t.resolved.twin, t.spec.metrics.stale_after,
                        t.resolved.stated);
  decider.RestoreCalibration({0.8, 0.9, 40, 0.25, 0.030});
  const policy::CalibrationFactors back = decider.calibration();
  EXPECT_EQ(back.prefill_speed, 0.8);
  EXPECT_EQ(back.decode_speed, 0.9);
  EXPECT_EQ(back.updates, 40);
  EXPECT_EQ(back.router_random_share, 0.25);
  EXPECT_EQ(back.extra_front_end_seconds, 0.030);
  const TwinOptions& twin = decider.forecaster().options();
  EXPECT_EQ(twin.speed.prefill, 0.8);
  EXPECT_EQ(twin.speed.decode, 0.9);
  EXPECT_EQ(twin.router_random_share, 0.25);
  EXPECT_EQ(twin.extra_front_end_seconds, 0.030);

  decider.RestoreCalibration({1, 1, 1, 0, 3600});
  EXPECT_EQ(decider.calibration().extra_front_end_seconds, 10);
  EXPECT_EQ(decider.forecaster().options().extra_front_end_seconds, 10);
}

// A new leader's decider gets the old one's history back from the buckets the status keeps: the
// same closed buckets come out as went in (partly observed ones included), and a decision after
// it adds to them.
TEST(TargetDeciderTest, RestoredArrivalsComeBackBucketForBucket) {
  const SampleTarget t = ResolveSample("deploy/samples/llama-3.1-8b-h100.yaml");
  TargetDecider decider(t.resolved.policy, t.resolved.twin, t.spec.metrics.stale_after,
                        t.resolved.stated);
  const absl::Duration bucket = decider.arrival_history()->bucket();
  ASSERT_EQ(bucket, absl::Minutes(5));
  state::ArrivalBuckets saved;
  saved.bucket = bucket;
  saved.start = kT0 - absl::Hours(2);
  saved.arrivals = {6000, 0, 4500, 3000};
  saved.observed_s = {300, 0, 300, 150};  // a gap, then a bucket seen for half its length
  decider.RestoreArrivals(saved);
  const state::ArrivalBuckets back = decider.arrival_history()->Buckets(kT0);
  EXPECT_EQ(back.start, saved.start);
  EXPECT_EQ(back.arrivals, saved.arrivals);
  EXPECT_EQ(back.observed_s, saved.observed_s);
  // Each of the 8 pods finishes 300 requests in the 15 s between two decisions: 2,400 arrivals
  // in the bucket they fell in, after the restored ones.
  decider.set_calibration(false);
  decider.Decide(View(kT0, 10'000, std::nullopt));
  decider.Decide(View(kT0 + absl::Seconds(15), 10'000 + 20 * 15, std::nullopt));
  const state::ArrivalBuckets after = decider.arrival_history()->Buckets(kT0 + absl::Minutes(5));
  ASSERT_EQ(after.size(), 25u);  // two hours of buckets and the one the decisions fell in
  EXPECT_DOUBLE_EQ(after.observed_s.back(), 15);
  EXPECT_DOUBLE_EQ(after.arrivals.back(), 8 * 20 * 15);
}

}  // namespace
}  // namespace twinscale::twin
