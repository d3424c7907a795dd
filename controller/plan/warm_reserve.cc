// The warm reserve: see warm_reserve.h.
#include "controller/plan/warm_reserve.h"

#include <algorithm>
#include <cmath>

#include "controller/plan/resource_headroom.h"

namespace twinscale::plan {
namespace {

// Replicas for `rps`: the ceiling, forgiving the last bits of a quotient that is whole on paper.
int32_t Need(double rps, double per_replica_rps) {
  return static_cast<int32_t>(std::ceil(rps / per_replica_rps - 1e-9));
}

}  // namespace

WarmReserve WarmReserveFor(const std::vector<double>& rates, absl::Duration window,
                           absl::Duration lag, double per_replica_rps) {
  WarmReserve best;
  if (rates.empty() || !(per_replica_rps > 0) || window <= absl::ZeroDuration()) return best;
  const size_t k =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(absl::FDivDuration(lag, window) - 1e-9)));
  for (size_t i = 0; i < rates.size(); ++i) {
    double peak = rates[i];
    for (size_t j = i + 1; j <= i + k && j < rates.size(); ++j) peak = std::max(peak, rates[j]);
    const int32_t shortfall = Need(peak, per_replica_rps) - Need(rates[i], per_replica_rps);
    if (shortfall > best.replicas) {
      best.replicas = shortfall;
      best.at_window = i;
      best.from_rps = rates[i];
      best.to_rps = peak;
    }
  }
  return best;
}

std::vector<double> WindowRates(const sim::Trace& trace, absl::Duration window) {
  const WindowGrid grid = WindowsOf(trace, window);
  std::vector<double> rates(grid.count, 0);
  for (const sim::RequestSpec& r : trace.requests) {
    const size_t k = grid.Index(r.arrival.seconds());
    if (k < grid.count) rates[k] += 1;
  }
  for (double& r : rates) r /= grid.length_seconds;
  return rates;
}

}  // namespace twinscale::plan
