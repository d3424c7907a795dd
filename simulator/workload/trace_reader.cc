// Trace readers: see trace_reader.h. Hand-written CSV and timestamp parsing (the formats are small
// and fixed, and hand parsing keeps full nanosecond precision and exact error locations); nlohmann
// json for Mooncake's JSON lines, with its exceptions caught per line.
#include "simulator/workload/trace_reader.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "simulator/core/rng.h"

namespace twinscale::sim {
namespace {

constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();
// Relative timestamps beyond this (about 31 years) are rejected, so ns arithmetic never overflows.
constexpr double kMaxRelativeSeconds = 1e9;
constexpr int64_t kMaxRelativeMillis = 1'000'000'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;

// The API takes std::string_view; this abseil build has its own absl::string_view.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Errors ---------------------------------------------------------------------------------

// At most 40 characters of the offending text, quoted, so a garbage line can't flood a log.
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() <= kMax) return absl::StrCat("\"", s, "\"");
  return absl::StrCat("\"", s.substr(0, kMax), "...\"");
}

absl::Status LineError(absl::string_view name, int64_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", what));
}

absl::Status NoRequests(absl::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": no requests"));
}

// ---- Lines ------------------------------------------------------------------------------------

// Iterates the non-blank lines of `text` with their 1-based numbers; handles LF and CRLF and a
// leading UTF-8 byte-order mark. Lines come back with surrounding whitespace removed.
class Lines {
 public:
  explicit Lines(absl::string_view text) : rest_(text) {
    if (absl::StartsWith(rest_, "\xEF\xBB\xBF")) rest_.remove_prefix(3);
  }

  bool Next(absl::string_view& line, int64_t& number) {
    while (!rest_.empty()) {
      const size_t nl = rest_.find('\n');
      absl::string_view raw = rest_.substr(0, nl);
      rest_ = nl == absl::string_view::npos ? absl::string_view() : rest_.substr(nl + 1);
      ++number_;
      raw = absl::StripAsciiWhitespace(raw);
      if (raw.empty()) continue;
      line = raw;
      number = number_;
      return true;
    }
    return false;
  }

 private:
  absl::string_view rest_;
  int64_t number_ = 0;
};

// ---- CSV ----------------------------------------------------------------------------------------

// Splits one CSV line into `fields` (cleared first), each trimmed; a field in double quotes may
// contain commas (a doubled quote inside is left doubled: no field we read contains one).
// Returns false for an unterminated quote.
bool SplitCsv(absl::string_view line, std::vector<absl::string_view>& fields) {
  fields.clear();
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      size_t j = i + 1;
      while (true) {
        j = line.find('"', j);
        if (j == absl::string_view::npos) return false;
        if (j + 1 < line.size() && line[j + 1] == '"') {
          j += 2;
          continue;
        }
        break;
      }
      fields.push_back(line.substr(i + 1, j - i - 1));
      const size_t comma = line.find(',', j + 1);
      if (comma == absl::string_view::npos) return true;
      i = comma + 1;
      continue;
    }
    const size_t comma = line.find(',', i);
    const absl::string_view field =
        line.substr(i, comma == absl::string_view::npos ? absl::string_view::npos : comma - i);
    fields.push_back(absl::StripAsciiWhitespace(field));
    if (comma == absl::string_view::npos) return true;
    i = comma + 1;
  }
}

// Index of the header column named `name` (case-insensitive), if any.
std::optional<size_t> FindColumn(const std::vector<absl::string_view>& header,
                                 absl::string_view name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (absl::EqualsIgnoreCase(header[i], name)) return i;
  }
  return std::nullopt;
}

// Finds every column in `names`, in order, or explains which is missing.
absl::Status FindColumns(const std::vector<absl::string_view>& header,
                         const std::vector<absl::string_view>& names, absl::string_view name,
                         int64_t line, std::vector<size_t>& columns) {
  columns.clear();
  for (absl::string_view want : names) {
    const std::optional<size_t> i = FindColumn(header, want);
    if (!i.has_value()) {
      return LineError(name, line,
                       absl::StrCat("missing column \"", want,
                                    "\" in header (have: ", absl::StrJoin(header, ", "), ")"));
    }
    columns.push_back(*i);
  }
  return absl::OkStatus();
}

