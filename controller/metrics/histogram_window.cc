// Histogram increases, sums, quantiles and windows; see histogram_window.h for the semantics.
#include "controller/metrics/histogram_window.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace twinscale::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One (upper bound, cumulative count) pair, +Inf included: Prometheus' `bucket`.
struct Bucket {
  double upper_bound;
  double count;
};

// The buckets of `h` after Prometheus' clean-up in bucketQuantile (promql/quantile.go): sorted by
// edge, equal edges merged (their counts added), relative steps <= 1e-12 flattened as float noise
// (correctPrecisionErrors), then the monotone envelope (ensureMonotonic). nullopt when `h` is
// malformed or has a NaN edge, which Prometheus' sort doesn't expect and std::sort can't order.
std::optional<std::vector<Bucket>> NormalizedBuckets(const CumulativeHistogram& h) {
  if (h.cumulative.size() != h.upper_bounds.size() + 1) return std::nullopt;
  std::vector<Bucket> b;
  b.reserve(h.cumulative.size());
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    if (std::isnan(h.upper_bounds[i])) return std::nullopt;
    b.push_back({h.upper_bounds[i], h.cumulative[i]});
  }
  b.push_back({kInf, h.cumulative.back()});
  std::stable_sort(b.begin(), b.end(),
                   [](const Bucket& x, const Bucket& y) { return x.upper_bound < y.upper_bound; });
  // coalesceBuckets.
  size_t n = 0;
  for (size_t i = 1; i < b.size(); ++i) {
    if (b[i].upper_bound == b[n].upper_bound) {
      b[n].count += b[i].count;
    } else {
      b[++n] = b[i];
    }
  }
  b.resize(n + 1);
  // correctPrecisionErrors(buckets, 1e-12).
  double prev = b[0].count;
  for (size_t i = 1; i < b.size(); ++i) {
    const double curr = b[i].count;
    const double delta = std::fabs(curr - prev);
    if (delta == 0) continue;
    if (delta / curr <= 1e-12) {
      b[i].count = prev;
    } else {
      prev = curr;
    }
  }
  // ensureMonotonic.
  double max = b[0].count;
  for (size_t i = 1; i < b.size(); ++i) {
    if (b[i].count > max) {
      max = b[i].count;
    } else if (b[i].count < max) {
      b[i].count = max;
    }
  }
  return b;
}

// Go's sort.Search(n, f): the smallest i in [0, n) with f(i), or n; the same bisection, so even a
// predicate that isn't monotone (NaN counts) lands where Prometheus' would.
template <typename F>
size_t GoSearch(size_t n, F f) {
  size_t i = 0;
  size_t j = n;
  while (i < j) {
    const size_t h = i + (j - i) / 2;
    if (!f(h)) {
      i = h + 1;
    } else {
      j = h;
    }
  }
  return i;
}

// after - before, bucket by bucket, with HistogramIncrease's reset rule. Both valid, same layout.
CumulativeHistogram IncreaseUnchecked(const CumulativeHistogram& before,
                                      const CumulativeHistogram& after) {
  bool reset = after.count < before.count;
  CumulativeHistogram d;
  d.upper_bounds = after.upper_bounds;
  d.cumulative.resize(after.cumulative.size());
  for (size_t i = 0; i < after.cumulative.size() && !reset; ++i) {
    d.cumulative[i] = after.cumulative[i] - before.cumulative[i];
    // A bucket went down, or this bucket grew less than the one below it did: only a restart
    // explains either.
    if (d.cumulative[i] < 0 || (i > 0 && d.cumulative[i] < d.cumulative[i - 1])) reset = true;
  }
  if (reset) return after;
  d.count = after.count - before.count;
  d.sum = after.sum - before.sum;
  return d;
}

void AddInto(CumulativeHistogram& total, const CumulativeHistogram& part) {
  for (size_t i = 0; i < total.cumulative.size(); ++i) total.cumulative[i] += part.cumulative[i];
  total.count += part.count;
  total.sum += part.sum;
}

