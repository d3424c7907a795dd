// A request trace synthesised from a fleet's own Prometheus history, for
// `twinscale replay --from-prometheus URL --selector '{...}' --range 24h [--end ...] [--step 15s]`.
//
// What is read (vLLM metric names, docs/reference.md "vLLM metrics"), over [end - range, end] on a
// grid of `step`:
// - Arrivals per step: as controller/metrics/prometheus_arrivals.h reads them, the increase of
//   every pod's vllm:request_prompt_tokens_count plus the change in the fleet's waiting + running
//   requests (why those, and how resets and pods starting within the range count, are said there).
//   The prompt-length histogram's count also makes the count and the length shares describe the
//   same requests.
// - Burstiness: the index of dispersion of those per-step counts, by the same Allan-style estimate
//   the live snapshot uses (state::AllanDispersion: successive differences, so the slow trend of
//   the rate is not taken for burstiness), turned into the CV of gamma inter-arrival gaps
//   (a renewal process with gap CV c has an index of dispersion of about c^2).
// - Lengths: sum by (le) (increase(vllm:request_prompt_tokens_bucket{sel}[range])) and the same for
//   vllm:request_generation_tokens, with the _sum increase for the means.
//
// Synthesis (pure, deterministic for a seed): a piecewise-constant rate curve, one segment per
// step, each the arrivals per second of a centred moving window of `smoothing` (the per-step counts
// already carry their own sampling noise; replaying them unsmoothed would add a second dose of it),
// a unit-rate gamma renewal process of that CV in operational time mapped through the curve's
// inverse cumulative (as simulator/workload/generators does), and lengths drawn from the histograms
// (simulator/workload/bucket_length_sampler.h: a bucket by its share, log-uniform inside),
// rescaled to the observed means. Arrivals, prompt and output lengths use their own Rng streams.
//
// The grid: points t_k = start + k x step, k = 0..n, start = end - range; arrivals[k - 1] counts
// (t_{k-1}, t_k]. Prometheus evaluates a range query exactly on such a grid.
//
// Pure: no I/O. FetchFleetHistory asks its questions through an injected query function (the
// PrometheusClient in the CLI, a fake in tests). Thread-safety: plain functions and values.
#ifndef TWINSCALE_CONTROLLER_REPLAY_HISTORY_TRACE_H_
#define TWINSCALE_CONTROLLER_REPLAY_HISTORY_TRACE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/metrics/prometheus_arrivals.h"
#include "controller/metrics/prometheus_client.h"
#include "simulator/core/time.h"
#include "simulator/workload/trace.h"

namespace twinscale::replay {

// A length histogram: finite edges ascending, per-bucket (not cumulative) counts with the +Inf
// bucket last (size upper_bounds + 1), and the mean from _sum / _count (0: unknown).
struct LengthHistogram {
  std::vector<double> upper_bounds;
  std::vector<double> counts;
  double mean = 0;
  double total() const;
};

// What the history says, before synthesis.
struct FleetHistory {
  absl::Time start;  // t_0
  absl::Duration step = absl::Seconds(15);
  std::vector<double> arrivals;  // arrivals[k - 1]: in (t_{k-1}, t_k]
  LengthHistogram prompt, output;
};

struct SynthesisOptions {
  absl::Duration smoothing = absl::Minutes(5);  // the rate curve's moving window (>= step)
  bool match_means = true;                      // rescale the length shapes to the observed means
  int32_t max_tokens = 1 << 20;
  int64_t max_requests = 50'000'000;  // refuse larger syntheses (memory)
  uint64_t seed = 1;
};

struct HistoryTrace {
  sim::Trace trace;              // normalised (first arrival at 0)
  absl::Time start;              // the history's t_0
  sim::SimDuration shift;        // history time of trace time 0, from t_0 (NormalizeTrace's shift)
  double dispersion = 1;         // estimated index of dispersion of per-step arrivals
  double cv = 1;                 // gamma inter-arrival CV used
  double observed_requests = 0;  // arrivals the history counted
};

// The gamma inter-arrival CV for an index of dispersion: sqrt(D), clamped to [0.2, 4] (the range
// the twin's own arrival source accepts).
double DispersionToCv(double dispersion);

// A histogram from a `sum by (le) (increase(..._bucket[...]))` answer (the last point of each le
// series, cumulative), with `sum` for the mean. InvalidArgument without a +Inf bucket or with an
// unparsable le.
absl::StatusOr<LengthHistogram> HistogramFromBuckets(const metrics::PromMatrix& by_le, double sum);

// The rate curve: per step, the arrivals of a centred window of about `smoothing` (an odd number of
// steps, cut at the ends), per second.
std::vector<double> SmoothedRates(const std::vector<double>& arrivals, absl::Duration step,
                                  absl::Duration smoothing);

// The synthesis (see the file comment). InvalidArgument for an empty history, a non-positive step,
// or more than max_requests expected arrivals.
absl::StatusOr<HistoryTrace> SynthesizeTrace(const FleetHistory& history,
                                             const SynthesisOptions& options);

// ---- fetching -----------------------------------------------------------------------------------
struct HistoryQueryOptions {
  std::string selector;  // "" or a PromQL label selector in braces: {model_name="..."}
  absl::Time end;
  absl::Duration range = absl::Hours(24);
  absl::Duration step = absl::Seconds(15);
};
using QueryFn = metrics::RangeQueryFn;

// InvalidArgument naming the flag (--selector, --range, --step) for a malformed selector, a range
// or step that is not positive, or a range that is not a whole number of steps apart from
// rounding (the range is rounded down to whole steps).
absl::Status ValidateHistoryQuery(const HistoryQueryOptions& o);

// Runs the queries of the file comment through `query` (the arrivals' by metrics::FetchArrivals)
// and assembles the history. Errors from `query` are passed on; NotFound, naming --selector, when
// no series of vllm:request_prompt_tokens_count matches the selector in the range.
absl::StatusOr<FleetHistory> FetchFleetHistory(const QueryFn& query, const HistoryQueryOptions& o);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_HISTORY_TRACE_H_
