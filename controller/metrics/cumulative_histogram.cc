// Consistency rules of a cumulative histogram; see cumulative_histogram.h.
#include "controller/metrics/cumulative_histogram.h"

#include <cmath>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"

namespace twinscale::metrics {

absl::Status ValidateHistogram(const CumulativeHistogram& h) {
  if (h.cumulative.size() != h.upper_bounds.size() + 1) {
    return absl::InvalidArgumentError(absl::StrCat(h.cumulative.size(), " cumulative counts for ",
                                                   h.upper_bounds.size(),
                                                   " finite edges (want edges + 1, for +Inf)"));
  }
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    const double le = h.upper_bounds[i];
    if (!std::isfinite(le)) {
      return absl::InvalidArgumentError(absl::StrCat("edge ", i, " is not finite: ", le));
    }
    if (i > 0 && !(h.upper_bounds[i - 1] < le)) {
      return absl::InvalidArgumentError(absl::StrCat("edges not strictly ascending at le=", le));
    }
  }
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    const double c = h.cumulative[i];
    const std::string le =
        i < h.upper_bounds.size() ? absl::StrCat(h.upper_bounds[i]) : std::string("+Inf");
    if (!std::isfinite(c) || c < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bucket le=", le, " count ", c, " is not a finite non-negative number"));
    }
    if (i > 0 && c < h.cumulative[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat("buckets not cumulative: le=", le, " has ", c,
                                                     " < ", h.cumulative[i - 1],
                                                     " of the edge below"));
    }
  }
  if (h.count != h.cumulative.back()) {
    return absl::InvalidArgumentError(
        absl::StrCat("+Inf bucket ", h.cumulative.back(), " != count ", h.count));
  }
  return absl::OkStatus();
}

bool SameLayout(const CumulativeHistogram& a, const CumulativeHistogram& b) {
  return a.upper_bounds == b.upper_bounds && a.cumulative.size() == b.cumulative.size();
}

}  // namespace twinscale::metrics