CumulativeHistogram ZeroLike(const CumulativeHistogram& h) {
  CumulativeHistogram z;
  z.upper_bounds = h.upper_bounds;
  z.cumulative.assign(h.cumulative.size(), 0.0);
  return z;
}

absl::Status Invalid(std::string_view what, const absl::Status& st) {
  return absl::InvalidArgumentError(
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", st.message()));
}

absl::Status LayoutMismatch(const CumulativeHistogram& a, const CumulativeHistogram& b) {
  return absl::InvalidArgumentError(absl::StrCat("bucket layouts differ: ", a.upper_bounds.size(),
                                                 " and ", b.upper_bounds.size(),
                                                 " finite edges, or different edges"));
}

}  // namespace

absl::StatusOr<CumulativeHistogram> HistogramIncrease(const CumulativeHistogram& before,
                                                      const CumulativeHistogram& after) {
  if (absl::Status st = ValidateHistogram(before); !st.ok()) return Invalid("before", st);
  if (absl::Status st = ValidateHistogram(after); !st.ok()) return Invalid("after", st);
  if (!SameLayout(before, after)) return LayoutMismatch(before, after);
  return IncreaseUnchecked(before, after);
}

double CounterIncrease(double before, double after) {
  return after >= before ? after - before : after;
}

absl::StatusOr<CumulativeHistogram> SumHistograms(const std::vector<CumulativeHistogram>& parts) {
  if (parts.empty()) return absl::InvalidArgumentError("no histograms to sum");
  CumulativeHistogram total = ZeroLike(parts[0]);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (absl::Status st = ValidateHistogram(parts[i]); !st.ok()) {
      return Invalid(absl::StrCat("part ", i), st);
    }
    if (!SameLayout(parts[0], parts[i])) return LayoutMismatch(parts[0], parts[i]);
    AddInto(total, parts[i]);
  }
  return total;
}

double HistogramQuantile(double q, const CumulativeHistogram& h) {
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  const std::optional<std::vector<Bucket>> normalized = NormalizedBuckets(h);
  if (!normalized.has_value()) return kNaN;
  const std::vector<Bucket>& b = *normalized;
  if (b.size() < 2) return kNaN;
  const double observations = b.back().count;
  if (observations == 0) return kNaN;
  double rank = q * observations;
  const size_t i = GoSearch(b.size() - 1, [&](size_t k) { return b[k].count >= rank; });
  if (i == b.size() - 1) return b[b.size() - 2].upper_bound;
  if (i == 0 && b[0].upper_bound <= 0) return b[0].upper_bound;
  double start = 0;
  const double end = b[i].upper_bound;
  double count = b[i].count;
  if (i > 0) {
    start = b[i - 1].upper_bound;
    count -= b[i - 1].count;
    rank -= b[i - 1].count;
  }
  return start + (end - start) * (rank / count);
}

Attainment ShareAtOrBelow(double threshold, const CumulativeHistogram& h) {
  Attainment a;
  const std::optional<std::vector<Bucket>> normalized = NormalizedBuckets(h);
  if (!normalized.has_value() || std::isnan(threshold)) {
    a.share = kNaN;
    a.count = normalized.has_value() ? normalized->back().count : 0;
    return a;
  }
  const std::vector<Bucket>& b = *normalized;
  a.count = b.back().count;
  // The first bucket whose edge is >= threshold; the +Inf bucket at the latest.
  const size_t i = static_cast<size_t>(
      std::lower_bound(b.begin(), b.end(), threshold,
                       [](const Bucket& x, double t) { return x.upper_bound < t; }) -
      b.begin());
  a.exact = i < b.size() && b[i].upper_bound == threshold;
  if (!(a.count > 0)) {
    a.share = kNaN;
    return a;
  }
  // The last bucket's edge is +Inf and the threshold is not NaN, so i < b.size(); a threshold of
  // +Inf is that bucket's edge (exact, share 1).
  double at_or_below = 0;
  if (a.exact) {
    at_or_below = b[i].count;
  } else if (i == b.size() - 1) {
    // Past the last finite edge: the +Inf bucket has no width to interpolate in, so its
    // observations count as above the threshold and the share is a lower bound.
    at_or_below = i > 0 ? b[i - 1].count : 0;
  } else if (i == 0) {
    // First bucket: from 0 when its edge is positive; otherwise its observations sit at the edge.
    const double edge = b[0].upper_bound;
    at_or_below = (edge > 0 && threshold > 0) ? b[0].count * (threshold / edge) : 0;
  } else {
    const double lo = b[i - 1].upper_bound;
    const double hi = b[i].upper_bound;
    at_or_below = b[i - 1].count + (b[i].count - b[i - 1].count) * ((threshold - lo) / (hi - lo));
  }
  a.share = at_or_below / a.count;
  return a;
}

