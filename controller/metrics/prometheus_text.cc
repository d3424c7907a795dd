// Prometheus text format 0.0.4 parser: a single pass over the lines, no recursion, no regexes.
// See prometheus_text.h for the grammar and the family-grouping rule.
//
// Cost. `twinscale replay` parses every simulated pod's page every 15 s, so the common case is
// kept cheap (metrics_bench measures it):
//   - A sample line of the usual shape goes through ParseCommonSample, a fast path accepting a
//     subset of the grammar and reading it exactly as ParseSample would; any other line (and any
//     error) goes through ParseSample, the general reader, which is what defines the grammar.
//   - Lines are parsed into views of the text (PendingSample, LabelText); the Samples are built
//     only at the end, straight into their families' vectors sized once: every string of the
//     result is allocated exactly once. Those allocations, which the Exposition type requires,
//     are about half of what remains.
//   - A sample with the previous sample's name is recognised by one compare and joins the same
//     family without a lookup; numbers take a Clinger fast path before from_chars.
#include "controller/metrics/prometheus_text.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace twinscale::metrics {
namespace {

// Error messages quote at most this many bytes of the offending token, so a megabyte of garbage
// on one line doesn't end up in a log line.
constexpr size_t kMaxQuoted = 48;

// This abseil build (Debian's 20220623) has its own absl::string_view, distinct from
// std::string_view; the public API speaks std::string_view, so absl calls go through Av().
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Character classes, one table lookup per byte on the hot path.
enum : uint8_t {
  kBlankBit = 1,
  kMetricNameStartBit = 2,  // [a-zA-Z_:]
  kMetricNameCharBit = 4,   // [a-zA-Z0-9_:]
  kLabelNameStartBit = 8,   // [a-zA-Z_]
  kLabelNameCharBit = 16,   // [a-zA-Z0-9_]
};

constexpr std::array<uint8_t, 256> kCharClass = [] {
  std::array<uint8_t, 256> t{};
  t[' '] = t['\t'] = kBlankBit;
  for (int c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    if (alpha || c == '_' || c == ':') t[c] |= kMetricNameStartBit;
    if (alpha || digit || c == '_' || c == ':') t[c] |= kMetricNameCharBit;
    if (alpha || c == '_') t[c] |= kLabelNameStartBit;
    if (alpha || digit || c == '_') t[c] |= kLabelNameCharBit;
  }
  return t;
}();

bool HasClass(char c, uint8_t bit) {
  return (kCharClass[static_cast<unsigned char>(c)] & bit) != 0;
}
bool IsBlank(char c) { return HasClass(c, kBlankBit); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsMetricNameStart(char c) { return HasClass(c, kMetricNameStartBit); }
bool IsMetricNameChar(char c) { return HasClass(c, kMetricNameCharBit); }
bool IsLabelNameStart(char c) { return HasClass(c, kLabelNameStartBit); }
bool IsLabelNameChar(char c) { return HasClass(c, kLabelNameCharBit); }

std::string Quote(std::string_view s) {
  if (s.size() <= kMaxQuoted) return absl::StrCat("'", absl::CHexEscape(Av(s)), "'");
  return absl::StrCat("'", absl::CHexEscape(Av(s.substr(0, kMaxQuoted))), "...'");
}

bool IsValidMetricName(std::string_view s) {
  if (s.empty() || !IsMetricNameStart(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsMetricNameChar(c); });
}

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as Go's
// utf8.ValidString, which the reference parser applies to label values.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// For a well-formed decimal that from_chars found out of range: whether it is too small rather
// than too large, judged by the position of its first significant digit.
bool Underflows(std::string_view body) {
  const size_t e = body.find_first_of("eE");
  const std::string_view mantissa = body.substr(0, e);
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = body.substr(e + 1);
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
    if (ec == std::errc::result_out_of_range)
      exponent = digits[0] == '-' ? -(int64_t{1} << 40) : int64_t{1} << 40;
  }
  const size_t dot = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  while (!whole.empty() && whole[0] == '0') whole.remove_prefix(1);
  if (!whole.empty()) return exponent + static_cast<int64_t>(whole.size()) < 0;
  const size_t zeros = std::min(fraction.find_first_not_of('0'), fraction.size());
  return exponent - static_cast<int64_t>(zeros) < 0;
}

// Clinger's fast path, for the decimals exporters print ("0.0", "1.7e+09", "0.025", "4096"):
// digits with at most one '.', at most 19 of them, an optional exponent. When the digits' value is
// at most 2^53 and the decimal exponent within +-22, both operands below are exact doubles, so one
// IEEE multiplication or division gives the correctly rounded result: the double from_chars gives.
// False for anything else (and on a platform evaluating doubles in excess precision), which then
// goes the general way.
bool ParseShortDecimal(std::string_view s, double* out) {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  constexpr int kMaxDigits = 19;  // below 2^64
  const char* p = s.data();
  const char* const end = p + s.size();
  // The mantissa wraps around past 19 digits (unsigned arithmetic); such input is refused below.
  uint64_t mantissa = 0;
  const char* const integer_start = p;
  for (; p != end && IsDigit(*p); ++p) mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
  const ptrdiff_t integer_digits = p - integer_start;
  ptrdiff_t fraction_digits = 0;
  if (p != end && *p == '.') {
    const char* const fraction_start = ++p;
    for (; p != end && IsDigit(*p); ++p) mantissa = mantissa * 10 + static_cast<uint64_t>(*p - '0');
    fraction_digits = p - fraction_start;
  }
  const ptrdiff_t digits = integer_digits + fraction_digits;
  if (digits == 0 || digits > kMaxDigits) return false;
  int exp10 = -static_cast<int>(fraction_digits);
  if (p != end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative = false;
    if (p != end && (*p == '+' || *p == '-')) negative = *p++ == '-';
    int exponent = 0;
    int exponent_digits = 0;
    for (; p != end && IsDigit(*p); ++p) {
      if (++exponent_digits > 4) return false;
      exponent = exponent * 10 + (*p - '0');
    }
    if (exponent_digits == 0) return false;
    exp10 += negative ? -exponent : exponent;
  }
  if (p != end || mantissa > (uint64_t{1} << 53) || exp10 < -22 || exp10 > 22) return false;
  const double m = static_cast<double>(mantissa);
  *out = exp10 < 0 ? m / kPow10[-exp10] : m * kPow10[exp10];
  return true;
#else
  return false;
#endif
}

// A sample value or an `le`/`quantile` label: Go's strconv.ParseFloat minus hex floats and
// out-of-range magnitudes (see the header).
bool ParseFloatValue(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string_view body = s;
  double sign = 1;
  if (body[0] == '+' || body[0] == '-') {
    if (body[0] == '-') sign = -1;
    body.remove_prefix(1);
  }
  if (double v = 0; ParseShortDecimal(body, &v)) {  // the usual case
    *out = sign * v;
    return true;
  }
  if (EqualsIgnoreCase(s, "nan")) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity")) {
    *out = sign * std::numeric_limits<double>::infinity();
    return true;
  }
  // from_chars would also take "inf", "nan(...)" and so on; only plain decimals get this far.
  if (body.empty()) return false;
  for (char c : body) {
    if (!IsDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return false;
  }
  if (body[0] == '+' || body[0] == '-') return false;  // "+-1", "--1"
  double v = 0;
  const auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ptr != body.data() + body.size()) return false;
  if (ec == std::errc::result_out_of_range && Underflows(body)) {
    v = 0;  // below the smallest subnormal: Go rounds to zero too
  } else if (ec != std::errc()) {
    return false;  // overflow, or not a number at all
  }
  *out = sign * v;
  return true;
}

