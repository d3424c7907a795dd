// libFuzzer target for the Prometheus text parser (controller/metrics/prometheus_text.h): a scrape
// body is outside input, so any byte string must parse or fail cleanly, never crash or hang.
// Besides "no crash" it checks the parser's promises: errors are InvalidArgument "line N: ...",
// family names are unique, and every sample's label names are unique.
//
// Build by hand (the lead wires the CMake target prometheus_text_fuzz, linking ts_metrics):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/prometheus_text_fuzz.cc controller/metrics/prometheus_text.cc \
//     $(pkg-config --libs absl_strings absl_status absl_statusor absl_raw_hash_set absl_hash)
// and run e.g. `./a.out -max_total_time=60 -max_len=4096 corpus/`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "controller/metrics/prometheus_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<twinscale::metrics::Exposition> got =
      twinscale::metrics::ParsePrometheusText(text);
  if (!got.ok()) {
    if (got.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    if (got.status().message().substr(0, 5) != "line ") std::abort();
    return 0;
  }
  std::set<std::string_view> names;
  for (const auto& family : got->families) {
    if (family.name.empty() || !names.insert(family.name).second) std::abort();
    for (const auto& sample : family.samples) {
      std::set<std::string_view> labels;
      for (const auto& [key, value] : sample.labels) {
        if (!labels.insert(key).second) std::abort();
      }
    }
  }
  return 0;
}
