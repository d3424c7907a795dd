// The leader label on this replica's pod, against the in-memory FakeKubeClient: the first write
// clears a stale "true"; Set(true) / Set(false) land as merge patches of metadata.labels (other
// labels kept); failed writes are retried until they land; Stop waits for the latest state and
// gives up with the error after its timeout. Real time, short waits.
#include "controller/kube/leader_pod_label.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "controller/kube/resource_ref.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/eventually.h"

namespace twinscale::kube {
namespace {

using fakes::FakeKubeClient;
using nlohmann::json;

class LeaderPodLabelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The previous container of this pod led: its label still says so.
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "twinscale-controller-abc"},
          {"namespace", "twinscale-system"},
          {"labels", {{"app.kubernetes.io/name", "twinscale"}, {"twinscale.io/leader", "true"}}}}}};
    ASSERT_TRUE(fake_.Create(kPods, "twinscale-system", pod).ok());
  }

  LeaderPodLabelOptions Options() const {
    LeaderPodLabelOptions o;
    o.pod_namespace = "twinscale-system";
    o.pod_name = "twinscale-controller-abc";
    o.retry_period = absl::Milliseconds(20);
    return o;
  }

  json Labels() {
    absl::StatusOr<json> pod = fake_.Get(kPods, "twinscale-system", "twinscale-controller-abc");
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.ok() ? (*pod)["metadata"]["labels"] : json();
  }

  // Waits (up to 5 s) until the label says `want`.
  bool WaitForLabel(const std::string& want) {
    return testutil::Eventually([&] { return Labels().value("twinscale.io/leader", "") == want; },
                                absl::Seconds(5));
  }

  FakeKubeClient fake_;
};

TEST_F(LeaderPodLabelTest, ClearsAStaleLabelThenFollowsLeadership) {
  LeaderPodLabel label(&fake_, Options());
  ASSERT_TRUE(label.Start().ok());
  EXPECT_TRUE(WaitForLabel("false"));
  EXPECT_EQ(Labels().value("app.kubernetes.io/name", ""), "twinscale");  // other labels kept
  label.Set(true);
  EXPECT_TRUE(WaitForLabel("true"));
  label.Set(false);
  EXPECT_TRUE(WaitForLabel("false"));
  label.Set(true);
  EXPECT_TRUE(label.Stop(absl::Seconds(5)).ok());
  EXPECT_EQ(Labels().value("twinscale.io/leader", ""), "true");
  EXPECT_EQ(label.written(), std::optional<bool>(true));
  // Every write is a patch of this pod.
  for (const FakeKubeClient::Request& r : fake_.requests()) {
    if (r.verb != "patch") continue;
    EXPECT_EQ(r.resource.resource, "pods");
    EXPECT_EQ(r.name, "twinscale-controller-abc");
  }
}

TEST_F(LeaderPodLabelTest, RetriesFailedWritesUntilTheyLand) {
  std::atomic<int> failures{3};
  fake_.SetInterceptor([&](const FakeKubeClient::Request& r) -> absl::Status {
    if (r.verb == "patch" && failures.fetch_sub(1) > 0) {
      return absl::UnavailableError("the API server is restarting");
    }
    return absl::OkStatus();
  });
  std::atomic<int> reported{0};
  LeaderPodLabel label(&fake_, Options(), [&](const absl::Status& s) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
    ++reported;
  });
  label.Set(true);
  ASSERT_TRUE(label.Start().ok());
  // (The pod's stale label already says "true": wait for the write itself.)
  EXPECT_TRUE(label.Stop(absl::Seconds(5)).ok());
  EXPECT_EQ(label.written(), std::optional<bool>(true));
  EXPECT_EQ(reported.load(), 3);
  EXPECT_EQ(Labels().value("twinscale.io/leader", ""), "true");
}

TEST_F(LeaderPodLabelTest, StopWaitsForTheLatestStateAndGivesUpWithTheError) {
  LeaderPodLabel label(&fake_, Options());
  label.Set(true);
  ASSERT_TRUE(label.Start().ok());
  ASSERT_TRUE(WaitForLabel("true"));
  // SIGTERM: the controller steps down, then stops the label writer.
  label.Set(false);
  EXPECT_TRUE(label.Stop(absl::Seconds(5)).ok());
  EXPECT_EQ(Labels().value("twinscale.io/leader", ""), "false");

  LeaderPodLabel unlucky(&fake_, Options());
  fake_.SetInterceptor([](const FakeKubeClient::Request& r) -> absl::Status {
    return r.verb == "patch" ? absl::UnavailableError("connection refused") : absl::OkStatus();
  });
  unlucky.Set(true);
  ASSERT_TRUE(unlucky.Start().ok());
  const absl::Status s = unlucky.Stop(absl::Milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_FALSE(unlucky.written().has_value());
}

// What the label says is told when it lands on the pod, so a log line saying "labelled as the
// leader" is true when written: a follower is told only "false"; a replica that leads is told
// "true" once the write lands, not while the writes fail.
TEST_F(LeaderPodLabelTest, TellsWhatLandedOnThePodWhenItLands) {
  absl::Mutex mu;
  std::vector<bool> told;
  auto told_now = [&] {
    absl::MutexLock lock(&mu);
    return told;
  };
  auto record = [&](bool leading) {
    absl::MutexLock lock(&mu);
    told.push_back(leading);
  };
  auto wait_for = [&](size_t n) {
    return testutil::Eventually([&] { return told_now().size() >= n; }, absl::Seconds(5));
  };

  {
    LeaderPodLabel follower(&fake_, Options(), {}, record);
    ASSERT_TRUE(follower.Start().ok());
    ASSERT_TRUE(wait_for(1));
    EXPECT_TRUE(follower.Stop(absl::Seconds(5)).ok());
    EXPECT_EQ(told_now(), std::vector<bool>{false}) << "a follower is never told it leads";
  }

  std::atomic<bool> refuse{false};
  std::atomic<int> refused{0};
  fake_.SetInterceptor([&](const FakeKubeClient::Request& r) -> absl::Status {
    if (r.verb != "patch" || !refuse.load()) return absl::OkStatus();
    ++refused;
    return absl::PermissionDeniedError("pods \"twinscale-controller-abc\" is forbidden");
  });
  {
    absl::MutexLock lock(&mu);
    told.clear();
  }
  LeaderPodLabel leader(&fake_, Options(), {}, record);
  ASSERT_TRUE(leader.Start().ok());
  ASSERT_TRUE(wait_for(1));  // "false" first
  refuse = true;
  leader.Set(true);
  ASSERT_TRUE(testutil::Eventually([&] { return refused.load() >= 3; }, absl::Seconds(5)))
      << "the refused write was not retried";
  EXPECT_EQ(told_now(), std::vector<bool>{false}) << "told it leads before the label landed";
  refuse = false;
  ASSERT_TRUE(wait_for(2));
  EXPECT_EQ(Labels().value("twinscale.io/leader", ""), "true");
  leader.Set(false);
  ASSERT_TRUE(wait_for(3));
  EXPECT_TRUE(leader.Stop(absl::Seconds(5)).ok());
  EXPECT_EQ(told_now(), (std::vector<bool>{false, true, false}));
}

TEST_F(LeaderPodLabelTest, NeedsThePodsNameAndNamespace) {
  LeaderPodLabelOptions o = Options();
  o.pod_name.clear();
  LeaderPodLabel label(&fake_, o);
  const absl::Status s = label.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("POD_NAME"), std::string::npos) << s;
}

}  // namespace
}  // namespace twinscale::kube
