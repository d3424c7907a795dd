// The what-if half of a scaling decision: see fleet_sizing.h.
#include "controller/policy/fleet_sizing.h"

#include <algorithm>
#include <cmath>

#include "controller/policy/replica_search.h"

namespace twinscale::policy {

std::optional<Forecast> Sizing::Find(int32_t n, double margin) const {
  const double percentile = margin < 1.0 ? scale_in_percentile : keep_percentile;
  for (const Asked& a : asked) {
    if (a.replicas == n && a.margin == margin && a.percentile == percentile) return a.forecast;
  }
  return std::nullopt;
}

PooledDraws EvidenceAt(int32_t replicas, const std::vector<MarginForecast>& evidence,
                       double min_arrival_rate) {
  PooledDraws pool;
  for (const MarginForecast& e : evidence) {
    if (e.replicas == replicas && e.arrival_rate >= min_arrival_rate) {
      pool.Add(e.attainment, e.attainment_se, e.requests);
    }
  }
  return pool;
}

Forecast PoolMarginForecasts(const Forecast& own, int32_t replicas,
                             const std::vector<MarginForecast>& evidence, double target,
                             int32_t& pooled, double arrival_rate) {
  pooled = 0;
  const bool clear_miss = !own.meets_slo && own.verdict_clear;
  if (clear_miss && arrival_rate <= 0) return own;
  const PooledDraws earlier =
      EvidenceAt(replicas, evidence, clear_miss ? kComparableRate * arrival_rate : 0.0);
  if (earlier.empty()) return own;
  PooledDraws pool;
  pool.Add(own.attainment, own.attainment_se, own.requests);
  pool.Add(earlier);
  pooled = earlier.draws();
  Forecast f = own;
  f.attainment = pool.mean();
  f.attainment_se = pool.se();
  f.requests = pool.requests();
  f.meets_slo = f.attainment + 1e-12 >= target;
  f.verdict_clear = pool.Clear(target);
  return f;
}

namespace {

class Sizer {
 public:
  Sizer(const ForecastQuestion& q, const Forecaster& f, const SizingBounds& b, Sizing& out)
      : q_(q), f_(f), b_(b), out_(out) {
    out_.keep_percentile = q.percentile;
    out_.scale_in_percentile = q.percentile;
    out_.miss_observed = b.miss_observed;
    out_.rise_on_record = b.rise_on_record;
  }

  // The forecast for n at `margin`, at that margin's current target; asked once.
  Forecast At(int32_t n, double margin) {
    if (std::optional<Forecast> f = out_.Find(n, margin)) return *f;
    ForecastQuestion x = CandidateQuestion(q_, n, b_.base, b_.not_counted, margin);
    x.percentile = margin < 1.0 ? out_.scale_in_percentile : out_.keep_percentile;
    if (margin < 1.0) x.prior = EvidenceAt(n, b_.scale_in_evidence);
    ++out_.evaluations;
    const Forecast own = f_.Evaluate(x);
    int32_t pooled = 0;
    const Forecast answer = margin < 1.0
                                ? PoolMarginForecasts(own, n, b_.scale_in_evidence,
                                                      x.percentile / 100, pooled, x.arrival_rate)
                                : own;
    out_.asked.push_back({n, margin, x.percentile, answer, own, pooled});
    return answer;
  }

  // The attainment a size must reach at `margin`'s current target (a share).
  double Target(double margin) const {
    return (margin < 1.0 ? out_.scale_in_percentile : out_.keep_percentile) / 100;
  }

  // Whether the ceiling at `margin` may sit below the target, given a forecast `seen` at that
  // margin: only then is it asked. Returns true when the target was lowered (the caller asks
  // again at the new target).
  bool CapTarget(double margin, const Forecast& seen) {
    if (100 * seen.attainment >= q_.percentile + kCeilingBelowTarget) return false;
    std::optional<double>& ceiling = margin < 1.0 ? out_.scale_in_ceiling : out_.keep_ceiling;
    if (ceiling) return false;
    ++out_.evaluations;
    const Forecast at_max = f_.Evaluate(CeilingQuestion(q_, b_.max_replicas, margin));
    ceiling = CeilingTarget(at_max);
    if (*ceiling >= q_.percentile) return false;
    if (at_max.scheduling_delay_mean_ms >= absl::ToDoubleMilliseconds(q_.ttft_threshold)) {
      // Overloaded even at maxReplicas: capacity is short, not the prompts (fleet_sizing.h).
      out_.ceiling_overloaded = true;
      out_.ceiling_delay_ms = at_max.scheduling_delay_mean_ms;
      return false;
    }
    (margin < 1.0 ? out_.scale_in_percentile : out_.keep_percentile) = std::max(0.0, *ceiling);
    return true;
  }

