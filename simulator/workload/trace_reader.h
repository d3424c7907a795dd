// Readers for public LLM-serving request traces: the Azure LLM inference traces (2023 and 2024
// releases, CSV), Mooncake's FAST'25 traces (JSON lines) and BurstGPT (CSV); and for ServeGen's
// per-window aggregate request rates (CSV, a RecordedRateCurve for rate_curve.h). One of the
// simulator's two I/O edges (a separate target, ts_sim_trace_io); everything downstream sees only
// a Trace (or a curve).
//
// Every parser returns a normalised Trace (trace.h: stably sorted by arrival, ids 0..n-1, first
// arrival at t = 0; rows need not be in time order, and Trace::rows_out_of_order counts those that
// are not) or InvalidArgument whose message reads
// "<name>:<line>: <what is wrong>" with a 1-based line number ("<name>: no requests" when a
// well-formed file holds none). Files may use LF or CRLF line ends and start with a UTF-8 BOM;
// blank lines are skipped. No exceptions escape (nlohmann's are caught here). Thread-safe: no
// state.
//
// Format notes (what each parser accepts and how it maps to RequestSpec):
//  - Azure: CSV with a header naming TIMESTAMP, ContextTokens, GeneratedTokens in any order (other
//    columns, such as the multimodal release's NumImages, are ignored). Timestamps are civil times
//    "YYYY-MM-DD HH:MM:SS" (or with a "T"), optionally with a fraction of up to 9 digits (2023 has
//    7, 2024 has 6; further digits are below a nanosecond and dropped) and optionally a zone "Z" or
//    "+HH:MM" / "-HH:MM" (none means UTC). Years 1970-2200. Arrivals keep full precision: ns
//    since the earliest request.
//  - Mooncake: one JSON object per line, {"timestamp": <ms since start>, "input_length": n,
//    "output_length": n, "hash_ids": [...]}; hash_ids (optional) become prefix_hashes (one per
//    512-token prompt block). The published timestamps are quantized to about 3 s, so about ten
//    requests share each value; replayed as is they would arrive as synchronized bursts. With
//    mooncake_jitter on (the default), the requests of each distinct timestamp ts are placed
//    independently and uniformly in [ts, ts + mooncake_quantum), using a stream derived from
//    (seed, Stream::kTraceJitter), and the trace is re-sorted; i.i.d. uniform placement is what a
//    Poisson process looks like given its count in an interval. The same seed gives the same trace.
//  - BurstGPT: CSV with header "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log
//    Type" (columns found by name; Model, Total tokens and Log Type are ignored). Timestamp is in
//    seconds from the start of the trace (a decimal). Rows with 0 response tokens are failed
//    requests: skipped, or kept with output 1 when include_failed is set.
//  - Token counts must be non-negative integers below 2^31. A count of 0 (prompt in any format, or
//    an Azure/Mooncake output) is clamped to 1, because RequestSpec needs at least one prompt token
//    and one output token (the first output token comes from the prefill).
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_TRACE_READER_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_TRACE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "simulator/core/time.h"
#include "simulator/workload/rate_curve.h"
#include "simulator/workload/trace.h"

namespace twinscale::sim {

enum class TraceFormat { kAuto, kAzure, kMooncake, kBurstGpt };

// "auto", "azure", "mooncake" or "burstgpt" (any case); InvalidArgument otherwise.
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

struct TraceReadOptions {
  // kAuto looks at the first non-blank line: "{" means Mooncake; a CSV header with ContextTokens
  // means Azure, one with "Request tokens" BurstGPT.
  TraceFormat format = TraceFormat::kAuto;
  uint64_t seed = 1;                                       // Mooncake jitter stream
  bool mooncake_jitter = true;                             // spread quantized timestamps
  SimDuration mooncake_quantum = SimDuration::Seconds(3);  // > 0 when jitter is on
  bool include_failed = false;                             // BurstGPT: keep 0-response rows
};

// Reads and parses the file at `path`; `path` is the name in error messages and Trace::source.
// NotFound / PermissionDenied (etc., from errno) if it can't be read; InvalidArgument as above.
absl::StatusOr<Trace> ReadTraceFile(const std::string& path, const TraceReadOptions& options);

// Parse from memory; `name` appears in errors ("<name>:<line>: <what is wrong>") and as source.
absl::StatusOr<Trace> ParseAzureCsv(std::string_view text, std::string_view name);
absl::StatusOr<Trace> ParseMooncakeJsonl(std::string_view text, std::string_view name,
                                         const TraceReadOptions& options);
absl::StatusOr<Trace> ParseBurstGptCsv(std::string_view text, std::string_view name,
                                       const TraceReadOptions& options);
// Parses `text` in options.format, detecting it first when that is kAuto.
absl::StatusOr<Trace> ParseTrace(std::string_view text, std::string_view name,
                                 const TraceReadOptions& options);

// ServeGen's aggregate rate CSV (a RecordedRateCurve, not a Trace): a header starting
// "window_start_s,aggregate_rate_rps" (further columns, such as active_clients, are ignored), then
// one row per window: its start in seconds and its rate in req/s (a decimal in [0, 1e9]). The
// windows must be consecutive: the first two rows' starts give the window length (> 1 ms), and
// row i must start at first + i x window (within 1 ms). At least two rows. Errors as the trace
// parsers' ("<name>:<line>: <what is wrong>").
absl::StatusOr<RecordedRateCurve> ParseServeGenRateCsv(std::string_view text,
                                                       std::string_view name);
absl::StatusOr<RecordedRateCurve> ReadRateCurveFile(const std::string& path);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_TRACE_READER_H_