bool ParseTimestamp(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s[0] == '+') return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::optional<MetricType> ParseType(std::string_view s) {
  if (EqualsIgnoreCase(s, "counter")) return MetricType::kCounter;
  if (EqualsIgnoreCase(s, "gauge")) return MetricType::kGauge;
  if (EqualsIgnoreCase(s, "histogram")) return MetricType::kHistogram;
  if (EqualsIgnoreCase(s, "summary")) return MetricType::kSummary;
  if (EqualsIgnoreCase(s, "untyped")) return MetricType::kUntyped;
  return std::nullopt;
}

// Whether a sample named `sample` belongs to `family` by the suffix rule in the header.
bool Covers(const MetricFamily& family, std::string_view sample) {
  const std::string_view name = family.name;
  if (sample == name) return true;
  if (sample.size() <= name.size() || !sample.starts_with(name)) return false;
  const std::string_view suffix = sample.substr(name.size());
  switch (family.type) {
    case MetricType::kHistogram:
      return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case MetricType::kSummary:
      return suffix == "_sum" || suffix == "_count" || suffix == "_created";
    case MetricType::kCounter:
      return suffix == "_total" || suffix == "_created";
    case MetricType::kGauge:
    case MetricType::kUntyped:
      return false;
  }
  return false;
}

