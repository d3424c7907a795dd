// The twin's arrival source: see fleet_arrival_source.h.
#include "controller/twin/fleet_arrival_source.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "simulator/core/samplers.h"

namespace twinscale::twin {

double RatePath::At(int32_t k) const {
  if ((weights.empty() && season.empty()) || k < 1) return level;
  const double rate = policy::RateAhead(level, baseline, weights, season, k);
  return rate > 0 ? rate : 1e-6 * level;  // never stops operational time
}

FleetArrivalSource::FleetArrivalSource(std::vector<Segment> segments, Thinning thinning,
                                       RatePath path, double end_s, double rate_cv,
                                       double interval_s, RequestLengths& lengths, uint64_t seed)
    : segments_(std::move(segments)),
      thinning_(thinning),
      path_(std::move(path)),
      end_s_(end_s),
      rate_cv_(std::max(0.0, rate_cv)),
      interval_s_(interval_s > 0 ? interval_s : 15.0),
      lengths_(lengths),
      arrivals_(seed, 0, sim::Stream::kArrivals),
      thinning_rng_(seed, 0, sim::Stream::kArrivals, 1),
      modulation_rng_(seed, 0, sim::Stream::kArrivals, 2) {
  phase_ = thinning_rng_.Uniform01();
  interval_rate_ = path_.At(interval_) * NextMultiplier();
}

bool FleetArrivalSource::Next(sim::RequestSpec& out) {
  if (!(path_.level > 0)) return false;
  double p = ShareAt(t_);
  while (p <= 0) {
    // None of the simulated replicas serves yet: the fleet's process runs on without them;
    // restart it where the next of them comes up (Poisson: nothing to remember).
    const double next = NextStart(t_);
    if (!(next < end_s_)) return false;
    op_ = OpAt(next);
    t_ = next;
    p = ShareAt(next);
  }
  p = std::min(p, 1.0);
  double gaps = 1;  // fleet gaps until the next kept point
  if (p < 1) {
    if (thinning_ == Thinning::kIndependent) {
      // Geometric on {1, 2, ...} by inversion: one uniform per kept point.
      gaps = 1 + std::floor(std::log(thinning_rng_.UniformOpen0()) / std::log1p(-p));
    } else {
      gaps = std::max(1.0, std::ceil((1.0 - phase_) / p - 1e-12));
      phase_ = std::clamp(phase_ + gaps * p - 1.0, 0.0, 1.0);
    }
  }
  op_ += sim::SampleGamma(arrivals_, gaps, 1.0);
  const double t = TimeAt(op_);
  t_ = t;
  if (!(t < end_s_)) return false;
  out.id = next_id_++;
  out.arrival = sim::SimTime::FromSecondsF(t);
  lengths_.Next(out.prompt_tokens, out.output_tokens);
  out.prefix_hashes.clear();
  return true;
}

double FleetArrivalSource::ShareAt(double t) const {
  double share = segments_.empty() ? 1.0 : 0.0;
  for (const Segment& s : segments_) {
    if (s.start_s <= t) share = s.share;
  }
  return share;
}

double FleetArrivalSource::NextStart(double t) const {
  for (const Segment& s : segments_) {
    if (s.start_s > t && s.share > 0) return s.start_s;
  }
  return std::numeric_limits<double>::infinity();
}

// Gamma with mean 1 and CV rate_cv_ (1 when 0), kept above a floor so an interval never stops
// operational time.
double FleetArrivalSource::NextMultiplier() {
  if (rate_cv_ <= 0) return 1.0;
  const double k = 1.0 / (rate_cv_ * rate_cv_);
  return std::max(1e-6, sim::SampleGamma(modulation_rng_, k, 1.0 / k));
}

void FleetArrivalSource::AdvanceInterval() {
  interval_op_ += interval_rate_ * interval_s_;
  interval_start_ += interval_s_;
  ++interval_;
  interval_rate_ = path_.At(interval_) * NextMultiplier();
}

// Intervals are consumed as time moves on, so both mappings only ever move forward: `op` and `t`
// are at or after the current interval's start.
double FleetArrivalSource::TimeAt(double op) {
  while (op >= interval_op_ + interval_rate_ * interval_s_) AdvanceInterval();
  return interval_start_ + (op - interval_op_) / interval_rate_;
}

double FleetArrivalSource::OpAt(double t) {
  while (t >= interval_start_ + interval_s_) AdvanceInterval();
  return interval_op_ + (t - interval_start_) * interval_rate_;
}

}  // namespace twinscale::twin
