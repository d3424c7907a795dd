// Structured JSON log lines: field order, escaping, levels, secret redaction. Lines are read back
// with nlohmann_json (an independent JSON reader) where the exact text isn't the point.
#include "controller/common/json_log.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace twinscale {
namespace {

const absl::Time kAt = absl::FromUnixMillis(1735787045678);  // 2025-01-02T03:04:05.678Z

TEST(JsonLogTest, FixedFieldsFirstThenExtraFieldsInOrder) {
  const LogField fields[] = {
      {"from", 3}, {"to", int64_t{5}}, {"ratio", 0.5}, {"dry_run", true}, {"why", "p90 over"}};
  EXPECT_EQ(
      FormatLogLine(kAt, LogLevel::kInfo, "scaled", "llm/llama-8b", fields),
      R"({"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"scaled","key":"llm/llama-8b",)"
      R"("from":3,"to":5,"ratio":0.5,"dry_run":true,"why":"p90 over"})");
  // No key: the field is left out.
  EXPECT_EQ(FormatLogLine(kAt, LogLevel::kError, "boom", "", {}),
            R"({"ts":"2025-01-02T03:04:05.678Z","level":"error","msg":"boom"})");
}

TEST(JsonLogTest, EscapesQuotesBackslashesAndControlCharacters) {
  const LogField fields[] = {{"path", "C:\\x\t\"q\""}};
  const std::string line =
      FormatLogLine(kAt, LogLevel::kWarning, "line one\nline \"two\"\x01", "ns/n", fields);
  EXPECT_TRUE(absl::StrContains(line, R"("msg":"line one\nline \"two\"\u0001")")) << line;
  EXPECT_TRUE(absl::StrContains(line, R"("path":"C:\\x\t\"q\"")")) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line, whatever the message
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "line one\nline \"two\"\x01");
  EXPECT_EQ(j["path"], "C:\\x\t\"q\"");
}

TEST(JsonLogTest, InvalidUtf8AndNonFiniteNumbersStillGiveValidJson) {
  const LogField fields[] = {{"nan", std::numeric_limits<double>::quiet_NaN()},
                             {"inf", std::numeric_limits<double>::infinity()}};
  const std::string line = FormatLogLine(kAt, LogLevel::kInfo, "bad \xff byte", "", fields);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "bad \xEF\xBF\xBD byte");  // U+FFFD
  EXPECT_TRUE(j["nan"].is_null());
  EXPECT_TRUE(j["inf"].is_null());
}

TEST(JsonLogTest, TypedFieldsAreWrittenReadably) {
  const LogField fields[] = {{"took", absl::Milliseconds(1500)},
                             {"at", kAt},
                             {"err", absl::UnavailableError("scrape failed")},
                             {"pods", uint64_t{7}}};
  const nlohmann::json j =
      nlohmann::json::parse(FormatLogLine(kAt, LogLevel::kInfo, "m", "", fields));
  EXPECT_EQ(j["took"], "1.5s");
  EXPECT_EQ(j["at"], "2025-01-02T03:04:05.678Z");
  EXPECT_EQ(j["err"], "UNAVAILABLE: scrape failed");
  EXPECT_EQ(j["pods"], 7);
}

TEST(JsonLogTest, AFieldCannotShadowTheFixedOnes) {
  const LogField fields[] = {{"level", "debug"}, {"msg", "x"}};
  const nlohmann::json j =
      nlohmann::json::parse(FormatLogLine(kAt, LogLevel::kError, "m", "k", fields));
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "m");
  EXPECT_EQ(j["field_level"], "debug");
  EXPECT_EQ(j["field_msg"], "x");
}

TEST(JsonLogTest, NeverWritesSecrets) {
  const LogField fields[] = {{"token", "eyJhbGciOi.secret.part"},
                             {"Authorization", "Basic dXNlcjpwYXNz"},
                             {"client-private-key", "abc"},
                             {"db_password", "hunter2"},
                             {"header", "Authorization: Bearer abc.def-ghi, next"},
                             {"pem",
                              "x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE "
                              "KEY----- y"},
                             {"url", "https://kubernetes.default.svc"}};
  const std::string line =
      FormatLogLine(kAt, LogLevel::kInfo, "request with bearer sekret-123 failed", "ns/x", fields);
  for (const char* secret :
       {"eyJhbGciOi", "dXNlcjpwYXNz", "abc\"", "hunter2", "abc.def-ghi", "MIIE", "sekret-123"}) {
    EXPECT_FALSE(absl::StrContains(line, secret)) << secret << " in " << line;
  }
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["token"], "[REDACTED]");
  EXPECT_EQ(j["Authorization"], "[REDACTED]");
  EXPECT_EQ(j["client-private-key"], "[REDACTED]");
  EXPECT_EQ(j["db_password"], "[REDACTED]");
  EXPECT_EQ(j["header"], "Authorization: Bearer [REDACTED], next");
  EXPECT_EQ(j["pem"], "x [REDACTED] y");
  EXPECT_EQ(j["msg"], "request with bearer [REDACTED] failed");
  EXPECT_EQ(j["url"], "https://kubernetes.default.svc");  // nothing secret: untouched
}

TEST(JsonLoggerTest, WritesOneLinePerCallAtOrAboveTheLevelWithTheClocksTime) {
  ManualClock clock(kAt);
  std::ostringstream out;
  JsonLogger log(clock, out, LogLevel::kInfo);
  log.Debug("hidden");
  log.Info("first", "ns/a", {{"n", 1}});
  clock.Advance(absl::Seconds(1));
  log.Error("second");
  EXPECT_EQ(out.str(),
            "{\"ts\":\"2025-01-02T03:04:05.678Z\",\"level\":\"info\",\"msg\":\"first\","
            "\"key\":\"ns/a\",\"n\":1}\n"
            "{\"ts\":\"2025-01-02T03:04:06.678Z\",\"level\":\"error\",\"msg\":\"second\"}\n");
  EXPECT_FALSE(log.Enabled(LogLevel::kDebug));
  log.set_min_level(LogLevel::kDebug);
  EXPECT_TRUE(log.Enabled(LogLevel::kDebug));
}

}  // namespace
}  // namespace twinscale