// A read position in one line.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool AtEnd() const { return p_ == end_; }
  char Peek() const { return AtEnd() ? '\0' : *p_; }
  void Advance() { ++p_; }
  // The loops run on locals: through p_, every char read would force a reload and store of p_
  // (a char may alias anything).
  void SkipBlanks() {
    const char* p = p_;
    while (p != end_ && IsBlank(*p)) ++p;
    p_ = p;
  }
  // Reads while `pred` holds.
  template <typename Pred>
  std::string_view ReadWhile(Pred pred) {
    const char* const start = p_;
    const char* p = start;
    while (p != end_ && pred(*p)) ++p;
    p_ = p;
    return std::string_view(start, static_cast<size_t>(p - start));
  }
  std::string_view ReadToken() {
    return ReadWhile([](char c) { return !IsBlank(c); });
  }
  std::string_view Rest() const { return std::string_view(p_, static_cast<size_t>(end_ - p_)); }
  // Precondition: n <= Rest().size().
  void Skip(size_t n) { p_ += n; }

  // Raw access for the label value scan.
  const char* pos() const { return p_; }
  const char* end() const { return end_; }
  void set_pos(const char* p) { p_ = p; }

 private:
  const char* p_;
  const char* end_;
};

// From just after a label value's opening quote: the first '"' or '\\' at or after `p`, or `end`;
// every byte passed is ORed into *high (so bit 7 says whether the value has non-ASCII bytes).
// Eight bytes at a time while none of them is '"', '\\' or non-ASCII, then byte by byte.
const char* ScanLabelValue(const char* p, const char* end, unsigned char* high) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHigh = 0x8080808080808080;
  while (end - p >= 8) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    const uint64_t quote = w ^ (kOnes * '"');
    const uint64_t backslash = w ^ (kOnes * '\\');
    // A zero byte in `quote` or `backslash` sets its high bit here (the usual SWAR test).
    if ((((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w) & kHigh) break;
    p += 8;
  }
  unsigned char h = 0;
  while (p != end && *p != '"' && *p != '\\') h |= static_cast<unsigned char>(*p++);
  *high = h;
  return p;
}

// One label of the sample being parsed, before it is copied into the Sample: the name and, when
// the value had no escapes, the value as views into the line; else the value is in the parser's
// unescaped_[unescaped].
struct LabelText {
  static constexpr size_t kNotEscaped = static_cast<size_t>(-1);
  std::string_view name;
  std::string_view value;
  size_t unescaped = kNotEscaped;
};

struct FamilyState {
  bool has_type = false;
  bool has_help = false;
  size_t num_samples = 0;
};

// A sample line parsed and checked, not yet built: its labels are labels_[first_label,
// first_label + num_labels).
struct PendingSample {
  size_t family;
  std::string_view name;
  size_t first_label;
  size_t num_labels;
  double value;
  std::optional<int64_t> timestamp_ms;
};

// A typical sample line is about 100 bytes with three labels, and a family about a kilobyte of
// text; the lists start with room for that, so they rarely grow and never reserve more than about
// the input's own size.
constexpr size_t kBytesPerSampleGuess = 128;
constexpr size_t kBytesPerLabelGuess = 40;
constexpr size_t kBytesPerFamilyGuess = 1024;

