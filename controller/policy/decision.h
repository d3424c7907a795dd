// What the policy decided, and why: the replica count, advisory admission limits, the reasons (a
// code plus the numbers that drove it, feeding status conditions, events, logs and replay reports
// alike), and enough of the inputs to replay the decision alone.
#ifndef TWINSCALE_CONTROLLER_POLICY_DECISION_H_
#define TWINSCALE_CONTROLLER_POLICY_DECISION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/fleet_sizing.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/rate_forecast_error.h"
#include "controller/policy/reason.h"
#include "controller/policy/slo_budget.h"

namespace twinscale::policy {

// Limits a gateway may enforce while capacity can't keep up (never enforced by twinscale itself).
struct AdmissionAdvice {
  bool active = false;
  double max_arrival_rate = 0;        // requests per second the serving fleet holds within SLO
  int32_t max_queue_per_replica = 0;  // waiting requests per replica beyond which to shed
};

// A starting pod the decision did not count as capacity (observed_question.h: a starting pod counts
// only while it can still arrive): it holds a slot of spec.replicas but serves nothing.
struct NotCountedPod {
  std::string name;
  absl::Duration age;          // since creation, when decided
  bool unschedulable = false;  // PodScheduled=False, reason Unschedulable; else past the deadline
};

struct Decision {
  absl::Time at;
  int32_t current = 0;         // spec.replicas when decided
  int32_t recommendation = 0;  // what the forecast alone asks for (before windows and limits)
  int32_t previous_recommendation = 0;  // where the searches started (the last one; 0: none)
  int32_t replicas = 0;                 // the decision
  AdmissionAdvice admission;
  std::vector<Reason> reasons;
  // Starting pods left out of capacity, in the snapshot's order, and the warm-up deadline they
  // were held to (PolicyConfig::warmup_p99): past it a pod that is still not Ready stops counting.
  std::vector<NotCountedPod> not_counted;
  absl::Duration warmup_deadline = absl::ZeroDuration();
  bool slo_at_risk = false;  // the SLO is forecast to miss even with this decision
  // The inputs it used (enough to replay it alone) and the forecasts it saw.
  ForecastQuestion question;  // candidate_replicas = the decision
  // At the current size, full threshold; when a smaller size held the SLO at the safety margin
  // and the current one was therefore not asked (Sizing::base_implied), that size's forecast.
  Forecast forecast_at_current;
  Forecast forecast_at_decision;  // likewise a lower bound when held above such a size
  int32_t forecasts = 0;          // what-if evaluations this decision ran
  int32_t missed_at = 0;          // the current size, when its forecast missed the SLO (else 0)
  // The scale-in what-ifs (at the safety margin): the earlier decisions' draws it pooled with its
  // own (fleet_sizing.h; part of its inputs), and its own draws, which later decisions pool.
  std::vector<MarginForecast> scale_in_evidence;
  std::vector<MarginForecast> scale_in_forecasts;
  // What the fleet served in the snapshot's window (first tokens, and those within the TTFT
  // threshold; 0 and 0 without a window), for the SLO budget's record (slo_budget.h).
  double served_requests = 0;
  double served_met = 0;
  // The ledger over the target's window as this decision read it (question.percentile is the
  // aim it set).
  BudgetLedger ledger;
  // The rate forecast this decision made for its judged span (before any margin), and the
  // arrivals its snapshot saw: what later decisions check their forecasts' error on
  // (rate_forecast_error.h). The margin it applied: 1 when none.
  std::optional<RateCheck> rate_check;
  std::optional<ArrivalWindow> arrivals_seen;
  double forecast_margin = 1;
  // Points a surplus on record took off the aim (SurplusSpent); negative: a shortfall raised it
  // (ShortfallOnRecord), or the twin's optimism about a missed or at-risk minute (MinuteMissed,
  // MinuteAtRisk).
  double aim_lowered_by = 0;
  double aim_optimism_raise = 0;  // of which the twin's optimism raised it by (points, >= 0)
};

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_DECISION_H_
