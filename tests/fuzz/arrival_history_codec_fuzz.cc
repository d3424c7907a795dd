// Fuzzes the arrival history's decoder (controller/state/arrival_history_codec.h: status.
// arrivalHistory.data, outside input written by whoever may write the object's status): any input
// must decode or give a clear InvalidArgument, never crash, hang or allocate beyond its length.
// Input: a first byte choosing the bucket length (low 3 bits) and whether the rest is the data as
// written (bit 3 clear) or raw bytes that are base64-encoded first (set: the varints themselves,
// which random text seldom reaches). Whatever decodes must encode back to the same buckets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "controller/state/arrival_history_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using twinscale::state::ArrivalBuckets;
  using twinscale::state::DecodeArrivalBuckets;
  using twinscale::state::EncodeArrivalBuckets;
  if (size == 0) return 0;
  const absl::Duration buckets[] = {
      absl::Minutes(5),         absl::Seconds(1),     absl::Hours(24), absl::Milliseconds(37500),
      absl::Microseconds(1500), absl::ZeroDuration(), absl::Hours(25), absl::Seconds(15)};
  const absl::Duration bucket = buckets[data[0] & 7];
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 8) text = absl::Base64Escape(text);
  const absl::Time start = absl::FromUnixSeconds(1795219200);
  const absl::StatusOr<ArrivalBuckets> got = DecodeArrivalBuckets(bucket, start, text);
  if (!got.ok()) {
    if (got.status().code() != absl::StatusCode::kInvalidArgument) abort();
    if (got.status().message().empty()) abort();  // an error must say what is wrong
    return 0;
  }
  if (got->arrivals.size() != got->observed_s.size() || got->size() > text.size()) abort();
  const absl::StatusOr<ArrivalBuckets> again =
      DecodeArrivalBuckets(bucket, start, EncodeArrivalBuckets(*got));
  if (!again.ok() || again->arrivals != got->arrivals || again->observed_s != got->observed_s) {
    abort();
  }
  return 0;
}
