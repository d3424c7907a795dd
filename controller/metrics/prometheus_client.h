// A client for Prometheus' HTTP query API: range queries (/api/v1/query_range) returning a matrix
// of series, instant queries (/api/v1/query) returning a vector, a matrix (a range-vector
// selector: raw samples with their scrape timestamps) or a scalar, and the parsers of the API's
// JSON answers (pure, fuzzed: tests/fuzz/prometheus_response_fuzz.cc and
// prometheus_query_fuzz.cc).
//
// Errors (the meanings of docs/architecture.md "Error codes"): Unavailable when Prometheus can't be
// reached or answers with an error of its own (the message names the URL and quotes Prometheus'
// "error" text); InvalidArgument when Prometheus rejects the query itself (errorType "bad_data": a
// bad selector); DeadlineExceeded when no answer came within the timeout (cpprestsdk's timeout is
// an inactivity timeout: no byte for that long). Ranges longer than Prometheus' 11,000 points per
// series are split into several requests and joined.
//
// This header carries no cpprestsdk include (the HTTP machinery lives in the .cc), so light users
// such as controller/replay/history_trace see only the plain types.
// Thread-safety: PrometheusClient is immutable after construction; QueryRange and Query may be
// called from several threads (each call builds its own HTTP client).
#ifndef TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_CLIENT_H_
#define TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_CLIENT_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinscale::metrics {

struct PromPoint {
  absl::Time at;
  double value = 0;  // "NaN", "+Inf" and "-Inf" are kept as such
};

// One series of a matrix: its labels (the metric name, if any, under "__name__") and its points in
// time order.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<PromPoint> points;
};
using PromMatrix = std::vector<PromSeries>;

// Parses the body of a /api/v1/query_range answer. InvalidArgument, saying what was wrong, for
// anything but {"status":"success","data":{"resultType":"matrix","result":[...]}} with well-formed
// series ({"metric":{string:string}, "values":[[number, "number"], ...]}); Unavailable quoting
// Prometheus' errorType and error for {"status":"error"} (InvalidArgument for errorType
// "bad_data"). Never throws, whatever the bytes.
absl::StatusOr<PromMatrix> ParseQueryRangeResponse(std::string_view body);

// The answer of an instant query (/api/v1/query), by its resultType:
//   kVector  one series per element, each with exactly one point (its "value");
//   kMatrix  a range-vector selector's raw samples ("values"), points in time order;
//   kScalar  one series without labels and with one point.
struct PromQueryResult {
  enum class Type { kVector, kMatrix, kScalar };
  Type type = Type::kVector;
  PromMatrix series;
};

// Parses the body of a /api/v1/query answer. Errors as ParseQueryRangeResponse's, each naming
// where in the document the problem is ("data.result[3].value[1] ..."; "not JSON at byte N: ..."
// for malformed JSON); a "string" result, which no caller uses, is InvalidArgument. Never throws.
absl::StatusOr<PromQueryResult> ParseQueryResponse(std::string_view body);

struct RangeQuery {
  std::string promql;
  absl::Time start, end;                    // inclusive; start <= end
  absl::Duration step = absl::Seconds(15);  // > 0
};

struct InstantQuery {
  std::string promql;
  absl::Time at;  // the evaluation time (Prometheus' `time` parameter)
};

struct PrometheusClientOptions {
  absl::Duration timeout = absl::Seconds(30);  // per HTTP request, inactivity (see above)
  int64_t max_points_per_request = 10000;      // Prometheus refuses more than 11,000
};

class PrometheusClient {
 public:
  // `base_url`: where Prometheus' API lives, e.g. "http://prometheus:9090" (a trailing slash or a
  // path prefix such as "/prom" is kept). Not checked here: a bad URL fails the first query.
  explicit PrometheusClient(std::string base_url, PrometheusClientOptions options = {});

  // Evaluates `q.promql` at start, start + step, ... <= end. Series that span several requests
  // (long ranges) are joined by their labels, in the order Prometheus returned them first.
  absl::StatusOr<PromMatrix> QueryRange(const RangeQuery& q) const;

  // Evaluates `q.promql` at `q.at` (/api/v1/query). Errors as QueryRange's.
  absl::StatusOr<PromQueryResult> Query(const InstantQuery& q) const;

  const std::string& base_url() const { return base_url_; }

 private:
  absl::StatusOr<PromMatrix> QueryOnce(const RangeQuery& q) const;
  std::string base_url_;
  PrometheusClientOptions options_;
};

// Formats `t` as Prometheus accepts in start/end: Unix seconds with millisecond precision.
std::string PromTimestamp(absl::Time t);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_CLIENT_H_
