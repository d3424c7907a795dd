// The capacity review file: YAML text -> Review (review.h holds the schema, its defaults and its
// ranges). One pass over the document: each mapping's keys are checked against the names it may
// hold (an unknown or repeated key is an error), each value is converted and range-checked, and
// the first problem found is the error, "source:LINE: key.path: message". yaml-cpp throws: every
// call into it happens inside the try block of ParseReview.
#include "controller/plan/review.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/api/edit_distance.h"
#include "controller/api/yaml_documents.h"
#include "simulator/model/router.h"
#include "simulator/workload/generators.h"
#include "simulator/workload/trace_reader.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::plan {
namespace {

// abseil 20220623 as Debian builds it has its own string_view (not std::string_view).
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// No duration in a review is longer than a year: the twin turns durations into int64 nanoseconds
// (292 years at most) and adds them up, so a typo such as "1000000h" is refused here.
constexpr absl::Duration kMaxDuration = absl::Hours(24 * 365);

using Piece = api::YamlPiece;

// A key as messages show it: escaped, and cut short when long.
std::string Clip(std::string_view text) {
  std::string out = absl::CEscape(Sv(text.substr(0, 60)));
  if (text.size() > 60) out += "...";
  return out;
}

// A value from the file as messages show it: quoted, escaped, cut short when long.
std::string Quote(std::string_view text) { return absl::StrCat("\"", Clip(text), "\""); }

// What a node is, for "got ..." in messages: a scalar as written (quoted), else its kind.
std::string Describe(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  if (n.IsNull()) return "nothing";
  return Quote(n.Scalar());
}

// A number for messages: whole numbers without an exponent, others as %g.
std::string Num(double x) {
  if (std::isfinite(x) && std::floor(x) == x && std::fabs(x) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(x));
  }
  return absl::StrFormat("%g", x);
}

// A range a number must lie in: lo and hi, each open (excluded) or closed, or absent.
struct Range {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;

  bool Contains(double x) const {
    if (lo && (lo_open ? x <= *lo : x < *lo)) return false;
    if (hi && (hi_open ? x >= *hi : x > *hi)) return false;
    return true;
  }
  std::string Text() const {
    if (lo && hi) {
      return absl::StrCat("in ", lo_open ? "(" : "[", Num(*lo), ", ", Num(*hi),
                          hi_open ? ")" : "]");
    }
    if (lo) return absl::StrCat(lo_open ? "> " : ">= ", Num(*lo));
    if (hi) return absl::StrCat(hi_open ? "< " : "<= ", Num(*hi));
    return "a number";
  }
};
Range Above(double lo) { return Range{lo, std::nullopt, true, false}; }
Range AtLeast(double lo) { return Range{lo, std::nullopt, false, false}; }
Range AboveUpTo(double lo, double hi) { return Range{lo, hi, true, false}; }
Range Between(double lo, double hi) { return Range{lo, hi, false, false}; }

constexpr double kInt32Max = std::numeric_limits<int32_t>::max();

// A mapping's entry: the value and the mark of its key (where messages about it point).
struct Entry {
  YAML::Node value;
  YAML::Mark mark = YAML::Mark::null_mark();
  bool found = false;
};

// A mapping of the review, with its path ("scenarios[2].burst") and where it is.
struct Map {
  std::string path;
  YAML::Mark mark = YAML::Mark::null_mark();
  std::vector<std::pair<std::string, Entry>> entries;  // in the file's order

  Entry Get(std::string_view key) const {
    for (const auto& [name, entry] : entries) {
      if (name == key) return entry;
    }
    return Entry{};
  }
  bool Has(std::string_view key) const { return Get(key).found; }
  std::string PathOf(std::string_view key) const {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", Sv(key));
  }
};

// Reads one document into a Review, keeping the first problem it finds. Each reader method does
// nothing once a problem is recorded, so the reading code checks ok() only where it must stop.
class Reader {
 public:
  Reader(std::string_view source, int first_line) : source_(source), first_line_(first_line) {}

  bool ok() const { return error_.empty(); }
  absl::Status status() const {
    return ok() ? absl::OkStatus() : absl::InvalidArgumentError(error_);
  }

