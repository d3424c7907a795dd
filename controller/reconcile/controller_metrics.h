// The controller's own Prometheus metrics (served on /metrics by outputs/ops_server): how often it
// reconciles and how long that takes, what it decides, what fails, and per target the desired
// replicas and the twin's prediction error. Families are registered once in a MetricsRegistry.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_
#define TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_

#include "absl/status/statusor.h"
#include "controller/common/metrics_registry.h"

namespace twinscale::reconcile {

struct ControllerMetrics {
  CounterFamily* reconciles;           // twinscale_reconciles_total{result="ok|error"}
  HistogramFamily* reconcile_seconds;  // twinscale_reconcile_duration_seconds
  CounterFamily* decisions;     // twinscale_decisions_total{target, direction="up|down|hold"}
  CounterFamily* scale_writes;  // twinscale_scale_writes_total{target, result="ok|conflict|error"}
  CounterFamily* errors;  // twinscale_errors_total{stage="spec|scale|pods|metrics|history|status"}
  GaugeFamily* desired_replicas;  // twinscale_desired_replicas{target}
  GaugeFamily* current_replicas;  // twinscale_current_replicas{target}
  GaugeFamily*
      prediction_error;     // twinscale_prediction_error_seconds{target}: forecast - observed p90
  GaugeFamily* stale_pods;  // twinscale_stale_pods{target}
  GaugeFamily* is_leader;   // twinscale_leader (1 while this replica leads)

  static absl::StatusOr<ControllerMetrics> Register(MetricsRegistry& registry);
};

}  // namespace twinscale::reconcile

#endif  // TWINSCALE_CONTROLLER_RECONCILE_CONTROLLER_METRICS_H_
