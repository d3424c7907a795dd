// The reasons a decision gives: a typed code for the code that reads them (tests, the policy's own
// stages), its stable CamelCase name for everything outside (status conditions, events, logs,
// decisions.jsonl, report.html) and a message with the numbers for people. A decision's reasons
// come in the order of the stages that gave them (recommend.h).
#ifndef TWINSCALE_CONTROLLER_POLICY_REASON_H_
#define TWINSCALE_CONTROLLER_POLICY_REASON_H_

#include <string>
#include <string_view>
#include <vector>

namespace twinscale::policy {

enum class ReasonCode {
  kOther,  // a reason from outside the policy's stages (tests, scripted deciders)
  // The observed fleet (observed_question.h).
  kInputsStale,        // no usable arrival rate: hold
  kPendingNotCounted,  // starting pods that no longer count as capacity
  kEngineFromPods,     // the twin simulates the engine the pods run (controller/twin)
  kEngineArgsUnreadable,
  // The forecast (forecast_stage.h).
  kSeasonalForecast,  // the days before move the rate over the judged span
  kForecastMargin,    // a run of shortfalls scales the forecast up
  // The aim (aim.h).
  kSurplusSpent,       // a surplus on record lowers the aim
  kShortfallOnRecord,  // a shortfall on record raises it
  kMinuteMissed,       // the last minute missed the SLO: acted on at once (minute_check.h)
  kMinuteAtRisk,       // the twin's optimism about the last minute threatens the next one
  // Sizing on the twin (size_on_twin.h).
  kSloUnattainable,          // even idle replicas keep too few requests in time
  kMaxReplicasInsufficient,  // even maxReplicas misses
  kForecastMissesSlo,        // scale up
  kScaleInSafe,              // scale in
  kMissWithinNoise,          // a miss within the twin's noise: hold
  kMissUnconfirmed,          // a first shallow miss: hold until confirmed
  kLimitsExceeded,           // limits enforced on scale-up
  kScaleInFrozen,            // stale inputs
  kScaleInBlockedByLimits,   // queue or KV use too high to scale in
  kSteady,
  // Stabilization (stabilize.h) and the rate limits (rate_limit.h).
  kScaleDownStabilized,
  kScaleInClear,  // clear evidence: a scale-in after the shorter window
  kScaleUpLimit,
  kScaleDownLimit,
  // Admission advice (admission_advice.h).
  kAdmissionAdvised,
};

// The code's stable name: "ForecastMissesSlo" for kForecastMissesSlo; "" for kOther.
std::string_view ReasonName(ReasonCode code);

struct Reason {
  std::string code;     // CamelCase, stable: ReasonName(kind), or a name from outside the policy
  std::string message;  // for people, with the numbers
  ReasonCode kind = ReasonCode::kOther;
};

// A policy reason: `code` is ReasonName(kind).
Reason MakeReason(ReasonCode kind, std::string message);

// Whether `reasons` hold one of `kind`.
bool HasReason(const std::vector<Reason>& reasons, ReasonCode kind);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_REASON_H_
