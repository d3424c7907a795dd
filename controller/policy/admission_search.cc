// The advisory admission limit's search: see admission_search.h.
#include "controller/policy/admission_search.h"

#include <algorithm>

namespace twinscale::policy {

HeldRate LargestHeldRate(double arriving, std::optional<double> previous,
                         absl::FunctionRef<bool(double)> holds) {
  HeldRate out;
  if (!(arriving > 0)) return out;
  const double step = arriving * kAdmissionResolution;
  auto ask = [&](double rate) {
    ++out.evaluations;
    return holds(rate);
  };
  double lo = 0;         // holds (0: taken to, never asked)
  double hi = arriving;  // does not hold (the arriving rate: taken not to, never asked)
  if (previous.has_value() && *previous < arriving) {
    // Nothing held last time: is the lowest step held now?
    const double start = std::max(*previous, step);
    if (ask(start)) {
      lo = start;
      for (double gallop = step; lo + gallop < arriving; gallop *= 2) {
        const double next = lo + gallop;
        if (!ask(next)) {
          hi = next;
          break;
        }
        lo = next;
      }
    } else {
      hi = start;
      for (double gallop = step; hi - gallop > 0; gallop *= 2) {
        const double next = hi - gallop;
        if (ask(next)) {
          lo = next;
          break;
        }
        hi = next;
      }
    }
  }
  // Bisect to the resolution: the cold start's six steps over [0, arriving], fewer after a gallop.
  while (hi - lo > step * (1 + 1e-9)) {
    const double mid = (lo + hi) / 2;
    if (ask(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out.max_arrival_rate = lo;
  return out;
}

}  // namespace twinscale::policy
