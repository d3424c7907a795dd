// Watches over real HTTP, against the API concepts page's "Efficient detection of changes",
// "Watch bookmarks" and "Resource versions" sections: replay from a resourceVersion, events
// streamed while the stream is still open, synthetic ADDED events for "0", bookmarks, the 410
// Expired ERROR event inside an HTTP 200 stream after compaction, DELETED events, timeoutSeconds,
// selectors, dropped connections, and the list-side 410 for Exact lists.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/test_http.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;
using testing::Get;
using testing::HttpResult;
using testing::MergePatch;
using testing::Post;
using testing::WatchReader;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

json Pod(const std::string& name, const std::string& app = "web") {
  return {{"metadata", {{"name", name}, {"labels", {{"app", app}}}}}};
}

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"]; }

FakeApiServer::Fault Fault(std::string method, std::string path_prefix, int code, int count = 1,
                           int retry_after_seconds = 0) {
  FakeApiServer::Fault f;
  f.method = std::move(method);
  f.path_prefix = std::move(path_prefix);
  f.code = code;
  f.count = count;
  f.retry_after_seconds = retry_after_seconds;
  return f;
}

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(FakeApiServer::Options()); }
  void Start(FakeApiServer::Options o) {
    o.bookmark_interval = absl::Milliseconds(200);
    auto s = FakeApiServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    url_ = server_->url();
  }
  json Create(const json& pod) {
    HttpResult r = Post(url_, kPods, pod);
    EXPECT_EQ(r.code, 201) << r.body;
    return r.json;
  }

  ManualClock manual_clock_{absl::FromUnixSeconds(1714564800)};  // for a Start() that asks for it
  std::unique_ptr<FakeApiServer> server_;
  std::string url_;
};

TEST_F(WatchTest, ReplaysEveryChangeAfterTheResourceVersion) {
  const json a = Create(Pod("a"));
  const json b = Create(Pod("b"));
  HttpResult modified =
      MergePatch(url_, std::string(kPods) + "/a", {{"metadata", {{"annotations", {{"k", "v"}}}}}});
  ASSERT_EQ(modified.code, 200);
  ASSERT_EQ(testing::Request(url_, "DELETE", std::string(kPods) + "/b").code, 200);

  WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
  ASSERT_EQ(watch.Code(), 200);
  auto e1 = watch.Next();
  auto e2 = watch.Next();
  auto e3 = watch.Next();
  ASSERT_TRUE(e1 && e2 && e3);
  EXPECT_EQ((*e1)["type"], "ADDED");
  EXPECT_EQ((*e1)["object"]["metadata"]["name"], "b");
  EXPECT_EQ(Rv((*e1)["object"]), Rv(b));
  EXPECT_EQ((*e2)["type"], "MODIFIED");
  EXPECT_EQ(Rv((*e2)["object"]), Rv(modified.json));
  EXPECT_EQ((*e2)["object"]["kind"], "Pod") << "watch objects carry kind and apiVersion";
  EXPECT_EQ((*e3)["type"], "DELETED");
  EXPECT_EQ((*e3)["object"]["metadata"]["name"], "b");
  // A DELETED event carries the deletion's resourceVersion, the newest one.
  EXPECT_EQ(Rv((*e3)["object"]), std::to_string(server_->ResourceVersion()));
  EXPECT_FALSE(watch.Next(absl::Milliseconds(300))) << "nothing else happened";
}

TEST_F(WatchTest, StreamsLiveEventsBeforeTheStreamEnds) {
  const json a = Create(Pod("a"));
  WatchReader watch(url_,
                    std::string(kPods) + "?watch=true&timeoutSeconds=30&resourceVersion=" + Rv(a));
  ASSERT_EQ(watch.Code(), 200);
  ASSERT_TRUE(server_->WaitForWatches(1, absl::Seconds(5)));
  Create(Pod("b"));
  // The event arrives while the stream is open (it ends only in 30 s): really streamed.
  auto e = watch.Next(absl::Seconds(5));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "ADDED");
  EXPECT_EQ((*e)["object"]["metadata"]["name"], "b");
  EXPECT_FALSE(watch.WaitEnd(absl::Milliseconds(10)));
  // And the next one too.
  ASSERT_TRUE(server_
                  ->Put(std::string(kPods) + "/b", {{"metadata", {{"labels", {{"app", "web"}}}}},
                                                    {"status", {{"phase", "Running"}}}})
                  .ok());
  auto m = watch.Next(absl::Seconds(5));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)["type"], "MODIFIED");
  EXPECT_EQ((*m)["object"]["status"]["phase"], "Running");
}