  // "source:LINE: " (1-based line of the whole input), or "source: " without a mark.
  std::string Where(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.line < 0) return absl::StrCat(Sv(source_), ": ");
    return absl::StrCat(Sv(source_), ":", first_line_ + mark.line + 1, ": ");
  }
  int Line(const YAML::Mark& mark) const {
    return mark.is_null() || mark.line < 0 ? 0 : first_line_ + mark.line + 1;
  }

  void Fail(const YAML::Mark& mark, std::string_view path, std::string_view message) {
    if (!ok()) return;
    error_ = absl::StrCat(Where(mark), Sv(path), path.empty() ? "" : ": ", Sv(message));
  }

  // The mapping `node` (null reads as an empty mapping) at `path`, marked at `mark`. Keys must be
  // names (scalars), each given once; CheckKeys then checks them against the names it may hold.
  std::optional<Map> Open(const YAML::Node& node, const YAML::Mark& mark, std::string path) {
    if (!ok()) return std::nullopt;
    Map map{std::move(path), mark, {}};
    if (node.IsNull()) return map;
    if (!node.IsMap()) {
      Fail(mark, map.path,
           absl::StrCat("must be a mapping (key: value lines), got ", Describe(node)));
      return std::nullopt;
    }
    std::map<std::string, int> lines;  // key -> the line it is first given on
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        Fail(kv.first.Mark(), map.path,
             absl::StrCat("a key must be a name, got ", Describe(kv.first)));
        return std::nullopt;
      }
      const std::string key = kv.first.Scalar();
      const auto [it, added] = lines.emplace(key, Line(kv.first.Mark()));
      if (!added) {
        Fail(kv.first.Mark(), map.PathOf(Clip(key)),
             absl::StrCat("duplicate key (first given on line ", it->second, ")"));
        return std::nullopt;
      }
      Entry entry;
      entry.value.reset(kv.second);
      entry.mark = kv.first.Mark();
      entry.found = true;
      map.entries.emplace_back(key, std::move(entry));
    }
    return map;
  }

  // Every key of `map` is one of `allowed`.
  bool CheckKeys(const Map& map, std::initializer_list<std::string_view> allowed) {
    if (!ok()) return false;
    for (const auto& [key, entry] : map.entries) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string hint;
      // Suggest a name one edit away, or two for names of five letters or more ("sedes").
      size_t best = 3;
      for (std::string_view name : allowed) {
        const size_t d = api::EditDistance(key, name);
        if (d < best && (d <= 1 || name.size() >= 5) && d < name.size()) {
          best = d;
          hint = absl::StrCat(" (did you mean \"", Sv(name), "\"?)");
        }
      }
      if (hint.empty()) {
        std::vector<std::string> names;
        for (std::string_view name : allowed) names.emplace_back(name);
        hint = absl::StrCat(" (want one of ", absl::StrJoin(names, ", "), ")");
      }
      Fail(entry.mark, map.PathOf(Clip(key)), absl::StrCat("unknown key", hint));
      return false;
    }
    return true;
  }

  // The mapping under `key` of `map` (absent or null: empty).
  std::optional<Map> OpenChild(const Map& map, std::string_view key) {
    const Entry e = map.Get(key);
    if (!e.found) return Map{map.PathOf(key), map.mark, {}};
    return Open(e.value, e.mark, map.PathOf(key));
  }

  // A required key is present.
  bool Require(const Map& map, std::string_view key, std::string_view what) {
    if (!ok()) return false;
    if (map.Has(key)) return true;
    Fail(map.mark, map.PathOf(key), absl::StrCat("required: ", Sv(what)));
    return false;
  }

  // A scalar's text, or a failure naming what was wanted. Null ("key:" with nothing after it) is
  // an error: the key is left out for its default.
  std::optional<std::string> Scalar(const Entry& e, const std::string& path,
                                    std::string_view want) {
    if (!ok()) return std::nullopt;
    if (e.value.IsNull()) {
      Fail(e.mark, path,
           absl::StrCat("needs a value (", Sv(want), "), or leave the key out for the default"));
      return std::nullopt;
    }
    if (!e.value.IsScalar()) {
      Fail(e.mark, path, absl::StrCat("must be ", Sv(want), ", got ", Describe(e.value)));
      return std::nullopt;
    }
    return e.value.Scalar();
  }

  // A finite number in `range`, written unquoted.
  void Number(const Map& map, std::string_view key, const Range& range, double* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<double> x = NumberOf(e, path);
    if (!x) return;
    if (!range.Contains(*x)) {
      Fail(e.mark, path, absl::StrCat("must be ", range.Text(), ", got ", Clip(e.value.Scalar())));
      return;
    }
    *out = *x;
  }

  // A whole number in `range` (written 3 or 3.0), within int32.
  void Integer(const Map& map, std::string_view key, const Range& range, int32_t* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<double> x = NumberOf(e, path);
    if (!x) return;
    if (std::floor(*x) != *x) {
      Fail(e.mark, path, absl::StrCat("must be a whole number, got ", Clip(e.value.Scalar())));
      return;
    }
    if (!range.Contains(*x) || *x > kInt32Max || *x < -kInt32Max) {
      Range shown = range;
      if (!shown.hi) shown.hi = kInt32Max;
      Fail(e.mark, path, absl::StrCat("must be ", shown.Text(), ", got ", Clip(e.value.Scalar())));
      return;
    }
    *out = static_cast<int32_t>(*x);
  }

  // A whole number in [0, 2^64).
  void Unsigned(const Map& map, std::string_view key, uint64_t* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<std::string> text = Scalar(e, path, "a whole number");
    if (!text) return;
    uint64_t x = 0;
    if (e.value.Tag() == "!" || text->empty() || (*text)[0] == '-' ||
        !absl::SimpleAtoi(Sv(*text), &x)) {
      Fail(e.mark, path,
           absl::StrCat("must be a whole number in [0, ", std::numeric_limits<uint64_t>::max(),
                        "], got ", Describe(e.value)));
      return;
    }
    *out = x;
  }

  // true or false, unquoted (YAML 1.2's core schema: also True, TRUE, False, FALSE).
  void Bool(const Map& map, std::string_view key, bool* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<std::string> text = Scalar(e, path, "true or false");
    if (!text) return;
    const bool quoted = e.value.Tag() == "!";
    if (!quoted && (*text == "true" || *text == "True" || *text == "TRUE")) {
      *out = true;
    } else if (!quoted && (*text == "false" || *text == "False" || *text == "FALSE")) {
      *out = false;
    } else {
      Fail(e.mark, path, absl::StrCat("must be true or false, got ", Describe(e.value)));
    }
  }

  // A string (any scalar); `non_empty`: "" is refused.
  void String(const Map& map, std::string_view key, bool non_empty, std::string* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<std::string> text = Scalar(e, path, "a string");
    if (!text) return;
    if (non_empty && text->empty()) {
      Fail(e.mark, path, "must not be empty");
      return;
    }
    *out = *std::move(text);
  }
  // An optional non-empty string: left unset when the key is absent.
  void String(const Map& map, std::string_view key, std::optional<std::string>* out) {
    if (!ok() || !map.Has(key)) return;
    std::string s;
    String(map, key, true, &s);
    if (ok()) *out = std::move(s);
  }

  // A Go-style duration ("90s", "2m", "1h30m") of at least `min` (`open`: longer than `min`), at
  // most a year. A number without a unit is refused: 90 could be seconds or minutes.
  void Duration(const Map& map, std::string_view key, absl::Duration min, bool open,
                absl::Duration* out) {
    const Entry e = map.Get(key);
    if (!e.found) return;
    const std::string path = map.PathOf(key);
    std::optional<std::string> text = Scalar(e, path, "a duration such as 90s, 2m or 1h30m");
    if (!text) return;
    double number = 0;
    if (absl::SimpleAtod(Sv(*text), &number) && std::isfinite(number)) {
      Fail(e.mark, path,
           absl::StrCat("must be a duration with a unit, such as 90s, 2m or 1h30m; got ",
                        Clip(*text), " (a number without a unit: give one, e.g. ", Clip(*text),
                        "s)"));
      return;
    }
    absl::Duration d;
    if (!absl::ParseDuration(Sv(*text), &d) || d == absl::InfiniteDuration() ||
        d == -absl::InfiniteDuration()) {
      Fail(e.mark, path,
           absl::StrCat("must be a duration such as 500ms, 90s, 2m or 1h30m, got ",
                        Describe(e.value)));
      return;
    }
    if (open ? d <= min : d < min) {
      Fail(e.mark, path,
           absl::StrCat("must be ", open ? "longer than " : "at least ", absl::FormatDuration(min),
                        ", got ", Clip(*text)));
      return;
    }
    if (d > kMaxDuration) {
      Fail(e.mark, path, absl::StrCat("must be at most a year (8760h), got ", Clip(*text)));
      return;
    }
    *out = d;
  }

 private:
  // A finite number written unquoted: "1", "2.5", "1e3". YAML's .inf and .nan (and inf, nan) are
  // refused, as is a quoted "2" (a string).
  std::optional<double> NumberOf(const Entry& e, const std::string& path) {
    std::optional<std::string> text = Scalar(e, path, "a number");
    if (!text) return std::nullopt;
    if (e.value.Tag() == "!") {
      Fail(e.mark, path, absl::StrCat("must be a number, got the string ", Describe(e.value)));
      return std::nullopt;
    }
    std::string lower = absl::AsciiStrToLower(Sv(*text));
    if (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) lower.erase(0, 1);
    if (lower == ".inf" || lower == ".nan") {
      Fail(e.mark, path, absl::StrCat("must be a finite number, got ", Clip(*text)));
      return std::nullopt;
    }
    double x = 0;
    if (!absl::SimpleAtod(Sv(*text), &x)) {
      Fail(e.mark, path, absl::StrCat("must be a number, got ", Describe(e.value)));
      return std::nullopt;
    }
    if (!std::isfinite(x)) {
      Fail(e.mark, path, absl::StrCat("must be a finite number, got ", Clip(*text)));
      return std::nullopt;
    }
    return x;
  }

  std::string_view source_;
  int first_line_ = 0;
  std::string error_;
};

