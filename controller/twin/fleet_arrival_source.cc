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
                                       double interval_s, RequestLengths& lengths, uint64_t seed,
                                       double random_share)
    : segments_(std::move(segments)),
      thinning_(thinning),
      path_(std::move(path)),
      end_s_(end_s),
      rate_cv_(std::max(0.0, rate_cv)),
      interval_s_(interval_s > 0 ? interval_s : 15.0),
      lengths_(lengths),
      arrivals_(seed, 0, sim::Stream::kArrivals),
      thinning_rng_(seed, 0, sim::Stream::kArrivals, 1),
      modulation_rng_(seed, 0, sim::Stream::kArrivals, 2),
      random_points_(seed, 0, sim::Stream::kArrivals, 3) {
  if (thinning_ == Thinning::kSystematic && random_share > 0) {
    random_share_ = std::min(1.0, random_share);
  }
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
    mixed_p_ = -1;  // the streams restart here too
    p = ShareAt(next);
  }
  p = std::min(p, 1.0);
  if (p < 1 && random_share_ > 0) return NextMixed(p, out);
  mixed_p_ = -1;
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
  return Emit(out);
}

bool FleetArrivalSource::Emit(sim::RequestSpec& out) {
  const double t = TimeAt(op_);
  t_ = t;
  if (!(t < end_s_)) return false;
  out.id = next_id_++;
  out.arrival = sim::SimTime::FromSecondsF(t);
  lengths_.Next(out.prompt_tokens, out.output_tokens);
  out.prefix_hashes.clear();
  out.assumed_cached_tokens = 0;
  if (cached_share_ > 0) {
    const uint64_t bits =
        sim::DeriveSeed(reuse_seed_, out.id, static_cast<uint64_t>(sim::Stream::kPrefixReuse));
    const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
    if (u < cached_share_) out.assumed_cached_tokens = out.prompt_tokens;
  }
  return true;
}

void FleetArrivalSource::SetPrefixReuse(double cached_share, uint64_t seed) {
  cached_share_ = std::isfinite(cached_share) ? std::clamp(cached_share, 0.0, 1.0) : 0.0;
  reuse_seed_ = seed;
}

void FleetArrivalSource::DrawRandomPoint(double from_op, double p) {
  random_next_op_ = from_op + sim::SampleGamma(random_points_, 1.0, 1.0) / (random_share_ * p);
}

void FleetArrivalSource::DrawBalancedPoint(double from_op, double p) {
  if (random_share_ >= 1) {
    balanced_next_op_ = std::numeric_limits<double>::infinity();
    return;
  }
  balanced_gaps_ = std::max(1.0, std::ceil((1.0 - phase_) / p - 1e-12));
  balanced_next_op_ =
      from_op + sim::SampleGamma(arrivals_, balanced_gaps_, 1.0) / (1.0 - random_share_);
}

bool FleetArrivalSource::NextMixed(double p, sim::RequestSpec& out) {
  // Both streams are drawn afresh from the last point when the share changes (or after points
  // emitted unthinned): exact for the random one (memoryless), the balanced one's progress since
  // its last kept point restarting, as the systematic thinning's does above.
  if (p != mixed_p_) {
    mixed_p_ = p;
    DrawRandomPoint(op_, p);
    DrawBalancedPoint(op_, p);
  }
  if (random_next_op_ <= balanced_next_op_) {
    op_ = random_next_op_;
    DrawRandomPoint(op_, p);
  } else {
    op_ = balanced_next_op_;
    phase_ = std::clamp(phase_ + balanced_gaps_ * p - 1.0, 0.0, 1.0);
    DrawBalancedPoint(op_, p);
  }
  return Emit(out);
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
// are at or after the current interval's start. A point beyond the interval that holds end_s is
// past the end (infinity), found without consuming the intervals up to it: where a forecast's
// rate path has fallen to nearly nothing (2e-16 req/s on a long-prompt replay) the next point
// lies some 1e15 intervals on, and walking them hung the replay.
double FleetArrivalSource::TimeAt(double op) {
  while (op >= interval_op_ + interval_rate_ * interval_s_) {
    if (interval_start_ + interval_s_ >= end_s_) return std::numeric_limits<double>::infinity();
    AdvanceInterval();
  }
  return interval_start_ + (op - interval_op_) / interval_rate_;
}

double FleetArrivalSource::OpAt(double t) {
  while (t >= interval_start_ + interval_s_) AdvanceInterval();
  return interval_op_ + (t - interval_start_) * interval_rate_;
}

}  // namespace twinscale::twin
