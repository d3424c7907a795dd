// Leader election with two electors sharing one Lease in the in-memory FakeKubeClient, on a
// ManualClock: only one leads; a lease is taken over only once renewTime + leaseDurationSeconds
// has passed; Release() hands over at once; two writers racing on one resourceVersion: one 409s;
// a renewal that keeps failing steps down after renew_deadline (before the lease expires); a
// leader that finds someone else holding the lease steps down at once.
#include "controller/kube/leader_election.h"

#include <atomic>
#include <thread>

#include "controller/kube/api_errors.h"
#include "controller/kube/kube_time.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/eventually.h"

namespace twinscale::kube {
namespace {

using fakes::FakeKubeClient;
using nlohmann::json;

const absl::Time kStart = absl::FromUnixSeconds(1714979289);

LeaderElectionConfig Config(const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = "twinscale-system";
  c.lease_name = "twinscale-leader";
  c.identity = identity;
  c.lease_duration = absl::Seconds(15);
  c.renew_deadline = absl::Seconds(10);
  c.retry_period = absl::Seconds(2);
  return c;
}

json LeaseSpec(FakeKubeClient& fake) {
  absl::StatusOr<json> lease = fake.Get(kLeases, "twinscale-system", "twinscale-leader");
  EXPECT_TRUE(lease.ok()) << lease.status();
  return lease.ok() ? (*lease)["spec"] : json();
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> Make(const std::string& identity, LeaderCallbacks callbacks = {},
                                      std::function<void(absl::Duration)> sleep = nullptr) {
    absl::StatusOr<std::unique_ptr<LeaderElector>> e = LeaderElector::Create(
        &fake_, &clock_, Config(identity), std::move(callbacks), std::move(sleep));
    EXPECT_TRUE(e.ok()) << e.status();
    return std::move(*e);
  }
  ManualClock clock_{kStart};
  FakeKubeClient fake_{&clock_};
};

TEST_F(LeaderElectionTest, OnlyOneLeadsAndRenewalKeepsTheAcquireTime) {
  auto a = Make("a");
  auto b = Make("b");
  EXPECT_TRUE(a->TryAcquireOrRenew());  // creates the lease
  EXPECT_FALSE(b->TryAcquireOrRenew());
  EXPECT_TRUE(a->IsLeader());
  EXPECT_FALSE(b->IsLeader());
  EXPECT_EQ(b->ObservedLeader(), "a");
  json spec = LeaseSpec(fake_);
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["acquireTime"], "2024-05-06T07:08:09.000000Z");
  EXPECT_EQ(spec["renewTime"], "2024-05-06T07:08:09.000000Z");

  clock_.Advance(absl::Seconds(5) + absl::Microseconds(250));
  EXPECT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  spec = LeaseSpec(fake_);
  EXPECT_EQ(spec["acquireTime"], "2024-05-06T07:08:09.000000Z");
  EXPECT_EQ(spec["renewTime"], "2024-05-06T07:08:14.000250Z");
  EXPECT_EQ(spec["leaseTransitions"], 0);
}

TEST_F(LeaderElectionTest, AnExpiredLeaseIsTakenOverOnlyAfterItsDuration) {
  auto a = Make("a");
  auto b = Make("b");
  ASSERT_TRUE(a->TryAcquireOrRenew());  // renewTime = kStart, 15 s
  clock_.Set(kStart + absl::Seconds(15));
  EXPECT_FALSE(b->TryAcquireOrRenew()) << "renewTime + 15 s is not yet in the past";
  clock_.Set(kStart + absl::Seconds(15) + absl::Microseconds(1));
  EXPECT_TRUE(b->TryAcquireOrRenew());
  const json spec = LeaseSpec(fake_);
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_EQ(spec["acquireTime"], "2024-05-06T07:08:24.000001Z");
  // a comes back: the lease is b's and valid.
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_FALSE(a->IsLeader());
  EXPECT_EQ(a->ObservedLeader(), "b");
}

TEST_F(LeaderElectionTest, ReleaseHandsOverAtOnce) {
  auto a = Make("a");
  auto b = Make("b");
  ASSERT_TRUE(a->TryAcquireOrRenew());
  ASSERT_TRUE(a->Release().ok());
  EXPECT_FALSE(a->IsLeader());
  json spec = LeaseSpec(fake_);
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  // No time passes: b takes it at its next try.
  EXPECT_TRUE(b->TryAcquireOrRenew());
  spec = LeaseSpec(fake_);
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 1);
  // Releasing what one doesn't hold changes nothing.
  EXPECT_TRUE(a->Release().ok());
  EXPECT_EQ(LeaseSpec(fake_)["holderIdentity"], "b");
}