// A token count: a non-negative integer below 2^31; 0 is clamped to 1 by the callers.
absl::Status ParseTokens(absl::string_view field, absl::string_view column, absl::string_view name,
                         int64_t line, int64_t& out) {
  if (!absl::SimpleAtoi(field, &out)) {
    return LineError(name, line, absl::StrCat("bad number ", Quote(field), " in ", column));
  }
  if (out < 0) return LineError(name, line, absl::StrCat("negative ", column, " ", out));
  if (out > kMaxTokens) {
    return LineError(name, line, absl::StrCat(column, " ", out, " is too large (max 2^31-1)"));
  }
  return absl::OkStatus();
}

int32_t AtLeastOne(int64_t tokens) { return tokens < 1 ? 1 : static_cast<int32_t>(tokens); }

// ---- Civil timestamps
// -----------------------------------------------------------------------------

// Reads exactly `n` digits at s[pos...], advancing pos.
bool ReadDigits(absl::string_view s, size_t& pos, int n, int& out) {
  if (pos + static_cast<size_t>(n) > s.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = s[pos + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += static_cast<size_t>(n);
  out = v;
  return true;
}

bool Expect(absl::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

// "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" to ns since the Unix epoch (UTC). On failure
// returns false and says why in `why`.
bool ParseCivilTimestamp(absl::string_view s, int64_t& ns, std::string& why) {
  size_t pos = 0;
  int y, mo, d, h, mi, sec;
  if (!ReadDigits(s, pos, 4, y) || !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, mo) ||
      !Expect(s, pos, '-') || !ReadDigits(s, pos, 2, d)) {
    why = "date is not YYYY-MM-DD";
    return false;
  }
  if (pos >= s.size() || (s[pos] != ' ' && s[pos] != 'T')) {
    why = "expected a space or T between date and time";
    return false;
  }
  ++pos;
  if (!ReadDigits(s, pos, 2, h) || !Expect(s, pos, ':') || !ReadDigits(s, pos, 2, mi) ||
      !Expect(s, pos, ':') || !ReadDigits(s, pos, 2, sec)) {
    why = "time is not HH:MM:SS";
    return false;
  }
  if (y < 1970 || y > 2200) {
    why = "year outside 1970-2200";
    return false;
  }
  const std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(mo),
                                        std::chrono::day(d)};
  if (!ymd.ok()) {
    why = "no such date";
    return false;
  }
  if (h > 23 || mi > 59 || sec > 59) {
    why = "time of day out of range";
    return false;
  }
  int64_t frac_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    int64_t scale = 100'000'000;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        frac_ns += (s[pos] - '0') * scale;
        scale /= 10;
      }
      ++digits;
      ++pos;
    }
    if (digits == 0) {
      why = "no digits after the decimal point";
      return false;
    }
  }
  int64_t zone_seconds = 0;
  if (pos < s.size()) {
    const char c = s[pos];
    if (c == 'Z' || c == 'z') {
      ++pos;
    } else if (c == '+' || c == '-') {
      ++pos;
      int zh, zm;
      if (!ReadDigits(s, pos, 2, zh)) {
        why = "zone offset is not +HH:MM";
        return false;
      }
      if (pos < s.size() && s[pos] == ':') ++pos;
      if (!ReadDigits(s, pos, 2, zm) || zh > 23 || zm > 59) {
        why = "zone offset is not +HH:MM";
        return false;
      }
      zone_seconds = (c == '+' ? 1 : -1) * (zh * 3600 + zm * 60);
    }
  }
  if (pos != s.size()) {
    why = absl::StrCat("unexpected text ", Quote(s.substr(pos)), " after the time");
    return false;
  }
  const int64_t days = std::chrono::sys_days(ymd).time_since_epoch().count();
  // Local time minus the zone's offset is UTC; years 1970-2200 keep this within int64.
  const int64_t seconds = days * 86400 + h * 3600 + mi * 60 + sec - zone_seconds;
  ns = seconds * kNanosPerSecond + frac_ns;
  return true;
}

// ---- CSV traces (Azure, BurstGPT) -----------------------------------------------------------

