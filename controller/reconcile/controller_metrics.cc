// Registration of the controller's own metrics: see controller_metrics.h.
#include "controller/reconcile/controller_metrics.h"

#include "controller/common/status_macros.h"

namespace twinscale::reconcile {

absl::StatusOr<ControllerMetrics> ControllerMetrics::Register(MetricsRegistry& r) {
  ControllerMetrics m;
  TS_ASSIGN_OR_RETURN(m.reconciles, r.AddCounter("twinscale_reconciles_total",
                                                 "Reconcile passes by result.", {"result"}));
  TS_ASSIGN_OR_RETURN(
      m.reconcile_seconds,
      r.AddHistogram("twinscale_reconcile_duration_seconds",
                     "Wall time of one reconcile pass (read, scrape, decide, act, status).",
                     {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}, {}));
  TS_ASSIGN_OR_RETURN(m.decisions,
                      r.AddCounter("twinscale_decisions_total",
                                   "Decisions by target and direction against the current count.",
                                   {"target", "direction"}));
  TS_ASSIGN_OR_RETURN(
      m.scale_writes,
      r.AddCounter("twinscale_scale_writes_total",
                   "Writes to a target's /scale by result (conflict: a 409 retried).",
                   {"target", "result"}));
  TS_ASSIGN_OR_RETURN(
      m.errors, r.AddCounter("twinscale_errors_total", "Failures by the reconcile stage they hit.",
                             {"stage"}));
  TS_ASSIGN_OR_RETURN(m.desired_replicas, r.AddGauge("twinscale_desired_replicas",
                                                     "The last decision per target.", {"target"}));
  TS_ASSIGN_OR_RETURN(
      m.current_replicas,
      r.AddGauge("twinscale_current_replicas",
                 "The target's /scale spec.replicas at the last pass.", {"target"}));
  TS_ASSIGN_OR_RETURN(
      m.prediction_error,
      r.AddGauge("twinscale_prediction_error_seconds",
                 "The twin's p90 TTFT forecast for the last window minus the observed p90.",
                 {"target"}));
  TS_ASSIGN_OR_RETURN(
      m.stale_pods,
      r.AddGauge("twinscale_stale_pods",
                 "Pods whose metrics could not be read fresh at the last pass.", {"target"}));
  TS_ASSIGN_OR_RETURN(m.is_leader,
                      r.AddGauge("twinscale_leader", "1 while this replica holds the Lease.", {}));
  return m;
}

}  // namespace twinscale::reconcile
