// CumulativeHistogram: a Prometheus classic histogram as one scrape shows it, the value type that
// vllm_observation.h extracts and histogram_window.h differences, sums and reads quantiles from.
//
// Classic histograms are cumulative: bucket i counts the observations <= upper_bounds[i], and
// the last bucket (+Inf) counts them all, so it equals `count`. The layout (the finite edges)
// belongs to the series: two histograms can be subtracted or added only when their edges are
// identical, and the edges are kept exactly as scraped (0.5 stays the double nearest 0.5), so an
// SLO written as 0.5 s matches the bucket le="0.5" exactly.
//
// Thread-safety: plain values and pure functions.
#ifndef TWINSCALE_CONTROLLER_METRICS_CUMULATIVE_HISTOGRAM_H_
#define TWINSCALE_CONTROLLER_METRICS_CUMULATIVE_HISTOGRAM_H_

#include <vector>

#include "absl/status/status.h"

namespace twinscale::metrics {

// Cumulative histogram as scraped: finite upper bounds ascending + cumulative counts (incl. +Inf),
// sum, count.
struct CumulativeHistogram {
  std::vector<double> upper_bounds;  // finite `le` edges, strictly ascending
  std::vector<double> cumulative;    // size upper_bounds + 1, the last one being le="+Inf"
  // Sum of the observations; NaN when the exposition had no _sum sample (an excerpt), so a mean
  // computed from it is visibly unknown rather than silently 0.
  double sum = 0;
  double count = 0;  // == cumulative.back() in a valid histogram
};

// OK when `h` is internally consistent: cumulative.size() == upper_bounds.size() + 1; edges finite
// and strictly ascending; counts finite, >= 0 and non-decreasing; count == cumulative.back().
// Otherwise InvalidArgument saying which rule broke (callers prefix the series' name).
absl::Status ValidateHistogram(const CumulativeHistogram& h);

// Same finite edges (compared exactly) and the same number of buckets.
bool SameLayout(const CumulativeHistogram& a, const CumulativeHistogram& b);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_CUMULATIVE_HISTOGRAM_H_
