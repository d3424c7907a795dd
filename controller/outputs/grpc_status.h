// absl::Status -> grpc::Status (the two share their code numbering). Internal to
// controller/outputs (it includes gRPC headers).
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_GRPC_STATUS_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace twinscale::outputs {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_GRPC_STATUS_H_
