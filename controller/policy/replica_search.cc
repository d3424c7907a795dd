// Fleet-size searches: see replica_search.h.
#include "controller/policy/replica_search.h"

#include <algorithm>
#include <cmath>
#include <optional>

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

// A size asked about and its forecast's attainment.
struct Point {
  int32_t n;
  double attainment;
  bool meets;
};

// Where the line through two asked sizes crosses `target`: the fleet size at which the
// attainment, interpolated (or extrapolated) linearly in the size, reaches it. Only where that
// line rises with the size and both verdicts follow from their attainment (an ITL miss does not);
// otherwise there is nothing to read from them.
std::optional<double> Crossing(const Point& a, const Point& b, double target) {
  if (target <= 0 || a.n == b.n) return std::nullopt;
  for (const Point& p : {a, b}) {
    if (p.meets != (p.attainment + 1e-12 >= target)) return std::nullopt;
  }
  const double slope = (b.attainment - a.attainment) / static_cast<double>(b.n - a.n);
  if (!(slope > 0)) return std::nullopt;
  const double x = static_cast<double>(b.n) + (target - b.attainment) / slope;
  if (!std::isfinite(x)) return std::nullopt;
  return std::clamp(x, -1e6, 1e6);
}

// The smallest size the line through a and b puts at or above the target.
std::optional<int32_t> PredictedSize(const Point& a, const Point& b, double target) {
  const std::optional<double> x = Crossing(a, b, target);
  if (!x) return std::nullopt;
  return static_cast<int32_t>(std::ceil(*x - 1e-9));
}

// Bisection between a size known to miss and a larger one known to meet (`r` holds the hit; the
// points, when known, their attainments). Its first kGuidedProbes sizes are where the line
// through the bracket's ends crosses the target, when it does inside: where the attainment is
// nearly linear in the size that finds the answer and its neighbour at once, and a size at the
// SLO's edge is a what-if's dearest (it grows its sample to the request budget). Then plain
// midpoints, so a curve the line misreads costs at most kGuidedProbes what-ifs more.
constexpr int32_t kGuidedProbes = 2;
void Bisect(Point miss, Point hit, double target, ReplicaSearch& r,
            absl::FunctionRef<Forecast(int32_t)> evaluate) {
  int32_t guided = 0;
  while (r.replicas - miss.n > 1) {
    int32_t mid = miss.n + (r.replicas - miss.n) / 2;
    if (guided < kGuidedProbes) {
      if (const std::optional<int32_t> g = PredictedSize(miss, hit, target)) {
        mid = std::clamp(*g, miss.n + 1, r.replicas - 1);
        ++guided;
      }
    }
    const Forecast f = evaluate(mid);
    ++r.evaluations;
    const Point p{mid, f.attainment, f.meets_slo};
    if (f.meets_slo) {
      r.replicas = mid;
      r.forecast = f;
      hit = p;
    } else {
      miss = p;
    }
  }
}

}  // namespace

ReplicaSearch SearchUp(int32_t miss, int32_t hi, absl::FunctionRef<Forecast(int32_t)> evaluate,
                       double target, std::optional<Forecast> at_miss) {
  ReplicaSearch r;
  r.replicas = hi;
  const int32_t base = miss;
  // The last two sizes asked (the start's, when known, first): both missed.
  std::optional<Point> before;
  std::optional<Point> last;
  if (at_miss) last = Point{miss, at_miss->attainment, at_miss->meets_slo};
  Point hit{0, 0, true};
  for (int64_t step = 1; miss < hi; step *= 2) {
    int32_t n = static_cast<int32_t>(std::min<int64_t>(hi, static_cast<int64_t>(base) + step));
    // Further than the doubling where the misses so far put the crossing further, by at most
    // one more doubling (the gallop stays logarithmic).
    if (before && last) {
      if (const std::optional<int32_t> g = PredictedSize(*before, *last, target)) {
        const int32_t reach =
            static_cast<int32_t>(std::min<int64_t>(hi, static_cast<int64_t>(base) + 2 * step));
        n = std::max(n, std::min(*g, reach));
      }
    }
    n = std::max(n, miss + 1);
    const Forecast f = evaluate(n);
    ++r.evaluations;
    const Point p{n, f.attainment, f.meets_slo};
    if (f.meets_slo) {
      r.replicas = n;
      r.forecast = f;
      r.met = true;
      hit = p;
      break;
    }
    miss = n;
    before = last;
    last = p;
  }
  if (!r.met) {
    r.replicas = hi;
    return r;
  }
  Bisect(last.value_or(Point{miss, 0, false}), hit, last ? target : 0, r, evaluate);
  return r;
}

ReplicaSearch SearchDown(int32_t lo, int32_t keep, absl::FunctionRef<Forecast(int32_t)> evaluate,
                         double target, std::optional<Forecast> at_keep) {
  ReplicaSearch r;
  r.replicas = keep;
  lo = std::max(lo, 1);
  if (keep - 1 < lo) return r;
  // The last two sizes asked that met (the start's, when known, first).
  std::optional<Point> before;
  std::optional<Point> last;
  if (at_keep) last = Point{keep, at_keep->attainment, at_keep->meets_slo};
  {
    const Forecast f = evaluate(keep - 1);
    ++r.evaluations;
    if (!f.meets_slo) return r;
    r.replicas = keep - 1;
    r.forecast = f;
    r.met = true;
    before = last;
    last = Point{keep - 1, f.attainment, true};
  }
  // Gallop down: keep - 2, keep - 4, ... until a miss (or lo meets). Where the sizes that met put
  // the crossing, the next size is the one predicted to be the smallest that meets: further
  // down than the doubling by at most one more doubling, or (at most kGuidedProbes times) less
  // far, at the SLO's edge, where the answer and its neighbour then settle it.
  std::optional<Point> miss;
  int32_t guided = 0;
  for (int64_t step = 2; r.replicas > lo;) {
    int32_t n = std::min(static_cast<int32_t>(std::max<int64_t>(lo, keep - step)), r.replicas - 1);
    bool short_of_plain = false;  // a guided probe less far than the plain step
    if (before && last) {
      if (const std::optional<int32_t> g = PredictedSize(*before, *last, target)) {
        const int32_t reach =
            std::min(static_cast<int32_t>(std::max<int64_t>(lo, keep - 2 * step)), r.replicas - 1);
        const int32_t guess = std::clamp(*g, reach, r.replicas - 1);
        if (guess <= n) {
          n = guess;
        } else if (guided < kGuidedProbes) {
          n = guess;
          ++guided;
          short_of_plain = true;
        }
      }
    }
    const Forecast f = evaluate(n);
    ++r.evaluations;
    if (!f.meets_slo) {
      miss = Point{n, f.attainment, false};
      break;
    }
    r.replicas = n;
    r.forecast = f;
    before = last;
    last = Point{n, f.attainment, true};
    // A guided probe short of the plain step leaves that step to try next (the gallop's
    // doubling resumes from where the plain search would be).
    if (!short_of_plain) step *= 2;
  }
  if (miss) Bisect(*miss, *last, target, r, evaluate);
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
  const double target = question.percentile / 100;
  if (at_start.meets_slo) {
    ReplicaSearch r = SearchDown(lo, start, evaluate, target, at_start);
    ++r.evaluations;
    if (!r.met) {
      r.forecast = at_start;
      r.met = true;
    }
    return r;
  }
  ReplicaSearch r = SearchUp(start, hi, evaluate, target, at_start);
  ++r.evaluations;
  return r;
}

}  // namespace twinscale::policy