// ---- The review's parts ----------------------------------------------------------------------

void ReadLength(Reader& r, const Map& parent, std::string_view key, sim::LengthDistribution* out) {
  std::optional<Map> m = r.OpenChild(parent, key);
  if (!m || !r.CheckKeys(*m, {"mean", "stddev", "distribution", "min", "max"})) return;
  r.Number(*m, "mean", AtLeast(1), &out->mean);
  r.Number(*m, "stddev", AtLeast(0), &out->stddev);
  r.Integer(*m, "min", AtLeast(1), &out->min);
  r.Integer(*m, "max", AtLeast(1), &out->max);
  if (!r.ok()) return;
  if (out->max < out->min) {
    if (m->Has("max")) {
      r.Fail(m->Get("max").mark, m->PathOf("max"),
             absl::StrCat("must be >= min (", out->min, "), got ", out->max));
    } else {
      r.Fail(m->Get("min").mark, m->PathOf("min"),
             absl::StrCat("must be <= max (", out->max, ", the default), got ", out->min));
    }
    return;
  }
  std::string distribution = "auto";
  r.String(*m, "distribution", true, &distribution);
  if (!r.ok()) return;
  const std::string kind = absl::AsciiStrToLower(Sv(distribution));
  if (kind == "auto") {
    out->kind = out->stddev > 0 ? sim::LengthDistribution::Kind::kGaussian
                                : sim::LengthDistribution::Kind::kConstant;
  } else if (kind == "constant") {
    out->kind = sim::LengthDistribution::Kind::kConstant;
  } else if (kind == "gaussian") {
    out->kind = sim::LengthDistribution::Kind::kGaussian;
  } else if (kind == "exponential") {
    out->kind = sim::LengthDistribution::Kind::kExponential;
  } else {
    r.Fail(
        m->Get("distribution").mark, m->PathOf("distribution"),
        absl::StrCat("must be auto, constant, gaussian or exponential, got ", Quote(distribution)));
    return;
  }
  // A stddev the distribution ignores is a mistake in the file, not a choice.
  if (out->stddev > 0 && out->kind != sim::LengthDistribution::Kind::kGaussian) {
    r.Fail(m->Get("stddev").mark, m->PathOf("stddev"),
           absl::StrCat("only a gaussian distribution has a stddev (distribution is ", kind,
                        "); leave it out or set distribution: gaussian"));
  }
}

