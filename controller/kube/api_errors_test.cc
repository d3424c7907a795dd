// Failed API answers -> absl::Status: the mapping table of api_errors.h, with Status bodies as the
// API server writes them, bodies that are not Status objects, and Retry-After.
#include "controller/kube/api_errors.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" +
         message + R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

TEST(StatusFromHttpResponseTest, MapsCodesAndReasons) {
  struct Case {
    std::string name;
    int http;
    std::string reason;
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"missing object", 404, "NotFound", absl::StatusCode::kNotFound},
      {"stale resourceVersion", 409, "Conflict", absl::StatusCode::kAborted},
      {"create of a taken name", 409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {"expired resourceVersion", 410, "Expired", absl::StatusCode::kFailedPrecondition},
      {"invalid object", 422, "Invalid", absl::StatusCode::kInvalidArgument},
      {"bad request", 400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {"token refused", 401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {"RBAC forbids", 403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {"verb not supported", 405, "MethodNotAllowed", absl::StatusCode::kUnimplemented},
      {"throttled", 429, "TooManyRequests", absl::StatusCode::kUnavailable},
      {"server error", 500, "InternalError", absl::StatusCode::kUnavailable},
      {"etcd down", 503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {"server-side timeout", 504, "Timeout", absl::StatusCode::kUnavailable},
      {"an odd code", 418, "", absl::StatusCode::kUnknown},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = StatusFromHttpResponse(
        c.http, StatusBody(c.http, c.reason, "the server says why"), "", "GET /x");
    EXPECT_EQ(s.code(), c.want) << s;
    EXPECT_EQ(KubeReason(s), c.reason);
    EXPECT_TRUE(absl::StrContains(s.message(), "GET /x: the server says why")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "HTTP " + std::to_string(c.http))) << s;
  }
}

TEST(StatusFromHttpResponseTest, HelpersRecogniseTheirCases) {
  const absl::Status conflict =
      StatusFromHttpResponse(409, StatusBody(409, "Conflict", "m"), "", "");
  const absl::Status exists =
      StatusFromHttpResponse(409, StatusBody(409, "AlreadyExists", "m"), "", "");
  const absl::Status gone = StatusFromHttpResponse(404, StatusBody(404, "NotFound", "m"), "", "");
  const absl::Status expired = StatusFromHttpResponse(410, StatusBody(410, "Expired", "m"), "", "");
  const absl::Status old_gone = StatusFromHttpResponse(410, StatusBody(410, "Gone", "m"), "", "");
  EXPECT_TRUE(IsConflict(conflict));
  EXPECT_FALSE(IsConflict(exists));
  EXPECT_TRUE(absl::IsAlreadyExists(exists));
  EXPECT_TRUE(absl::IsNotFound(gone));
  EXPECT_TRUE(IsExpired(expired));
  EXPECT_TRUE(IsExpired(old_gone));
  EXPECT_FALSE(IsExpired(absl::FailedPreconditionError("target not ready")));
  EXPECT_FALSE(IsExpired(conflict));
}

TEST(StatusFromHttpResponseTest, BodiesThatAreNotStatusObjects) {
  // A proxy's HTML page: the code decides, the text is quoted shortened on one line.
  const absl::Status proxy =
      StatusFromHttpResponse(502, "<html>\n<body>Bad Gateway</body>\n</html>", "", "GET /y");
  EXPECT_EQ(proxy.code(), absl::StatusCode::kUnavailable) << proxy;
  EXPECT_TRUE(absl::StrContains(proxy.message(), "<html> <body>Bad Gateway")) << proxy;
  // No body at all: the reason the server would have sent.
  const absl::Status empty = StatusFromHttpResponse(404, "", "", "GET /z");
  EXPECT_EQ(empty.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(KubeReason(empty), "NotFound");
  // JSON, but not a Status.
  const absl::Status other = StatusFromHttpResponse(500, R"({"error":"x"})", "", "");
  EXPECT_EQ(other.code(), absl::StatusCode::kUnavailable);
  // An enormous body is cut.
  const absl::Status huge = StatusFromHttpResponse(500, std::string(100000, 'a'), "", "");
  EXPECT_LT(huge.message().size(), 400u);
}

TEST(StatusFromHttpResponseTest, RetryAfterIsKept) {
  const absl::Status s =
      StatusFromHttpResponse(429, StatusBody(429, "TooManyRequests", "slow down"), " 7 ", "");
  ASSERT_TRUE(RetryAfter(s).has_value());
  EXPECT_EQ(*RetryAfter(s), absl::Seconds(7));
  EXPECT_FALSE(RetryAfter(StatusFromHttpResponse(503, "", "soon", "")).has_value());
  EXPECT_FALSE(RetryAfter(absl::UnavailableError("x")).has_value());
}

}  // namespace
}  // namespace twinscale::kube
