// Fleet-size searches: see replica_search.h.
#include "controller/policy/replica_search.h"

#include <algorithm>

namespace twinscale::policy {

ForecastQuestion CandidateQuestion(const ForecastQuestion& base_question, int32_t n, int32_t base,
                                   int32_t not_counted, double margin) {
  ForecastQuestion x = base_question;
  x.candidate_replicas = std::max(1, n - not_counted);
  x.judge_from = n >= base ? base_question.new_replica_warmup : absl::ZeroDuration();
  x.slack_margin = margin;
  return x;
}

ForecastQuestion CeilingQuestion(const ForecastQuestion& base_question, int32_t max_replicas,
                                 double margin) {
  ForecastQuestion best = base_question;
  best.candidate_replicas = max_replicas;
  for (int32_t i = static_cast<int32_t>(best.ready.size()); i < max_replicas; ++i) {
    best.ready.push_back({0, 0, 0});
  }
  best.pending_ready_in.clear();
  best.judge_from = absl::ZeroDuration();
  best.slack_margin = margin;
  // The ceiling caps the target only when CeilingTarget falls below it: asked at that level, a
  // ceiling clearly above it is settled without the precision (forecaster.h).
  best.percentile = std::min(100.0, base_question.percentile + kCeilingBelowTarget);
  best.attainment_tolerance = kCeilingTolerance;
  return best;
}

namespace {

// Bisection between a size known to miss and a larger one known to meet (`r` holds the hit).
void Bisect(int32_t miss, ReplicaSearch& r, absl::FunctionRef<Forecast(int32_t)> evaluate) {
  while (r.replicas - miss > 1) {
    const int32_t mid = miss + (r.replicas - miss) / 2;
    const Forecast f = evaluate(mid);
    ++r.evaluations;
    if (f.meets_slo) {
      r.replicas = mid;
      r.forecast = f;
    } else {
      miss = mid;
    }
  }
}

}  // namespace

ReplicaSearch SearchUp(int32_t miss, int32_t hi, absl::FunctionRef<Forecast(int32_t)> evaluate) {
  ReplicaSearch r;
  r.replicas = hi;
  const int32_t base = miss;
  for (int32_t step = 1;; step *= 2) {
    const int32_t n =
        static_cast<int32_t>(std::min<int64_t>(hi, static_cast<int64_t>(base) + step));
    if (n <= miss) break;  // already at hi
    const Forecast f = evaluate(n);
    ++r.evaluations;
    if (f.meets_slo) {
      r.replicas = n;
      r.forecast = f;
      r.met = true;
      break;
    }
    miss = n;
    if (n >= hi) break;
  }
  if (!r.met) {
    r.replicas = hi;
    return r;
  }
  Bisect(miss, r, evaluate);
  return r;
}

ReplicaSearch SearchDown(int32_t lo, int32_t keep, absl::FunctionRef<Forecast(int32_t)> evaluate) {
  ReplicaSearch r;
  r.replicas = keep;
  lo = std::max(lo, 1);
  if (keep - 1 < lo) return r;
  {
    const Forecast f = evaluate(keep - 1);
    ++r.evaluations;
    if (!f.meets_slo) return r;
    r.replicas = keep - 1;
    r.forecast = f;
    r.met = true;
  }
  // Gallop down: keep - 2, keep - 4, ... until a miss (or lo meets).
  int32_t miss = -1;
  for (int64_t step = 2; r.replicas > lo; step *= 2) {
    const int32_t n = static_cast<int32_t>(std::max<int64_t>(lo, keep - step));
    const Forecast f = evaluate(n);
    ++r.evaluations;
    if (!f.meets_slo) {
      miss = n;
      break;
    }
    r.replicas = n;
    r.forecast = f;
  }
  if (miss >= 0) Bisect(miss, r, evaluate);
  return r;
}

ReplicaSearch SmallestMeetingReplicas(const ForecastQuestion& question,
                                      const Forecaster& forecaster, int32_t lo, int32_t hi,
                                      int32_t start) {
  lo = std::max(lo, 1);
  hi = std::max(hi, lo);
  start = std::clamp(start, lo, hi);
  auto evaluate = [&](int32_t n) {
    ForecastQuestion x = question;
    x.candidate_replicas = n;
    return forecaster.Evaluate(x);
  };
  const Forecast at_start = evaluate(start);
  if (at_start.meets_slo) {
    ReplicaSearch r = SearchDown(lo, start, evaluate);
    ++r.evaluations;
    if (!r.met) {
      r.forecast = at_start;
      r.met = true;
    }
    return r;
  }
  ReplicaSearch r = SearchUp(start, hi, evaluate);
  ++r.evaluations;
  return r;
}

}  // namespace twinscale::policy