void ReadTrace(Reader& r, const Map& m, TraceBaseline* out) {
  if (!r.CheckKeys(m, {"path", "format", "rateScale", "timeScale", "span"})) return;
  if (!r.Require(m, "path", "the trace file")) return;
  r.String(m, "path", true, &out->path);
  r.String(m, "format", true, &out->format);
  if (r.ok() && !sim::ParseTraceFormat(out->format).ok()) {
    r.Fail(m.Get("format").mark, m.PathOf("format"),
           absl::StrCat("unknown trace format ", Quote(out->format),
                        " (want auto, azure, mooncake or burstgpt)"));
  }
  r.Number(m, "rateScale", AboveUpTo(0, 1000), &out->rate_scale);
  r.Number(m, "timeScale", Above(0), &out->time_scale);
  r.Duration(m, "span", absl::ZeroDuration(), false, &out->span);
}

void ReadRateCurve(Reader& r, const Map& m, RateCurveBaseline* out) {
  if (!r.CheckKeys(m, {"path", "lengthsFrom", "start", "span", "timeScale", "peakRate"})) return;
  if (!r.Require(m, "path", "the ServeGen rate CSV")) return;
  if (!r.Require(m, "lengthsFrom", "a request trace whose (prompt, output) lengths are drawn")) {
    return;
  }
  r.String(m, "path", true, &out->path);
  r.String(m, "lengthsFrom", true, &out->lengths_from);
  r.Duration(m, "start", absl::ZeroDuration(), false, &out->start);
  r.Duration(m, "span", absl::ZeroDuration(), false, &out->span);
  r.Number(m, "timeScale", Above(0), &out->time_scale);
  r.Number(m, "peakRate", AtLeast(0), &out->peak_rate);
}