// One data row of a CSV trace: the time field as written, the two token counts parsed.
struct CsvTraceRow {
  absl::string_view time;
  int64_t prompt = 0, output = 0;
  int64_t line = 0;
};

// The rows of a CSV trace whose header names `columns` (time, prompt tokens, output tokens), in
// file order, each handed to `row` (which may fail the read with its own error). The header, field
// counts, quoting and token counts are checked here, with the line number in every error.
absl::Status ForEachCsvTraceRow(absl::string_view text, absl::string_view name,
                                const std::array<const char*, 3>& columns,
                                const std::function<absl::Status(const CsvTraceRow&)>& row) {
  Lines lines(text);
  absl::string_view line;
  int64_t number = 0;
  if (!lines.Next(line, number)) return NoRequests(name);
  std::vector<absl::string_view> header, fields;
  if (!SplitCsv(line, header)) return LineError(name, number, "unterminated quote in header");
  std::vector<size_t> cols;
  if (absl::Status s =
          FindColumns(header, {columns[0], columns[1], columns[2]}, name, number, cols);
      !s.ok())
    return s;
  while (lines.Next(line, number)) {
    if (!SplitCsv(line, fields)) return LineError(name, number, "unterminated quote");
    if (fields.size() != header.size()) {
      return LineError(name, number,
                       absl::StrCat("expected ", header.size(), " fields, got ", fields.size()));
    }
    CsvTraceRow r;
    r.time = fields[cols[0]];
    r.line = number;
    if (absl::Status s = ParseTokens(fields[cols[1]], columns[1], name, number, r.prompt); !s.ok())
      return s;
    if (absl::Status s = ParseTokens(fields[cols[2]], columns[2], name, number, r.output); !s.ok())
      return s;
    if (absl::Status s = row(r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Notes a row (at file line `line`) earlier than the row before it.
void NoteOrder(Trace& trace, SimTime arrival, int64_t line) {
  if (trace.requests.empty() || arrival >= trace.requests.back().arrival) return;
  if (trace.rows_out_of_order++ == 0) trace.first_out_of_order_line = line;
}

void AddRequest(Trace& trace, SimTime arrival, int64_t prompt, int64_t output, int64_t line) {
  NoteOrder(trace, arrival, line);
  RequestSpec r;
  r.arrival = arrival;
  r.prompt_tokens = AtLeastOne(prompt);
  r.output_tokens = AtLeastOne(output);
  trace.requests.push_back(std::move(r));
}

absl::StatusOr<Trace> ParseAzureImpl(absl::string_view text, absl::string_view name) {
  Trace trace;
  trace.source = std::string(name);
  std::string why;
  if (absl::Status s = ForEachCsvTraceRow(
          text, name, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
          [&](const CsvTraceRow& r) -> absl::Status {
            int64_t ns = 0;
            if (!ParseCivilTimestamp(r.time, ns, why)) {
              return LineError(name, r.line,
                               absl::StrCat("bad TIMESTAMP ", Quote(r.time), ": ", why));
            }
            // Absolute for now; NormalizeTrace makes it relative.
            AddRequest(trace, SimTime::FromNanos(ns), r.prompt, r.output, r.line);
            return absl::OkStatus();
          });
      !s.ok())
    return s;
  if (trace.requests.empty()) return NoRequests(name);
  NormalizeTrace(trace);
  return trace;
}

absl::StatusOr<Trace> ParseBurstGptImpl(absl::string_view text, absl::string_view name,
                                        const TraceReadOptions& options) {
  Trace trace;
  trace.source = std::string(name);
  if (absl::Status s = ForEachCsvTraceRow(
          text, name, {"Timestamp", "Request tokens", "Response tokens"},
          [&](const CsvTraceRow& r) -> absl::Status {
            double seconds = 0;
            if (!absl::SimpleAtod(r.time, &seconds) || !std::isfinite(seconds)) {
              return LineError(name, r.line,
                               absl::StrCat("bad number ", Quote(r.time), " in Timestamp"));
            }
            if (seconds < 0)
              return LineError(name, r.line, absl::StrCat("negative Timestamp ", r.time));
            if (seconds > kMaxRelativeSeconds) {
              return LineError(name, r.line, absl::StrCat("Timestamp ", r.time, " is too large"));
            }
            if (r.output == 0 && !options.include_failed)
              return absl::OkStatus();  // a failed request
            AddRequest(trace, SimTime::FromSecondsF(seconds), r.prompt, r.output, r.line);
            return absl::OkStatus();
          });
      !s.ok())
    return s;
  if (trace.requests.empty()) return NoRequests(name);
  NormalizeTrace(trace);
  return trace;
}

// ---- Mooncake ---------------------------------------------------------------------------------

using Json = nlohmann::json;

// A non-negative integer JSON value no larger than `max` (floats with an integral value pass).
absl::Status JsonCount(const Json& object, const char* key, int64_t max, absl::string_view name,
                       int64_t line, int64_t& out) {
  const auto it = object.find(key);
  if (it == object.end()) return LineError(name, line, absl::StrCat("missing \"", key, "\""));
  const Json& v = *it;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      return LineError(name, line, absl::StrCat("\"", key, "\" ", u, " is too large"));
    }
    out = static_cast<int64_t>(u);
    return absl::OkStatus();
  }
  if (v.is_number_integer()) {  // signed: nlohmann stores non-negative literals as unsigned
    return LineError(name, line, absl::StrCat("negative \"", key, "\" ", v.get<int64_t>()));
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d < 0) {
      return LineError(name, line, absl::StrCat("negative \"", key, "\" ", d));
    }
    if (!std::isfinite(d) || d != std::floor(d)) {
      return LineError(name, line, absl::StrCat("\"", key, "\" must be an integer, got ", d));
    }
    if (d > static_cast<double>(max)) {
      return LineError(name, line, absl::StrCat("\"", key, "\" ", d, " is too large"));
    }
    out = static_cast<int64_t>(d);
    return absl::OkStatus();
  }
  return LineError(name, line, absl::StrCat("\"", key, "\" must be a number, got ", v.type_name()));
}

absl::Status ParseMooncakeLine(absl::string_view line, absl::string_view name, int64_t number,
                               RequestSpec& r) {
  Json object;
  try {
    object = Json::parse(line.begin(), line.end());
  } catch (const std::exception& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep the column and reason.
    absl::string_view what = e.what();
    if (const size_t p = what.find("] "); p != absl::string_view::npos) what.remove_prefix(p + 2);
    return LineError(name, number, absl::StrCat("invalid JSON: ", what));
  }
  if (!object.is_object()) {
    return LineError(name, number,
                     absl::StrCat("expected a JSON object, got ", object.type_name()));
  }
  int64_t ms = 0, prompt = 0, output = 0;
  // Timestamps: integer milliseconds in the release; a fractional value keeps its precision.
  const auto ts = object.find("timestamp");
  if (ts == object.end()) return LineError(name, number, "missing \"timestamp\"");
  if (ts->is_number_float()) {
    const double d = ts->get<double>();
    if (!std::isfinite(d)) return LineError(name, number, "\"timestamp\" is not finite");
    if (d < 0) return LineError(name, number, absl::StrCat("negative \"timestamp\" ", d));
    if (d > static_cast<double>(kMaxRelativeMillis)) {
      return LineError(name, number, absl::StrCat("\"timestamp\" ", d, " is too large"));
    }
    r.arrival = SimTime::FromNanos(std::llround(d * 1e6));
  } else {
    if (absl::Status s = JsonCount(object, "timestamp", kMaxRelativeMillis, name, number, ms);
        !s.ok()) {
      return s;
    }
    r.arrival = SimTime::FromNanos(ms * 1'000'000);
  }
  if (absl::Status s = JsonCount(object, "input_length", kMaxTokens, name, number, prompt);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = JsonCount(object, "output_length", kMaxTokens, name, number, output);
      !s.ok()) {
    return s;
  }
  r.prompt_tokens = AtLeastOne(prompt);
  r.output_tokens = AtLeastOne(output);
  r.prefix_hashes.clear();
  const auto hashes = object.find("hash_ids");
  if (hashes != object.end() && !hashes->is_null()) {
    if (!hashes->is_array()) {
      return LineError(name, number,
                       absl::StrCat("\"hash_ids\" must be an array, got ", hashes->type_name()));
    }
    r.prefix_hashes.reserve(hashes->size());
    for (size_t i = 0; i < hashes->size(); ++i) {
      const Json& h = (*hashes)[i];
      if (!h.is_number_unsigned()) {
        return LineError(name, number,
                         absl::StrCat("\"hash_ids\"[", i, "] must be a non-negative integer, got ",
                                      Quote(h.dump())));
      }
      r.prefix_hashes.push_back(h.get<uint64_t>());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Trace> ParseMooncakeImpl(absl::string_view text, absl::string_view name,
                                        const TraceReadOptions& options) {
  const int64_t quantum = options.mooncake_quantum.nanos();
  // The bound keeps ts + jitter inside int64 (timestamps are at most 1e18 ns).
  if (options.mooncake_jitter && (quantum <= 0 || quantum > 1'000'000'000'000'000'000)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": mooncake_quantum must be in (0, 1e18] ns, got ", quantum));
  }
  Trace trace;
  trace.source = std::string(name);
  Lines lines(text);
  absl::string_view line;
  int64_t number = 0;
  while (lines.Next(line, number)) {
    RequestSpec r;
    if (absl::Status s = ParseMooncakeLine(line, name, number, r); !s.ok()) return s;
    NoteOrder(trace, r.arrival, number);
    trace.requests.push_back(std::move(r));
  }
  if (trace.requests.empty()) return NoRequests(name);
  if (options.mooncake_jitter) {
    // Draw in (timestamp, file order) so the result doesn't depend on how rows are interleaved.
    std::stable_sort(
        trace.requests.begin(), trace.requests.end(),
        [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
    Rng rng(options.seed, 0, Stream::kTraceJitter);
    for (RequestSpec& r : trace.requests) {
      r.arrival =
          r.arrival +
          SimDuration::Nanos(static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(quantum))));
    }
  }
  NormalizeTrace(trace);
  return trace;
}

// ---- Detection ----------------------------------------------------------------------------------

absl::StatusOr<TraceFormat> DetectFormat(absl::string_view text, absl::string_view name) {
  Lines lines(text);
  absl::string_view line;
  int64_t number = 0;
  if (!lines.Next(line, number)) return NoRequests(name);
  if (line.front() == '{') return TraceFormat::kMooncake;
  std::vector<absl::string_view> header;
  if (SplitCsv(line, header)) {
    if (FindColumn(header, "ContextTokens").has_value()) return TraceFormat::kAzure;
    if (FindColumn(header, "Request tokens").has_value()) return TraceFormat::kBurstGpt;
  }
  return LineError(name, number,
                   "cannot detect the trace format: want a JSON object (Mooncake) or a CSV header "
                   "with ContextTokens (Azure) or \"Request tokens\" (BurstGPT)");
}

// Runs a parser, turning any exception that escapes it (allocation failure) into a status.
template <typename F>
absl::StatusOr<Trace> NoThrow(absl::string_view name, F&& parse) {
  try {
    return parse();
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(absl::StrCat(name, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Absl(name));
  if (lower == "auto") return TraceFormat::kAuto;
  if (lower == "azure") return TraceFormat::kAzure;
  if (lower == "mooncake") return TraceFormat::kMooncake;
  if (lower == "burstgpt") return TraceFormat::kBurstGpt;
  return absl::InvalidArgumentError(absl::StrCat("unknown trace format ", Quote(Absl(name)),
                                                 " (want auto, azure, mooncake or burstgpt)"));
}

absl::StatusOr<Trace> ParseAzureCsv(std::string_view text, std::string_view name) {
  return NoThrow(Absl(name), [&] { return ParseAzureImpl(Absl(text), Absl(name)); });
}

absl::StatusOr<Trace> ParseMooncakeJsonl(std::string_view text, std::string_view name,
                                         const TraceReadOptions& options) {
  return NoThrow(Absl(name), [&] { return ParseMooncakeImpl(Absl(text), Absl(name), options); });
}

absl::StatusOr<Trace> ParseBurstGptCsv(std::string_view text, std::string_view name,
                                       const TraceReadOptions& options) {
  return NoThrow(Absl(name), [&] { return ParseBurstGptImpl(Absl(text), Absl(name), options); });
}

absl::StatusOr<Trace> ParseTrace(std::string_view text, std::string_view name,
                                 const TraceReadOptions& options) {
  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) {
    absl::StatusOr<TraceFormat> detected = DetectFormat(Absl(text), Absl(name));
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  switch (format) {
    case TraceFormat::kAzure:
      return ParseAzureCsv(text, name);
    case TraceFormat::kMooncake:
      return ParseMooncakeJsonl(text, name, options);
    case TraceFormat::kBurstGpt:
      return ParseBurstGptCsv(text, name, options);
    case TraceFormat::kAuto:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(Absl(name), ": unknown trace format"));
}

namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    text.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
  }
  return text;
}

// Rates above this (req/s) are taken for a corrupt file rather than traffic.
constexpr double kMaxCurveRate = 1e9;
// Window starts may drift from the grid by this much (seconds) before a row is refused.
constexpr double kGridSlackSeconds = 1e-3;

absl::StatusOr<RecordedRateCurve> ParseServeGenRateImpl(absl::string_view text,
                                                        absl::string_view name) {
  Lines lines(text);
  absl::string_view line;
  int64_t number = 0;
  std::vector<absl::string_view> fields;
  if (!lines.Next(line, number)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no windows"));
  }
  if (!SplitCsv(line, fields) || fields.size() < 2 || fields[0] != "window_start_s" ||
      fields[1] != "aggregate_rate_rps") {
    return LineError(
        name, number,
        absl::StrCat("want the header window_start_s,aggregate_rate_rps[,...], got ", Quote(line)));
  }
  RecordedRateCurve curve;
  curve.source = std::string(name);
  double first = 0, window = 0;
  while (lines.Next(line, number)) {
    if (!SplitCsv(line, fields) || fields.size() < 2) {
      return LineError(name, number,
                       absl::StrCat("want window_start_s,aggregate_rate_rps, got ", Quote(line)));
    }
    double start = 0, rate = 0;
    if (!absl::SimpleAtod(fields[0], &start) || !std::isfinite(start) || start < 0 ||
        start > kMaxRelativeSeconds) {
      return LineError(name, number,
                       absl::StrCat("window_start_s ", Quote(fields[0]),
                                    " is not a number of seconds in [0, 1e9]"));
    }
    if (!absl::SimpleAtod(fields[1], &rate) || !std::isfinite(rate) || rate < 0 ||
        rate > kMaxCurveRate) {
      return LineError(name, number,
                       absl::StrCat("aggregate_rate_rps ", Quote(fields[1]),
                                    " is not a rate in [0, 1e9] req/s"));
    }
    const size_t i = curve.rates.size();
    if (i == 0) {
      first = start;
    } else if (i == 1) {
      window = start - first;
      if (!(window >= 1e-3)) {
        return LineError(name, number,
                         absl::StrCat("window_start_s ", Quote(fields[0]),
                                      " does not follow the previous window's start"));
      }
    } else if (std::abs(start - (first + window * static_cast<double>(i))) > kGridSlackSeconds) {
      return LineError(name, number,
                       absl::StrCat("window_start_s ", Quote(fields[0]), " is off the ", window,
                                    "-s grid (want ", first + window * static_cast<double>(i),
                                    "): windows must be consecutive"));
    }
    curve.rates.push_back(rate);
  }
  if (curve.rates.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": need at least two windows (the window length is their spacing)"));
  }
  curve.window = SimDuration::Nanos(std::llround(window * 1e9));
  return curve;
}

}  // namespace

absl::StatusOr<Trace> ReadTraceFile(const std::string& path, const TraceReadOptions& options) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path, options);
}

absl::StatusOr<RecordedRateCurve> ParseServeGenRateCsv(std::string_view text,
                                                       std::string_view name) {
  return ParseServeGenRateImpl(Absl(text), Absl(name));
}

absl::StatusOr<RecordedRateCurve> ReadRateCurveFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseServeGenRateCsv(*text, path);
}

}  // namespace twinscale::sim
