// Kubernetes' two wire formats for time: metav1.Time (RFC 3339, whole seconds, as in an Event's
// lastTimestamp) and metav1.MicroTime (RFC 3339 with six fractional digits, as in a Lease's
// renewTime). Both are written in UTC with a "Z".
#ifndef TWINSCALE_CONTROLLER_KUBE_KUBE_TIME_H_
#define TWINSCALE_CONTROLLER_KUBE_KUBE_TIME_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinscale::kube {

// "2024-05-06T07:08:09Z": truncated (not rounded) to the second, as metav1.Time marshals.
std::string FormatKubeTime(absl::Time t);

// "2024-05-06T07:08:09.123456Z": truncated to the microsecond, as metav1.MicroTime marshals.
std::string FormatMicroTime(absl::Time t);

// Parses either format (any RFC 3339 time: fraction optional, "Z" or a numeric offset).
// InvalidArgument quoting the text otherwise.
absl::StatusOr<absl::Time> ParseKubeTime(std::string_view text);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_KUBE_TIME_H_
