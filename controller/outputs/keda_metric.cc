// The published KEDA metric for a replica count: see keda_metric.h.
#include "controller/outputs/keda_metric.h"

namespace twinscale::outputs {

KedaMetric KedaMetricFor(int32_t published_replicas, int32_t current_replicas) {
  KedaMetric m;
  if (published_replicas <= 0) return m;
  m.metric_value = published_replicas;
  if (current_replicas > 0 && published_replicas < current_replicas) {
    m.metric_value_float = published_replicas - 1 + kScaleDownMargin;
  } else {
    m.metric_value_float = published_replicas;
  }
  return m;
}

}  // namespace twinscale::outputs
