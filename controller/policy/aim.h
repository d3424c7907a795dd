// The decision's third stage: the aim. The forecasts must show the target's share of requests in
// time (FullAim, observed_question.h); the record over the last surplus_window moves that aim down
// by a surplus (SurplusSpent) or up by a shortfall (ShortfallOnRecord), within a floor and a
// ceiling (slo_budget.h has the rules and why). A minute the fleet just missed, which the twin
// forecast it would meet, raises the aim by the twin's optimism (minute_check.h), as does a minute
// met by less than that optimism over the aim's least headroom. The ledger over
// the target's whole window is kept with every decision. Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_AIM_H_
#define TWINSCALE_CONTROLLER_POLICY_AIM_H_

#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/minute_check.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/policy_history.h"
#include "controller/policy/reason.h"
#include "controller/policy/slo_budget.h"

namespace twinscale::policy {

// The SLO budget at `now`: the ledger over PolicyConfig::target_window, the record over the last
// surplus_window, and how far that record moves the aim (slo_budget.h), with the aim's floor and
// ceiling applied (the lowering never below percentile + min_forecast_headroom; the raise never
// above 99.5%).
struct BudgetOnRecord {
  BudgetLedger ledger;  // over target_window
  BudgetLedger recent;  // over surplus_window
  AimShift shift;
};
BudgetOnRecord BudgetAt(const PolicyHistory& history, const PolicyConfig& config, absl::Time now);

// The aim: the record's, raised by the twin's optimism about a minute the fleet missed
// (minute_check.h; MinuteMissed) or that the optimism puts at risk (MinuteAtRisk), to at most
// 99.5%.
struct Aim {
  BudgetOnRecord budget;
  std::optional<MinuteCheck> minute;  // the last minute checked, when its checks cover it
  double percentile = 0;              // what the forecasts are aimed at: FullAim - lowered_by
  double lowered_by = 0;              // points off the full aim; negative: raised
  double optimism_raise = 0;          // of which the twin's optimism (MinuteMissed, MinuteAtRisk)
  std::vector<Reason> reasons;
};
Aim AimAt(const PolicyHistory& history, const PolicyConfig& config, absl::Time now);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_AIM_H_