void ReadPrometheus(Reader& r, const Map& m, PrometheusBaseline* out) {
  if (!r.CheckKeys(m, {"url", "selector", "range", "step", "end"})) return;
  if (!r.Require(m, "url", "the Prometheus server, http://host:port")) return;
  r.String(m, "url", true, &out->url);
  if (r.ok() && !(absl::StartsWith(out->url, "http://") && out->url.size() > 7) &&
      !(absl::StartsWith(out->url, "https://") && out->url.size() > 8)) {
    r.Fail(
        m.Get("url").mark, m.PathOf("url"),
        absl::StrCat("must start with http:// or https:// and name a host, got ", Quote(out->url)));
  }
  r.String(m, "selector", false, &out->selector);
  if (r.ok() && !out->selector.empty() &&
      (out->selector.size() < 2 || out->selector.front() != '{' || out->selector.back() != '}')) {
    r.Fail(m.Get("selector").mark, m.PathOf("selector"),
           absl::StrCat("must be a label selector in braces, such as '{job=\"vllm\"}', got ",
                        Quote(out->selector)));
  }
  r.Duration(m, "range", absl::ZeroDuration(), true, &out->range);
  r.Duration(m, "step", absl::ZeroDuration(), true, &out->step);
  r.String(m, "end", true, &out->end);
  if (r.ok() && out->end != "now") {
    absl::Time t;
    std::string why;
    if (!absl::ParseTime(absl::RFC3339_full, Sv(out->end), &t, &why)) {
      r.Fail(m.Get("end").mark, m.PathOf("end"),
             absl::StrCat("must be now or an RFC 3339 time such as 2025-06-01T12:00:00Z, got ",
                          Quote(out->end)));
    }
  }
}

void ReadSynthetic(Reader& r, const Map& m, SyntheticBaseline* out) {
  if (!r.CheckKeys(m, {"rate", "duration", "arrivalCv", "prompt", "output"})) return;
  if (!r.Require(m, "rate", "the arrival rate in requests per second")) return;
  r.Number(m, "rate", Above(0), &out->rate);
  r.Duration(m, "duration", absl::ZeroDuration(), true, &out->duration);
  r.Number(m, "arrivalCv", Above(0), &out->arrival_cv);
  ReadLength(r, m, "prompt", &out->prompt);
  ReadLength(r, m, "output", &out->output);
}

void ReadBaseline(Reader& r, const Map& top, Baseline* out) {
  constexpr char kKinds[] = "one of trace, rateCurve, prometheus or synthetic";
  if (!r.Require(top, "baseline", kKinds)) return;
  std::optional<Map> m = r.OpenChild(top, "baseline");
  if (!m || !r.CheckKeys(*m, {"trace", "rateCurve", "prometheus", "synthetic"})) return;
  if (m->entries.empty()) {
    r.Fail(m->mark, "baseline", absl::StrCat("give ", kKinds));
    return;
  }
  if (m->entries.size() > 1) {
    const auto& [first, first_entry] = m->entries[0];
    const auto& [second, second_entry] = m->entries[1];
    r.Fail(second_entry.mark, m->PathOf(second),
           absl::StrCat("a review has one baseline, and baseline.", first, " is given too (line ",
                        r.Line(first_entry.mark), ")"));
    return;
  }
  const std::string& kind = m->entries[0].first;
  std::optional<Map> b = r.OpenChild(*m, kind);
  if (!b) return;
  if (kind == "trace") {
    out->kind = Baseline::Kind::kTrace;
    ReadTrace(r, *b, &out->trace);
  } else if (kind == "rateCurve") {
    out->kind = Baseline::Kind::kRateCurve;
    ReadRateCurve(r, *b, &out->rate_curve);
  } else if (kind == "prometheus") {
    out->kind = Baseline::Kind::kPrometheus;
    ReadPrometheus(r, *b, &out->prometheus);
  } else {
    out->kind = Baseline::Kind::kSynthetic;
    ReadSynthetic(r, *b, &out->synthetic);
  }
}

