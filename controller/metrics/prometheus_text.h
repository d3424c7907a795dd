// Parser for the Prometheus text exposition format, version 0.0.4: what a vLLM server's /metrics
// endpoint (and every other prometheus_client or Go exporter) returns.
//
// The input is outside input (a pod's HTTP body), so the parser never crashes, never recurses, runs
// in time linear in the input (n log n for a line with very many labels), and reports the first
// problem as InvalidArgument "line N: <what>" (N 1-based, counted over '\n'), quoting at most 48
// bytes of the offending text, escaped. It is fuzzed (tests/fuzz/prometheus_text_fuzz.cc).
//
// Grammar accepted: that of the Go reference parser (github.com/prometheus/common/expfmt, which
// promtool uses), except where noted:
//   - Lines end in "\n"; a "\r" before it is dropped and trailing blanks (space, tab) are ignored
//     (Go rejects both); the last line may lack "\n". Leading blanks are ignored; blank lines are
//     skipped.
//   - "# HELP <name> <docstring>": the docstring runs to the end of the line; "\\" and "\n" are its
//     escapes, any other backslash sequence is an error. "# HELP <name>" alone means empty help.
//   - "# TYPE <name> <type>", type one of counter, gauge, histogram, summary, untyped (any case).
//     "# TYPE <name>" without a type declares nothing, as in Go.
//   - Any other line starting with "#" is a comment and ignored (so "# ==", "# ----", "#" and
//     "# HELP" without a name are comments).
//   - Sample: <name> [ "{" [ <label>="<value>" { "," <label>="<value>" } [ "," ] ] "}" ] <value>
//     [ <timestamp> ], blanks allowed between tokens. Metric names match
//     [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* ("__name__" is reserved); label
//     values are UTF-8 with escapes "\\", "\"" and "\n". A label name may appear once per sample.
//   - Values: decimal floats ("1", "-0.5", ".5", "1e-3", "+3"), and case-insensitively "NaN",
//     "Inf", "+Inf", "-Inf", "Infinity". Magnitudes below the smallest subnormal read as 0 and
//     above the largest double are errors, both as in Go; hexadecimal floats, which Go takes, are
//     errors. Timestamps are int64 milliseconds.
//
// Family grouping. A HELP or TYPE line opens (or names) a family. A sample joins the family it
// belongs to: the family named by its own name, or, by suffix, a histogram family X (samples
// X_bucket, X_sum, X_count, X_created), a summary X (X_sum, X_count, X_created) or a counter X
// (X_total, X_created). prometheus_client's own layout, "# TYPE foo_total counter" with the
// sample foo_total and a separate "foo_created" gauge family, is the plain case of this rule. A
// sample covered by no declared family is its own untyped family, named after the sample, and
// later samples of that name join it. Families appear in the order they were first declared or
// seen; family names are unique. A family declared by HELP/TYPE without samples is kept (with no
// samples).
//
// Errors (each names its line): a second TYPE line for a family, a TYPE line after the family's
// samples, a second HELP line, an unknown type, an invalid metric or label name, an unterminated
// or badly escaped label value, a duplicate label, a missing value, a bad number or timestamp,
// text after the timestamp, and, in a family declared histogram (summary), an "le" ("quantile")
// label that is not a number.
//
// Thread-safety: ParsePrometheusText is a pure function; results are plain values.
#ifndef TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_TEXT_H_
#define TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace twinscale::metrics {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

// "untyped", "counter", "gauge", "histogram" or "summary": the word a TYPE line uses.
std::string_view MetricTypeName(MetricType type);

// One line of samples: `name{labels} value [timestamp]`.
struct Sample {
  std::string name;
  // Label pairs in the order the text gave them, values unescaped.
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;

  // The value of label `key`, or "" if the sample has no such label (Prometheus treats an empty
  // label value and a missing label alike). Valid while the sample lives.
  std::string_view Label(std::string_view key) const;
  bool HasLabel(std::string_view key) const;
};

struct MetricFamily {
  std::string name;  // as on the TYPE/HELP line, or the sample name for an undeclared family
  MetricType type = MetricType::kUntyped;
  std::string help;             // unescaped; "" when there was no HELP line
  std::vector<Sample> samples;  // in text order
};

struct Exposition {
  std::vector<MetricFamily> families;  // in order of first appearance; names unique

  // The family with exactly this name, or nullptr. Linear in the number of families.
  const MetricFamily* Find(std::string_view family_name) const;
};

// Parses a whole exposition. On error returns InvalidArgument "line N: <what is wrong>", quoting
// the offending token (non-printable bytes escaped, long tokens cut).
absl::StatusOr<Exposition> ParsePrometheusText(std::string_view text);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_TEXT_H_
