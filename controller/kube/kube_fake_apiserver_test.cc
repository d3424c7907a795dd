// The kube client stack over real HTTP against the fake API server (tests/fake_apiserver), which
// reproduces the real server's wire behaviour: the informer (list, watch, an Expired ERROR event
// inside the 200 stream after a compaction, deletions during the gap delivered on re-list), Lease
// leader election (create, 409s, release, stepping down when renewals fail), the scale
// subresource (GET, merge patch, stale resourceVersion), events and bearer tokens.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/informer.h"
#include "controller/kube/leader_election.h"
#include "controller/kube/object_meta.h"
#include "controller/kube/rest_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fakes/recording_handler.h"

namespace twinscale::kube {
namespace {

using fake_apiserver::FakeApiServer;
using nlohmann::json;
using ::testing::ElementsAre;

std::unique_ptr<FakeApiServer> StartServer(FakeApiServer::Options options = {}) {
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<HttpKubeClient> ClientFor(const FakeApiServer& server, const Clock* clock,
                                          const std::string& token = "") {
  ClusterConfig config;
  config.server = server.url();
  config.bearer_token = token;
  absl::StatusOr<std::unique_ptr<HttpKubeClient>> c = HttpKubeClient::FromConfig(config, clock);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", {{"app", "vllm"}}}}},
          {"spec", {{"containers", json::array({{{"name", "vllm"}, {"image", "vllm"}}})}}}};
}

std::string PodPath(const std::string& name) { return "/api/v1/namespaces/ml/pods/" + name; }

using Recorder = fakes::RecordingHandler;

TEST(KubeAgainstFakeApiServerTest, InformerRelistsAfterExpiryAndDeliversTheGap) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(server->Put(PodPath(name), Pod(name)).ok());
  RealClock clock;
  auto client = ClientFor(*server, &clock);

  // The first backoff wait blocks until the test has made its gap; later ones pass at once.
  absl::Mutex mu;
  bool gap_made = false;
  std::atomic<int> sleeps{0};
  InformerOptions options;
  options.resource = kPods;
  options.namespace_name = "ml";
  options.label_selector = "app=vllm";
  options.sleep = [&](absl::Duration) {
    if (sleeps++ > 0) return;
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&gap_made), absl::Seconds(10));
  };
  Informer informer(client.get(), options);
  Recorder recorder;
  informer.AddHandler(&recorder);
  informer.Start();
  EXPECT_THAT(recorder.Take(3), ElementsAre("add ml/a", "add ml/b", "add ml/c"));
  ASSERT_TRUE(server->WaitForWatches(1, absl::Seconds(10)));

  // Live changes arrive through the watch.
  ASSERT_TRUE(server->Put(PodPath("d"), Pod("d")).ok());
  ASSERT_TRUE(
      server->Mutate(PodPath("a"), [](json& p) { p["metadata"]["labels"]["v"] = "2"; }).ok());
  EXPECT_THAT(recorder.Take(2), ElementsAre("add ml/d", "update ml/a"));

  // The stream ends and the next watch fails (503): the informer waits (blocked above) while b
  // is deleted, c changes, and the server compacts its history past the informer's version.
  FakeApiServer::Fault fault;
  fault.method = "GET";
  fault.path_prefix = "/api/v1/namespaces/ml/pods";
  fault.code = 503;
  server->FailNext(fault);
  server->CloseWatches();
  ASSERT_TRUE(server->Delete(PodPath("b")).ok());
  ASSERT_TRUE(
      server->Mutate(PodPath("c"), [](json& p) { p["metadata"]["labels"]["v"] = "2"; }).ok());
  server->Compact();
  {
    absl::MutexLock lock(&mu);
    gap_made = true;
  }
  // The resumed watch gets ERROR 410 Expired inside its 200 stream; the re-list tells the rest.
  EXPECT_THAT(recorder.Take(2), ElementsAre("delete ml/b", "update ml/c"));
  ASSERT_TRUE(server->WaitForWatches(1, absl::Seconds(10)));
  informer.Stop();
  const InformerStats s = informer.stats();
  EXPECT_EQ(s.relists, 1);
  EXPECT_EQ(s.expired, 1);
  EXPECT_GE(s.errors, 1);
  std::vector<std::string> keys;
  for (const json& p : informer.List()) keys.push_back(ObjectKey(p));
  EXPECT_THAT(keys, ElementsAre("ml/a", "ml/c", "ml/d"));
}