class Parser {
 public:
  absl::StatusOr<Exposition> Run(std::string_view text) {
    pending_.reserve(text.size() / kBytesPerSampleGuess);
    labels_.reserve(text.size() / kBytesPerLabelGuess);
    out_.families.reserve(text.size() / kBytesPerFamilyGuess);
    states_.reserve(text.size() / kBytesPerFamilyGuess);
    by_name_.reserve(text.size() / kBytesPerFamilyGuess);
    size_t start = 0;
    while (start < text.size()) {
      ++line_;
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      start = end + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (absl::Status s = ParseLine(line); !s.ok()) return s;
    }
    BuildSamples();
    return std::move(out_);
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_, ": ", Av(what)));
  }

  absl::Status ParseLine(std::string_view line) {
    if (!line.empty() && IsMetricNameStart(line[0]) && ParseCommonSample(line)) {
      return absl::OkStatus();
    }
    Cursor c(line);
    c.SkipBlanks();
    if (c.AtEnd()) return absl::OkStatus();
    if (c.Peek() == '#') {
      c.Advance();
      return ParseComment(c);
    }
    return ParseSample(c);
  }

  absl::Status ParseComment(Cursor& c) {
    c.SkipBlanks();
    const std::string_view keyword = c.ReadToken();
    const bool is_help = keyword.size() == 4 && std::memcmp(keyword.data(), "HELP", 4) == 0;
    const bool is_type = keyword.size() == 4 && std::memcmp(keyword.data(), "TYPE", 4) == 0;
    if (!is_help && !is_type) return absl::OkStatus();  // plain comment
    c.SkipBlanks();
    if (c.AtEnd()) return absl::OkStatus();  // "# HELP" alone: a comment, as in Go's parser
    const std::string_view name = c.ReadToken();
    if (!IsValidMetricName(name)) {
      return Error(absl::StrCat("invalid metric name ", Quote(name), " in ", Av(keyword), " line"));
    }
    c.SkipBlanks();
    const size_t index = DeclareFamily(name);
    MetricFamily& family = out_.families[index];
    FamilyState& state = states_[index];
    if (is_help) {
      if (state.has_help) return Error(absl::StrCat("second HELP line for ", Quote(name)));
      state.has_help = true;
      return UnescapeHelp(c.Rest(), &family.help);
    }
    if (c.AtEnd()) return absl::OkStatus();  // "# TYPE name" alone: ignored, as in Go's parser
    const std::string_view type_word = c.ReadToken();
    c.SkipBlanks();
    if (!c.AtEnd()) {
      return Error(absl::StrCat("unexpected text after the type: ", Quote(c.Rest())));
    }
    const std::optional<MetricType> type = ParseType(type_word);
    if (!type.has_value()) {
      return Error(absl::StrCat("unknown metric type ", Quote(type_word), " for ", Quote(name)));
    }
    if (state.has_type) return Error(absl::StrCat("second TYPE line for ", Quote(name)));
    if (state.num_samples != 0) {
      return Error(absl::StrCat("TYPE line for ", Quote(name), " after its samples"));
    }
    state.has_type = true;
    family.type = *type;
    return absl::OkStatus();
  }

  absl::Status UnescapeHelp(std::string_view raw, std::string* help) {
    // HELP text keeps its own trailing blanks only if escaped; blanks before a line end are noise.
    while (!raw.empty() && IsBlank(raw.back())) raw.remove_suffix(1);
    help->clear();
    size_t i = raw.find('\\');
    help->assign(raw.data(), std::min(i, raw.size()));  // the usual case: no escapes at all
    if (i == std::string_view::npos) return absl::OkStatus();
    for (; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        help->push_back(raw[i]);
        continue;
      }
      if (i + 1 == raw.size()) return Error("HELP text ends in a lone backslash");
      const char e = raw[++i];
      if (e == '\\') {
        help->push_back('\\');
      } else if (e == 'n') {
        help->push_back('\n');
      } else {
        return Error(
            absl::StrCat("invalid escape sequence ", Quote(raw.substr(i - 1, 2)), " in HELP text"));
      }
    }
    return absl::OkStatus();
  }

  // The family named exactly `name`, created (untyped, no samples) if new; it becomes current.
  size_t DeclareFamily(std::string_view name) {
    // A TYPE line after its HELP line (the usual layout) names the current family again.
    if (current_.has_value()) {
      const std::string& current = out_.families[*current_].name;
      if (current.size() == name.size() &&
          std::memcmp(current.data(), name.data(), name.size()) == 0) {
        return *current_;
      }
    }
    const auto [it, inserted] = by_name_.try_emplace(Av(name), out_.families.size());
    if (inserted) {
      MetricFamily& family = out_.families.emplace_back();
      family.name.assign(name.data(), name.size());
      states_.push_back(FamilyState{});
    }
    current_ = it->second;
    return it->second;
  }

  // FamilyForSample(name), where `same_name` says that `name` is the last sample's name. Then,
  // unless a HELP or TYPE line or a sample of another name moved current_ since, the answer is
  // the last sample's family again: FamilyForSample returns a family that covers the name, and
  // checks the current family first.
  size_t SampleFamily(std::string_view name, bool same_name) {
    if (same_name && last_family_.has_value() && current_ == last_family_) return *last_family_;
    return FamilyForSample(name);
  }

  // The family a sample named `name` joins (see the header).
  size_t FamilyForSample(std::string_view name) {
    if (current_.has_value() && Covers(out_.families[*current_], name)) return *current_;
    if (auto it = by_name_.find(Av(name)); it != by_name_.end()) {
      current_ = it->second;
      return it->second;
    }
    for (std::string_view suffix : {"_bucket", "_sum", "_count", "_created", "_total"}) {
      if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
      auto it = by_name_.find(Av(name.substr(0, name.size() - suffix.size())));
      if (it != by_name_.end() && Covers(out_.families[it->second], name)) {
        current_ = it->second;
        return it->second;
      }
    }
    return DeclareFamily(name);
  }

  // The fast path for the sample lines exporters write: `name{label="value",...} value` with no
  // blanks inside the braces, no escapes, no timestamp, a single blank before the value. It
  // accepts a subset of what ParseSample accepts and reads it the same way; on anything else
  // (including every error) it returns false having added nothing, and ParseSample reads the
  // line from its start. (It may have moved current_ by FamilyForSample, which ParseSample's own
  // call then repeats with the same result.)
  bool ParseCommonSample(std::string_view line) {
    const char* p = line.data();
    const char* const end = p + line.size();
    std::string_view name;
    const size_t n = last_name_.size();
    const bool same_name = n != 0 && line.size() > n && std::memcmp(p, last_name_.data(), n) == 0 &&
                           !IsMetricNameChar(p[n]);
    if (same_name) {
      name = line.substr(0, n);  // the previous sample's name again: known valid
    } else {
      const char* q = p + 1;  // the caller checked the first char
      while (q != end && IsMetricNameChar(*q)) ++q;
      name = std::string_view(p, static_cast<size_t>(q - p));
    }
    p += name.size();
    labels_.resize(label_begin_);
    if (p != end && *p == '{') {
      ++p;
      while (true) {
        if (p == end) return false;
        if (*p == '}') {
          ++p;
          break;
        }
        const char* const label_start = p;
        if (!IsLabelNameStart(*p)) return false;
        ++p;
        while (p != end && IsLabelNameChar(*p)) ++p;
        const std::string_view label(label_start, static_cast<size_t>(p - label_start));
        if (end - p < 2 || p[0] != '=' || p[1] != '"' || label == "__name__") return false;
        p += 2;
        const char* const value_start = p;
        unsigned char high = 0;
        p = ScanLabelValue(p, end, &high);
        if (p == end || *p != '"') return false;  // an escape, or unterminated
        const std::string_view value(value_start, static_cast<size_t>(p - value_start));
        if ((high & 0x80) != 0 && !IsValidUtf8(value)) return false;
        labels_.push_back(LabelText{label, value, LabelText::kNotEscaped});
        ++p;
        if (p == end) return false;
        if (*p == ',') {
          ++p;
        } else if (*p == '}') {
          ++p;
          break;
        } else {
          return false;
        }
      }
    }
    if (p == end || *p != ' ') return false;
    ++p;
    const char* const value_start = p;
    while (p != end && !IsBlank(*p)) ++p;
    if (p != end) return false;  // a timestamp, or trailing blanks
    double value = 0;
    if (!ParseFloatValue(std::string_view(value_start, static_cast<size_t>(p - value_start)),
                         &value)) {
      return false;
    }
    if (labels_.size() - label_begin_ > 16) return false;
    for (size_t i = label_begin_ + 1; i < labels_.size(); ++i) {
      for (size_t j = label_begin_; j < i; ++j) {
        if (labels_[i].name == labels_[j].name) return false;
      }
    }
    const size_t family = SampleFamily(name, same_name);
    if (!CheckTypedLabels(out_.families[family], name).ok()) return false;
    AddSample(family, name, value, std::nullopt);
    return true;
  }

  absl::Status ParseSample(Cursor& c) {
    std::string_view name;
    bool same_name = false;
    if (const std::string_view rest = c.Rest();
        !last_name_.empty() && rest.starts_with(last_name_) &&
        (rest.size() == last_name_.size() || !IsMetricNameChar(rest[last_name_.size()]))) {
      // The previous sample's name again (a histogram's buckets, a counter's series): it is
      // already known to be valid, so one compare replaces the scan.
      name = rest.substr(0, last_name_.size());
      c.Skip(name.size());
      same_name = true;
    } else {
      name = c.ReadWhile([](char ch) { return IsMetricNameChar(ch); });
      if (name.empty() || !IsMetricNameStart(name[0])) {
        return Error(absl::StrCat("invalid metric name at ", Quote(c.Rest())));
      }
    }
    labels_.resize(label_begin_);  // what the fast path left
    const bool blank_after_name = IsBlank(c.Peek());
    c.SkipBlanks();
    if (c.Peek() == '{') {
      c.Advance();
      if (absl::Status s = ParseLabels(c, name); !s.ok()) return s;
      c.SkipBlanks();  // Go's parser doesn't insist on a blank between '}' and the value either
    } else if (!c.AtEnd() && !blank_after_name) {
      return Error(absl::StrCat("invalid character ", Quote(c.Rest().substr(0, 1)),
                                " after metric name ", Quote(name)));
    }
    if (c.AtEnd()) return Error(absl::StrCat("missing value for sample ", Quote(name)));
    const std::string_view value_text = c.ReadToken();
    double value = 0;
    if (!ParseFloatValue(value_text, &value)) {
      return Error(
          absl::StrCat("bad number ", Quote(value_text), " as the value of ", Quote(name)));
    }
    std::optional<int64_t> timestamp_ms;
    c.SkipBlanks();
    if (!c.AtEnd()) {
      const std::string_view ts = c.ReadToken();
      int64_t ms = 0;
      if (!ParseTimestamp(ts, &ms)) {
        return Error(absl::StrCat("bad timestamp ", Quote(ts), " (want integer milliseconds) for ",
                                  Quote(name)));
      }
      timestamp_ms = ms;
      c.SkipBlanks();
      if (!c.AtEnd()) {
        return Error(absl::StrCat("unexpected text after the timestamp: ", Quote(c.Rest())));
      }
    }
    const size_t family = SampleFamily(name, same_name);
    if (absl::Status s = CheckTypedLabels(out_.families[family], name); !s.ok()) return s;
    AddSample(family, name, value, timestamp_ms);
    return absl::OkStatus();
  }

  // Records the sample `name`, with the labels from label_begin_ on, for `family`.
  void AddSample(size_t family, std::string_view name, double value,
                 std::optional<int64_t> timestamp_ms) {
    ++states_[family].num_samples;
    last_name_ = name;
    last_family_ = family;
    pending_.push_back(PendingSample{family, name, label_begin_, labels_.size() - label_begin_,
                                     value, timestamp_ms});
    label_begin_ = labels_.size();
  }

  // Builds the Samples of the whole text, now known good, straight into their families, whose
  // vectors are allocated once at their final size: every string is allocated exactly once and
  // nothing is moved.
  void BuildSamples() {
    for (size_t i = 0; i < out_.families.size(); ++i) {
      out_.families[i].samples.reserve(states_[i].num_samples);
    }
    for (const PendingSample& ps : pending_) {
      Sample& sample = out_.families[ps.family].samples.emplace_back();
      sample.name.assign(ps.name.data(), ps.name.size());
      sample.labels.reserve(ps.num_labels);
      for (size_t i = ps.first_label; i < ps.first_label + ps.num_labels; ++i) {
        const LabelText& l = labels_[i];
        if (l.unescaped == LabelText::kNotEscaped) {
          sample.labels.emplace_back(std::piecewise_construct,
                                     std::forward_as_tuple(l.name.data(), l.name.size()),
                                     std::forward_as_tuple(l.value.data(), l.value.size()));
        } else {
          sample.labels.emplace_back(std::string(l.name), std::move(unescaped_[l.unescaped]));
        }
      }
      sample.value = ps.value;
      sample.timestamp_ms = ps.timestamp_ms;
    }
  }

  // After "{": label pairs up to and including "}", into labels_ (views into the line; a value
  // with escapes is unescaped into unescaped_).
  absl::Status ParseLabels(Cursor& c, std::string_view sample_name) {
    while (true) {
      c.SkipBlanks();
      if (c.AtEnd()) return Error("missing '}' at the end of the label set");
      if (c.Peek() == '}') {
        c.Advance();
        break;
      }
      const std::string_view label = c.ReadWhile([](char ch) { return IsLabelNameChar(ch); });
      if (label.empty() || !IsLabelNameStart(label[0])) {
        return Error(
            absl::StrCat("invalid label name at ", Quote(c.Rest()), " in ", Quote(sample_name)));
      }
      if (label == "__name__") {
        return Error(absl::StrCat("label name '__name__' is reserved, in ", Quote(sample_name)));
      }
      c.SkipBlanks();
      if (c.Peek() != '=') {
        return Error(absl::StrCat("expected '=' after label name ", Quote(label), " in ",
                                  Quote(sample_name)));
      }
      c.Advance();
      c.SkipBlanks();
      if (c.Peek() != '"') {
        return Error(absl::StrCat("value of label ", Quote(label), " must be in double quotes"));
      }
      c.Advance();
      if (absl::Status s = ParseLabelValue(c, label); !s.ok()) return s;
      c.SkipBlanks();
      if (c.Peek() == ',') {
        c.Advance();
        continue;
      }
      if (c.Peek() == '}') {
        c.Advance();
        break;
      }
      if (c.AtEnd()) return Error("missing '}' at the end of the label set");
      return Error(absl::StrCat("expected ',' or '}' after label ", Quote(label), ", got ",
                                Quote(c.Rest())));
    }
    return CheckDuplicateLabels();
  }

  // After a label's opening quote: its value up to and including the closing quote, appended to
  // labels_ under `label`.
  absl::Status ParseLabelValue(Cursor& c, std::string_view label) {
    // The usual case: no escapes, so the value is a slice of the line (checked for UTF-8 only
    // when it has a non-ASCII byte).
    const char* const start = c.pos();
    unsigned char high = 0;
    const char* const p = ScanLabelValue(start, c.end(), &high);
    if (p != c.end() && *p == '"') {
      const std::string_view value(start, static_cast<size_t>(p - start));
      c.set_pos(p + 1);
      if ((high & 0x80) != 0 && !IsValidUtf8(value)) {
        return Error(absl::StrCat("value of label ", Quote(label), " is not valid UTF-8"));
      }
      labels_.push_back(LabelText{label, value, LabelText::kNotEscaped});
      return absl::OkStatus();
    }
    // An escape (or no closing quote): unescape from here on.
    std::string value(start, static_cast<size_t>(p - start));
    c.set_pos(p);
    bool closed = false;
    while (!c.AtEnd()) {
      const char ch = c.Peek();
      c.Advance();
      if (ch == '"') {
        closed = true;
        break;
      }
      if (ch != '\\') {
        value.push_back(ch);
        continue;
      }
      if (c.AtEnd()) break;
      const char e = c.Peek();
      c.Advance();
      if (e == '\\' || e == '"') {
        value.push_back(e);
      } else if (e == 'n') {
        value.push_back('\n');
      } else {
        return Error(absl::StrCat("invalid escape sequence ", Quote(std::string{'\\', e}),
                                  " in the value of label ", Quote(label)));
      }
    }
    if (!closed) return Error(absl::StrCat("unterminated value of label ", Quote(label)));
    if (!IsValidUtf8(value)) {
      return Error(absl::StrCat("value of label ", Quote(label), " is not valid UTF-8"));
    }
    labels_.push_back(LabelText{label, std::string_view(), unescaped_.size()});
    unescaped_.push_back(std::move(value));
    return absl::OkStatus();
  }

  // The value of a label in labels_, unescaped.
  std::string_view Value(const LabelText& l) const {
    return l.unescaped == LabelText::kNotEscaped ? l.value
                                                 : std::string_view(unescaped_[l.unescaped]);
  }

  // The labels of the sample being parsed.
  std::span<const LabelText> CurrentLabels() const {
    return std::span<const LabelText>(labels_).subspan(label_begin_);
  }

  absl::Status CheckDuplicateLabels() {
    const std::span<const LabelText> labels = CurrentLabels();
    if (labels.size() <= 16) {  // the usual case: a few labels, no allocation
      for (size_t i = 1; i < labels.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (labels[i].name == labels[j].name) return DuplicateLabel(labels[i].name);
        }
      }
      return absl::OkStatus();
    }
    // Sorting keeps a line with thousands of labels (a fuzzer's favourite) linearithmic.
    std::vector<std::string_view> names;
    names.reserve(labels.size());
    for (const LabelText& l : labels) names.push_back(l.name);
    std::sort(names.begin(), names.end());
    const auto dup = std::adjacent_find(names.begin(), names.end());
    if (dup != names.end()) return DuplicateLabel(*dup);
    return absl::OkStatus();
  }

  absl::Status DuplicateLabel(std::string_view label) const {
    return Error(absl::StrCat("duplicate label ", Quote(label)));
  }

  // In a declared histogram an `le` label, in a summary a `quantile` label, must be a number: the
  // family can't be read otherwise. (Their absence is tolerated, as Go's parser tolerates it.)
  // Reads CurrentLabels(), the labels of the sample `sample_name` being parsed.
  absl::Status CheckTypedLabels(const MetricFamily& family, std::string_view sample_name) {
    std::string_view key;
    if (family.type == MetricType::kHistogram) {
      key = "le";
    } else if (family.type == MetricType::kSummary) {
      key = "quantile";
    } else {
      return absl::OkStatus();
    }
    for (const LabelText& l : CurrentLabels()) {  // label names are unique by now
      if (l.name != key) continue;
      double bound = 0;
      if (!ParseFloatValue(Value(l), &bound)) {
        return Error(absl::StrCat("bad number ", Quote(Value(l)), " in label '", Av(key), "' of ",
                                  Quote(sample_name)));
      }
      break;
    }
    return absl::OkStatus();
  }

  Exposition out_;
  std::vector<FamilyState> states_;  // parallel to out_.families
  // Family names as views into the text (which outlives the parse); lookups only, never iterated.
  absl::flat_hash_map<absl::string_view, size_t> by_name_;
  // The last sample's name (valid; a view into the text) and family.
  std::string_view last_name_;
  std::optional<size_t> last_family_;
  std::optional<size_t> current_;
  int64_t line_ = 0;
  // The samples parsed so far, in text order, built into out_ only at the end (BuildSamples).
  std::vector<PendingSample> pending_;
  std::vector<LabelText> labels_;       // their labels, then those of the sample being parsed
  size_t label_begin_ = 0;              // where the sample being parsed starts in labels_
  std::vector<std::string> unescaped_;  // values of labels_ that had escapes
};

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kUntyped:
      return "untyped";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
  }
  return "untyped";
}

std::string_view Sample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

bool Sample::HasLabel(std::string_view key) const {
  return std::any_of(labels.begin(), labels.end(), [&](const auto& kv) { return kv.first == key; });
}

const MetricFamily* Exposition::Find(std::string_view family_name) const {
  for (const MetricFamily& f : families) {
    if (f.name == family_name) return &f;
  }
  return nullptr;
}

absl::StatusOr<Exposition> ParsePrometheusText(std::string_view text) { return Parser().Run(text); }

}  // namespace twinscale::metrics
