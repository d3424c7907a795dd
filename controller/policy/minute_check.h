// The twin's forecasts of the last minute, checked against what the fleet served in it.
//
// After each decision the twin forecasts the coming interval with the fleet as it stands (no
// change assumed); the next decision sees what the fleet served over that interval. Pooled over
// the last minute, the pairs say two things the decision acts on at once, before the record over
// the surplus window (slo_budget.h) moves:
// - Whether the minute missed the SLO: fewer than `percentile` percent of its first tokens in
//   time. The SLO's target counts such minutes, and no later surplus buys one back. A miss the
//   fleet shows is a miss confirmed: the twin's own shallow or noisy misses are not held for a
//   second draw (fleet_sizing.h), and nothing scales in.
// - By how much the twin was optimistic about it: the share it forecast less the share served,
//   when that gap stands clear of both shares' sampling noise. The twin is asked about the rate's
//   recent level and the last window's lengths; on a ramp both lag what comes (the conversation
//   hour's prompt tokens doubled in eight minutes while its requests rose by a third), and a
//   forecast of the span ahead that erred by that much on the minute just gone errs at least as
//   much on the next. The aim rises by the gap, so the fleet is sized for what the twin misses.
// - Whether that optimism threatens the next minute though this one met (MinuteAtRisk): the
//   minute's share in time, less the optimism, falls below the least the aim ever asks for (the
//   percentile plus PolicyConfig::min_forecast_headroom). A twin whose error grows, as it does
//   while a ramp runs ahead of its inputs, forecasts the next minute as met when it misses; the
//   aim rises by the gap before that minute is lost. Where the minute's margin covers the
//   optimism, the record over the surplus window (slo_budget.h) corrects the twin's bias, and
//   the aim stays: raising it at every clear gap also costs GPU-hours on traffic whose minutes
//   meet by a wide margin (docs/results.md "The last minute checked").
//
// Pure: no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_POLICY_MINUTE_CHECK_H_
#define TWINSCALE_CONTROLLER_POLICY_MINUTE_CHECK_H_

#include <deque>
#include <optional>

#include "absl/time/time.h"

namespace twinscale::policy {

// The twin's forecast for the interval after a decision, with the fleet as it stood.
struct IntervalForecast {
  absl::Time at;          // made then, for (at, at + interval]
  double attainment = 1;  // share of that interval's requests within their TTFT target
  double se = 0;          // its standard error (0: not estimated)
};

// One interval checked: the forecast made for it and what the fleet served in it.
struct IntervalCheck {
  absl::Time at;  // the interval's end
  double requests = 0;
  double predicted = 1;  // share forecast in time
  double predicted_se = 0;
  double served = 1;  // share served in time
};

// The checks of the intervals that ended within (now - window, now], pooled by requests.
struct MinuteCheck {
  int32_t intervals = 0;
  double requests = 0;
  double predicted_percent = 100;
  double served_percent = 100;
  bool missed = false;      // served_percent below the SLO's percentile
  double optimism = 0;      // points the twin forecast above what was served, when clear; else 0
  double noise_points = 0;  // two standard errors of that difference
};

// The last `window`'s checks, when they cover at least half of it (interval by interval);
// nullopt otherwise.
std::optional<MinuteCheck> CheckLastMinute(const std::deque<IntervalCheck>& checks, absl::Time now,
                                           absl::Duration window, absl::Duration interval,
                                           double percentile);

// Whether a minute that met the SLO is at risk by the twin's optimism about it: the optimism is
// clear (MinuteCheck::optimism > 0) and the share served less it is below `percentile` +
// `headroom`. False for a missed minute (MinuteCheck::missed says that).
bool MinuteAtRisk(const MinuteCheck& minute, double percentile, double headroom);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_MINUTE_CHECK_H_