TEST(KubeAgainstFakeApiServerTest, ScaleSubresourceReadAndMergePatched) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::string path = "/apis/apps/v1/namespaces/ml/deployments/llama";
  ASSERT_TRUE(server
                  ->Put(path, {{"metadata", {{"name", "llama"}}},
                               {"spec",
                                {{"replicas", 2},
                                 {"selector", {{"matchLabels", {{"app", "llama"}}}}},
                                 {"template", {{"metadata", {{"labels", {{"app", "llama"}}}}}}}}},
                               {"status", {{"replicas", 2}}}})
                  .ok());
  ManualClock clock;
  auto client = ClientFor(*server, &clock);
  absl::StatusOr<json> scale = client->Get(kDeployments, "ml", "llama", "scale");
  ASSERT_TRUE(scale.ok()) << scale.status();
  EXPECT_EQ((*scale)["kind"], "Scale");
  EXPECT_EQ((*scale)["spec"]["replicas"], 2);
  EXPECT_EQ((*scale)["status"]["selector"], "app=llama");
  const int64_t generation = GenerationOf(*client->Get(kDeployments, "ml", "llama"));

  absl::StatusOr<json> patched =
      client->MergePatch(kDeployments, "ml", "llama", {{"spec", {{"replicas", 5}}}}, "scale");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["replicas"], 5);
  absl::StatusOr<json> deployment = client->Get(kDeployments, "ml", "llama");
  ASSERT_TRUE(deployment.ok());
  EXPECT_EQ((*deployment)["spec"]["replicas"], 5);
  EXPECT_EQ(GenerationOf(*deployment), generation + 1);

  // A scale write with the version read before the patch is stale: 409 Conflict -> Aborted.
  json stale = *scale;
  stale["spec"]["replicas"] = 7;
  absl::Status s = client->Update(kDeployments, "ml", stale, "scale").status();
  EXPECT_TRUE(IsConflict(s)) << s;
  // Negative replicas are invalid (422).
  s = client->MergePatch(kDeployments, "ml", "llama", {{"spec", {{"replicas", -1}}}}, "scale")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::IsNotFound(client->Get(kDeployments, "ml", "nope", "scale").status()));
}

LeaderElectionConfig LeaseConfig(const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = "twinscale-system";
  c.lease_name = "twinscale-leader";
  c.identity = identity;
  return c;  // 15 s lease, 10 s renew deadline, 2 s retry period
}

TEST(KubeAgainstFakeApiServerTest, LeaderElectionOverHttp) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ManualClock clock(absl::FromUnixSeconds(1714979289));
  auto client_a = ClientFor(*server, &clock);
  auto client_b = ClientFor(*server, &clock);
  auto a = *LeaderElector::Create(client_a.get(), &clock, LeaseConfig("a"));
  auto b = *LeaderElector::Create(client_b.get(), &clock, LeaseConfig("b"));
  EXPECT_TRUE(a->TryAcquireOrRenew());
  EXPECT_FALSE(b->TryAcquireOrRenew());
  absl::StatusOr<json> lease = server->Get(
      "/apis/coordination.k8s.io/v1/namespaces/twinscale-system/leases/twinscale-leader");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["renewTime"], "2024-05-06T07:08:09.000000Z");

  // A write that loses a race (the server answers 409) is not leadership.
  FakeApiServer::Fault conflict;
  conflict.method = "PUT";
  conflict.path_prefix = "/apis/coordination.k8s.io/v1/namespaces/twinscale-system/leases";
  conflict.code = 409;
  server->FailNext(conflict);
  clock.Advance(absl::Seconds(2));
  EXPECT_FALSE(a->TryAcquireOrRenew());
  EXPECT_TRUE(IsConflict(a->last_error())) << a->last_error();

  // Release hands over at once.
  ASSERT_TRUE(a->Release().ok());
  EXPECT_TRUE(b->TryAcquireOrRenew());
  lease = server->Get(
      "/apis/coordination.k8s.io/v1/namespaces/twinscale-system/leases/twinscale-leader");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);

  // b's renewals start failing (500s): b steps down once renew_deadline has passed.
  FakeApiServer::Fault down = conflict;
  down.code = 500;
  down.count = 1000;
  absl::Time started, stopped;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    started = clock.Now();
    server->FailNext(down);
  };
  callbacks.on_stopped_leading = [&] { stopped = clock.Now(); };
  auto b2 = *LeaderElector::Create(client_b.get(), &clock, LeaseConfig("b"), callbacks,
                                   [&](absl::Duration d) { clock.Advance(d); });
  Cancellation never;
  b2->Run(&never);
  EXPECT_EQ(stopped - started, absl::Seconds(10));
  EXPECT_EQ(b2->last_error().code(), absl::StatusCode::kUnavailable);
}

TEST(KubeAgainstFakeApiServerTest, RepeatedEventsBecomeOneEventWithACount) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ManualClock clock(absl::FromUnixSeconds(1714979289));
  auto client = ClientFor(*server, &clock);
  EventRecorder recorder(client.get(), &clock);
  const ObjectReference ias{"twinscale.io/v1alpha1", "InferenceAutoscaler", "ml", "llama", "u1"};
  ASSERT_TRUE(recorder.Record(ias, EventType::kWarning, "MetricsStale", "no scrape for 60s").ok());
  clock.Advance(absl::Seconds(30));
  ASSERT_TRUE(recorder.Record(ias, EventType::kWarning, "MetricsStale", "no scrape for 60s").ok());
  absl::StatusOr<json> events = server->List("/api/v1/namespaces/ml/events");
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ((*events)["items"].size(), 1u);
  const json& e = (*events)["items"][0];
  EXPECT_EQ(e["count"], 2);
  EXPECT_EQ(e["lastTimestamp"], "2024-05-06T07:08:39Z");
  EXPECT_EQ(e["involvedObject"]["name"], "llama");
}

TEST(KubeAgainstFakeApiServerTest, BearerTokenIsCheckedByTheServer) {
  FakeApiServer::Options options;
  options.bearer_token = "right";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->Put(PodPath("a"), Pod("a")).ok());
  ManualClock clock;
  EXPECT_TRUE(ClientFor(*server, &clock, "right")->Get(kPods, "ml", "a").ok());
  EXPECT_EQ(ClientFor(*server, &clock, "wrong")->Get(kPods, "ml", "a").status().code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace twinscale::kube
