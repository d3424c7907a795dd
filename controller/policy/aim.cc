// The aim, moved by the record: see aim.h.
#include "controller/policy/aim.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/observed_question.h"

namespace twinscale::policy {

BudgetOnRecord BudgetAt(const PolicyHistory& history, const PolicyConfig& c, absl::Time now) {
  BudgetOnRecord b;
  b.ledger = LedgerOf(history.served, now, c.target_window, c.interval, c.percentile);
  b.recent = LedgerOf(history.served, now, c.surplus_window, c.interval, c.percentile);
  BudgetRules rules = c.budget;
  rules.target_requests = c.target_requests;
  const double aim = FullAim(c);
  rules.max_lower = std::max(0.0, aim - (c.percentile + c.min_forecast_headroom));
  rules.max_raise = std::clamp(99.5 - aim, 0.0, std::max(0.0, c.budget.max_raise));
  rules.min_record = std::min(c.budget.min_record, c.surplus_window);
  b.shift = AimShiftFor(b.recent, rules);
  return b;
}

Aim AimAt(const PolicyHistory& history, const PolicyConfig& c, absl::Time now) {
  Aim aim;
  aim.budget = BudgetAt(history, c, now);
  aim.percentile = FullAim(c);
  const double lowered = aim.budget.shift.lowered_by - aim.budget.shift.raised_by;
  if (lowered != 0) {
    aim.percentile -= lowered;
    aim.lowered_by = lowered;
    const BudgetLedger& l = aim.budget.recent;
    const BudgetState state = aim.budget.shift.state;
    const ReasonCode code = state == BudgetState::kSurplus ? ReasonCode::kSurplusSpent
                            : state == BudgetState::kRequestShortfall
                                ? ReasonCode::kShortfallOnRecord
                                : ReasonCode::kOther;
    aim.reasons.push_back(MakeReason(
        code,
        absl::StrFormat("over the last %s the fleet served %.2f%% of %.0f requests within the "
                        "TTFT threshold, and %d of %d minutes at p%g (target: %g%% and %g%%): "
                        "aiming the forecasts at %.1f%%",
                        absl::FormatDuration(absl::Trunc(l.record, absl::Seconds(1))),
                        l.request_percent(), l.requests, l.minutes_met, l.minutes, c.percentile,
                        c.target_requests, c.target_minutes, aim.percentile)));
  }
  aim.minute = CheckLastMinute(history.interval_checks, now, c.minute_check_window, c.interval,
                               c.percentile);
  if (!aim.minute) return aim;
  const MinuteCheck& m = *aim.minute;
  const bool at_risk = MinuteAtRisk(m, c.percentile, c.min_forecast_headroom);
  if (!m.missed && !at_risk) return aim;
  aim.optimism_raise = std::clamp(m.optimism, 0.0, std::max(0.0, 99.5 - aim.percentile));
  aim.percentile += aim.optimism_raise;
  aim.lowered_by -= aim.optimism_raise;
  const std::string seen = absl::StrFormat(
      "over the last %s the fleet served %.1f%% of %.0f first tokens within the TTFT SLO (p%g), "
      "where the twin forecast %.1f%%: ",
      absl::FormatDuration(c.minute_check_window), m.served_percent, m.requests, c.percentile,
      m.predicted_percent);
  const std::string raise =
      aim.optimism_raise > 0 ? absl::StrFormat(
                                   "the twin was %.1f points optimistic (noise %.1f): aiming the "
                                   "forecasts at %.1f%%",
                                   m.optimism, m.noise_points, aim.percentile)
                             : std::string();
  if (m.missed) {
    aim.reasons.push_back(
        MakeReason(ReasonCode::kMinuteMissed,
                   absl::StrCat(seen,
                                "a miss the fleet shows is acted on at once and nothing "
                                "scales in",
                                raise.empty() ? "" : "; ", raise)));
  } else {
    aim.reasons.push_back(MakeReason(
        ReasonCode::kMinuteAtRisk,
        absl::StrCat(seen,
                     absl::StrFormat("the same error on the next minute leaves less than %g "
                                     "points over the percentile; ",
                                     c.min_forecast_headroom),
                     raise)));
  }
  return aim;
}

}  // namespace twinscale::policy