TEST_F(WatchTest, WithoutAResourceVersionStartsWithTheCurrentObjects) {
  Create(Pod("a"));
  Create(Pod("b"));
  for (const std::string query : {"?watch=1", "?watch=1&resourceVersion=0"}) {
    SCOPED_TRACE(query);
    WatchReader watch(url_, kPods + query);
    auto e1 = watch.Next();
    auto e2 = watch.Next();
    ASSERT_TRUE(e1 && e2);
    EXPECT_EQ((*e1)["type"], "ADDED");
    EXPECT_EQ((*e1)["object"]["metadata"]["name"], "a");
    EXPECT_EQ((*e2)["type"], "ADDED");
    EXPECT_EQ((*e2)["object"]["metadata"]["name"], "b");
    EXPECT_FALSE(watch.Next(absl::Milliseconds(200)));
  }
}

TEST_F(WatchTest, SendsBookmarksOnlyWhenAllowed) {
  const json a = Create(Pod("a"));
  WatchReader with(
      url_, std::string(kPods) + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + Rv(a));
  WatchReader without(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
  auto bookmark = with.Next(absl::Seconds(3));
  ASSERT_TRUE(bookmark.has_value());
  EXPECT_EQ((*bookmark)["type"], "BOOKMARK");
  // Only the kind and the resourceVersion the watch has reached.
  EXPECT_EQ((*bookmark)["object"]["kind"], "Pod");
  EXPECT_EQ((*bookmark)["object"]["apiVersion"], "v1");
  EXPECT_EQ(Rv((*bookmark)["object"]), std::to_string(server_->ResourceVersion()));
  EXPECT_FALSE(without.Next(absl::Milliseconds(600)).has_value());
}

TEST_F(WatchTest, ExpiredResourceVersionIsAnErrorEventInsideA200Stream) {
  const json a = Create(Pod("a"));
  Create(Pod("b"));
  const int64_t compacted_at = server_->ResourceVersion();
  server_->Compact();

  WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
  EXPECT_EQ(watch.Code(), 200) << "not an HTTP 410: the real server answers inside the stream";
  auto e = watch.Next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "ERROR");
  const json& status = (*e)["object"];
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["code"], 410);
  EXPECT_EQ(status["reason"], "Expired");
  EXPECT_EQ(status["message"],
            "too old resource version: " + Rv(a) + " (" + std::to_string(compacted_at) + ")");
  EXPECT_TRUE(watch.WaitEnd());
  EXPECT_FALSE(watch.EndedWithError()) << "the stream ends cleanly";
  EXPECT_FALSE(watch.Next(absl::Milliseconds(10)).has_value());

  // From the compaction point itself nothing is missing.
  WatchReader current(
      url_, std::string(kPods) + "?watch=1&resourceVersion=" + std::to_string(compacted_at));
  EXPECT_FALSE(current.Next(absl::Milliseconds(300)).has_value());
  EXPECT_FALSE(current.WaitEnd(absl::Milliseconds(10)));
}

TEST_F(WatchTest, ResourceVersionsFromTheFutureAreRefused) {
  WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=999999");
  EXPECT_EQ(watch.Code(), 200);
  auto e = watch.Next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "ERROR");
  EXPECT_EQ((*e)["object"]["code"], 504);
  EXPECT_EQ((*e)["object"]["reason"], "Timeout");
}

// On the server's clock (a ManualClock here): the stream stays open through 999 ms of it however
// long that takes in real time, and ends cleanly once the second is up.
TEST_F(WatchTest, TimeoutSecondsEndsTheStreamCleanly) {
  FakeApiServer::Options o;
  o.clock = &manual_clock_;
  ASSERT_NO_FATAL_FAILURE(Start(o));
  const json a = Create(Pod("a"));
  WatchReader watch(url_,
                    std::string(kPods) + "?watch=1&timeoutSeconds=1&resourceVersion=" + Rv(a));
  EXPECT_EQ(watch.Code(), 200);
  ASSERT_TRUE(server_->WaitForWatches(1, absl::Seconds(5)));
  manual_clock_.Advance(absl::Milliseconds(999));
  // Longer than the timeout in real time, and the server checks every 50 ms: still open.
  EXPECT_FALSE(watch.WaitEnd(absl::Milliseconds(1200))) << "ended before its timeout";
  manual_clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(watch.WaitEnd(absl::Seconds(5)));
  EXPECT_FALSE(watch.EndedWithError());
  EXPECT_EQ(server_->OpenWatches(), 0u);
}

