// Arrival counts in time buckets: see arrival_history.h.
#include "controller/state/arrival_history.h"

#include <algorithm>
#include <cmath>

namespace twinscale::state {

ArrivalHistory::ArrivalHistory(absl::Duration bucket, absl::Duration retention)
    : bucket_(std::max(bucket, absl::Seconds(1))),
      retention_(retention),
      max_buckets_(std::max<int64_t>(
          1, static_cast<int64_t>(std::ceil(absl::FDivDuration(retention, bucket_))) + 1)) {}

int64_t ArrivalHistory::IndexOf(absl::Time t) const {
  absl::Duration rem;
  int64_t q = absl::IDivDuration(t - absl::UnixEpoch(), bucket_, &rem);
  if (rem < absl::ZeroDuration()) --q;  // floor, also before the epoch
  return q;
}

absl::Time ArrivalHistory::StartOf(int64_t index) const {
  return absl::UnixEpoch() + index * bucket_;
}

void ArrivalHistory::Add(absl::Time from, absl::Time to, double arrivals) {
  if (!(to > from) || !std::isfinite(arrivals) || arrivals < 0) return;
  const double span_s = absl::ToDoubleSeconds(to - from);
  const int64_t lo = IndexOf(from);
  const int64_t hi = IndexOf(to - absl::Nanoseconds(1));
  if (buckets_.empty()) first_ = lo;
  // Grow the deque to cover [lo, hi], then drop what the retention no longer keeps.
  while (first_ > lo) {
    buckets_.push_front({});
    --first_;
  }
  while (first_ + static_cast<int64_t>(buckets_.size()) <= hi) buckets_.push_back({});
  for (int64_t i = lo; i <= hi; ++i) {
    const absl::Time b0 = std::max(from, StartOf(i));
    const absl::Time b1 = std::min(to, StartOf(i + 1));
    const double s = absl::ToDoubleSeconds(b1 - b0);
    if (s <= 0) continue;
    Bucket& b = buckets_[static_cast<size_t>(i - first_)];
    b.arrivals += arrivals * s / span_s;
    b.observed_s += s;
  }
  Trim();
}

ArrivalBuckets ArrivalHistory::Buckets(absl::Time through) const {
  ArrivalBuckets out;
  out.bucket = bucket_;
  out.start = StartOf(first_);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (StartOf(first_ + static_cast<int64_t>(i) + 1) > through) break;
    out.arrivals.push_back(buckets_[i].arrivals);
    out.observed_s.push_back(buckets_[i].observed_s);
  }
  return out;
}

void ArrivalHistory::Trim() {
  while (static_cast<int64_t>(buckets_.size()) > max_buckets_) {
    buckets_.pop_front();
    ++first_;
  }
}

std::optional<double> ArrivalHistory::MeanRate(absl::Time from, absl::Time to,
                                               double min_coverage) const {
  if (!(to > from) || buckets_.empty()) return std::nullopt;
  const double span_s = absl::ToDoubleSeconds(to - from);
  const int64_t lo = std::max(IndexOf(from), first_);
  const int64_t hi = std::min(IndexOf(to - absl::Nanoseconds(1)),
                              first_ + static_cast<int64_t>(buckets_.size()) - 1);
  // Each observed bucket's rate over the seconds it was observed, weighted by the part of the span
  // it stands for: its overlap with the span, or fewer seconds if it was observed for fewer.
  double weighted = 0, covered = 0;
  for (int64_t i = lo; i <= hi; ++i) {
    const Bucket& b = buckets_[static_cast<size_t>(i - first_)];
    if (b.observed_s <= 0) continue;
    const absl::Time b0 = std::max(from, StartOf(i));
    const absl::Time b1 = std::min(to, StartOf(i + 1));
    const double w = std::min(absl::ToDoubleSeconds(b1 - b0), b.observed_s);
    if (w <= 0) continue;
    weighted += w * b.arrivals / b.observed_s;
    covered += w;
  }
  if (covered <= 0 || covered < min_coverage * span_s) return std::nullopt;
  return weighted / covered;
}

}  // namespace twinscale::state
