// Advisory admission limits: see admission_advice.h.
#include "controller/policy/admission_advice.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "controller/policy/admission_search.h"

namespace twinscale::policy {

AdmissionOutcome AdviseAdmission(const ForecastQuestion& q, const PolicyConfig& c, bool slo_at_risk,
                                 std::optional<double> previous_rate,
                                 const Forecaster& forecaster) {
  AdmissionOutcome out;
  if (!c.admission_enabled || !slo_at_risk || q.ready.empty()) return out;
  ForecastQuestion now_q = q;
  now_q.candidate_replicas = static_cast<int32_t>(q.ready.size());
  now_q.pending_ready_in.clear();
  const HeldRate held = LargestHeldRate(q.arrival_rate, previous_rate, [&](double rate) {
    now_q.arrival_rate = rate;
    return forecaster.Evaluate(now_q).meets_slo;
  });
  out.evaluations = held.evaluations;
  const double lo = held.max_arrival_rate;
  out.advice.active = true;
  out.advice.max_arrival_rate = lo;
  out.advice.max_queue_per_replica = static_cast<int32_t>(std::ceil(c.queue_depth_per_replica));
  if (c.admission_max_queue_per_replica.has_value()) {
    out.advice.max_queue_per_replica =
        std::min(out.advice.max_queue_per_replica, *c.admission_max_queue_per_replica);
  }
  out.reason = MakeReason(ReasonCode::kAdmissionAdvised,
                          absl::StrFormat("the %zu serving replicas hold about %.1f req/s within "
                                          "the SLO (arriving: %.1f)",
                                          q.ready.size(), lo, q.arrival_rate));
  return out;
}

}  // namespace twinscale::policy
