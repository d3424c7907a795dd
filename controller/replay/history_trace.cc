// A trace from a Prometheus history; see history_trace.h.
#include "controller/replay/history_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/state/rate_estimators.h"
#include "simulator/core/rng.h"
#include "simulator/core/samplers.h"
#include "simulator/workload/bucket_length_sampler.h"

namespace twinscale::replay {
namespace {

// state::AllanDispersion over each run of steps that saw arrivals, pooled by the number of
// differences: the steps before traffic starts, after it stops, and while the fleet is idle say
// nothing about burstiness, and the jump into or out of them would read as a burst.
double PooledDispersion(const std::vector<double>& arrivals) {
  double weighted = 0, weight = 0;
  std::vector<double> run;
  auto flush = [&] {
    if (run.size() >= 2) {
      weighted += state::AllanDispersion(run) * static_cast<double>(run.size() - 1);
      weight += static_cast<double>(run.size() - 1);
    }
    run.clear();
  };
  for (double a : arrivals) {
    if (a > 0) {
      run.push_back(a);
    } else {
      flush();
    }
  }
  flush();
  return weight > 0 ? weighted / weight : 1.0;
}

std::string PromDuration(absl::Duration d) {
  return absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(d)), "s");
}

}  // namespace

double LengthHistogram::total() const {
  double t = 0;
  for (double c : counts) t += c;
  return t;
}

double DispersionToCv(double dispersion) {
  if (!std::isfinite(dispersion) || dispersion <= 0) return 1.0;
  return std::clamp(std::sqrt(dispersion), 0.2, 4.0);
}

absl::StatusOr<LengthHistogram> HistogramFromBuckets(const metrics::PromMatrix& by_le, double sum) {
  std::map<double, double> cumulative;  // le -> count (last point of the series)
  for (const metrics::PromSeries& s : by_le) {
    auto le = s.labels.find("le");
    if (le == s.labels.end()) return absl::InvalidArgumentError("a bucket series without le");
    double edge;
    if (le->second == "+Inf" || le->second == "Inf") {
      edge = std::numeric_limits<double>::infinity();
    } else if (!absl::SimpleAtod(le->second, &edge) || !std::isfinite(edge)) {
      return absl::InvalidArgumentError(absl::StrCat("bad le \"", le->second, "\""));
    }
    if (s.points.empty()) continue;
    const double c = s.points.back().value;
    cumulative[edge] = std::isfinite(c) ? std::max(0.0, c) : 0.0;
  }
  if (cumulative.empty()) return LengthHistogram{};
  if (!std::isinf(cumulative.rbegin()->first)) {
    return absl::InvalidArgumentError("a histogram without its +Inf bucket");
  }
  LengthHistogram h;
  double prev = 0;
  for (const auto& [edge, c] : cumulative) {
    if (std::isfinite(edge)) h.upper_bounds.push_back(edge);
    // increase() extrapolates each series on its own: keep the cumulative counts monotone.
    h.counts.push_back(std::max(0.0, c - prev));
    prev = std::max(prev, c);
  }
  const double count = h.total();
  h.mean = count > 0 && std::isfinite(sum) && sum > 0 ? sum / count : 0.0;
  return h;
}

