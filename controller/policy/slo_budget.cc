// The SLO's budget ledger and the aim it asks for: see slo_budget.h.
#include "controller/policy/slo_budget.h"

#include <algorithm>
#include <map>
#include <utility>

namespace twinscale::policy {

BudgetLedger LedgerOf(const std::deque<ServedInterval>& served, absl::Time now,
                      absl::Duration window, absl::Duration interval, double percentile) {
  BudgetLedger ledger;
  if (window <= absl::ZeroDuration()) return ledger;
  absl::Time earliest = absl::InfiniteFuture();
  std::map<int64_t, std::pair<double, double>> minutes;  // minute -> (requests, met)
  for (const ServedInterval& s : served) {
    if (s.at > now || now - s.at >= window || !(s.requests > 0)) continue;
    const double met = std::clamp(s.met, 0.0, s.requests);
    earliest = std::min(earliest, s.at);
    ledger.requests += s.requests;
    ledger.met += met;
    // The minute the interval ends in; an interval ending on a minute's boundary belongs to the
    // minute it covered.
    auto& m = minutes[absl::ToUnixSeconds(s.at - absl::Nanoseconds(1)) / 60];
    m.first += s.requests;
    m.second += met;
  }
  if (earliest == absl::InfiniteFuture()) return ledger;
  ledger.record = now - earliest + std::max(interval, absl::ZeroDuration());
  for (const auto& [minute, m] : minutes) {
    ++ledger.minutes;
    if (100 * m.second >= percentile * m.first) ++ledger.minutes_met;
  }
  return ledger;
}

AimShift AimShiftFor(const BudgetLedger& recent, const BudgetRules& r) {
  AimShift shift;
  if (recent.requests <= 0 || recent.record < r.min_record) return shift;
  shift.state = BudgetState::kOnTarget;
  const double off = recent.request_percent() - (r.target_requests + r.request_cushion);
  if (off < 0 && r.max_raise > 0) {
    shift.state = BudgetState::kRequestShortfall;
    shift.raised_by = std::min(-off, r.max_raise);
  } else if (off > 0 && r.max_lower > 0) {
    shift.state = BudgetState::kSurplus;
    shift.lowered_by = std::min(off, r.max_lower);
  }
  return shift;
}

const char* BudgetReasonCode(BudgetState state) {
  switch (state) {
    case BudgetState::kSurplus:
      return "SurplusSpent";
    case BudgetState::kRequestShortfall:
      return "ShortfallOnRecord";
    case BudgetState::kNoRecord:
    case BudgetState::kOnTarget:
      break;
  }
  return "";
}

bool MinutesToSpare(const BudgetLedger& window, const BudgetLedger& recent, double target_minutes) {
  return window.minute_percent() >= target_minutes && recent.minute_percent() >= target_minutes;
}

}  // namespace twinscale::policy