void ReadSlo(Reader& r, const Map& top, Slo* out) {
  std::optional<Map> m = r.OpenChild(top, "slo");
  if (!m || !r.CheckKeys(*m, {"ttft", "percentile", "perPromptToken", "itl", "itlPercentile"})) {
    return;
  }
  r.Duration(*m, "ttft", absl::ZeroDuration(), true, &out->ttft);
  r.Number(*m, "percentile", AboveUpTo(0, 100), &out->percentile);
  r.Duration(*m, "perPromptToken", absl::ZeroDuration(), false, &out->per_prompt_token);
  r.Duration(*m, "itl", absl::ZeroDuration(), false, &out->itl);
  r.Number(*m, "itlPercentile", AboveUpTo(0, 100), &out->itl_percentile);
}

// The items of the sequence under `key` (absent or null: none), at most `max`.
std::optional<std::vector<YAML::Node>> Items(Reader& r, const Map& top, std::string_view key,
                                             int32_t max, std::string_view what) {
  const Entry e = top.Get(key);
  std::vector<YAML::Node> items;
  if (!r.ok()) return std::nullopt;
  if (!e.found || e.value.IsNull()) return items;
  if (!e.value.IsSequence()) {
    r.Fail(e.mark, key,
           absl::StrCat("must be a list (lines starting with \"- \"), got ", Describe(e.value)));
    return std::nullopt;
  }
  if (e.value.size() > static_cast<size_t>(max)) {
    r.Fail(e.mark, key,
           absl::StrCat("at most ", max, " ", Sv(what),
                        " (the review's runs grow with their "
                        "number), got ",
                        e.value.size()));
    return std::nullopt;
  }
  for (const auto& item : e.value) items.push_back(item);
  return items;
}

void ReadProfiles(Reader& r, const Map& top, std::vector<ProfileChoice>* out) {
  if (!r.Require(top, "profiles",
                 "one or more deployment profiles to compare, each with its "
                 "gpuHourPrice")) {
    return;
  }
  std::optional<std::vector<YAML::Node>> items =
      Items(r, top, "profiles", kMaxProfiles, "profiles");
  if (!items) return;
  if (items->empty()) {
    r.Fail(top.Get("profiles").mark, "profiles",
           "give at least one deployment profile (- {profile: NAME, gpuHourPrice: PRICE})");
    return;
  }
  for (size_t i = 0; i < items->size() && r.ok(); ++i) {
    const YAML::Node& item = (*items)[i];
    std::optional<Map> m = r.Open(item, item.Mark(), absl::StrCat("profiles[", i, "]"));
    if (!m ||
        !r.CheckKeys(*m, {"profile", "gpuHourPrice", "gpu", "model", "tensorParallel", "name"})) {
      return;
    }
    if (!r.Require(*m, "profile", "a deployment profile (twinscale profiles lists them)")) return;
    if (!r.Require(*m, "gpuHourPrice", "the price of one GPU for an hour, > 0")) return;
    ProfileChoice p;
    p.line = r.Line(m->mark);
    r.String(*m, "profile", true, &p.profile);
    r.Number(*m, "gpuHourPrice", Above(0), &p.gpu_hour_price);
    r.String(*m, "gpu", &p.gpu);
    r.String(*m, "model", &p.model);
    if (m->Has("tensorParallel")) {
      int32_t tp = 1;
      r.Integer(*m, "tensorParallel", AtLeast(1), &tp);
      p.tensor_parallel = tp;
    }
    std::optional<std::string> name;
    r.String(*m, "name", &name);
    if (!r.ok()) return;
    if (name) {
      p.name = *name;
    } else {
      p.name = p.profile;
      if (p.gpu) absl::StrAppend(&p.name, "-", *p.gpu);
      if (p.tensor_parallel) absl::StrAppend(&p.name, "-tp", *p.tensor_parallel);
    }
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].name == p.name) {
        r.Fail(m->mark, m->path,
               absl::StrCat("the label ", Quote(p.name), " is also profiles[", j, "]'s (line ",
                            (*out)[j].line, "); give one of them a name:"));
        return;
      }
    }
    out->push_back(std::move(p));
  }
}

