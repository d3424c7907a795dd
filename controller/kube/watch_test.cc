// Decoding watch stream lines: the four event types, the 410-inside-a-200 ERROR event that means
// "list again", other ERROR events as statuses, and lines that are not events.
#include "controller/kube/watch.h"

#include <string>
#include <vector>

#include "controller/kube/api_errors.h"
#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

TEST(DecodeWatchLineTest, DecodesEachEventType) {
  struct Case {
    std::string line;
    WatchEventType want;
  };
  const std::vector<Case> cases = {
      {R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}})",
       WatchEventType::kAdded},
      {R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})",
       WatchEventType::kModified},
      {R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})",
       WatchEventType::kDeleted},
      {R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})",
       WatchEventType::kBookmark},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    absl::StatusOr<WatchLine> got = DecodeWatchLine(c.line + "\r");
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->kind, WatchLine::Kind::kEvent);
    EXPECT_EQ(got->event.type, c.want);
    EXPECT_TRUE(got->event.object.contains("metadata"));
  }
}

TEST(DecodeWatchLineTest, ExpiredInsideA200StreamMeansRelist) {
  // As the API server writes it when the resourceVersion has been compacted away.
  const std::string line =
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)json"
      R"json("status":"Failure","message":"too old resource version: 5 (1000)",)json"
      R"json("reason":"Expired","code":410}})json";
  absl::StatusOr<WatchLine> got = DecodeWatchLine(line);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->kind, WatchLine::Kind::kExpired);
  // Older servers: reason Gone, same code.
  got =
      DecodeWatchLine(R"({"type":"ERROR","object":{"kind":"Status","reason":"Gone","code":410}})");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->kind, WatchLine::Kind::kExpired);
}

TEST(DecodeWatchLineTest, OtherErrorEventsAreStatuses) {
  absl::StatusOr<WatchLine> got = DecodeWatchLine(
      R"({"type":"ERROR","object":{"kind":"Status","reason":"InternalError","message":"etcd","code":500}})");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(KubeReason(got.status()), "InternalError");
  got = DecodeWatchLine(
      R"({"type":"ERROR","object":{"kind":"Status","code":403,"reason":"Forbidden"}})");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(DecodeWatchLineTest, BlankLinesAreSkippedAndGarbageIsAnError) {
  absl::StatusOr<WatchLine> blank = DecodeWatchLine("  \r");
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->kind, WatchLine::Kind::kBlank);
  struct Bad {
    std::string why;
    std::string line;
  };
  const std::vector<Bad> bad = {
      {"not JSON", "{\"type\":\"ADDED\",\"obj"},
      {"a JSON array", "[1,2]"},
      {"no object", R"({"type":"ADDED"})"},
      {"object not an object", R"({"type":"ADDED","object":"x"})"},
      {"type not a string", R"({"type":1,"object":{}})"},
      {"unknown type", R"({"type":"RENAMED","object":{}})"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.why);
    EXPECT_EQ(DecodeWatchLine(b.line).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace twinscale::kube
