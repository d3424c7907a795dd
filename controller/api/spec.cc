// Names of the spec's enumerators as the CRD spells them, and the per-request TTFT target.
#include "controller/api/spec.h"

#include <cstdint>
#include <string_view>

#include "absl/time/time.h"

namespace twinscale::api {

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kDirect:
      return "Direct";
    case Mode::kKeda:
      return "KEDA";
    case Mode::kHpa:
      return "HPA";
    case Mode::kRecommend:
      return "Recommend";
  }
  return "Unknown";
}

absl::Duration TtftObjective::TargetFor(int64_t prompt_tokens) const {
  // Duration arithmetic saturates at +-infinity rather than overflowing.
  return threshold + per_prompt_token * (prompt_tokens > 0 ? prompt_tokens : 0);
}

}  // namespace twinscale::api