void ReadScenarios(Reader& r, const Map& top, std::vector<Scenario>* out) {
  std::optional<std::vector<YAML::Node>> items =
      Items(r, top, "scenarios", kMaxScenarios, "scenarios");
  if (!items) return;
  for (size_t i = 0; i < items->size() && r.ok(); ++i) {
    const YAML::Node& item = (*items)[i];
    std::optional<Map> m = r.Open(item, item.Mark(), absl::StrCat("scenarios[", i, "]"));
    if (!m || !r.CheckKeys(*m, {"name", "rate", "promptLength", "outputLength", "longContext",
                                "retrySpike", "prefixCacheMiss", "burst"})) {
      return;
    }
    if (!r.Require(*m, "name", "the scenario's name, a row of the table")) return;
    Scenario s;
    s.line = r.Line(m->mark);
    r.String(*m, "name", true, &s.name);
    if (!r.ok()) return;
    if (absl::AsciiStrToLower(Sv(s.name)) == "baseline") {
      r.Fail(m->Get("name").mark, m->PathOf("name"),
             "\"baseline\" is the name of the table's first row (the baseline itself); choose "
             "another");
      return;
    }
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].name == s.name) {
        r.Fail(m->Get("name").mark, m->PathOf("name"),
               absl::StrCat(Quote(s.name), " is also the name of scenarios[", j, "] (line ",
                            (*out)[j].line, "); names must be unique"));
        return;
      }
    }
    r.Number(*m, "rate", AboveUpTo(0, 1000), &s.rate);
    r.Number(*m, "promptLength", AboveUpTo(0, 100), &s.prompt_length);
    r.Number(*m, "outputLength", AboveUpTo(0, 100), &s.output_length);
    if (m->Has("longContext")) {
      std::optional<Map> c = r.OpenChild(*m, "longContext");
      if (!c || !r.CheckKeys(*c, {"share", "promptTokens"})) return;
      if (!r.Require(*c, "share", "the share of requests with a long prompt, in (0, 1]")) return;
      if (!r.Require(*c, "promptTokens", "the long prompts' length in tokens")) return;
      Scenario::LongContext lc;
      r.Number(*c, "share", AboveUpTo(0, 1), &lc.share);
      r.Integer(*c, "promptTokens", AtLeast(1), &lc.prompt_tokens);
      s.long_context = lc;
    }
    if (m->Has("retrySpike")) {
      std::optional<Map> c = r.OpenChild(*m, "retrySpike");
      if (!c || !r.CheckKeys(*c, {"share", "timeout", "start", "span"})) return;
      if (!r.Require(*c, "share", "the share of requests sent again, in (0, 1]")) return;
      Scenario::RetrySpike spike;
      r.Number(*c, "share", AboveUpTo(0, 1), &spike.share);
      r.Duration(*c, "timeout", absl::ZeroDuration(), true, &spike.timeout);
      r.Duration(*c, "start", absl::ZeroDuration(), false, &spike.start);
      r.Duration(*c, "span", absl::ZeroDuration(), false, &spike.span);
      s.retry_spike = spike;
    }
    r.Bool(*m, "prefixCacheMiss", &s.prefix_cache_miss);
    if (m->Has("burst")) {
      std::optional<Map> c = r.OpenChild(*m, "burst");
      if (!c || !r.CheckKeys(*c, {"peakToMean", "window", "at"})) return;
      Scenario::Burst burst;
      r.Number(*c, "peakToMean", Above(1), &burst.peak_to_mean);
      r.Duration(*c, "window", absl::ZeroDuration(), true, &burst.window);
      r.Duration(*c, "at", absl::ZeroDuration(), false, &burst.at);
      s.burst = burst;
    }
    if (!r.ok()) return;
    out->push_back(std::move(s));
  }
}

