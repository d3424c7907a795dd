// libFuzzer target for the trace readers (simulator/workload/trace_reader.h): arbitrary bytes go to
// the Azure, Mooncake and BurstGPT parsers and to format detection. Nothing may crash, hang or
// throw, and whatever parses must satisfy the Trace invariants (sorted, ids 0..n-1, first arrival
// at 0, at least one prompt and one output token), which are checked here as the oracle.
// Built with clang and -DTWINSCALE_BUILD_FUZZ=ON (target trace_reader_fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "simulator/workload/trace_reader.h"

namespace {

using twinscale::sim::RequestSpec;
using twinscale::sim::SimTime;
using twinscale::sim::Trace;
using twinscale::sim::TraceReadOptions;

void CheckInvariants(const absl::StatusOr<Trace>& trace) {
  if (!trace.ok()) return;
  if (trace->requests.empty()) __builtin_trap();  // an empty trace is reported as an error
  if (trace->requests.front().arrival != SimTime::Zero()) __builtin_trap();
  for (size_t i = 0; i < trace->requests.size(); ++i) {
    const RequestSpec& r = trace->requests[i];
    if (r.id != i || r.prompt_tokens < 1 || r.output_tokens < 1) __builtin_trap();
    if (i > 0 && r.arrival < trace->requests[i - 1].arrival) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  TraceReadOptions options;  // defaults: auto format, Mooncake jitter on
  TraceReadOptions plain;
  plain.mooncake_jitter = false;
  plain.include_failed = true;

  CheckInvariants(twinscale::sim::ParseAzureCsv(text, "fuzz"));
  CheckInvariants(twinscale::sim::ParseMooncakeJsonl(text, "fuzz", options));
  CheckInvariants(twinscale::sim::ParseMooncakeJsonl(text, "fuzz", plain));
  CheckInvariants(twinscale::sim::ParseBurstGptCsv(text, "fuzz", options));
  CheckInvariants(twinscale::sim::ParseBurstGptCsv(text, "fuzz", plain));
  CheckInvariants(twinscale::sim::ParseTrace(text, "fuzz", options));
  return 0;
}
