// Kubernetes time formats; see kube_time.h.
#include "controller/kube/kube_time.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace twinscale::kube {

// absl::ToUnix* round toward negative infinity: truncation, as Go's time formatting does.
std::string FormatKubeTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(absl::ToUnixSeconds(t)),
                          absl::UTCTimeZone());
}

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(absl::ToUnixMicros(t)),
                          absl::UTCTimeZone());
}

absl::StatusOr<absl::Time> ParseKubeTime(std::string_view text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not an RFC 3339 time: \"", std::string(text.substr(0, 64)), "\" (", error, ")"));
  }
  return t;
}

}  // namespace twinscale::kube
