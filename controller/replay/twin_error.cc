// The twin's own error per decision and per run: see twin_error.h.
#include "controller/replay/twin_error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "simulator/model/run_stats.h"

namespace twinscale::replay {

std::vector<CheckedPrediction> CheckPredictions(const std::vector<TwinPrediction>& predictions,
                                                const std::vector<ServedRequest>& served,
                                                const std::vector<QueueSample>& queue,
                                                absl::Duration record_end) {
  std::vector<CheckedPrediction> out;
  out.reserve(predictions.size());
  std::vector<double> ttfts;
  for (const TwinPrediction& p : predictions) {
    CheckedPrediction c;
    c.predicted = p;
    const absl::Duration from = p.at + p.judge_from;
    const absl::Duration to = p.at + p.horizon;
    c.cut = to > record_end;
    auto first =
        std::lower_bound(served.begin(), served.end(), from,
                         [](const ServedRequest& r, absl::Duration t) { return r.arrival < t; });
    ttfts.clear();
    int64_t met = 0;
    for (auto it = first; it != served.end() && it->arrival < to; ++it) {
      ++c.requests;
      if (it->met) ++met;
      if (it->ttft_ms.has_value()) ttfts.push_back(*it->ttft_ms);
    }
    if (c.requests > 0) {
      c.observed_attainment = static_cast<double>(met) / static_cast<double>(c.requests);
    }
    if (!ttfts.empty()) c.observed_ttft_p90_ms = sim::Quantile(ttfts, 0.90);
    auto sample = std::lower_bound(queue.begin(), queue.end(), to,
                                   [](const QueueSample& q, absl::Duration t) { return q.at < t; });
    if (sample != queue.end()) c.observed_waiting = sample->waiting;
    c.counted = c.requests > 0 && !c.cut && p.settled;
    out.push_back(std::move(c));
  }
  return out;
}

ArrivalsAgainstForecast CompareArrivals(int64_t requests, double forecast_rps,
                                        absl::Duration span) {
  const double expected = forecast_rps * absl::ToDoubleSeconds(span);
  if (!(expected > 0)) return ArrivalsAgainstForecast::kNoForecast;
  const double band = std::max(0.05 * expected, 2 * std::sqrt(expected));
  const double came = static_cast<double>(requests);
  if (came > expected + band) return ArrivalsAgainstForecast::kAbove;
  if (came < expected - band) return ArrivalsAgainstForecast::kBelow;
  return ArrivalsAgainstForecast::kAsForecast;
}

namespace {

// Sums of one part's errors, made a TwinErrorPart at the end.
struct PartSums {
  int64_t n = 0;
  double bias = 0;
  double abs = 0;
  void Add(double d) {
    ++n;
    bias += d;
    abs += std::fabs(d);
  }
  TwinErrorPart Part() const {
    TwinErrorPart p;
    p.decisions = n;
    if (n > 0) {
      p.attainment_bias_points = 100 * bias / static_cast<double>(n);
      p.attainment_mae_points = 100 * abs / static_cast<double>(n);
    }
    return p;
  }
};

}  // namespace

std::optional<TwinError> SummarizeTwinError(const std::vector<CheckedPrediction>& checks) {
  TwinError e;
  double floor_sum = 0, p90_bias = 0, p90_abs = 0;
  PartSums all, as_forecast, above, below;
  for (const CheckedPrediction& c : checks) {
    if (!c.counted) continue;
    ++e.decisions;
    const double d = c.predicted.attainment - c.observed_attainment;
    all.Add(d);
    switch (CompareArrivals(c.requests, c.predicted.forecast_rps,
                            c.predicted.horizon - c.predicted.judge_from)) {
      case ArrivalsAgainstForecast::kAsForecast:
        as_forecast.Add(d);
        break;
      case ArrivalsAgainstForecast::kAbove:
        above.Add(d);
        break;
      case ArrivalsAgainstForecast::kBelow:
        below.Add(d);
        break;
      case ArrivalsAgainstForecast::kNoForecast:
        break;
    }
    // A counted span has requests, and its observed share is met / requests.
    const double p = c.observed_attainment;
    floor_sum += std::sqrt(2 / std::numbers::pi * p * (1 - p) / static_cast<double>(c.requests));
    if (c.observed_ttft_p90_ms.has_value()) {
      ++e.ttft_decisions;
      const double dp = c.predicted.ttft_p90_ms - *c.observed_ttft_p90_ms;
      p90_bias += dp;
      p90_abs += std::fabs(dp);
    }
  }
  if (e.decisions == 0) return std::nullopt;
  const double n = static_cast<double>(e.decisions);
  const TwinErrorPart whole = all.Part();
  e.attainment_bias_points = whole.attainment_bias_points;
  e.attainment_mae_points = whole.attainment_mae_points;
  e.attainment_mae_floor_points = 100 * floor_sum / n;
  e.rate_as_forecast = as_forecast.Part();
  e.rate_above_forecast = above.Part();
  e.rate_below_forecast = below.Part();
  if (e.ttft_decisions > 0) {
    e.ttft_p90_bias_ms = p90_bias / static_cast<double>(e.ttft_decisions);
    e.ttft_p90_mae_ms = p90_abs / static_cast<double>(e.ttft_decisions);
  }
  return e;
}

}  // namespace twinscale::replay