TEST_F(LeaderElectionTest, OfTwoWritersOnOneResourceVersionOneGetsAConflict) {
  auto a = Make("a");
  auto b = Make("b");
  auto old = Make("old");
  ASSERT_TRUE(old->TryAcquireOrRenew());
  clock_.Advance(absl::Seconds(20));  // expired: both a and b may take it
  // Stage the race: b has read the lease; before b's write lands, a reads and writes.
  std::atomic<bool> staged{false};
  fake_.SetInterceptor([&](const FakeKubeClient::Request& r) {
    if (r.verb == "update" && !staged.exchange(true)) {
      EXPECT_TRUE(a->TryAcquireOrRenew());
    }
    return absl::OkStatus();
  });
  EXPECT_FALSE(b->TryAcquireOrRenew());
  EXPECT_TRUE(IsConflict(b->last_error())) << b->last_error();
  EXPECT_TRUE(a->IsLeader());
  EXPECT_FALSE(b->IsLeader());
  EXPECT_EQ(LeaseSpec(fake_)["holderIdentity"], "a");
  EXPECT_EQ(LeaseSpec(fake_)["leaseTransitions"], 1);
}

TEST_F(LeaderElectionTest, ARenewalThatKeepsFailingStepsDownAfterTheRenewDeadline) {
  absl::Time started, stopped;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    started = clock_.Now();
    // From now on every write of the lease fails.
    fake_.SetInterceptor([](const FakeKubeClient::Request& r) {
      return r.verb == "update" ? absl::UnavailableError("etcd timeout") : absl::OkStatus();
    });
  };
  callbacks.on_stopped_leading = [&] { stopped = clock_.Now(); };
  auto a = Make("a", callbacks, [&](absl::Duration d) { clock_.Advance(d); });
  Cancellation never;
  a->Run(&never);
  EXPECT_EQ(started, kStart);
  // Renewals at +2, +4, +6, +8 and +10 s fail; at +10 s the deadline (10 s after the last
  // successful renewal at +0) has come: step down, 5 s before the others could take over.
  EXPECT_EQ(stopped, kStart + absl::Seconds(10));
  EXPECT_FALSE(a->IsLeader());
  EXPECT_EQ(a->last_error().code(), absl::StatusCode::kUnavailable);
}

TEST_F(LeaderElectionTest, ALeaderThatFindsAnotherHolderStepsDownAtOnce) {
  absl::Time stopped;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    // Someone else writes itself into the lease (an operator, a split brain).
    json lease = *fake_.Get(kLeases, "twinscale-system", "twinscale-leader");
    lease["spec"]["holderIdentity"] = "intruder";
    lease["spec"]["renewTime"] = FormatMicroTime(clock_.Now());
    ASSERT_TRUE(fake_.Update(kLeases, "twinscale-system", lease).ok());
  };
  callbacks.on_stopped_leading = [&] { stopped = clock_.Now(); };
  auto a = Make("a", callbacks, [&](absl::Duration d) { clock_.Advance(d); });
  Cancellation never;
  a->Run(&never);
  EXPECT_EQ(stopped, kStart + absl::Seconds(2)) << "at the first renewal, not the deadline";
  EXPECT_EQ(a->ObservedLeader(), "intruder");
}

// RBAC refuses the Lease (403 Forbidden), as a real API server does when the Role lacks
// leases create/update. The error is told once per episode, not per retry; again when it
// changes or after the Lease was written and the refusal comes back. LeaseHealth fails at once on
// a refusal, and on any other error only once it has lasted the renew deadline (10 s).
TEST_F(LeaderElectionTest, ARefusedLeaseIsToldOncePerEpisodeAndFailsHealthUntilWritten) {
  std::vector<absl::Status> told;
  LeaderCallbacks callbacks;
  callbacks.on_lease_error = [&](const absl::Status& s) { told.push_back(s); };
  auto a = Make("a", callbacks);
  absl::Status refusal;  // what every create and update of the lease gets (OK: nothing)
  fake_.SetInterceptor([&](const FakeKubeClient::Request& r) {
    return r.verb == "create" || r.verb == "update" ? refusal : absl::OkStatus();
  });
  const absl::Status forbidden = KubeApiError(
      403, "Forbidden",
      "leases.coordination.k8s.io is forbidden: User \"system:serviceaccount:twinscale-system:"
      "twinscale\" cannot create resource \"leases\"",
      "creating lease");
  const absl::Status unavailable = KubeApiError(503, "ServiceUnavailable", "etcd leader changed");
  struct Step {
    std::string name;
    int at_s;
    absl::Status refusal;
    bool leads;
    std::vector<absl::StatusCode> told;  // on_lease_error calls this attempt
    absl::StatusCode health;
  };
  const std::vector<Step> steps = {
      {"refused: told, unhealthy at once",
       0,
       forbidden,
       false,
       {absl::StatusCode::kPermissionDenied},
       absl::StatusCode::kPermissionDenied},
      {"refused again: not told again",
       2,
       forbidden,
       false,
       {},
       absl::StatusCode::kPermissionDenied},
      {"the Role fixed: the Lease is written, told OK",
       4,
       absl::OkStatus(),
       true,
       {absl::StatusCode::kOk},
       absl::StatusCode::kOk},
      {"refused on renewal: a new episode, told",
       6,
       forbidden,
       false,
       {absl::StatusCode::kPermissionDenied},
       absl::StatusCode::kPermissionDenied},
      {"another error: told; an outage 2 s old is not yet unhealthy",
       8,
       unavailable,
       false,
       {absl::StatusCode::kUnavailable},
       absl::StatusCode::kOk},
      {"the same outage 8 s on: not told again, healthy still",
       14,
       unavailable,
       false,
       {},
       absl::StatusCode::kOk},
      {"the outage lasts the renew deadline: unhealthy",
       16,
       unavailable,
       false,
       {},
       absl::StatusCode::kUnavailable},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    clock_.Set(kStart + absl::Seconds(step.at_s));
    refusal = step.refusal;
    told.clear();
    EXPECT_EQ(a->TryAcquireOrRenew(), step.leads);
    std::vector<absl::StatusCode> told_codes;
    for (const absl::Status& s : told) told_codes.push_back(s.code());
    EXPECT_EQ(told_codes, step.told);
    const absl::Status health = a->LeaseHealth();
    EXPECT_EQ(health.code(), step.health) << health;
    if (!health.ok()) {
      // Short, and it names the Lease and the API's reason.
      EXPECT_NE(health.message().find("twinscale-system/twinscale-leader"), std::string::npos)
          << health;
      EXPECT_NE(health.message().find(step.refusal.code() == absl::StatusCode::kPermissionDenied
                                          ? "Forbidden"
                                          : "ServiceUnavailable"),
                std::string::npos)
          << health;
    }
  }
}