  void Run() {
    const int32_t base = b_.base;
    out_.replicas = base;
    if (ScaleInFromHint()) return;
    out_.at_base = At(base, 1.0);
    if (CapTarget(1.0, out_.at_base)) {
      out_.slo_unattainable = true;
      out_.at_base = At(base, 1.0);
    }
    out_.at_answer = out_.at_base;
    const Forecast& at_base = out_.at_base;
    out_.missed_at_base = !at_base.meets_slo;
    if (!at_base.meets_slo) {
      // Misses that are held: see fleet_sizing.h.
      // An ITL miss is a miss of the SLO itself (its objective has no headroom aim): never shallow.
      // A miss the fleet shows, or a rising load on record confirms, is never shallow.
      const bool confirmed = b_.miss_observed || b_.rise_on_record;
      const bool shallow = !confirmed && b_.slo_percentile > 0 &&
                           100 * at_base.attainment >= b_.slo_percentile && at_base.itl_met;
      if (!at_base.verdict_clear && !confirmed) {
        out_.miss_within_noise = true;
      } else if (shallow && !b_.miss_seen_at_base) {
        out_.miss_unconfirmed = true;
      } else {
        ScaleUp();
        // A shallow miss, confirmed, takes one replica per decision (fleet_sizing.h).
        if (shallow && out_.outcome == Sizing::Outcome::kScaleUp && out_.replicas > base + 1) {
          out_.replicas = base + 1;
          out_.at_answer = At(base + 1, 1.0);
          out_.shallow_step = true;
        }
      }
    } else if (b_.scale_in_allowed && base > b_.min_replicas) {
      ScaleIn();
    }
  }

 private:
  // When the previous recommendation was not above base, the scale-in question comes first: the
  // hint if below base, else base - 1, at the margin. If that size holds the SLO there, base does
  // too (more replicas, the full threshold), so base is not asked and the search goes on down from
  // it. Returns false, having asked at most that size (kept for the searches: ScaleIn starts at the
  // same one), when it does not hold the SLO or the shortcut does not apply. It never asks more
  // than asking base first would, except before a scale-up from a steady fleet (one what-if, a
  // clear miss); no hint at all (a target's first decision) asks base first.
  bool ScaleInFromHint() {
    const int32_t base = b_.base;
    const int32_t lo = std::max(b_.min_replicas, 1);
    if (!b_.scale_in_allowed || base <= lo || b_.hint < lo || b_.hint > base) return false;
    const int32_t start = b_.hint < base ? b_.hint : base - 1;
    const double margin = b_.safety_margin;
    auto safe = [&](int32_t n) { return At(n, margin); };
    const Forecast at_start = safe(start);
    // A margin target lowered under maxReplicas' ceiling no longer implies the full-threshold
    // target at base: ask base (and its own ceiling, which names an unattainable SLO).
    if (CapTarget(margin, at_start) || !at_start.meets_slo) return false;
    ReplicaSearch r = SearchDown(lo, start, safe, Target(margin), at_start);
    if (!r.met) r = {start, true, at_start, 0};
    out_.outcome = Sizing::Outcome::kScaleIn;
    out_.replicas = r.replicas;
    out_.at_answer = r.forecast;
    out_.at_base = r.forecast;
    out_.base_implied = true;
    return true;
  }

  void ScaleUp() {
    const int32_t base = b_.base;
    auto keep = [&](int32_t n) { return At(n, 1.0); };
    ReplicaSearch r;
    if (b_.hint > base && b_.hint <= b_.max_replicas) {
      const Forecast at_hint = keep(b_.hint);
      if (at_hint.meets_slo) {
        r = SearchDown(base + 1, b_.hint, keep, Target(1.0), at_hint);
        if (!r.met) r = {b_.hint, true, at_hint, 0};
      } else {
        r = SearchUp(b_.hint, b_.max_replicas, keep, Target(1.0), at_hint);
      }
    } else {
      r = SearchUp(base, b_.max_replicas, keep, Target(1.0), out_.at_base);
    }
    out_.replicas = r.met ? r.replicas : b_.max_replicas;
    out_.outcome = r.met ? Sizing::Outcome::kScaleUp : Sizing::Outcome::kMaxInsufficient;
    if (r.met) out_.at_answer = r.forecast;
  }

  void ScaleIn() {
    const int32_t base = b_.base;
    const int32_t lo = std::max(b_.min_replicas, 1);
    const double margin = b_.safety_margin;
    auto safe = [&](int32_t n) { return At(n, margin); };
    const int32_t start = b_.hint >= lo && b_.hint < base ? b_.hint : base - 1;
    Forecast at_start = safe(start);
    if (CapTarget(margin, at_start)) at_start = safe(start);
    ReplicaSearch r;
    if (at_start.meets_slo) {
      r = SearchDown(lo, start, safe, Target(margin), at_start);
      if (!r.met) r = {start, true, at_start, 0};
    } else if (start < base - 1) {
      r = SearchUp(start, base - 1, safe, Target(margin), at_start);  // between the hint and base
    }
    if (r.met) {
      out_.outcome = Sizing::Outcome::kScaleIn;
      out_.replicas = r.replicas;
      out_.at_answer = r.forecast;
    }
  }

  const ForecastQuestion& q_;
  const Forecaster& f_;
  const SizingBounds& b_;
  Sizing& out_;
};

}  // namespace

Sizing SizeFleet(const ForecastQuestion& question, const Forecaster& forecaster,
                 const SizingBounds& b) {
  Sizing out;
  Sizer(question, forecaster, b, out).Run();
  if (out.outcome == Sizing::Outcome::kScaleIn) {
    for (const Sizing::Asked& a : out.asked) {
      if (a.margin < 1.0 && a.replicas < b.base && a.forecast.meets_slo &&
          a.forecast.verdict_clear && (out.clearly_safe == 0 || a.replicas < out.clearly_safe)) {
        out.clearly_safe = a.replicas;
      }
    }
    // Never below the answer itself (a clear draw below it is noise the search did not follow).
    if (out.clearly_safe > 0) out.clearly_safe = std::max(out.clearly_safe, out.replicas);
  }
  return out;
}

}  // namespace twinscale::policy
