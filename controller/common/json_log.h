// Structured logs: one JSON object per line, for `kubectl logs` and log pipelines.
//
//   {"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"scaled","key":"llm/llama-8b",
//    "from":3,"to":5,"reason":"twin: p90 TTFT 0.62s > 0.5s"}
//
// Fields in this order: ts (RFC 3339, UTC, milliseconds, from the injected Clock), level (debug,
// info, warning, error), msg, key (the object the line is about, "namespace/name"; omitted when
// empty), then the extra fields in the order given. An extra field named ts, level, msg or key is
// written as "field_<name>" so it can't shadow the fixed ones. Strings are JSON-escaped (quotes,
// backslashes, control characters); invalid UTF-8 becomes U+FFFD; NaN and infinities become null.
//
// Secrets never reach the log: the value of a field whose name mentions a secret (token, password,
// passwd, secret, authorization, api_key / apikey, private_key, credential, cookie; any case) is
// written as "[REDACTED]", and in every string (msg included) a bearer token ("Bearer <token>")
// and a PEM private key block are replaced by "[REDACTED]". This is a backstop: callers still
// must not log credentials on purpose.
//
// Thread-safety: Log may be called from any thread; each line is written whole (one write under a
// lock) and flushed.
#ifndef TWINSCALE_CONTROLLER_COMMON_JSON_LOG_H_
#define TWINSCALE_CONTROLLER_COMMON_JSON_LOG_H_

#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace twinscale {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// "debug", "info", "warning" or "error".
std::string_view LogLevelName(LogLevel level);

// One extra field of a log line. Durations are written as absl::FormatDuration text ("1.5s"),
// times as RFC 3339 like `ts`, statuses as Status::ToString ("UNAVAILABLE: ...", or "OK").
struct LogField {
  LogField(std::string_view n, std::string_view v) : name(n), value(std::string(v)) {}
  LogField(std::string_view n, const char* v) : name(n), value(std::string(v)) {}
  LogField(std::string_view n, const std::string& v) : name(n), value(v) {}
  LogField(std::string_view n, bool v) : name(n), value(v) {}
  LogField(std::string_view n, int v) : name(n), value(int64_t{v}) {}
  LogField(std::string_view n, int64_t v) : name(n), value(v) {}
  LogField(std::string_view n, uint64_t v) : name(n), value(v) {}
  LogField(std::string_view n, double v) : name(n), value(v) {}
  LogField(std::string_view n, absl::Duration v);
  LogField(std::string_view n, absl::Time v);
  LogField(std::string_view n, const absl::Status& v);

  std::string name;
  std::variant<std::string, int64_t, uint64_t, double, bool> value;
};

// One log line without its newline (the pure part of JsonLogger::Log).
std::string FormatLogLine(absl::Time ts, LogLevel level, std::string_view msg, std::string_view key,
                          std::span<const LogField> fields);

// RFC 3339 in UTC with milliseconds: "2025-01-02T03:04:05.678Z".
std::string FormatRfc3339Millis(absl::Time t);

class JsonLogger {
 public:
  // `clock` and `out` must outlive the logger. Lines below `min_level` are dropped.
  explicit JsonLogger(const Clock& clock, std::ostream& out = std::cerr,
                      LogLevel min_level = LogLevel::kInfo);

  void Log(LogLevel level, std::string_view msg, std::string_view key = {},
           std::initializer_list<LogField> fields = {});
  void Debug(std::string_view msg, std::string_view key = {},
             std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kDebug, msg, key, fields);
  }
  void Info(std::string_view msg, std::string_view key = {},
            std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kInfo, msg, key, fields);
  }
  void Warning(std::string_view msg, std::string_view key = {},
               std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kWarning, msg, key, fields);
  }
  void Error(std::string_view msg, std::string_view key = {},
             std::initializer_list<LogField> fields = {}) {
    Log(LogLevel::kError, msg, key, fields);
  }

  bool Enabled(LogLevel level) const;
  void set_min_level(LogLevel level);

 private:
  const Clock& clock_;
  mutable absl::Mutex mu_;
  std::ostream& out_ ABSL_GUARDED_BY(mu_);
  LogLevel min_level_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_COMMON_JSON_LOG_H_