std::vector<double> SmoothedRates(const std::vector<double>& arrivals, absl::Duration step,
                                  absl::Duration smoothing) {
  const double step_s = absl::ToDoubleSeconds(step);
  const int64_t width =
      std::max<int64_t>(1, static_cast<int64_t>(std::llround(absl::FDivDuration(smoothing, step))));
  const int64_t half = width / 2;  // a window of 2 x half + 1 steps
  const int64_t n = static_cast<int64_t>(arrivals.size());
  std::vector<double> prefix(arrivals.size() + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + std::max(0.0, arrivals[i]);
  std::vector<double> rates(arrivals.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = std::max<int64_t>(0, i - half), hi = std::min<int64_t>(n, i + half + 1);
    rates[i] = (prefix[hi] - prefix[lo]) / (static_cast<double>(hi - lo) * step_s);
  }
  return rates;
}

absl::StatusOr<HistoryTrace> SynthesizeTrace(const FleetHistory& history,
                                             const SynthesisOptions& options) {
  if (history.step <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("history: step must be > 0");
  }
  double observed = 0;
  for (double a : history.arrivals) observed += std::max(0.0, a);
  if (history.arrivals.empty() || !(observed > 0)) {
    return absl::InvalidArgumentError("history: no arrivals in the range");
  }
  if (observed > static_cast<double>(options.max_requests)) {
    return absl::InvalidArgumentError(absl::StrCat("history: ", static_cast<int64_t>(observed),
                                                   " requests, more than the limit of ",
                                                   options.max_requests, " (shorten --range)"));
  }
  HistoryTrace out;
  out.start = history.start;
  out.observed_requests = observed;
  out.dispersion = PooledDispersion(history.arrivals);
  out.cv = DispersionToCv(out.dispersion);

  const double step_s = absl::ToDoubleSeconds(history.step);
  const std::vector<double> rates =
      SmoothedRates(history.arrivals, history.step, std::max(options.smoothing, history.step));
  const sim::BucketLengthSampler prompt(history.prompt.upper_bounds, history.prompt.counts,
                                        options.match_means ? history.prompt.mean : 0.0,
                                        options.max_tokens, /*ceil_to_bucket=*/true);
  const sim::BucketLengthSampler output(history.output.upper_bounds, history.output.counts,
                                        options.match_means ? history.output.mean : 0.0,
                                        options.max_tokens, /*ceil_to_bucket=*/true);
  sim::Rng arrivals_rng(options.seed, 0, sim::Stream::kArrivals);
  sim::Rng prompt_rng(options.seed, 0, sim::Stream::kPromptLengths);
  sim::Rng output_rng(options.seed, 0, sim::Stream::kOutputLengths);
  const double shape = 1.0 / (out.cv * out.cv);

  // Operational time s: a unit-rate gamma renewal process; real time t = Lambda^-1(s) with Lambda
  // piecewise linear (segment k: rates[k] over [k step, (k + 1) step)).
  sim::Trace& trace = out.trace;
  trace.requests.reserve(static_cast<size_t>(observed * 1.05) + 16);
  double s = sim::SampleGamma(arrivals_rng, shape, 1.0 / shape);
  double seg_cum = 0;  // Lambda at the start of segment k
  size_t k = 0;
  while (k < rates.size()) {
    const double seg_len = rates[k] * step_s;
    if (!(rates[k] > 0) || s > seg_cum + seg_len) {
      seg_cum += seg_len;
      ++k;
      continue;
    }
    const double t = static_cast<double>(k) * step_s + (s - seg_cum) / rates[k];
    sim::RequestSpec r;
    r.id = trace.requests.size();
    r.arrival = sim::SimTime::FromSecondsF(t);
    r.prompt_tokens = prompt.Sample(prompt_rng);
    r.output_tokens = output.Sample(output_rng);
    trace.requests.push_back(std::move(r));
    s += sim::SampleGamma(arrivals_rng, shape, 1.0 / shape);
  }
  if (trace.requests.empty()) return absl::InvalidArgumentError("history: no arrivals synthesised");
  out.shift = trace.requests.front().arrival - sim::SimTime::Zero();
  sim::NormalizeTrace(trace);
  return out;
}

absl::Status ValidateHistoryQuery(const HistoryQueryOptions& o) {
  const std::string& sel = o.selector;
  if (!sel.empty() && (sel.size() < 2 || sel.front() != '{' || sel.back() != '}')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--selector: want a PromQL label selector in braces, e.g. {model_name=\"llama\"}, got \"",
        sel, "\""));
  }
  if (o.step <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--step: must be > 0");
  }
  if (o.step < absl::Seconds(1) || o.step % absl::Seconds(1) != absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--step: must be a whole number of seconds, at least 1s");
  }
  if (o.range < o.step * 2) {
    return absl::InvalidArgumentError("--range: must span at least two --step intervals");
  }
  return absl::OkStatus();
}

absl::StatusOr<FleetHistory> FetchFleetHistory(const QueryFn& query, const HistoryQueryOptions& o) {
  if (absl::Status s = ValidateHistoryQuery(o); !s.ok()) return s;
  absl::Duration rest;  // the range is rounded down to whole steps
  const int64_t n = absl::IDivDuration(o.range, o.step, &rest);
  FleetHistory h;
  h.step = o.step;
  h.start = o.end - o.step * n;
  const std::string& sel = o.selector;
  const metrics::RangeQuery grid{"", h.start, o.end, o.step};
  auto ask = [&](std::string promql, bool whole_range) -> absl::StatusOr<metrics::PromMatrix> {
    metrics::RangeQuery q = grid;
    q.promql = std::move(promql);
    if (whole_range) q.start = q.end;  // one evaluation, at the end, over the whole range
    return query(q);
  };

  // Arrivals: every pod's finished-request counter, raw, and the change in requests in flight.
  absl::StatusOr<metrics::ArrivalSeries> arrivals =
      metrics::FetchArrivals(query, sel, h.start, o.step, n);
  if (absl::IsNotFound(arrivals.status())) {
    return absl::NotFoundError(absl::StrCat(arrivals.status().message(), ": check --selector"));
  }
  if (!arrivals.ok()) return arrivals.status();
  h.arrivals = std::move(arrivals->arrivals);

  // Lengths over the whole range.
  const std::string window = absl::StrCat("[", PromDuration(o.step * n), "]");
  for (auto [name, hist] : {std::pair{"vllm:request_prompt_tokens", &h.prompt},
                            std::pair{"vllm:request_generation_tokens", &h.output}}) {
    absl::StatusOr<metrics::PromMatrix> buckets =
        ask(absl::StrCat("sum by (le) (increase(", name, "_bucket", sel, window, "))"), true);
    if (!buckets.ok()) return buckets.status();
    absl::StatusOr<metrics::PromMatrix> sum =
        ask(absl::StrCat("sum(increase(", name, "_sum", sel, window, "))"), true);
    if (!sum.ok()) return sum.status();
    const double total_sum =
        !sum->empty() && !sum->front().points.empty() ? sum->front().points.back().value : 0.0;
    absl::StatusOr<LengthHistogram> hg = HistogramFromBuckets(*buckets, total_sum);
    if (!hg.ok()) {
      return absl::Status(hg.status().code(), absl::StrCat(name, ": ", hg.status().message()));
    }
    *hist = std::move(*hg);
  }
  return h;
}

}  // namespace twinscale::replay
