// The decision's last stage: advisory admission limits, while capacity can't keep up. When the
// decision leaves the SLO at risk and admission advice is enabled, the largest arrival rate the
// replicas serving now hold within the SLO (admission_search.h, searched from the previous
// decision's answer) and the per-replica queue limit (spec.limits.queueDepthPerReplica rounded
// up, capped by spec.admission.maxQueuePerReplica). twinscale never enforces them: a gateway may.
// Pure: the twin is asked through the Forecaster interface.
#ifndef TWINSCALE_CONTROLLER_POLICY_ADMISSION_ADVICE_H_
#define TWINSCALE_CONTROLLER_POLICY_ADMISSION_ADVICE_H_

#include <cstdint>
#include <optional>

#include "controller/policy/decision.h"
#include "controller/policy/forecaster.h"
#include "controller/policy/policy_config.h"
#include "controller/policy/reason.h"

namespace twinscale::policy {

struct AdmissionOutcome {
  AdmissionAdvice advice;        // inactive when none is advised
  int32_t evaluations = 0;       // what-ifs asked
  std::optional<Reason> reason;  // AdmissionAdvised
};
// `question`: the decision's aimed question (its Ready replicas are the fleet asked about);
// `previous_rate`: the previous decision's advised rate, if it advised one.
AdmissionOutcome AdviseAdmission(const ForecastQuestion& question, const PolicyConfig& config,
                                 bool slo_at_risk, std::optional<double> previous_rate,
                                 const Forecaster& forecaster);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_ADMISSION_ADVICE_H_
