// The reasons' names: see reason.h.
#include "controller/policy/reason.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace twinscale::policy {

std::string_view ReasonName(ReasonCode code) {
  switch (code) {
    case ReasonCode::kOther:
      return "";
    case ReasonCode::kInputsStale:
      return "InputsStale";
    case ReasonCode::kPendingNotCounted:
      return "PendingNotCounted";
    case ReasonCode::kEngineFromPods:
      return "EngineFromPods";
    case ReasonCode::kEngineArgsUnreadable:
      return "EngineArgsUnreadable";
    case ReasonCode::kSeasonalForecast:
      return "SeasonalForecast";
    case ReasonCode::kForecastMargin:
      return "ForecastMargin";
    case ReasonCode::kSurplusSpent:
      return "SurplusSpent";
    case ReasonCode::kShortfallOnRecord:
      return "ShortfallOnRecord";
    case ReasonCode::kMinuteMissed:
      return "MinuteMissed";
    case ReasonCode::kMinuteAtRisk:
      return "MinuteAtRisk";
    case ReasonCode::kSloUnattainable:
      return "SloUnattainable";
    case ReasonCode::kMaxReplicasInsufficient:
      return "MaxReplicasInsufficient";
    case ReasonCode::kForecastMissesSlo:
      return "ForecastMissesSlo";
    case ReasonCode::kScaleInSafe:
      return "ScaleInSafe";
    case ReasonCode::kMissWithinNoise:
      return "MissWithinNoise";
    case ReasonCode::kMissUnconfirmed:
      return "MissUnconfirmed";
    case ReasonCode::kLimitsExceeded:
      return "LimitsExceeded";
    case ReasonCode::kScaleInFrozen:
      return "ScaleInFrozen";
    case ReasonCode::kScaleInBlockedByLimits:
      return "ScaleInBlockedByLimits";
    case ReasonCode::kSteady:
      return "Steady";
    case ReasonCode::kScaleDownStabilized:
      return "ScaleDownStabilized";
    case ReasonCode::kScaleInClear:
      return "ScaleInClear";
    case ReasonCode::kScaleUpLimit:
      return "ScaleUpLimit";
    case ReasonCode::kScaleDownLimit:
      return "ScaleDownLimit";
    case ReasonCode::kAdmissionAdvised:
      return "AdmissionAdvised";
  }
  return "";
}

Reason MakeReason(ReasonCode kind, std::string message) {
  return Reason{std::string(ReasonName(kind)), std::move(message), kind};
}

bool HasReason(const std::vector<Reason>& reasons, ReasonCode kind) {
  return std::any_of(reasons.begin(), reasons.end(),
                     [kind](const Reason& r) { return r.kind == kind; });
}

}  // namespace twinscale::policy
