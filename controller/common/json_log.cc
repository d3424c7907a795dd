// Structured JSON logs: see json_log.h.
#include "controller/common/json_log.h"

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace twinscale {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr char kRedacted[] = "[REDACTED]";

bool NamesASecret(std::string_view name) {
  static constexpr std::array<std::string_view, 11> kWords = {
      "token",  "password",    "passwd",     "secret",     "authorization", "api_key",
      "apikey", "private_key", "privatekey", "credential", "cookie"};
  std::string lower(name);
  for (char& c : lower) {
    c = absl::ascii_tolower(static_cast<unsigned char>(c));
    if (c == '-') c = '_';
  }
  for (std::string_view w : kWords) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

// Replaces what looks like a credential inside free text: "Bearer <token>" (any case) and PEM
// private key blocks (up to their END line, or to the end of the text).
std::string Scrub(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    if (rest.size() > 7 &&
        absl::StartsWithIgnoreCase(absl::string_view(rest.data(), 7), "bearer ")) {
      out.append(rest.substr(0, 7));
      size_t j = 7;
      while (j < rest.size() && rest[j] == ' ') ++j;
      size_t k = j;
      while (k < rest.size() && rest[k] != ' ' && rest[k] != '"' && rest[k] != '\'' &&
             rest[k] != ',' && rest[k] != '\n' && rest[k] != '\r' && rest[k] != '\t') {
        ++k;
      }
      if (k > j) {
        out += kRedacted;
        i += k;
        continue;
      }
      i += 7;
      continue;
    }
    if (rest.starts_with("-----BEGIN ")) {
      const size_t line_end = rest.find("-----", 11);
      if (line_end != std::string_view::npos &&
          rest.substr(0, line_end).find("PRIVATE KEY") != std::string_view::npos) {
        const size_t end = rest.find("-----END ", line_end);
        size_t stop = rest.size();
        if (end != std::string_view::npos) {
          const size_t close = rest.find("-----", end + 9);
          stop = close == std::string_view::npos ? rest.size() : close + 5;
        }
        out += kRedacted;
        i += stop;
        continue;
      }
    }
    out += text[i];
    ++i;
  }
  return out;
}

bool IsReserved(std::string_view name) {
  return name == "ts" || name == "level" || name == "msg" || name == "key";
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string FormatRfc3339Millis(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

LogField::LogField(std::string_view n, absl::Duration v)
    : name(n), value(absl::FormatDuration(v)) {}
LogField::LogField(std::string_view n, absl::Time v) : name(n), value(FormatRfc3339Millis(v)) {}
LogField::LogField(std::string_view n, const absl::Status& v) : name(n), value(v.ToString()) {}

std::string FormatLogLine(absl::Time ts, LogLevel level, std::string_view msg, std::string_view key,
                          std::span<const LogField> fields) {
  OrderedJson line = OrderedJson::object();
  line["ts"] = FormatRfc3339Millis(ts);
  line["level"] = std::string(LogLevelName(level));
  line["msg"] = Scrub(msg);
  if (!key.empty()) line["key"] = Scrub(key);
  for (const LogField& f : fields) {
    const std::string name = IsReserved(f.name) ? "field_" + f.name : f.name;
    if (NamesASecret(f.name)) {
      line[name] = kRedacted;
      continue;
    }
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            line[name] = Scrub(v);
          } else if constexpr (std::is_same_v<T, double>) {
            if (std::isfinite(v)) {
              line[name] = v;
            } else {
              line[name] = nullptr;
            }
          } else {
            line[name] = v;
          }
        },
        f.value);
  }
  return line.dump(-1, ' ', /*ensure_ascii=*/false, OrderedJson::error_handler_t::replace);
}

JsonLogger::JsonLogger(const Clock& clock, std::ostream& out, LogLevel min_level)
    : clock_(clock), out_(out), min_level_(min_level) {}

bool JsonLogger::Enabled(LogLevel level) const {
  absl::MutexLock lock(&mu_);
  return level >= min_level_;
}

void JsonLogger::set_min_level(LogLevel level) {
  absl::MutexLock lock(&mu_);
  min_level_ = level;
}

void JsonLogger::Log(LogLevel level, std::string_view msg, std::string_view key,
                     std::initializer_list<LogField> fields) {
  if (!Enabled(level)) return;
  std::string line = FormatLogLine(clock_.Now(), level, msg, key,
                                   std::span<const LogField>(fields.begin(), fields.size()));
  line += '\n';
  absl::MutexLock lock(&mu_);
  out_.write(line.data(), static_cast<std::streamsize>(line.size()));
  out_.flush();
}

}  // namespace twinscale
