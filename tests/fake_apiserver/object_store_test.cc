// The store's rules without HTTP (the HTTP tests repeat the important ones over the wire):
// resourceVersion and generation bookkeeping, the status subresource split, no-op writes,
// preconditions, Exact lists rebuilt from history, paging, how watches see changes through
// selectors, and watch timeouts and bookmarks on a ManualClock. Expected values come from the
// Kubernetes API conventions, worked by hand.
#include "tests/fake_apiserver/object_store.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/api_status.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;

// Records what a watch would send.
class RecordingSink : public WatchSink {
 public:
  void Send(const std::string& event_json) override { events.push_back(json::parse(event_json)); }
  void Close(bool abrupt) override {
    closed = true;
    closed_abruptly = abrupt;
  }
  std::vector<json> events;
  bool closed = false;
  bool closed_abruptly = false;
};

class ObjectStoreTest : public ::testing::Test {
 protected:
  ObjectStoreTest() : store_(Options()) {
    for (ResourceType& t : BuiltinResourceTypes()) store_.AddType(std::move(t));
    deployments_ = store_.FindType("apps", "v1", "deployments");
    pods_ = store_.FindType("", "v1", "pods");
    leases_ = store_.FindType("coordination.k8s.io", "v1", "leases");
    ias_ = store_.FindType("twinscale.io", "v1alpha1", "inferenceautoscalers");
  }

  static ObjectStore::Options Options() {
    ObjectStore::Options o;
    o.history_limit = 100;
    o.initial_resource_version = 500;
    return o;
  }

