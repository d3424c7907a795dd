// ArrivalHistory: a fleet's arrivals over the last days, kept compactly as counts in fixed time
// buckets, so a forecast can ask what the rate did at the same time of day one or more days ago
// (seasonal_forecast.h). The SnapshotBuilder adds each counted interval as it is observed; replay
// seeds it with the traffic before the replayed span (the forecaster needs the arrival history,
// not a simulation of it).
//
// Memory is bounded by the retention: retention / bucket buckets of two doubles (a week of 5-minute
// buckets: 2,016). An interval is spread over the buckets it overlaps in proportion to the time it
// covers there; a bucket also keeps how many of its seconds were observed, so a gap in the
// history (the controller not running) is known as such and never read as a quiet spell.
//
// Buckets() exports the closed buckets as plain values (ArrivalBuckets): the controller keeps them
// in the object's status (arrival_history_codec.h encodes them) so that a new leader, or the same
// one restarted, starts from the history rather than from nothing.
//
// Pure: no I/O, no clock (times are the observer's). Not thread-safe.
#ifndef TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_H_
#define TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/time/time.h"

namespace twinscale::state {

// A run of consecutive buckets as plain values: bucket i covers [start + i x bucket, start + (i +
// 1) x bucket) and saw arrivals[i] arrivals over observed_s[i] of its seconds (0: not observed).
struct ArrivalBuckets {
  absl::Duration bucket = absl::Minutes(5);
  absl::Time start = absl::UnixEpoch();
  std::vector<double> arrivals;
  std::vector<double> observed_s;  // same size as arrivals; each in [0, bucket seconds]
  size_t size() const { return arrivals.size(); }
  absl::Time end() const { return start + bucket * static_cast<int64_t>(arrivals.size()); }
};

class ArrivalHistory {
 public:
  // `bucket` > 0; buckets ending more than `retention` before the newest observation are dropped.
  ArrivalHistory(absl::Duration bucket, absl::Duration retention);

  // `arrivals` arrived over [from, to). Ignored when to <= from or arrivals is negative or not
  // finite. Intervals may come in any order; the part of one older than the retention is dropped.
  void Add(absl::Time from, absl::Time to, double arrivals);

  // The mean arrival rate (per second) over [from, to): each bucket it overlaps contributes its
  // arrivals per observed second, weighted by its overlap with the span (or its observed seconds,
  // if fewer). nullopt when those weights cover less than `min_coverage` of the span.
  std::optional<double> MeanRate(absl::Time from, absl::Time to, double min_coverage = 0.9) const;

  // The buckets that end at or before `through` (the closed ones, when `through` is now), oldest
  // first, from the oldest kept; empty (with this history's bucket) when there are none.
  ArrivalBuckets Buckets(absl::Time through) const;

  absl::Duration bucket() const { return bucket_; }
  // How far back from the newest observation buckets are kept (the constructor's `retention`).
  absl::Duration retention() const { return retention_; }
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    double arrivals = 0;
    double observed_s = 0;  // seconds of the bucket that were observed
  };
  int64_t IndexOf(absl::Time t) const;  // floor((t - epoch) / bucket)
  absl::Time StartOf(int64_t index) const;
  void Trim();

  absl::Duration bucket_;
  absl::Duration retention_;
  int64_t max_buckets_;
  int64_t first_ = 0;  // the index of buckets_.front()
  std::deque<Bucket> buckets_;
};

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_H_
