// LedgerOf and AimShiftFor on hand-worked records.
#include "controller/policy/slo_budget.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace twinscale::policy {
namespace {

// A minute boundary, so that the intervals below fall in whole minutes.
absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'040 + s); }

// 15-second intervals ending at 15, 30, ... (4 per minute), each with `requests` of which
// `percent` met the SLO, one entry per interval.
std::deque<ServedInterval> Record(const std::vector<double>& percent, double requests = 1000) {
  std::deque<ServedInterval> out;
  for (size_t i = 0; i < percent.size(); ++i) {
    out.push_back({T(15 * static_cast<int>(i + 1)), requests, requests * percent[i] / 100});
  }
  return out;
}

TEST(SloBudgetTest, TheLedgerCountsRequestsAndWholeMinutesWithinTheWindow) {
  // Minute 1: 92, 92, 88, 88 (90% of its requests: meets p90). Minute 2: 100, 100, 100, 50
  // (87.5%: misses). Minute 3: 96 x 4. Requests: 12 x 1000, met 10,940 -> 91.17%.
  const std::deque<ServedInterval> r = Record({92, 92, 88, 88, 100, 100, 100, 50, 96, 96, 96, 96});
  const BudgetLedger all = LedgerOf(r, T(180), absl::Hours(24), absl::Seconds(15), 90);
  EXPECT_DOUBLE_EQ(all.requests, 12000);
  EXPECT_NEAR(all.met, 10940, 1e-9);
  EXPECT_NEAR(all.request_percent(), 91.1666667, 1e-6);
  EXPECT_EQ(all.minutes, 3);
  EXPECT_EQ(all.minutes_met, 2);
  EXPECT_EQ(all.record, absl::Minutes(3));

  // A 90-second window ending at 180 s holds the intervals ending at 105..180 s: the second
  // minute's last two (100% and 50%: 75%, a miss) and the third minute.
  const BudgetLedger last = LedgerOf(r, T(180), absl::Seconds(90), absl::Seconds(15), 90);
  EXPECT_DOUBLE_EQ(last.requests, 6000);
  EXPECT_EQ(last.minutes, 2);
  EXPECT_EQ(last.minutes_met, 1);
  EXPECT_EQ(last.record, absl::Seconds(90));
}

TEST(SloBudgetTest, AnEmptyOrFutureRecordIsNoRecord) {
  const std::deque<ServedInterval> r = Record({95, 95});
  EXPECT_EQ(LedgerOf(r, T(0), absl::Hours(1), absl::Seconds(15), 90).requests, 0);
  EXPECT_EQ(LedgerOf({}, T(60), absl::Hours(1), absl::Seconds(15), 90).minutes, 0);
  EXPECT_EQ(LedgerOf(r, T(60), absl::ZeroDuration(), absl::Seconds(15), 90).requests, 0);
  // Intervals without requests count for nothing (no minute either).
  EXPECT_EQ(LedgerOf(Record({95, 95}, 0), T(60), absl::Hours(1), absl::Seconds(15), 90).minutes, 0);
}

BudgetLedger Ledger(double request_percent, int32_t minutes, int32_t minutes_met,
                    absl::Duration record) {
  BudgetLedger l;
  l.requests = 10000;
  l.met = 100 * request_percent;
  l.minutes = minutes;
  l.minutes_met = minutes_met;
  l.record = record;
  return l;
}

TEST(SloBudgetTest, TheShiftFollowsTheRecordAroundTheSetPoint) {
  // Rules: target 95% of requests, cushion 1 (set point 96), at most 4 points lower and 2
  // higher, 10 minutes of record.
  const BudgetRules rules;
  struct Case {
    std::string name;
    BudgetLedger recent;
    BudgetState want;
    double want_lowered, want_raised;
  };
  const absl::Duration half_hour = absl::Minutes(30);
  const std::vector<Case> cases = {
      {"too little record", Ledger(80, 5, 5, absl::Minutes(5)), BudgetState::kNoRecord, 0, 0},
      {"at the set point", Ledger(96, 30, 30, half_hour), BudgetState::kOnTarget, 0, 0},
      {"a surplus is spent point for point", Ledger(98, 30, 30, half_hour), BudgetState::kSurplus,
       2, 0},
      {"a large surplus: 99.9 - 96", Ledger(99.9, 30, 30, half_hour), BudgetState::kSurplus, 3.9,
       0},
      {"a shortfall raises the aim by itself", Ledger(95, 30, 30, half_hour),
       BudgetState::kRequestShortfall, 0, 1},
      {"a deep shortfall raises it by 2 at most", Ledger(80, 30, 30, half_hour),
       BudgetState::kRequestShortfall, 0, 2},
  };
  for (const Case& c : cases) {
    const AimShift s = AimShiftFor(c.recent, rules);
    EXPECT_EQ(s.state, c.want) << c.name;
    EXPECT_NEAR(s.lowered_by, c.want_lowered, 1e-9) << c.name;
    EXPECT_NEAR(s.raised_by, c.want_raised, 1e-9) << c.name;
  }
  // The room bounds the lowering; none either way and the aim holds whatever the record.
  BudgetRules narrow = rules;
  narrow.max_lower = 2;
  EXPECT_NEAR(AimShiftFor(Ledger(99.9, 30, 30, half_hour), narrow).lowered_by, 2, 1e-9);
  BudgetRules fixed = rules;
  fixed.max_lower = fixed.max_raise = 0;
  EXPECT_EQ(AimShiftFor(Ledger(99, 30, 30, half_hour), fixed).lowered_by, 0);
  EXPECT_EQ(AimShiftFor(Ledger(90, 30, 30, half_hour), fixed).raised_by, 0);
}

TEST(SloBudgetTest, AnOldDeficitStopsRaisingTheAimOnceOutOfTheRecentRecord) {
  // 20 minutes at 85%, then the fleet serves 99.5%. Over the last 30 minutes: at 25 minutes the
  // record is (80 x 85 + 20 x 99.5) / 100 = 87.9%, raised by the cap; at 60 minutes it is all at
  // 99.5% and the surplus (99.5 - 96 = 3.5) is spent, though the day's ledger still holds the
  // deficit (94.67%).
  std::vector<double> percent(80, 85.0);
  percent.insert(percent.end(), 160, 99.5);
  const std::deque<ServedInterval> r = Record(percent);
  const BudgetRules rules;
  auto recent_at = [&](int minute) {
    return LedgerOf(r, T(60 * minute), absl::Minutes(30), absl::Seconds(15), 90);
  };
  EXPECT_EQ(AimShiftFor(recent_at(25), rules).state, BudgetState::kRequestShortfall);
  EXPECT_NEAR(AimShiftFor(recent_at(25), rules).raised_by, 2, 1e-9);
  EXPECT_EQ(AimShiftFor(recent_at(60), rules).state, BudgetState::kSurplus);
  EXPECT_NEAR(AimShiftFor(recent_at(60), rules).lowered_by, 3.5, 1e-9);
  const BudgetLedger day = LedgerOf(r, T(3600), absl::Hours(24), absl::Seconds(15), 90);
  EXPECT_NEAR(day.request_percent(), (80 * 85 + 160 * 99.5) / 240, 1e-9);
  EXPECT_EQ(day.minutes, 60);
  EXPECT_EQ(day.minutes_met, 40);
}

TEST(SloBudgetTest, ReasonCodes) {
  EXPECT_STREQ(BudgetReasonCode(BudgetState::kSurplus), "SurplusSpent");
  EXPECT_STREQ(BudgetReasonCode(BudgetState::kRequestShortfall), "ShortfallOnRecord");
  EXPECT_STREQ(BudgetReasonCode(BudgetState::kOnTarget), "");
}

}  // namespace
}  // namespace twinscale::policy
