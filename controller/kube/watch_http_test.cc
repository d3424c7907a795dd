// HttpKubeClient::Watch over real HTTP: events are delivered as they arrive (the server waits for
// the client to have seen one before sending the next), the watch request's query, the server's
// 410-inside-a-200 ERROR event and an HTTP 410 both mean kExpired, an idle stream ends normally
// after the inactivity timeout, cancellation interrupts a blocked read, and bad events fail.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/api_errors.h"
#include "controller/kube/rest_client.h"
#include "gtest/gtest.h"
#include "tests/util/test_http_server.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;
using testutil::LineWriter;
using testutil::RecordedRequest;
using testutil::TestHttpServer;

std::string Event(const std::string& type, const std::string& name, const std::string& rv) {
  return json{
      {"type", type},
      {"object", {{"kind", "Pod"}, {"metadata", {{"name", name}, {"resourceVersion", rv}}}}}}
      .dump();
}

std::unique_ptr<HttpKubeClient> ClientFor(const TestHttpServer& server, const Clock* clock,
                                          HttpKubeClientOptions options = {}) {
  ClusterConfig config;
  config.server = server.url();
  absl::StatusOr<std::unique_ptr<HttpKubeClient>> c =
      HttpKubeClient::FromConfig(config, clock, options);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

struct Seen {
  std::atomic<int> count{0};
  std::vector<WatchEvent> events;  // written on the watching thread only
};

TEST(HttpWatchTest, DeliversEventsAsTheyArriveAndSendsTheWatchQuery) {
  Seen seen;
  std::atomic<bool> client_saw_first_in_time{false};
  std::unique_ptr<TestHttpServer> server;
  server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
    server->StreamLines(req, [&](LineWriter& w) {
      w.Send(Event("ADDED", "a", "6"));
      // The next event is sent only once the client has handled this one: a client that
      // buffered the stream until its end would never see it (and this wait would time out).
      client_saw_first_in_time =
          w.Wait(absl::Seconds(10), [&] { return seen.count >= 1; }) && seen.count >= 1;
      w.Send("");  // a blank line is skipped
      w.Send(Event("MODIFIED", "a", "7"));
      w.Send(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})");
    });
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = ClientFor(*server, &clock);
  WatchOptions options;
  options.resource_version = "5";
  options.timeout = absl::Seconds(30);
  options.label_selector = "app=vllm";
  absl::StatusOr<WatchEnd> end = client->Watch(kPods, "ml", options, [&](WatchEvent e) {
    seen.events.push_back(std::move(e));
    ++seen.count;
  });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  EXPECT_TRUE(client_saw_first_in_time);
  ASSERT_EQ(seen.events.size(), 3u);
  EXPECT_EQ(seen.events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(seen.events[1].type, WatchEventType::kModified);
  EXPECT_EQ(seen.events[1].object["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(seen.events[2].type, WatchEventType::kBookmark);

  const RecordedRequest r = server->requests().at(0);
  EXPECT_EQ(r.path, "/api/v1/namespaces/ml/pods");
  EXPECT_EQ(r.query.at("watch"), "true");
  EXPECT_EQ(r.query.at("resourceVersion"), "5");
  EXPECT_EQ(r.query.at("allowWatchBookmarks"), "true");
  EXPECT_EQ(r.query.at("timeoutSeconds"), "30");
  EXPECT_EQ(r.query.at("labelSelector"), "app=vllm");
}

TEST(HttpWatchTest, ExpiredInsideA200StreamIsExpiredNotAnEvent) {
  std::unique_ptr<TestHttpServer> server;
  server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
    server->StreamLines(req, [](LineWriter& w) {
      w.Send(Event("ADDED", "a", "6"));
      w.Send(R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)json"
             R"json("status":"Failure","message":"too old resource version: 5 (90)",)json"
             R"json("reason":"Expired","code":410}})json");
      w.Send(Event("ADDED", "never-delivered", "91"));
    });
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = ClientFor(*server, &clock);
  std::vector<std::string> names;
  WatchOptions options;
  options.resource_version = "5";
  absl::StatusOr<WatchEnd> end = client->Watch(
      kPods, "ml", options, [&](WatchEvent e) { names.push_back(e.object["metadata"]["name"]); });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, WatchEnd::kExpired);
  EXPECT_EQ(names, std::vector<std::string>{"a"});
}

TEST(HttpWatchTest, AnHttp410IsExpiredToo) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest&) {
    TestHttpServer::ReplyJson(req, 410, R"({"kind":"Status","reason":"Gone","code":410})");
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = ClientFor(*server, &clock);
  absl::StatusOr<WatchEnd> end = client->Watch(kPods, "", WatchOptions{}, [](WatchEvent) {});
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, WatchEnd::kExpired);
}

TEST(HttpWatchTest, FailuresAreStatuses) {
  struct Case {
    std::string name;
    int http;
    std::string line;  // streamed when http == 200
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"RBAC refuses the watch", 403, "", absl::StatusCode::kPermissionDenied},
      {"an ERROR event that is not expiry", 200,
       R"({"type":"ERROR","object":{"kind":"Status","reason":"InternalError","code":500}})",
       absl::StatusCode::kUnavailable},
      {"a line that is not an event", 200, "<html>", absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<TestHttpServer> server;
    server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
      if (c.http != 200) {
        TestHttpServer::ReplyJson(req, c.http,
                                  R"({"kind":"Status","reason":"Forbidden","code":403})");
        return;
      }
      server->StreamLines(req, [&](LineWriter& w) {
        w.Send(c.line);
        w.Wait(absl::Seconds(30));  // keeps the stream open: the client must stop by itself
      });
    });
    ASSERT_NE(server, nullptr);
    ManualClock clock;
    auto client = ClientFor(*server, &clock);
    EXPECT_EQ(client->Watch(kPods, "ml", WatchOptions{}, [](WatchEvent) {}).status().code(),
              c.want);
  }
}

TEST(HttpWatchTest, AnIdleStreamEndsNormallyAfterTheInactivityTimeout) {
  std::unique_ptr<TestHttpServer> server;
  server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
    server->StreamLines(req, [](LineWriter& w) {
      w.Send(Event("ADDED", "a", "6"));
      w.Wait(absl::Seconds(30));  // then silence, connection open
    });
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  HttpKubeClientOptions options;
  options.watch_idle_margin = absl::Seconds(1);
  auto client = ClientFor(*server, &clock, options);
  int events = 0;
  // timeoutSeconds=1 + margin 1 s: two silent seconds end the watch.
  WatchOptions one_second;
  one_second.timeout = absl::Seconds(1);
  absl::StatusOr<WatchEnd> end =
      client->Watch(kPods, "ml", one_second, [&](WatchEvent) { ++events; });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  EXPECT_EQ(events, 1);
}

TEST(HttpWatchTest, CancelInterruptsABlockedRead) {
  std::unique_ptr<TestHttpServer> server;
  server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
    server->StreamLines(req, [](LineWriter& w) {
      w.Send(Event("ADDED", "a", "6"));
      w.Wait(absl::Seconds(60));
    });
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = ClientFor(*server, &clock);
  Cancellation cancel;
  std::atomic<bool> got_event{false};
  std::thread canceller([&] {
    while (!got_event) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel.Cancel();
  });
  absl::StatusOr<WatchEnd> end = client->Watch(
      kPods, "ml", WatchOptions{}, [&](WatchEvent) { got_event = true; }, &cancel);
  canceller.join();
  EXPECT_EQ(end.status().code(), absl::StatusCode::kCancelled) << end.status();
}

}  // namespace
}  // namespace twinscale::kube