  static json Deployment(const std::string& name, json labels = {{"app", "web"}}) {
    return {{"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", {{"replicas", 2}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
  }

  static std::string Rv(const json& o) { return o["metadata"]["resourceVersion"]; }

  ObjectStore store_;
  const ResourceType* deployments_;
  const ResourceType* pods_;
  const ResourceType* leases_;
  const ResourceType* ias_;
  WriteOptions write_;
};

TEST_F(ObjectStoreTest, EveryWriteTakesTheNextGlobalResourceVersion) {
  auto a = store_.Create(*deployments_, "default", Deployment("a"), write_);
  auto b = store_.Create(*pods_, "other", {{"metadata", {{"name", "p"}}}}, write_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Rv(*a), "501");
  EXPECT_EQ(Rv(*b), "502");  // one counter across kinds and namespaces, as etcd's revision
  auto deleted = store_.Delete(*pods_, "other", "p", json::object());
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(Rv(*deleted), "503");  // the deleted pod comes back at the deletion's RV
  EXPECT_EQ(store_.ResourceVersion(), 503);
}

TEST_F(ObjectStoreTest, GenerationCountsSpecChangesOnly) {
  auto created = store_.Create(*deployments_, "default", Deployment("web"), write_);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["generation"], 1);

  json relabeled = *created;
  relabeled["metadata"]["labels"]["team"] = "ml";
  auto r1 = store_.Update(*deployments_, "default", "web", Subresource::kNone, relabeled, write_);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ((*r1)["metadata"]["generation"], 1) << "a label is metadata";
  EXPECT_NE(Rv(*r1), Rv(*created));

  json annotated = *r1;
  annotated["metadata"]["annotations"] = {{"note", "x"}};
  auto r2 = store_.Update(*deployments_, "default", "web", Subresource::kNone, annotated, write_);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ((*r2)["metadata"]["generation"], 2)
      << "Deployments count annotation changes (apps/deployment/strategy.go)";

  json rescaled = *r2;
  rescaled["spec"]["replicas"] = 5;
  auto r3 = store_.Update(*deployments_, "default", "web", Subresource::kNone, rescaled, write_);
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ((*r3)["metadata"]["generation"], 3);

  json with_status = *r3;
  with_status["status"] = {{"replicas", 5}};
  auto r4 =
      store_.Update(*deployments_, "default", "web", Subresource::kStatus, with_status, write_);
  ASSERT_TRUE(r4.ok()) << r4.status();
  EXPECT_EQ((*r4)["metadata"]["generation"], 3) << "a /status write is not a spec change";
  EXPECT_NE(Rv(*r4), Rv(*r3));
}

TEST_F(ObjectStoreTest, ANoOpWriteKeepsTheResourceVersionAndSendsNoEvent) {
  auto created = store_.Create(*deployments_, "default", Deployment("web"), write_);
  ASSERT_TRUE(created.ok());
  auto sink = std::make_shared<RecordingSink>();
  WatchOptions w;
  w.resource_version = Rv(*created);
  ASSERT_TRUE(store_.Watch(*deployments_, "default", w, sink).ok());

  auto same = store_.Update(*deployments_, "default", "web", Subresource::kNone, *created, write_);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(Rv(*same), Rv(*created));
  EXPECT_EQ(store_.ResourceVersion(), 501);
  EXPECT_TRUE(sink->events.empty());
}

TEST_F(ObjectStoreTest, StatusAndSpecAreWrittenThroughTheirOwnEndpoints) {
  json d = Deployment("web");
  d["status"] = {{"replicas", 9}};
  auto created = store_.Create(*deployments_, "default", d, write_);
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(created->contains("status")) << "create drops the status of such kinds";

  json spec_write = *created;
  spec_write["spec"]["replicas"] = 3;
  spec_write["status"] = {{"replicas", 7}};
  auto s1 = store_.Update(*deployments_, "default", "web", Subresource::kNone, spec_write, write_);
  ASSERT_TRUE(s1.ok()) << s1.status();
  EXPECT_EQ((*s1)["spec"]["replicas"], 3);
  EXPECT_FALSE(s1->contains("status")) << "the main resource ignores status";

  json status_write = *s1;
  status_write["spec"]["replicas"] = 10;
  status_write["metadata"]["labels"]["sneaky"] = "yes";
  status_write["status"] = {{"replicas", 3}, {"readyReplicas", 2}};
  auto s2 =
      store_.Update(*deployments_, "default", "web", Subresource::kStatus, status_write, write_);
  ASSERT_TRUE(s2.ok()) << s2.status();
  EXPECT_EQ((*s2)["spec"]["replicas"], 3) << "/status ignores spec";
  EXPECT_FALSE((*s2)["metadata"]["labels"].contains("sneaky")) << "/status ignores metadata";
  EXPECT_EQ((*s2)["status"]["readyReplicas"], 2);
}

TEST_F(ObjectStoreTest, KindsWithoutAStatusSubresourceChangeAsWritten) {
  json lease = {{"metadata", {{"name", "twinscale-leader"}}},
                {"spec", {{"holderIdentity", "pod-a"}, {"leaseDurationSeconds", 15}}}};
  auto created = store_.Create(*leases_, "twinscale", lease, write_);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"].contains("generation")) << "leases keep no generation";
  json renewed = *created;
  renewed["spec"]["holderIdentity"] = "pod-b";
  auto r =
      store_.Update(*leases_, "twinscale", "twinscale-leader", Subresource::kNone, renewed, write_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["spec"]["holderIdentity"], "pod-b");
  // A stale write loses: what leader election relies on.
  auto stale =
      store_.Update(*leases_, "twinscale", "twinscale-leader", Subresource::kNone, renewed, write_);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(HttpCode(stale.status()), 409);
  EXPECT_EQ(Reason(stale.status()), "Conflict");
}

TEST_F(ObjectStoreTest, DeletePreconditionsAreChecked) {
  auto created = store_.Create(*deployments_, "default", Deployment("web"), write_);
  ASSERT_TRUE(created.ok());
  auto wrong_uid =
      store_.Delete(*deployments_, "default", "web", {{"preconditions", {{"uid", "not-the-uid"}}}});
  ASSERT_FALSE(wrong_uid.ok());
  EXPECT_EQ(HttpCode(wrong_uid.status()), 409);
  EXPECT_TRUE(absl::StrContains(wrong_uid.status().message(), "Precondition failed: UID"));
  auto wrong_rv = store_.Delete(*deployments_, "default", "web",
                                {{"preconditions", {{"resourceVersion", "1"}}}});
  ASSERT_FALSE(wrong_rv.ok());
  EXPECT_EQ(HttpCode(wrong_rv.status()), 409);
  auto ok = store_.Delete(*deployments_, "default", "web",
                          {{"preconditions", {{"uid", (*created)["metadata"]["uid"]}}}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)["status"], "Success");
  EXPECT_EQ((*ok)["details"]["name"], "web");
}

TEST_F(ObjectStoreTest, ExactListsAreRebuiltFromHistory) {
  auto a = store_.Create(*deployments_, "default", Deployment("a"), write_);  // 501
  auto b = store_.Create(*deployments_, "default", Deployment("b"), write_);  // 502
  ASSERT_TRUE(a.ok() && b.ok());
  json a2 = *a;
  a2["spec"]["replicas"] = 7;
  ASSERT_TRUE(store_.Update(*deployments_, "default", "a", Subresource::kNone, a2, write_).ok());
  ASSERT_TRUE(store_.Delete(*deployments_, "default", "b", json::object()).ok());  // 504

  ListOptions at_502;
  at_502.resource_version = "502";
  at_502.resource_version_match = "Exact";
  auto old = store_.List(*deployments_, "default", at_502);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ((*old)["metadata"]["resourceVersion"], "502");
  ASSERT_EQ((*old)["items"].size(), 2u);
  EXPECT_EQ((*old)["items"][0]["spec"]["replicas"], 2) << "a as it was at 502";
  EXPECT_EQ((*old)["items"][1]["metadata"]["name"], "b");

  auto now = store_.List(*deployments_, "default", ListOptions());
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)["metadata"]["resourceVersion"], "504");
  ASSERT_EQ((*now)["items"].size(), 1u);
  EXPECT_EQ((*now)["items"][0]["spec"]["replicas"], 7);
  EXPECT_FALSE((*now)["items"][0].contains("kind")) << "typed list items carry no kind";

