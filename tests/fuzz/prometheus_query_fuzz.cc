// libFuzzer target for the parser of Prometheus' instant-query answer (/api/v1/query,
// controller/metrics/prometheus_client.h) and for what the PromQL source builds from it
// (controller/metrics/promql_source.h: series grouped per pod, rebuilt into an exposition and read
// by the vLLM extractor). The body comes from the network, so any byte string must parse or fail
// cleanly, never throw, crash or hang. Besides "no crash" it checks the parser's promises: errors
// are InvalidArgument (Unavailable only for Prometheus' own non-bad_data errors); a vector or a
// scalar has exactly one point per series; matrix points are strictly in time order; and the
// source gives one result per target, in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "controller/metrics/prometheus_client.h"
#include "controller/metrics/promql_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace twinscale::metrics;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<PromQueryResult> got = ParseQueryResponse(body);
  if (!got.ok()) {
    const absl::StatusCode c = got.status().code();
    if (c != absl::StatusCode::kInvalidArgument && c != absl::StatusCode::kUnavailable)
      std::abort();
    return 0;
  }
  for (const PromSeries& series : got->series) {
    if (got->type != PromQueryResult::Type::kMatrix && series.points.size() != 1) std::abort();
    for (size_t i = 1; i < series.points.size(); ++i) {
      if (!(series.points[i - 1].at < series.points[i].at)) std::abort();
    }
  }
  // Targets named as the seeds' series are ("a", "b"), and one matched by instance.
  const std::vector<PodTarget> pods = {{"a", "10.0.0.1", 8000, "/metrics"},
                                       {"b", "10.0.0.2", 8000, "/metrics"},
                                       {"c", "127.0.0.12", 9400, "/metrics"}};
  PromqlSourceOptions options;
  options.url = "http://fuzz";
  const std::vector<PodResult> results = ReadingsFromSamples(got->series, pods, options, "fuzz");
  if (results.size() != pods.size()) std::abort();
  for (size_t i = 0; i < pods.size(); ++i) {
    if (results[i].pod != pods[i].pod) std::abort();
  }
  return 0;
}
