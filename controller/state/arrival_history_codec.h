// The compact form of an ArrivalHistory's buckets (ArrivalBuckets) that the controller keeps in the
// InferenceAutoscaler's status (status.arrivalHistory.data), so that the seasonal forecast's week
// of arrivals survives a restart or a leader failover. The bucket length and the first bucket's
// start are kept beside it in the status as readable fields; the data is standard base64 (with
// padding) of these bytes:
//   varint         the format version: 1
//   varint         n, the number of buckets
//   n x zigzag     arrivals[i] - arrivals[i - 1] (arrivals[-1] = 0), each bucket's arrivals
//                  rounded to whole requests
//   runs           (varint observed milliseconds, varint run length >= 1), repeated until the runs
//                  cover the n buckets: each bucket's observed seconds, run-length encoded
// Varints are LEB128 (7 bits a byte, least significant first, at most 10 bytes); zigzag maps a
// signed difference d to 2d (d >= 0) or -2d - 1 (d < 0), so small changes of either sign take one
// or two bytes. Rounding the arrivals moves a bucket by at most half a request, less than the
// Poisson noise of any count it could hold (sqrt(c) >= 0.5 for c >= 0.25); the observed seconds
// keep millisecond precision. A week of 5-minute buckets (2,016) of a fleet at hundreds of requests
// a second takes about 5 KB of base64: successive buckets differ by a few thousand requests (two
// bytes), and a week observed throughout is one run.
//
// Decoding reads untrusted input (anyone who may write the object's status): every malformed
// input is InvalidArgument saying what is wrong, never a crash, and what it allocates is bounded by
// the input's length (fuzzed: tests/fuzz/arrival_history_codec_fuzz.cc).
//
// Pure. Thread-safety: plain functions.
#ifndef TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_CODEC_H_
#define TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/state/arrival_history.h"

namespace twinscale::state {

inline constexpr int64_t kArrivalCodecVersion = 1;
// Limits of what DecodeArrivalBuckets accepts: about a year of 5-minute buckets, 2^53 requests in
// a bucket (where doubles stop counting exactly), buckets of one second to one day, and 1 MiB of
// base64 (an object's status must fit in etcd's 1.5 MB anyway).
inline constexpr int64_t kMaxArrivalCodecBuckets = 1 << 17;
inline constexpr int64_t kMaxArrivalCodecCount = int64_t{1} << 53;
inline constexpr size_t kMaxArrivalCodecChars = size_t{1} << 20;

// The base64 data of `buckets` (the bucket length and start are not in it). Negative or non-finite
// arrivals count as 0 and observed seconds are clamped to [0, bucket].
std::string EncodeArrivalBuckets(const ArrivalBuckets& buckets);

// The buckets `data` encodes, with `bucket` and `start` (the status' fields beside it).
// InvalidArgument for a bucket outside [1 s, 24 h] or not a whole number of milliseconds, data
// longer than kMaxArrivalCodecChars, bad base64, an unknown version, a truncated or over-long
// varint, more than kMaxArrivalCodecBuckets buckets (or more than the data could hold), an
// arrival count below 0 or above kMaxArrivalCodecCount, observed time beyond the bucket, runs that
// do not cover the buckets exactly, or bytes left over.
absl::StatusOr<ArrivalBuckets> DecodeArrivalBuckets(absl::Duration bucket, absl::Time start,
                                                    std::string_view data);

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_ARRIVAL_HISTORY_CODEC_H_
