// twinscale's admission API (docs/architecture.md "Outputs and their contracts"): the gRPC service
// `twinscale.v1alpha1.AdmissionService` (proto/twinscale/v1alpha1/admission.proto, which documents
// every field) serving the advisory admission limits of each InferenceAutoscaler from the
// DecisionBoard, for a gateway or router to enforce:
//   GetAdmissionLimits    one target; INVALID_ARGUMENT naming the field for a missing or malformed
//                         target.namespace / target.name, NOT_FOUND when nothing is published
//                         for it;
//   ListAdmissionLimits   every target, or one namespace's (INVALID_ARGUMENT for a malformed one);
//   WatchAdmissionLimits  the current limits of every matching target, a SYNCED marker, then a
//                         message per change of a target's limits (active, max_arrival_rate,
//                         max_queue_per_replica, inputs_stale) and per deleted target. A name
//                         without a namespace is INVALID_ARGUMENT.
// Every mode is served (the limits are advisory). A follower answers UNAVAILABLE, and open
// watches end with UNAVAILABLE when leadership is lost. Streams use gRPC's callback API and end
// promptly when the server shuts down.
//
// This header carries no gRPC include: service() hands the generated service to GrpcServer.
// Thread-safety: construct before and destroy after the server that serves it.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_ADMISSION_SERVICE_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_ADMISSION_SERVICE_H_

#include <memory>

#include "controller/outputs/decision_board.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace twinscale::outputs {

class AdmissionService {
 public:
  // The service's full gRPC name, as the health service reports it.
  static constexpr char kServiceName[] = "twinscale.v1alpha1.AdmissionService";

  // `board` must outlive the service.
  explicit AdmissionService(DecisionBoard* board);
  ~AdmissionService();
  AdmissionService(const AdmissionService&) = delete;
  AdmissionService& operator=(const AdmissionService&) = delete;

  // The generated service, for GrpcServer::AddService; owned by this object.
  grpc::Service* service();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_ADMISSION_SERVICE_H_
