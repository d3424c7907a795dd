// Checks of Kubernetes object names that arrive from outside (a ScaledObject's trigger metadata,
// an admission API request), so a typo gets a clear InvalidArgument naming the field rather than
// a NOT_FOUND for a name no object could have. Pure.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_OBJECT_NAMES_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_OBJECT_NAMES_H_

#include <string_view>

#include "absl/status/status.h"

namespace twinscale::outputs {

// A namespace name: a DNS-1123 label (1-63 of [a-z0-9-], starting and ending alphanumeric).
// InvalidArgument "<field>: ..." quoting the value otherwise (empty included).
absl::Status ValidateNamespaceName(std::string_view value, std::string_view field);

// An InferenceAutoscaler's name: a DNS-1123 subdomain (1-253 characters, dot-separated labels
// of [a-z0-9-], each starting and ending alphanumeric). InvalidArgument "<field>: ..." otherwise.
absl::Status ValidateObjectName(std::string_view value, std::string_view field);

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_OBJECT_NAMES_H_
