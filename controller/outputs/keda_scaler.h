// KEDA's external scaler (docs/architecture.md "Outputs and their contracts"): the gRPC service
// `externalscaler.ExternalScaler` (proto/externalscaler.proto, wire-identical to KEDA's) answering
// from the DecisionBoard. A ScaledObject's `external` or `external-push` trigger names the
// InferenceAutoscaler in its metadata (`name`; `namespace`, which defaults to the ScaledObject's
// namespace), and KEDA's HPA then lands on twinscale's decision (keda_metric.h has the arithmetic).
//
// Every RPC first resolves the target; errors, by gRPC code:
//   INVALID_ARGUMENT     scalerMetadata lacks `name` (or a namespace: neither `namespace` nor the
//                        ScaledObject's), or a value is not a valid Kubernetes name; the message
//                        names the key ("scalerMetadata.name: required ...");
//   UNAVAILABLE          this replica is not the leader (DecisionBoard::serving() is false);
//   NOT_FOUND            nothing is published for that InferenceAutoscaler (it does not exist, is
//                        outside the controller's namespace, or has had no decision yet since the
//                        controller started or became leader: the first comes within one
//                        spec.metrics.interval);
//   FAILED_PRECONDITION  the InferenceAutoscaler's spec.mode is not KEDA (Recommend must not act;
//                        Direct and HPA are acted on elsewhere).
// Then:
//   IsActive          true (no scale-to-zero in v1alpha1: minReplicas >= 1);
//   StreamIsActive    sends the IsActive answer at once and again whenever it changes; ends with
//                     the error above when the target stops being served (deleted, mode changed,
//                     leadership lost), so KEDA reconnects and re-resolves;
//   GetMetricSpec     one metric `metric_name` with target 1 (targetSize 1, targetSizeFloat 1.0);
//   StreamMetricSpec  the same spec at once, again whenever it changes, ends like StreamIsActive;
//   GetMetrics        one value for `metric_name` (or an empty metricName): KedaMetricFor(the
//                     published count, the current count), so the HPA's proposal is the decision,
//                     or the current count while the inputs are stale (hold, never zero). Another
//                     metricName is NOT_FOUND.
// Streams use gRPC's callback API and end promptly when the server shuts down.
//
// This header carries no gRPC include: service() hands the generated service to GrpcServer.
// Thread-safety: the service is called on gRPC's threads; construct before and destroy after the
// server that serves it.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_KEDA_SCALER_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_KEDA_SCALER_H_

#include <memory>
#include <string>

#include "controller/outputs/decision_board.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace twinscale::outputs {

struct KedaScalerOptions {
  // ["twinscale-desired-replicas"] the metric's name in GetMetricSpec and GetMetrics (KEDA shows
  // it in the HPA as "s<trigger index>-<name>").
  std::string metric_name = "twinscale-desired-replicas";
};

class KedaScaler {
 public:
  // The service's full gRPC name, as the health service reports it.
  static constexpr char kServiceName[] = "externalscaler.ExternalScaler";

  // `board` must outlive the scaler.
  explicit KedaScaler(DecisionBoard* board, KedaScalerOptions options = {});
  ~KedaScaler();
  KedaScaler(const KedaScaler&) = delete;
  KedaScaler& operator=(const KedaScaler&) = delete;

  // The generated service, for GrpcServer::AddService; owned by this object.
  grpc::Service* service();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_KEDA_SCALER_H_
