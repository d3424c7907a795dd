// Histogram and counter arithmetic between scrapes, done the way Prometheus does it, so the
// numbers twinscale acts on are the numbers an operator's PromQL dashboard shows:
//   - increases handle counter resets as increase() does (a restarted pod starts again from 0);
//   - a fleet's histogram is the SUM of the pods' histograms, and quantiles are read from that
//     sum (histogram_quantile(q, sum by (le) (...))): averaging per-pod quantiles is wrong, because
//     a quantile is not linear in the data (a busy slow pod and an idle fast one average to a
//     "p90" that neither the fleet nor any pod has);
//   - HistogramQuantile is histogram_quantile() for classic histograms, special cases included;
//   - SLO attainment is exact when the SLO is a bucket edge (vLLM's TTFT edges include 0.1, 0.25,
//     0.5, 1.0 s): bucket(le=SLO) / count, with no interpolation error at all.
// One deliberate difference from increase(): no extrapolation to the window's edges. Prometheus
// scales the increase by (window / covered span); here an increase is the exact difference
// between the first and last sample kept, so counts stay integral and bucket-edge attainment
// stays exact. CounterWindow::Rate divides by the span actually covered.
//
// Pure code: no clock reads (callers pass the scrape time), no I/O.
// Thread-safety: the functions are pure; a window is a plain value owned by one loop (no locks).
#ifndef TWINSCALE_CONTROLLER_METRICS_HISTOGRAM_WINDOW_H_
#define TWINSCALE_CONTROLLER_METRICS_HISTOGRAM_WINDOW_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/metrics/cumulative_histogram.h"

namespace twinscale::metrics {

// Increase of a cumulative histogram between two scrapes, as Prometheus' increase() treats counter
// resets: if any bucket (or the count) went down, the server restarted, and the increase is the
// new value itself (everything counted since the restart). Also treated as a restart: differences
// that are not cumulative themselves (bucket i grew more than bucket i+1), which no sequence of
// observations can produce, only a restart whose new totals already passed the old ones in some
// buckets. The sum's increase is after.sum - before.sum (after.sum on a restart).
// InvalidArgument when either histogram is invalid (ValidateHistogram) or the layouts differ.
absl::StatusOr<CumulativeHistogram> HistogramIncrease(const CumulativeHistogram& before,
                                                      const CumulativeHistogram& after);

// Same for a counter value: after >= before ? after - before : after.
double CounterIncrease(double before, double after);

// Sum of histograms with the same layout (fleet-wide aggregation BEFORE any quantile, never
// averaging quantiles): buckets, counts and sums add. InvalidArgument when `parts` is empty, a
// part is invalid, or the layouts differ.
absl::StatusOr<CumulativeHistogram> SumHistograms(const std::vector<CumulativeHistogram>& parts);

// histogram_quantile(q, h) exactly as Prometheus implements it for classic histograms
// (promql/quantile.go, bucketQuantile): buckets sorted by edge, buckets with equal edges merged,
// relative differences <= 1e-12 between neighbours treated as float noise, then counts forced
// monotone; rank = q * count(+Inf); the first bucket whose count >= rank holds the quantile, and
// it is interpolated linearly inside that bucket, from 0 for the first bucket when its edge is
// > 0. Special cases: q NaN -> NaN; q < 0 -> -Inf; q > 1 -> +Inf; no observations -> NaN; fewer
// than two buckets (only +Inf) -> NaN; rank in the +Inf bucket -> the highest finite edge; rank in
// a first bucket whose edge is <= 0 -> that edge. Prometheus' own quirk is kept too: q = 0 with an
// empty first bucket (edge > 0) is 0/0 = NaN. A malformed `h` (cumulative.size() !=
// upper_bounds.size() + 1, or a NaN edge) gives NaN. Inconsistent counts are repaired as above,
// not refused: callers that need consistency check it with ValidateHistogram.
double HistogramQuantile(double q, const CumulativeHistogram& h);

// Share of observations <= threshold.
struct Attainment {
  double share = 0;    // in [0, 1]; NaN with no observations or a NaN threshold
  bool exact = false;  // threshold is a bucket edge (or +Inf): share is the histogram's own count
  double count = 0;    // observations (the +Inf bucket)
};
// Exact when the threshold equals a bucket edge: bucket(le=threshold) / count. Otherwise linearly
// interpolated inside the bucket, the inverse of HistogramQuantile's interpolation (for a quantile
// inside a finite bucket, ShareAtOrBelow(HistogramQuantile(q, h), h).share is q up to rounding):
// from 0 in a first bucket whose edge is > 0 (a threshold below 0 then gives 0), and assuming the
// first bucket's observations sit at its edge when that edge is <= 0. Observations in the +Inf
// bucket count as above any finite threshold past the last edge (the share is then a lower bound).
// The same normalisation as HistogramQuantile (sorting, merging, monotone counts) applies first;
// a malformed `h` gives share NaN and count 0.
Attainment ShareAtOrBelow(double threshold, const CumulativeHistogram& h);

// A rolling window over timestamped scrapes of one series: keeps the samples of the last `window`
// (those at or after newest - window, so scrapes every window/k cover exactly the window), and
// Increase() sums the step increases between consecutive samples, each with HistogramIncrease's
// reset rule: a pod restart in the middle of the window loses nothing counted before or after it
// (the end-to-end difference would lose everything before the restart).
class HistogramWindow {
 public:
  // A window <= 0 keeps only the newest sample (Increase() is then always nullopt).
  explicit HistogramWindow(absl::Duration window);

  // Adds a scrape taken at `at`. InvalidArgument when `h` is invalid (ValidateHistogram) or `at`
  // is before the newest sample (time never goes backwards for one series); a sample at the
  // newest time replaces it (a repeated scrape). A sample whose layout differs from the window's
  // starts the window afresh: the series changed (a server restarted with other bucket edges)
  // and its history can't be compared with the new one.
  absl::Status Add(absl::Time at, const CumulativeHistogram& h);

  // Increase over the samples kept; nullopt until two samples.
  std::optional<CumulativeHistogram> Increase() const;

  // Times of the oldest and newest samples kept; absl::InfinitePast() when empty.
  absl::Time oldest() const;
  absl::Time newest() const;
  size_t size() const { return samples_.size(); }
  absl::Duration window() const { return window_; }

 private:
  struct Entry {
    absl::Time at;
    CumulativeHistogram h;
  };
  absl::Duration window_;
  std::deque<Entry> samples_;  // ascending time, one layout
};

// The counter analogue of HistogramWindow (same keeping and reset rules).
class CounterWindow {
 public:
  explicit CounterWindow(absl::Duration window);

  // InvalidArgument when `value` is NaN, infinite or negative (not a counter value) or `at` is
  // before the newest sample; a sample at the newest time replaces it.
  absl::Status Add(absl::Time at, double value);

  // Increase over the samples kept; nullopt until two samples.
  std::optional<double> Increase() const;
  // Increase() per second of the span covered (newest - oldest); nullopt until two samples.
  std::optional<double> Rate() const;

  absl::Time oldest() const;  // absl::InfinitePast() when empty
  absl::Time newest() const;  // absl::InfinitePast() when empty
  size_t size() const { return samples_.size(); }
  absl::Duration window() const { return window_; }

 private:
  struct Entry {
    absl::Time at;
    double value;
  };
  absl::Duration window_;
  std::deque<Entry> samples_;  // ascending time
};

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_HISTOGRAM_WINDOW_H_