TEST_F(WatchTest, SelectorsFilterEventsAndTrackObjectsEnteringAndLeaving) {
  const json a = Create(Pod("a", "db"));
  WatchReader watch(
      url_, std::string(kPods) + "?watch=1&labelSelector=app%3Dweb&resourceVersion=" + Rv(a));
  ASSERT_TRUE(server_->WaitForWatches(1, absl::Seconds(5)));
  Create(Pod("b", "db"));  // never selected
  ASSERT_EQ(
      MergePatch(url_, std::string(kPods) + "/a", {{"metadata", {{"labels", {{"app", "web"}}}}}})
          .code,
      200);
  ASSERT_EQ(
      MergePatch(url_, std::string(kPods) + "/a", {{"metadata", {{"labels", {{"app", "cache"}}}}}})
          .code,
      200);
  auto in = watch.Next();
  auto out = watch.Next();
  ASSERT_TRUE(in && out);
  EXPECT_EQ((*in)["type"], "ADDED");
  EXPECT_EQ((*in)["object"]["metadata"]["name"], "a");
  EXPECT_EQ((*out)["type"], "DELETED");
  EXPECT_EQ((*out)["object"]["metadata"]["name"], "a");
  EXPECT_FALSE(watch.Next(absl::Milliseconds(200)).has_value());

  WatchReader by_name(url_, std::string(kPods) + "?watch=1&fieldSelector=metadata.name%3Db");
  auto only_b = by_name.Next();
  ASSERT_TRUE(only_b.has_value());
  EXPECT_EQ((*only_b)["object"]["metadata"]["name"], "b");
  EXPECT_FALSE(by_name.Next(absl::Milliseconds(200)).has_value());
}

TEST_F(WatchTest, ClosedWatchesEndCleanlyOrByACutConnection) {
  const json a = Create(Pod("a"));
  {
    WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
    ASSERT_TRUE(server_->WaitForWatches(1, absl::Seconds(5)));
    server_->CloseWatches(/*abrupt=*/false);
    ASSERT_TRUE(watch.WaitEnd());
    EXPECT_FALSE(watch.EndedWithError());
  }
  {
    WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
    ASSERT_TRUE(server_->WaitForWatches(1, absl::Seconds(5)));
    server_->CloseWatches(/*abrupt=*/true);
    ASSERT_TRUE(watch.WaitEnd());
    EXPECT_TRUE(watch.EndedWithError()) << "the body never finished";
  }
  EXPECT_EQ(server_->OpenWatches(), 0u);
}

TEST_F(WatchTest, InjectedFaultsFailTheWatchRequestItself) {
  server_->FailNext(Fault("GET", kPods, 500));
  WatchReader watch(url_, std::string(kPods) + "?watch=1");
  EXPECT_EQ(watch.Code(), 500);
  EXPECT_TRUE(watch.WaitEnd());
  EXPECT_NE(watch.ErrorBody().find("InternalError"), std::string::npos) << watch.ErrorBody();
}

TEST_F(WatchTest, SendInitialEventsEndsWithAnAnnotatedBookmark) {
  Create(Pod("a"));
  WatchReader watch(url_, std::string(kPods) +
                              "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                              "&resourceVersionMatch=NotOlderThan&resourceVersion=");
  auto added = watch.Next();
  auto end = watch.Next();
  ASSERT_TRUE(added && end);
  EXPECT_EQ((*added)["type"], "ADDED");
  EXPECT_EQ((*end)["type"], "BOOKMARK");
  EXPECT_EQ((*end)["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");

  HttpResult refused = Get(url_, std::string(kPods) + "?watch=1&sendInitialEvents=true");
  EXPECT_EQ(refused.code, 422) << refused.body;
}

TEST_F(WatchTest, ExactListsOfCompactedVersionsAreGone) {
  const json a = Create(Pod("a"));
  Create(Pod("b"));
  HttpResult exact =
      Get(url_, std::string(kPods) + "?resourceVersionMatch=Exact&resourceVersion=" + Rv(a));
  ASSERT_EQ(exact.code, 200) << exact.body;
  EXPECT_EQ(exact.json["metadata"]["resourceVersion"], Rv(a));
  EXPECT_EQ(exact.json["items"].size(), 1u) << "the list as it was at a's creation";

  server_->Compact();
  HttpResult gone =
      Get(url_, std::string(kPods) + "?resourceVersionMatch=Exact&resourceVersion=" + Rv(a));
  EXPECT_EQ(gone.code, 410) << gone.body;
  EXPECT_EQ(gone.json["reason"], "Expired");
  EXPECT_EQ(gone.json["message"], "The resourceVersion for the provided list is too old.");
  // Legacy paging with a resourceVersion has Exact semantics too.
  EXPECT_EQ(Get(url_, std::string(kPods) + "?limit=1&resourceVersion=" + Rv(a)).code, 410);
  // NotOlderThan is satisfied by current data.
  HttpResult newer =
      Get(url_, std::string(kPods) + "?resourceVersionMatch=NotOlderThan&resourceVersion=" + Rv(a));
  ASSERT_EQ(newer.code, 200) << newer.body;
  EXPECT_EQ(newer.json["items"].size(), 2u);
}

TEST_F(WatchTest, TheHistoryWindowIsConfigurable) {
  FakeApiServer::Options o;
  o.history_limit = 2;
  Start(o);
  const json a = Create(Pod("a"));
  Create(Pod("b"));
  Create(Pod("c"));
  Create(Pod("d"));  // a's and b's creations have left the window
  WatchReader watch(url_, std::string(kPods) + "?watch=1&resourceVersion=" + Rv(a));
  auto e = watch.Next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "ERROR");
  EXPECT_EQ((*e)["object"]["code"], 410);
}

}  // namespace
}  // namespace twinscale::fake_apiserver