  store_.Compact();
  auto gone = store_.List(*deployments_, "default", at_502);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(HttpCode(gone.status()), 410);
  EXPECT_EQ(Reason(gone.status()), "Expired");
}

TEST_F(ObjectStoreTest, PagesWithLimitAndContinue) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(store_.Create(*deployments_, "default", Deployment(name), write_).ok());
  }
  ListOptions page;
  page.limit = 2;
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) {
    auto l = store_.List(*deployments_, "default", page);
    ASSERT_TRUE(l.ok()) << l.status();
    for (const json& item : (*l)["items"]) names.push_back(item["metadata"]["name"]);
    if (i == 0) {
      EXPECT_EQ((*l)["metadata"]["remainingItemCount"], 3);
      // A write between pages does not show up: pages are served at the first page's RV.
      ASSERT_TRUE(store_.Create(*deployments_, "default", Deployment("f"), write_).ok());
    }
    if (!(*l)["metadata"].contains("continue")) break;
    page.continue_token = (*l)["metadata"]["continue"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST_F(ObjectStoreTest, WatchesSeeObjectsEnterAndLeaveTheirSelection) {
  auto sink = std::make_shared<RecordingSink>();
  WatchOptions w;
  w.resource_version = "500";
  auto selected = LabelSelector::Parse("app=web");
  ASSERT_TRUE(selected.ok());
  w.labels = *selected;
  ASSERT_TRUE(store_.Watch(*deployments_, "", w, sink).ok());

  auto d = store_.Create(*deployments_, "default", Deployment("x", {{"app", "db"}}), write_);
  ASSERT_TRUE(d.ok());  // 501: not selected, not seen
  json in = *d;
  in["metadata"]["labels"]["app"] = "web";
  auto in_r = store_.Update(*deployments_, "default", "x", Subresource::kNone, in, write_);  // 502
  ASSERT_TRUE(in_r.ok());
  json out = *in_r;
  out["metadata"]["labels"]["app"] = "cache";
  ASSERT_TRUE(store_.Update(*deployments_, "default", "x", Subresource::kNone, out, write_).ok());

  ASSERT_EQ(sink->events.size(), 2u);
  EXPECT_EQ(sink->events[0]["type"], "ADDED");
  EXPECT_EQ(Rv(sink->events[0]["object"]), "502");
  EXPECT_EQ(sink->events[1]["type"], "DELETED");
  // Leaving the selection: the previous content at the new RV (the watch cache's rule).
  EXPECT_EQ(sink->events[1]["object"]["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(Rv(sink->events[1]["object"]), "503");
}

TEST_F(ObjectStoreTest, TheHistoryWindowIsBounded) {
  ObjectStore::Options o = Options();
  o.history_limit = 3;
  ObjectStore small(o);
  for (ResourceType& t : BuiltinResourceTypes()) small.AddType(std::move(t));
  const ResourceType* pods = small.FindType("", "v1", "pods");
  for (const char* name : {"a", "b", "c", "d", "e"}) {  // 501..505
    ASSERT_TRUE(small.Create(*pods, "default", {{"metadata", {{"name", name}}}}, write_).ok());
  }
  // 503, 504 and 505 are kept: a watch from 502 still sees everything after it...
  EXPECT_EQ(small.CompactedResourceVersion(), 502);
  auto ok = std::make_shared<RecordingSink>();
  WatchOptions from_502;
  from_502.resource_version = "502";
  ASSERT_TRUE(small.Watch(*pods, "default", from_502, ok).ok());
  EXPECT_EQ(ok->events.size(), 3u);
  EXPECT_FALSE(ok->closed);
  // ...and one from 501 has missed 502: 410 inside the stream, then the end.
  auto expired = std::make_shared<RecordingSink>();
  WatchOptions from_501;
  from_501.resource_version = "501";
  ASSERT_TRUE(small.Watch(*pods, "default", from_501, expired).ok());
  ASSERT_EQ(expired->events.size(), 1u);
  EXPECT_EQ(expired->events[0]["type"], "ERROR");
  EXPECT_EQ(expired->events[0]["object"]["code"], 410);
  EXPECT_EQ(expired->events[0]["object"]["message"], "too old resource version: 501 (502)");
  EXPECT_TRUE(expired->closed);
}

TEST_F(ObjectStoreTest, DirectWritesBehaveLikeWrites) {
  auto sink = std::make_shared<RecordingSink>();
  WatchOptions w;
  ASSERT_TRUE(store_.Watch(*pods_, "default", w, sink).ok());
  json pod = {{"metadata", {{"name", "web-0"}, {"labels", {{"app", "web"}}}}},
              {"status", {{"phase", "Running"}}}};
  auto put = store_.Put(*pods_, "default", "web-0", pod);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ((*put)["status"]["phase"], "Running") << "direct writes set status as given";
  EXPECT_EQ((*put)["kind"], "Pod");
  EXPECT_FALSE((*put)["metadata"]["uid"].get<std::string>().empty());
  auto mutated =
      store_.Mutate(*pods_, "default", "web-0", [](json& p) { p["status"]["phase"] = "Failed"; });
  ASSERT_TRUE(mutated.ok());
  EXPECT_EQ((*mutated)["metadata"]["uid"], (*put)["metadata"]["uid"]);
  ASSERT_EQ(sink->events.size(), 2u);
  EXPECT_EQ(sink->events[0]["type"], "ADDED");
  EXPECT_EQ(sink->events[1]["type"], "MODIFIED");
  EXPECT_EQ(sink->events[1]["object"]["status"]["phase"], "Failed");
  auto missing = store_.Mutate(*pods_, "default", "nope", [](json&) {});
  EXPECT_EQ(HttpCode(missing.status()), 404);
}

TEST_F(ObjectStoreTest, SchemaDefaultsKeepJsonTypes) {
  // Strings that look like numbers or booleans must stay strings through the YAML-based schema
  // engine; numbers stay numbers.
  json ias = {
      {"metadata", {{"name", "x"}, {"labels", {{"v", "1"}}}}},
      {"spec",
       {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "true"}}},
        {"maxReplicas", 4},
        {"model", {{"profile", "123"}}}}}};
  auto created = store_.Create(*ias_, "default", ias, write_);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE((*created)["spec"]["targetRef"]["name"].is_string());
  EXPECT_EQ((*created)["spec"]["targetRef"]["name"], "true");
  EXPECT_EQ((*created)["spec"]["model"]["profile"], "123");
  EXPECT_EQ((*created)["metadata"]["labels"]["v"], "1");
  EXPECT_EQ((*created)["spec"]["maxReplicas"], 4);
  EXPECT_DOUBLE_EQ((*created)["spec"]["limits"]["kvCacheUtilization"].get<double>(), 0.85);
}

// ---- Time: watch timeouts and bookmarks by the store's clock ------------------------------------

class ObjectStoreClockTest : public ::testing::Test {
 protected:
  ObjectStoreClockTest() : store_(Options(&clock_)) {
    for (ResourceType& t : BuiltinResourceTypes()) store_.AddType(std::move(t));
    pods_ = store_.FindType("", "v1", "pods");
  }
  static ObjectStore::Options Options(const Clock* clock) {
    ObjectStore::Options o;
    o.clock = clock;
    o.bookmark_interval = absl::Seconds(1);
    o.default_watch_timeout = absl::Minutes(30);
    return o;
  }
  // A watch of pods in "default" from the current resourceVersion.
  std::shared_ptr<RecordingSink> Watch(absl::Duration timeout, bool bookmarks = false) {
    auto sink = std::make_shared<RecordingSink>();
    WatchOptions w;
    w.resource_version = absl::StrCat(store_.ResourceVersion());
    w.timeout = timeout;
    w.allow_bookmarks = bookmarks;
    EXPECT_TRUE(store_.Watch(*pods_, "default", w, sink).ok());
    return sink;
  }
  void Advance(absl::Duration d) {
    clock_.Advance(d);
    store_.Tick();
  }

  ManualClock clock_{absl::FromUnixSeconds(1714564800)};
  ObjectStore store_;
  const ResourceType* pods_;
  WriteOptions write_;
};

TEST_F(ObjectStoreClockTest, AWatchEndsCleanlyWhenItsTimeoutHasPassed) {
  ASSERT_TRUE(store_.Create(*pods_, "default", {{"metadata", {{"name", "a"}}}}, write_).ok());
  auto one_second = Watch(absl::Seconds(1));
  auto default_length = Watch(absl::ZeroDuration());  // no timeoutSeconds: 30 minutes
  EXPECT_EQ(store_.WatchCount(), 2u);
  Advance(absl::Milliseconds(999));
  EXPECT_FALSE(one_second->closed) << "ended before its timeout";
  Advance(absl::Milliseconds(1));
  EXPECT_TRUE(one_second->closed);
  EXPECT_FALSE(one_second->closed_abruptly) << "a timeout ends the body cleanly";
  EXPECT_EQ(store_.WatchCount(), 1u);
  Advance(absl::Minutes(30) - absl::Seconds(1) - absl::Nanoseconds(1));
  EXPECT_FALSE(default_length->closed);
  Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(default_length->closed);
  EXPECT_FALSE(default_length->closed_abruptly);
  EXPECT_EQ(store_.WatchCount(), 0u);
  EXPECT_TRUE(one_second->events.empty());  // nothing changed meanwhile
}

TEST_F(ObjectStoreClockTest, BookmarksComeEveryIntervalOnlyToWatchesThatAllowThem) {
  auto with = Watch(absl::ZeroDuration(), /*bookmarks=*/true);
  auto without = Watch(absl::ZeroDuration());
  Advance(absl::Milliseconds(999));
  EXPECT_TRUE(with->events.empty()) << "a bookmark before its interval";
  Advance(absl::Milliseconds(1));
  ASSERT_EQ(with->events.size(), 1u);
  EXPECT_EQ(with->events[0]["type"], "BOOKMARK");
  EXPECT_EQ(with->events[0]["object"]["kind"], "Pod");
  EXPECT_EQ(with->events[0]["object"]["metadata"]["resourceVersion"],
            absl::StrCat(store_.ResourceVersion()));
  // The next interval counts from that bookmark: none at 1.5 s, one at 2 s.
  Advance(absl::Milliseconds(500));
  EXPECT_EQ(with->events.size(), 1u);
  Advance(absl::Milliseconds(500));
  EXPECT_EQ(with->events.size(), 2u);
  EXPECT_TRUE(without->events.empty());
}

}  // namespace
}  // namespace twinscale::fake_apiserver
