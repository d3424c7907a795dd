// The event recorder against the in-memory FakeKubeClient on a ManualClock: the Event's fields,
// repeats folded into a count bump (a merge patch, not a new Event), a new Event when the old one
// has gone, and the per-object rate limit.
#include "controller/kube/event_recorder.h"

#include "controller/kube/kube_time.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_kube_client.h"

namespace twinscale::kube {
namespace {

using fakes::FakeKubeClient;
using nlohmann::json;

const absl::Time kStart = absl::FromUnixSeconds(1714979289);  // 2024-05-06T07:08:09Z

ObjectReference Ias(const std::string& name) {
  return ObjectReference{"twinscale.io/v1alpha1", "InferenceAutoscaler", "ml", name, "uid-" + name};
}

std::vector<json> Events(FakeKubeClient& fake, const std::string& ns = "ml") {
  return fake.List(kEvents, ns)->items;
}

int Count(FakeKubeClient& fake, const std::string& verb) {
  int n = 0;
  for (const auto& r : fake.requests()) n += r.verb == verb;
  return n;
}

TEST(EventRecorderTest, WritesACompleteEvent) {
  ManualClock clock(kStart);
  FakeKubeClient fake(&clock);
  EventRecorderOptions options;
  options.instance = "twinscale-0";
  EventRecorder recorder(&fake, &clock, options);
  ASSERT_TRUE(
      recorder.Record(Ias("llama"), EventType::kNormal, "ScaledUp", "3 -> 5 replicas").ok());
  const std::vector<json> events = Events(fake);
  ASSERT_EQ(events.size(), 1u);
  const json& e = events[0];
  EXPECT_EQ(e["metadata"]["namespace"], "ml");
  EXPECT_EQ(e["involvedObject"], (json{{"apiVersion", "twinscale.io/v1alpha1"},
                                       {"kind", "InferenceAutoscaler"},
                                       {"namespace", "ml"},
                                       {"name", "llama"},
                                       {"uid", "uid-llama"}}));
  EXPECT_EQ(e["reason"], "ScaledUp");
  EXPECT_EQ(e["message"], "3 -> 5 replicas");
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["source"], (json{{"component", "twinscale"}, {"host", "twinscale-0"}}));
  EXPECT_EQ(e["reportingComponent"], "twinscale");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["firstTimestamp"], "2024-05-06T07:08:09Z");
  EXPECT_EQ(e["lastTimestamp"], "2024-05-06T07:08:09Z");
}

TEST(EventRecorderTest, RepeatsBumpTheCountOfOneEvent) {
  ManualClock clock(kStart);
  FakeKubeClient fake(&clock);
  EventRecorder recorder(&fake, &clock);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        recorder.Record(Ias("llama"), EventType::kWarning, "MetricsStale", "no scrape").ok());
    clock.Advance(absl::Seconds(10));
  }
  std::vector<json> events = Events(fake);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 3);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["firstTimestamp"], "2024-05-06T07:08:09Z");
  EXPECT_EQ(events[0]["lastTimestamp"], "2024-05-06T07:08:29Z");
  EXPECT_EQ(Count(fake, "create"), 1);
  EXPECT_EQ(Count(fake, "patch"), 2);

  // Another message is another Event.
  ASSERT_TRUE(recorder.Record(Ias("llama"), EventType::kWarning, "MetricsStale", "other").ok());
  EXPECT_EQ(Events(fake).size(), 2u);
}

TEST(EventRecorderTest, AnEventThatExpiredIsWrittenAgainCarryingTheCount) {
  ManualClock clock(kStart);
  FakeKubeClient fake(&clock);
  EventRecorder recorder(&fake, &clock);
  ASSERT_TRUE(recorder.Record(Ias("llama"), EventType::kNormal, "ScaledUp", "m").ok());
  const std::string first = Events(fake)[0]["metadata"]["name"];
  ASSERT_TRUE(fake.Delete(kEvents, "ml", first).ok());  // the API server's event TTL
  clock.Advance(absl::Hours(2));
  ASSERT_TRUE(recorder.Record(Ias("llama"), EventType::kNormal, "ScaledUp", "m").ok());
  const std::vector<json> events = Events(fake);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0]["metadata"]["name"], first);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(events[0]["firstTimestamp"], "2024-05-06T07:08:09Z");
  EXPECT_EQ(events[0]["lastTimestamp"], "2024-05-06T09:08:09Z");
}

TEST(EventRecorderTest, RateLimitedPerObject) {
  ManualClock clock(kStart);
  FakeKubeClient fake(&clock);
  EventRecorderOptions options;
  options.burst = 3;
  options.refill = absl::Minutes(1);
  EventRecorder recorder(&fake, &clock, options);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder.Record(Ias("a"), EventType::kNormal, "R", std::to_string(i)).ok());
  }
  EXPECT_EQ(recorder.Record(Ias("a"), EventType::kNormal, "R", "3").code(),
            absl::StatusCode::kResourceExhausted);
  // Another object has its own bucket.
  EXPECT_TRUE(recorder.Record(Ias("b"), EventType::kNormal, "R", "x").ok());
  // Half a refill period is not a token; a whole one is.
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(recorder.Record(Ias("a"), EventType::kNormal, "R", "4").code(),
            absl::StatusCode::kResourceExhausted);
  clock.Advance(absl::Seconds(30));
  EXPECT_TRUE(recorder.Record(Ias("a"), EventType::kNormal, "R", "5").ok());
  EXPECT_EQ(Events(fake).size(), 5u);
}

TEST(EventRecorderTest, ClusterScopedObjectsGetEventsInDefault) {
  ManualClock clock(kStart);
  FakeKubeClient fake(&clock);
  EventRecorder recorder(&fake, &clock);
  ASSERT_TRUE(recorder
                  .Record(ObjectReference{"v1", "Node", "", "gpu-node-1", ""}, EventType::kWarning,
                          "GpuMissing", "x")
                  .ok());
  const std::vector<json> events = Events(fake, "default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0]["involvedObject"].contains("namespace"));
}

TEST(EventRecorderTest, ReferenceToReadsAnObject) {
  const json o = {{"apiVersion", "apps/v1"},
                  {"kind", "Deployment"},
                  {"metadata", {{"name", "d"}, {"namespace", "ml"}, {"uid", "u1"}}}};
  const ObjectReference r = ReferenceTo(o);
  EXPECT_EQ(r.api_version, "apps/v1");
  EXPECT_EQ(r.kind, "Deployment");
  EXPECT_EQ(r.namespace_name, "ml");
  EXPECT_EQ(r.name, "d");
  EXPECT_EQ(r.uid, "u1");
}

}  // namespace
}  // namespace twinscale::kube
