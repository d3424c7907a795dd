// A fleet's arrivals per step as Prometheus recorded them: what `twinscale replay
// --from-prometheus` synthesises its trace from (controller/replay/history_trace.h) and what the
// controller seeds the seasonal forecast's history with when it starts without one
// (controller/reconcile/reconciler.h).
//
// Arrivals per step: the increase of every pod's vllm:request_prompt_tokens_count (counter resets
// and pods that start within the range handled per series, as increase() does, but without its
// extrapolation, so the steps add up to the total), plus the change in the fleet's waiting +
// running requests. The prompt-length histogram's count is observed once for every request that
// leaves the engine (vllm:request_success_total is split by finished_reason, and some vLLM
// versions leave aborted requests out of it). Finishing lags arriving and flattens under overload:
// adding the change in requests in flight turns finishes back into arrivals (exact per pod, since
// every arrival is either finished or still in flight).
//
// The grid: points t_k = start + k x step, k = 0..n; arrivals[k - 1] counts (t_{k-1}, t_k].
// Prometheus evaluates a range query exactly on such a grid, each point taking a series' newest
// sample within its lookback (5 minutes by default), however old. A step is observed when some
// series of the counter was sampled within the step before each end: its sample at t_k is newer
// than t_{k-1} and its sample at t_{k-1} newer than t_{k-1} - step (timestamp() of the counter,
// a fourth query, says when each was taken). Before Prometheus' data begins, through a gap in its
// scraping, just after a series ends (the lookback still shows its last sample) or while no pod
// ran, a step's count (0, or an increase carried over the gap) says nothing about that step, and
// a history that keeps such steps as unknown never reads them as quiet spells.
//
// Pure: no I/O; the queries go through an injected function (PrometheusClient::QueryRange in the
// binaries, a fake in tests). Thread-safety: plain functions and values.
#ifndef TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_ARRIVALS_H_
#define TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_ARRIVALS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/metrics/prometheus_client.h"

namespace twinscale::metrics {

using RangeQueryFn = std::function<absl::StatusOr<PromMatrix>(const RangeQuery&)>;

// Per-step increases summed over the series of a counter matrix, on the grid of n + 1 points from
// `start` (see the file comment): a drop is a reset (the new value is the increase); a series that
// first appears after t_0 started within the range (its first value is the increase); points off
// the grid are ignored. Size n.
std::vector<double> CounterIncreasesPerStep(const PromMatrix& m, absl::Time start,
                                            absl::Duration step, int64_t n);
// The sum over the series of a gauge matrix at each of the n + 1 grid points (0 where none).
std::vector<double> GaugeSumPerPoint(const PromMatrix& m, absl::Time start, absl::Duration step,
                                     int64_t n);
// Per step, whether it was observed (the file comment), from `sample_times`: the answer to
// timestamp(<the counter>), each point's value the Unix time in seconds of the sample it took.
// Size n.
std::vector<bool> StepsObserved(const PromMatrix& sample_times, absl::Time start,
                                absl::Duration step, int64_t n);

struct ArrivalSeries {
  absl::Time start;  // t_0
  absl::Duration step;
  std::vector<double> arrivals;  // arrivals[k - 1]: in (t_{k-1}, t_k]
  std::vector<bool> observed;    // same size: whether step k - 1 was observed
};

// The arrivals over the n steps from `start` (n >= 1, step > 0): four range queries through
// `query` (the counter, raw, its samples' times, and the sums of the waiting and running gauges),
// all with
// `selector` ("" or a PromQL label selector in braces, e.g. {namespace="llm"}). Errors from
// `query` are passed on; NotFound when no series of vllm:request_prompt_tokens_count matches in
// the range; InvalidArgument for n < 1 or step <= 0.
absl::StatusOr<ArrivalSeries> FetchArrivals(const RangeQueryFn& query, const std::string& selector,
                                            absl::Time start, absl::Duration step, int64_t n);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_PROMETHEUS_ARRIVALS_H_
