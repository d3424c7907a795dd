// libFuzzer target for the parser of Prometheus' /api/v1/query_range answer
// (controller/metrics/prometheus_client.h): the body comes from the network, so any byte string
// must parse or fail cleanly, never throw, crash or hang. Besides "no crash" it checks the parser's
// promises: errors are InvalidArgument (Unavailable only for Prometheus' own non-bad_data errors),
// and every parsed series has its points strictly in time order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/metrics/prometheus_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<twinscale::metrics::PromMatrix> got =
      twinscale::metrics::ParseQueryRangeResponse(body);
  if (!got.ok()) {
    const absl::StatusCode c = got.status().code();
    if (c != absl::StatusCode::kInvalidArgument && c != absl::StatusCode::kUnavailable)
      std::abort();
    return 0;
  }
  for (const auto& series : *got) {
    for (size_t i = 1; i < series.points.size(); ++i) {
      if (!(series.points[i - 1].at < series.points[i].at)) std::abort();
    }
  }
  return 0;
}
