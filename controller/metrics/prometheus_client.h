// A client for Prometheus' HTTP query API: range queries (/api/v1/query_range) returning a matrix
// of series, and the parser of the API's JSON answer (pure, fuzzed: tests/fuzz).
//
// Errors (DESIGN.md 5's meanings): Unavailable when Prometheus can't be reached or answers with an
// error of its own (the message names the URL and quotes Prometheus' "error" text);
// InvalidArgument when Prometheus rejects the query itself (errorType "bad_data": a bad selector);
// DeadlineExceeded when no answer came within the timeout (cpprestsdk's timeout is an inactivity
// timeout: no byte for that long). Ranges longer than Prometheus' 11,000 points per series are
// split into several requests and joined.
//
// This header carries no cpprestsdk include (the HTTP machinery lives in the .cc), so light users
// such as controller/replay/history_trace see only the plain types.
// Thread-safety: PrometheusClient is immutable after construction; QueryRange may be called from
// several threads (each call builds its own HTTP client).
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
// Prometheus' errorType and error for {"status":"error"} (InvalidArgument for errorType "bad_data").
// Never throws, whatever the bytes.
absl::StatusOr<PromMatrix> ParseQueryRangeResponse(std::string_view body);

struct RangeQuery {
  std::string promql;
  absl::Time start, end;  // inclusive; start <= end
  absl::Duration step = absl::Seconds(15);  // > 0
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