// Losing a race for the lease (409) and finding it held by a peer are how election works, not
// failures: nothing is told and the follower is healthy.
TEST_F(LeaderElectionTest, AFollowerAndALostRaceAreHealthy) {
  int told = 0;
  LeaderCallbacks callbacks;
  callbacks.on_lease_error = [&](const absl::Status&) { ++told; };
  auto a = Make("a");
  auto b = Make("b", callbacks);
  ASSERT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());  // held by a
  EXPECT_TRUE(b->LeaseHealth().ok());
  clock_.Advance(absl::Seconds(20));  // a's lease expired; a renews between b's read and write
  fake_.SetInterceptor([&](const FakeKubeClient::Request& r) {
    if (r.verb == "update") {
      fake_.SetInterceptor(nullptr);
      EXPECT_TRUE(a->TryAcquireOrRenew());
    }
    return absl::OkStatus();
  });
  EXPECT_FALSE(b->TryAcquireOrRenew());
  EXPECT_TRUE(IsConflict(b->last_error())) << b->last_error();
  EXPECT_TRUE(b->LeaseHealth().ok());
  EXPECT_EQ(told, 0);
}

TEST_F(LeaderElectionTest, RunCampaignsUntilTheHolderLetsGo) {
  auto b = Make("b");
  ASSERT_TRUE(b->TryAcquireOrRenew());  // b holds it from kStart; b never renews
  absl::Time started;
  std::string new_leader;
  LeaderCallbacks callbacks;
  callbacks.on_new_leader = [&](const std::string& id) { new_leader = id; };
  callbacks.on_started_leading = [&] { started = clock_.Now(); };
  Cancellation cancel;
  callbacks.on_stopped_leading = [] {};
  auto a = Make("a", callbacks, [&](absl::Duration d) {
    clock_.Advance(d);
    if (started != absl::Time()) cancel.Cancel();  // leave once leading
  });
  a->Run(&cancel);
  // Retries every 2-2.4 s (jitter); the lease expires after kStart + 15 s.
  EXPECT_GT(started, kStart + absl::Seconds(15));
  EXPECT_LE(started, kStart + absl::Seconds(15) + absl::Milliseconds(2400));
  EXPECT_EQ(new_leader, "a");
  // Cancelled while leading: released.
  EXPECT_EQ(LeaseSpec(fake_)["holderIdentity"], "");
}

TEST(LeaderElectionRealTimeTest, CancelReleasesPromptly) {
  RealClock clock;
  FakeKubeClient fake(&clock);
  LeaderElectionConfig config = Config("a");
  config.lease_duration = absl::Seconds(3);
  config.renew_deadline = absl::Seconds(2);
  config.retry_period = absl::Milliseconds(50);
  std::atomic<bool> leading{false}, stopped{false};
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] { leading = true; };
  callbacks.on_stopped_leading = [&] { stopped = true; };
  auto a = LeaderElector::Create(&fake, &clock, config, callbacks);
  ASSERT_TRUE(a.ok()) << a.status();
  Cancellation cancel;
  std::thread runner([&] { (*a)->Run(&cancel); });
  ASSERT_TRUE(testutil::Eventually([&] { return leading.load(); }, absl::Seconds(5)));
  cancel.Cancel();
  runner.join();
  EXPECT_TRUE(stopped);
  EXPECT_EQ(
      fake.Get(kLeases, "twinscale-system", "twinscale-leader")->at("spec").at("holderIdentity"),
      "");
}

TEST(LeaderElectorCreateTest, RejectsInconsistentDurations) {
  FakeKubeClient fake;
  ManualClock clock;
  LeaderElectionConfig c = Config("a");
  c.renew_deadline = c.lease_duration;
  EXPECT_EQ(LeaderElector::Create(&fake, &clock, c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = Config("");
  EXPECT_EQ(LeaderElector::Create(&fake, &clock, c).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinscale::kube
