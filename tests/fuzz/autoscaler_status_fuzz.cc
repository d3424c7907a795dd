// Fuzzes the reader of an InferenceAutoscaler's status (controller/reconcile/autoscaler_status.h:
// what a new leader reads back on its first pass, outside input written by whoever may write the
// object's status subresource): any JSON must give a status or a clear InvalidArgument, never a
// crash, a hang or unbounded memory. A status that reads must hold the bounds the decider relies
// on (speed factors above zero, a share in [0, 1], a front-end time within 10 s either way), and
// must read back the same, to the 4 significant digits the status is written with, after it is
// written again. ReadableStatus, which keeps what reads of a status that does not, must hold the
// same bounds and report an error for every field it leaves out.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "controller/policy/decider.h"
#include "controller/reconcile/autoscaler_status.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using twinscale::reconcile::AutoscalerStatus;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  std::vector<absl::Status> unreadable;
  const AutoscalerStatus kept = twinscale::reconcile::ReadableStatus(j, unreadable);
  for (const absl::Status& e : unreadable) {
    if (e.code() != absl::StatusCode::kInvalidArgument || e.message().empty()) abort();
  }
  if (kept.calibration &&
      !(kept.calibration->prefill_speed > 0 && kept.calibration->decode_speed > 0 &&
        kept.calibration->router_random_share >= 0 && kept.calibration->router_random_share <= 1)) {
    abort();
  }
  const absl::StatusOr<AutoscalerStatus> got = twinscale::reconcile::StatusFromJson(j);
  if (got.ok() != unreadable.empty()) abort();  // every field reads, or some error is named
  if (!got.ok()) {
    if (got.status().code() != absl::StatusCode::kInvalidArgument) abort();
    if (got.status().message().empty()) abort();  // an error must say what is wrong
    return 0;
  }
  if (got->calibration) {
    const AutoscalerStatus::Calibration& c = *got->calibration;
    if (!(c.prefill_speed > 0) || !(c.decode_speed > 0)) abort();
    if (!(c.router_random_share >= 0 && c.router_random_share <= 1)) abort();
    if (!(std::abs(c.extra_front_end_seconds) <= twinscale::policy::kMaxExtraFrontEndSeconds))
      abort();
  }
  const absl::StatusOr<AutoscalerStatus> again =
      twinscale::reconcile::StatusFromJson(twinscale::reconcile::StatusToJson(*got));
  if (!again.ok()) abort();  // what the controller writes, it must read
  if (got->calibration.has_value() != again->calibration.has_value()) abort();
  // The status holds numbers people read, written to 4 significant digits: what reads back is
  // the value rounded there, within half a unit of the fourth digit (plus the spacing of the
  // subnormal doubles, where a tiny value has fewer digits than that to round to).
  const auto same_as_written = [](double a, double b) {
    return std::abs(a - b) <= 5e-4 * std::max(std::abs(a), std::abs(b)) + 1e-300;
  };
  if (got->calibration && (!same_as_written(again->calibration->router_random_share,
                                            got->calibration->router_random_share) ||
                           !same_as_written(again->calibration->extra_front_end_seconds,
                                            got->calibration->extra_front_end_seconds))) {
    abort();
  }
  return 0;
}