void ReadReview(Reader& r, const YAML::Node& doc, Review* out) {
  std::optional<Map> top = r.Open(doc, doc.Mark(), "");
  if (!top) return;
  // The kind first: a file of another kind gets that said, not a list of its unknown keys.
  const Entry kind = top->Get("kind");
  if (!kind.found) {
    r.Fail(top->mark, "kind", "required: a review file says kind: CapacityReview");
    return;
  }
  if (!kind.value.IsScalar() || kind.value.Scalar() != "CapacityReview") {
    r.Fail(kind.mark, "kind", absl::StrCat("must be CapacityReview, got ", Describe(kind.value)));
    return;
  }
  if (!r.CheckKeys(*top, {"kind", "baseline", "slo", "profiles", "scenarios", "plannedReplicas",
                          "seeds", "seed", "maxReplicas", "router", "emitProfile"})) {
    return;
  }
  ReadBaseline(r, *top, &out->baseline);
  ReadSlo(r, *top, &out->slo);
  ReadProfiles(r, *top, &out->profiles);
  ReadScenarios(r, *top, &out->scenarios);
  r.Integer(*top, "plannedReplicas", AtLeast(0), &out->planned_replicas);
  r.Integer(*top, "seeds", Between(1, 10), &out->seeds);
  r.Unsigned(*top, "seed", &out->seed);
  r.Integer(*top, "maxReplicas", Between(1, 4096), &out->max_replicas);
  std::string router;
  r.String(*top, "router", true, &router);
  if (r.ok() && !router.empty()) {
    absl::StatusOr<sim::RouterKind> kind_or = sim::ParseRouterKind(router);
    if (kind_or.ok()) {
      out->router = *kind_or;
    } else {
      r.Fail(top->Get("router").mark, "router", std::string(kind_or.status().message()));
    }
  }
  r.String(*top, "emitProfile", false, &out->emit_profile);
  if (r.ok() && !out->emit_profile.empty()) {
    std::vector<std::string> names;
    for (const ProfileChoice& p : out->profiles) names.push_back(p.name);
    if (std::find(names.begin(), names.end(), out->emit_profile) == names.end()) {
      r.Fail(top->Get("emitProfile").mark, "emitProfile",
             absl::StrCat(Quote(out->emit_profile), " is not one of the profiles' labels (",
                          absl::StrJoin(names, ", "), ")"));
    }
  }
}

}  // namespace

absl::StatusOr<Review> ParseReview(std::string_view yaml, std::string_view source) {
  if (yaml.size() > static_cast<size_t>(kMaxReviewBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", yaml.size(),
                                                   " bytes; a review file holds at most ",
                                                   kMaxReviewBytes, " (is this the right file?)"));
  }
  Review review;
  review.source = std::string(source);
  int doc_line = 0;  // 0-based line of the input where the review's document starts
  try {
    // The one document of the file; empty pieces (comments, markers) are skipped.
    std::optional<YAML::Node> doc;
    for (const Piece& piece : api::SplitYamlStream(yaml)) {
      YAML::Node node;
      try {
        node = YAML::Load(piece.text);
      } catch (const YAML::ParserException& e) {
        // yaml-cpp stops at a fixed depth of nesting, calling it a "bad file": say what it is.
        const bool deep = dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr;
        const std::string what = deep ? "YAML nested too deeply (a review is a few levels deep)"
                                      : absl::StrCat("YAML syntax error: ", e.msg);
        if (e.mark.is_null())
          return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", what));
        return absl::InvalidArgumentError(absl::StrCat(Sv(source), ":",
                                                       piece.first_line + e.mark.line + 1, ":",
                                                       e.mark.column + 1, ": ", what));
      }
      if (node.IsNull()) continue;
      if (doc) {
        const Reader r(source, piece.first_line);
        return absl::InvalidArgumentError(
            absl::StrCat(r.Where(node.Mark()),
                         "a review file holds one YAML document, and a second starts here"));
      }
      doc = node;
      doc_line = piece.first_line;
    }
    if (!doc) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(source),
                       ": the file is empty; a review starts with kind: "
                       "CapacityReview (deploy/samples/plan/capacity-review.yaml)"));
    }
    Reader r(source, doc_line);
    if (!doc->IsMap()) {
      r.Fail(doc->Mark(), "",
             absl::StrCat("a review is a mapping (kind: CapacityReview, baseline: ..., "
                          "profiles: ...), got ",
                          Describe(*doc)));
      return r.status();
    }
    ReadReview(r, *doc, &review);
    if (!r.ok()) return r.status();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Reader(source, doc_line).Where(e.mark), e.msg));
  }
  return review;
}

absl::StatusOr<Review> LoadReviewFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a review file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(kMaxReviewBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", size,
                                                   " bytes; a review file holds at most ",
                                                   kMaxReviewBytes, " (is this the right file?)"));
  }
  // Read in pieces, no further than one byte past the limit: a pipe or device has no size.
  std::string text;
  char buffer[1 << 16];
  while (in && text.size() <= static_cast<size_t>(kMaxReviewBytes)) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  if (text.size() > static_cast<size_t>(kMaxReviewBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": more than ", kMaxReviewBytes,
                                                   " bytes; a review file holds at most ",
                                                   kMaxReviewBytes, " (is this the right file?)"));
  }
  return ParseReview(text, path);
}

}  // namespace twinscale::plan