// ---- HistogramWindow ----------------------------------------------------------------------------

HistogramWindow::HistogramWindow(absl::Duration window) : window_(window) {}

absl::Status HistogramWindow::Add(absl::Time at, const CumulativeHistogram& h) {
  if (absl::Status st = ValidateHistogram(h); !st.ok()) return Invalid("histogram", st);
  if (!samples_.empty()) {
    const Entry& last = samples_.back();
    if (at < last.at) {
      return absl::InvalidArgumentError(absl::StrCat("sample at ", absl::FormatTime(at),
                                                     " is older than the newest one, at ",
                                                     absl::FormatTime(last.at)));
    }
    if (!SameLayout(last.h, h)) {
      samples_.clear();
    } else if (at == last.at) {
      samples_.back().h = h;
      return absl::OkStatus();
    }
  }
  samples_.push_back({at, h});
  const absl::Time cutoff = at - window_;
  while (samples_.size() > 1 && (window_ <= absl::ZeroDuration() || samples_.front().at < cutoff)) {
    samples_.pop_front();
  }
  return absl::OkStatus();
}

std::optional<CumulativeHistogram> HistogramWindow::Increase() const {
  if (samples_.size() < 2) return std::nullopt;
  CumulativeHistogram total = ZeroLike(samples_.back().h);
  for (size_t i = 1; i < samples_.size(); ++i) {
    AddInto(total, IncreaseUnchecked(samples_[i - 1].h, samples_[i].h));
  }
  return total;
}

absl::Time HistogramWindow::oldest() const {
  return samples_.empty() ? absl::InfinitePast() : samples_.front().at;
}

absl::Time HistogramWindow::newest() const {
  return samples_.empty() ? absl::InfinitePast() : samples_.back().at;
}

// ---- CounterWindow ------------------------------------------------------------------------------

CounterWindow::CounterWindow(absl::Duration window) : window_(window) {}

absl::Status CounterWindow::Add(absl::Time at, double value) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter value ", value, " is not a finite non-negative number"));
  }
  if (!samples_.empty()) {
    Entry& last = samples_.back();
    if (at < last.at) {
      return absl::InvalidArgumentError(absl::StrCat("sample at ", absl::FormatTime(at),
                                                     " is older than the newest one, at ",
                                                     absl::FormatTime(last.at)));
    }
    if (at == last.at) {
      last.value = value;
      return absl::OkStatus();
    }
  }
  samples_.push_back({at, value});
  const absl::Time cutoff = at - window_;
  while (samples_.size() > 1 && (window_ <= absl::ZeroDuration() || samples_.front().at < cutoff)) {
    samples_.pop_front();
  }
  return absl::OkStatus();
}

std::optional<double> CounterWindow::Increase() const {
  if (samples_.size() < 2) return std::nullopt;
  double total = 0;
  for (size_t i = 1; i < samples_.size(); ++i) {
    total += CounterIncrease(samples_[i - 1].value, samples_[i].value);
  }
  return total;
}

std::optional<double> CounterWindow::Rate() const {
  const std::optional<double> increase = Increase();
  if (!increase.has_value()) return std::nullopt;
  return *increase / absl::ToDoubleSeconds(newest() - oldest());
}

absl::Time CounterWindow::oldest() const {
  return samples_.empty() ? absl::InfinitePast() : samples_.front().at;
}

absl::Time CounterWindow::newest() const {
  return samples_.empty() ? absl::InfinitePast() : samples_.back().at;
}

}  // namespace twinscale::metrics
