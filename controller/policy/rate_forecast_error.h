// How wrong the policy's own arrival-rate forecasts have recently been, and the margin a run of
// shortfalls asks for.
//
// Every decision asks the twin about a rate path over a judged span ahead (from the end of the
// warm-up to the horizon's end). Once that span has passed, the arrivals the fleet saw over it are
// known, and the ratio of what came to what was forecast says how far off the forecast was at that
// lead time. The forecast starts from the rate's recent level. On a ramp, the level lags the rate,
// and check after check sees more arrivals than forecast. Bursts around a steady level give
// ratios on both sides of 1, and the twin already draws such swings itself
// (ForecastQuestion::arrival_rate_cv). So the margin answers only a run of shortfalls. When every
// check that matured over the last few minutes fell short, the twin is asked about the forecast
// scaled by the smallest of those ratios: the least the forecasts have recently fallen short by.
//
// Pure: no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_POLICY_RATE_FORECAST_ERROR_H_
#define TWINSCALE_CONTROLLER_POLICY_RATE_FORECAST_ERROR_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/time/time.h"

namespace twinscale::policy {

// A forecast to check: the mean arrival rate (requests per second) forecast for [from, to).
struct RateCheck {
  absl::Time from, to;
  double forecast = 0;
};

// Arrivals the fleet saw: `requests` over the `seconds` ending at `end`.
struct ArrivalWindow {
  absl::Time end;
  double seconds = 0;
  double requests = 0;
};

// actual / forecast for every check whose span ended in [matured_since, the last arrivals seen]
// and whose windows cover at least half of it (windows count by the share of their span inside
// [from, to)). Oldest first.
std::vector<double> ForecastRatios(const std::deque<RateCheck>& checks,
                                   const std::deque<ArrivalWindow>& arrivals,
                                   absl::Time matured_since = absl::InfinitePast());

// The margin a run of shortfalls asks for: with at least `min_checks` ratios, all above 1, the
// smallest of them, at most `cap`; 1 otherwise.
double ShortfallMargin(const std::vector<double>& ratios, int32_t min_checks, double cap);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_RATE_FORECAST_ERROR_H_
