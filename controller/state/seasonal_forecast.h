// The seasonal part of the rate forecast: how the arrival rate moved, one or more periods (days)
// ago, from the time the current level was measured to each interval of the coming minutes. A
// seasonal-naive forecast with level correction: the level says how much traffic there is now,
// the days before say where it goes next, so a fleet can be sized for a morning ramp before the
// ramp arrives instead of after it.
//
// For k = 1..intervals, the k-th interval ahead being [now + (k - 1) x interval, now + k x
// interval) as policy::RateAhead and the twin count them, the ratio
//   sum_p R(now + (k - 1/2) x interval - p x period) / sum_p R(level window - p x period)
// over the past periods p = 1..periods that the history covers (both the level's window and every
// interval ahead), where R is the history's mean rate over a window at least `smoothing` wide
// centred there (a day's 5-minute buckets carry Poisson noise; the shape is what matters) and the
// level window is the span the current level averages, [now - level_span, now). Averaging the
// periods (rather than taking yesterday alone) lets one odd day count for less.
//
// Whether to use it (SeasonSkill): the ratios are used only while they have lately forecast the
// arrivals better than the level alone. A day's shape repeats at the scale of hours, and a
// deployment's days may or may not repeat at the scale of a decision's horizon: on the ServeGen
// language days the rate 6-14 minutes ahead is forecast better by the last minutes' level than by
// the days before (mean absolute errors of 4-11% against 6-20%: docs/results.md), while traffic
// whose mornings ramp at the same time every day is forecast better with them. The forecaster's
// own recent errors decide, not a setting.
//
// Pure: no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_STATE_SEASONAL_FORECAST_H_
#define TWINSCALE_CONTROLLER_STATE_SEASONAL_FORECAST_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "controller/state/arrival_history.h"

namespace twinscale::state {

struct SeasonOptions {
  // The season: a day. Replay of a compressed day (--time-scale f) compresses it to f x 24 h.
  absl::Duration period = absl::Hours(24);
  // Past periods averaged, where the history holds them: a week of days.
  int32_t periods = 7;
  // Ratios are clamped to [1 / max_ratio, max_ratio]: a season that says the rate will triple
  // within minutes is more likely a gap or an outage in the history than traffic to size for.
  double max_ratio = 3.0;
  // The history's buckets and the windows its rates are read over, as fractions of the period: 5
  // and 15 minutes of a day.
  double bucket_share = 1.0 / 288;
  double smoothing_share = 1.0 / 96;
  absl::Duration bucket() const { return period * bucket_share; }
  absl::Duration smoothing() const { return period * smoothing_share; }
  // What an ArrivalHistory must keep for these options and `lead` of forecast ahead.
  absl::Duration retention(absl::Duration lead) const {
    return period * periods + lead + smoothing();
  }
};

// The ratios for k = 1..intervals (see above); empty when the history covers no past period, when
// a period's level window saw no arrivals, or when intervals < 1 or interval <= 0.
std::vector<double> SeasonalRatios(const ArrivalHistory& history, absl::Time now,
                                   absl::Duration level_span, absl::Duration interval,
                                   int32_t intervals, const SeasonOptions& options);

// The record that decides whether the seasonal ratios are used: a forecast of the mean rate over
// a span ahead, made with the level alone and with the season, is checked against the arrivals
// the history shows once the span has passed. Spans do not overlap (a forecast whose span starts
// before the last one's ends is not kept), so the checks are about as independent as the traffic
// is. The season is used while, over the checks that matured within `window`, at least
// `min_checks` of them, it erred less by a clear margin: the mean of the differences of absolute
// log errors (level's less season's) stands more than two of its standard errors above zero. A
// season that is better only by chance, switched on and off as the checks come, would add the
// forecast's noise to the fleet and take nothing from the ramps it misses. Memory: the forecasts
// pending and the checks within the window.
class SeasonSkill {
 public:
  SeasonSkill(absl::Duration window, int32_t min_checks)
      : window_(window), min_checks_(min_checks) {}

  // A forecast of the mean rate over [from, to): `level` alone, `seasonal` with the season.
  void Forecast(absl::Time from, absl::Time to, double level, double seasonal);
  // Checks the forecasts whose span ended by `now` against `history`, and forgets the checks that
  // matured more than the window before `now`.
  void Mature(absl::Time now, const ArrivalHistory& history);

  struct Score {
    int32_t checks = 0;
    double level_error = 0;     // mean |ln(forecast / arrived)|
    double seasonal_error = 0;  // the same with the season
    double difference_se = 0;   // the standard error of level_error - seasonal_error
    bool use_season = false;
  };
  Score score() const;

 private:
  struct Pending {
    absl::Time from, to;
    double level = 0, seasonal = 0;
  };
  struct Check {
    absl::Time at;
    double level_error = 0, seasonal_error = 0;
  };
  absl::Duration window_;
  int32_t min_checks_;
  std::deque<Pending> pending_;        // by `to`, oldest first
  std::optional<absl::Time> last_to_;  // the end of the last span kept
  std::deque<Check> checks_;
};

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_SEASONAL_FORECAST_H_
