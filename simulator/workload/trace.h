// Recorded workloads for the twin: an in-memory request trace, the two transforms the CLI offers
// (--rate-scale, --time-scale), a RequestSource that replays a trace, and a summary for reports.
//
// Pure: no I/O (trace_reader.h reads files into a Trace). Transforms return new traces and are
// deterministic for a given seed (Stream::kRateScale). Thread-safety: a Trace is a plain value and
// may be shared read-only between runs (MakeTraceSource takes a shared_ptr<const Trace>); each
// source is for one run.
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_TRACE_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_TRACE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/core/time.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

// A recorded workload. Invariants after NormalizeTrace (the readers return normalised traces):
// requests sorted by arrival (stable), ids 0..n-1 in that order, first arrival at t = 0.
struct Trace {
  std::string source;  // where it came from (a file name), for reports
  std::vector<RequestSpec> requests;
  // As read from a file (0 otherwise): rows timestamped earlier than the row before them, which
  // the reader puts in time order, and the 1-based line of the first; for a warning.
  int64_t rows_out_of_order = 0;
  int64_t first_out_of_order_line = 0;
};

// Establishes the invariants above: stable sort by arrival, shift so the first arrival is 0,
// renumber ids. Token counts and prefix hashes are untouched.
void NormalizeTrace(Trace& trace);

// How ScaleRate places its copies (--rate-scale-mode).
enum class RateScaleMode {
  // Each copy shifted by a small seeded jitter: the scaled trace keeps the input's rate curve
  // (its ramps, nights and bursts, smoothed over about one jitter), which is what an autoscaler
  // must follow. The default.
  kJitter,
  // Each copy shifted across the whole span: the copies' curves superpose at random phases, so
  // the result's rate is close to k times the input's mean everywhere (a flat load).
  kSpread,
};

// "jitter" or "spread"; InvalidArgument naming the value otherwise.
absl::StatusOr<RateScaleMode> ParseRateScaleMode(std::string_view name);

struct RateScaleOptions {
  RateScaleMode mode = RateScaleMode::kJitter;
  // kJitter: a copy's offset is uniform in [-jitter, -1 ns] u [1 ns, jitter] (capped at the
  // span). 60 s smooths a minute's sampling noise across copies without moving the curve by more
  // than a minute. Must be >= 0; ignored by kSpread.
  SimDuration jitter = SimDuration::Seconds(60);
};

// --rate-scale k (0 < k <= 1000): a trace with about k times the requests over the same span.
// floor(k) copies are superposed, copy 0 unshifted and each other copy shifted by its own seeded
// offset, distinct from every other copy's (options.mode says how far: within +-jitter, or
// uniform in [1 ns, span]), then wrapped modulo (span + 1 ns) so it stays inside [first, last]
// arrival: no arrival crosses the trace's end, the part of a copy pushed past one end re-enters
// at the other (the extra nanosecond keeps a copy's first and last requests from landing on the
// same instant). The fractional part k - floor(k) is one more shifted copy thinned to that
// fraction (each request kept with that probability); for k < 1 this is the only copy and it is
// not shifted, so the result is plain thinning. Because offsets are distinct, a request never
// appears twice at the same instant. The result keeps the input's time base (it is not shifted
// to start at 0), is re-sorted stably (ties: copy 0 first) and has ids renumbered. Each copy after
// copy 0 also gets its own prefix ids (each id mixed with the copy's number): a copy stands for
// other users, whose prompts share nothing with the original's, so a copy's conversation never
// hits the prefix cache on another copy's turns (identical ids would make a rate-scaled Mooncake
// trace look several times more cacheable than the trace itself is). Within a copy, ids stay
// equal where they were equal. InvalidArgument for k outside (0, 1000] or NaN, a negative jitter,
// or when the offsets' range (in ns) is too small to give every copy a distinct offset (a
// one-request trace can only be thinned).
absl::StatusOr<Trace> ScaleRate(const Trace& trace, double k, uint64_t seed,
                                const RateScaleOptions& options = {});

// --time-scale f (f > 0): every arrival multiplied by f, rounded to the nearest nanosecond (f < 1
// compresses the trace: rate x 1/f). Order, ids and lengths are unchanged. InvalidArgument for
// f <= 0, NaN or infinity, or if a scaled arrival would overflow SimTime.
absl::StatusOr<Trace> ScaleTime(const Trace& trace, double f);

// Replays `trace` in order (the trace must be sorted by arrival). Next() copy-assigns into `out`,
// reusing its prefix_hashes capacity, so steady-state replay allocates nothing. A null trace is an
// empty source.
std::unique_ptr<RequestSource> MakeTraceSource(std::shared_ptr<const Trace> trace);

struct TraceSummary {
  int64_t requests = 0;
  double span_seconds = 0;     // last arrival - first arrival
  double mean_rate_rps = 0;    // requests / span (0 when the span is 0)
  double peak_minute_rps = 0;  // busiest 60 s window aligned to the first arrival, per second
  double prompt_mean = 0, output_mean = 0;
  int32_t prompt_p99 = 0, output_p99 = 0;  // nearest rank: the ceil(0.99 n)-th smallest
};
// All zeros for an empty trace.
TraceSummary Summarize(const Trace& trace);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_TRACE_H_
