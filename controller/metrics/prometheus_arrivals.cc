// Arrivals per step from Prometheus: see prometheus_arrivals.h.
#include "controller/metrics/prometheus_arrivals.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace twinscale::metrics {
namespace {

// The grid index of `t`, or -1 when it is off the grid or outside [0, n].
int64_t GridIndex(absl::Time t, absl::Time start, absl::Duration step, int64_t n) {
  const absl::Duration since = t - start;
  if (since < absl::ZeroDuration()) return -1;
  // Prometheus writes times with millisecond precision: round to the nearest step.
  const int64_t k = static_cast<int64_t>(std::llround(absl::FDivDuration(since, step)));
  if (k > n) return -1;
  if (absl::AbsDuration(since - step * k) > absl::Milliseconds(1)) return -1;
  return k;
}

// Values of one series on the grid (NaN where it has no point).
std::vector<double> OnGrid(const PromSeries& s, absl::Time start, absl::Duration step, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n + 1), std::numeric_limits<double>::quiet_NaN());
  for (const PromPoint& p : s.points) {
    const int64_t k = GridIndex(p.at, start, step, n);
    if (k >= 0 && std::isfinite(p.value)) v[static_cast<size_t>(k)] = p.value;
  }
  return v;
}

}  // namespace

std::vector<double> CounterIncreasesPerStep(const PromMatrix& m, absl::Time start,
                                            absl::Duration step, int64_t n) {
  std::vector<double> inc(static_cast<size_t>(std::max<int64_t>(n, 0)), 0.0);
  if (n <= 0) return inc;
  for (const PromSeries& s : m) {
    const std::vector<double> v = OnGrid(s, start, step, n);
    double last = std::numeric_limits<double>::quiet_NaN();  // last value seen
    for (int64_t k = 0; k <= n; ++k) {
      const double x = v[static_cast<size_t>(k)];
      if (std::isnan(x)) continue;
      if (k > 0) {
        double d;
        if (std::isnan(last)) {
          d = x;  // first seen after t_0: the series (the pod) started within the range
        } else {
          d = x - last;
          if (d < 0) d = x;  // a counter reset
        }
        inc[static_cast<size_t>(k - 1)] += std::max(0.0, d);
      }
      last = x;
    }
  }
  return inc;
}

std::vector<double> GaugeSumPerPoint(const PromMatrix& m, absl::Time start, absl::Duration step,
                                     int64_t n) {
  std::vector<double> sum(static_cast<size_t>(std::max<int64_t>(n + 1, 0)), 0.0);
  for (const PromSeries& s : m) {
    const std::vector<double> v = OnGrid(s, start, step, n);
    for (size_t k = 0; k < v.size() && k < sum.size(); ++k) {
      if (!std::isnan(v[k])) sum[k] += v[k];
    }
  }
  return sum;
}

std::vector<bool> StepsObserved(const PromMatrix& sample_times, absl::Time start,
                                absl::Duration step, int64_t n) {
  std::vector<bool> observed(static_cast<size_t>(std::max<int64_t>(n, 0)), false);
  const double step_s = absl::ToDoubleSeconds(step);
  for (const PromSeries& s : sample_times) {
    const std::vector<double> v = OnGrid(s, start, step, n);
    for (int64_t k = 1; k <= n; ++k) {
      const double begin = v[static_cast<size_t>(k - 1)], end = v[static_cast<size_t>(k)];
      if (std::isnan(begin) || std::isnan(end)) continue;
      // Unix seconds of the step's start (t_{k-1}).
      const double t0 =
          absl::ToDoubleSeconds(start - absl::UnixEpoch()) + static_cast<double>(k - 1) * step_s;
      if (end > t0 && begin > t0 - step_s) observed[static_cast<size_t>(k - 1)] = true;
    }
  }
  return observed;
}

absl::StatusOr<ArrivalSeries> FetchArrivals(const RangeQueryFn& query, const std::string& selector,
                                            absl::Time start, absl::Duration step, int64_t n) {
  if (n < 1 || step <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("arrivals from Prometheus: want at least one step of a positive length, got ",
                     n, " of ", absl::FormatDuration(step)));
  }
  ArrivalSeries out;
  out.start = start;
  out.step = step;
  const absl::Time end = start + step * n;
  // Every pod's finished-request counter, raw (increases are taken here, per series).
  const std::string count_name = absl::StrCat("vllm:request_prompt_tokens_count", selector);
  absl::StatusOr<PromMatrix> finished = query({count_name, start, end, step});
  if (!finished.ok()) return finished.status();
  if (finished->empty()) {
    return absl::NotFoundError(absl::StrCat("no series ", count_name, " between ",
                                            absl::FormatTime(start), " and ",
                                            absl::FormatTime(end)));
  }
  absl::StatusOr<PromMatrix> taken =
      query({absl::StrCat("timestamp(", count_name, ")"), start, end, step});
  if (!taken.ok()) return taken.status();
  absl::StatusOr<PromMatrix> waiting =
      query({absl::StrCat("sum(vllm:num_requests_waiting", selector, ")"), start, end, step});
  if (!waiting.ok()) return waiting.status();
  absl::StatusOr<PromMatrix> running =
      query({absl::StrCat("sum(vllm:num_requests_running", selector, ")"), start, end, step});
  if (!running.ok()) return running.status();
  out.arrivals = CounterIncreasesPerStep(*finished, start, step, n);
  out.observed = StepsObserved(*taken, start, step, n);
  const std::vector<double> w = GaugeSumPerPoint(*waiting, start, step, n);
  const std::vector<double> r = GaugeSumPerPoint(*running, start, step, n);
  for (int64_t k = 1; k <= n; ++k) {
    const double in_flight_change = (w[k] + r[k]) - (w[k - 1] + r[k - 1]);
    out.arrivals[k - 1] = std::max(0.0, out.arrivals[k - 1] + in_flight_change);
  }
  return out;
}

}  // namespace twinscale::metrics
