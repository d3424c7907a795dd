// The arrival history's compact form: see arrival_history_codec.h.
#include "controller/state/arrival_history_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace twinscale::state {
namespace {

void PutVarint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t ZigZag(int64_t d) {
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}

int64_t UnZigZag(uint64_t z) { return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1); }

// Reads varints from a byte string, failing on truncation and on values beyond 64 bits.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  absl::StatusOr<uint64_t> Varint(const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) {
        return absl::InvalidArgumentError(absl::StrCat("arrival history: ", what, " truncated"));
      }
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      // The tenth byte holds bit 63 only.
      if (shift == 63 && b > 1) break;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("arrival history: ", what, " is not a 64-bit varint"));
  }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

absl::Status Bad(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("arrival history: ", why));
}

}  // namespace

std::string EncodeArrivalBuckets(const ArrivalBuckets& b) {
  const int64_t bucket_ms = absl::ToInt64Milliseconds(b.bucket);
  std::string bytes;
  PutVarint(kArrivalCodecVersion, bytes);
  PutVarint(b.size(), bytes);
  int64_t previous = 0;
  for (double a : b.arrivals) {
    const int64_t count = std::isfinite(a) && a > 0
                              ? static_cast<int64_t>(std::llround(
                                    std::min(a, static_cast<double>(kMaxArrivalCodecCount))))
                              : 0;
    PutVarint(ZigZag(count - previous), bytes);
    previous = count;
  }
  // The observed milliseconds, run-length encoded.
  size_t i = 0;
  while (i < b.size()) {
    auto ms_of = [&](size_t k) -> int64_t {
      const double s = k < b.observed_s.size() ? b.observed_s[k] : 0.0;
      if (!std::isfinite(s)) return 0;
      return std::llround(std::clamp(1000 * s, 0.0, static_cast<double>(bucket_ms)));
    };
    const int64_t ms = ms_of(i);
    size_t run = 1;
    while (i + run < b.size() && ms_of(i + run) == ms) ++run;
    PutVarint(static_cast<uint64_t>(ms), bytes);
    PutVarint(run, bytes);
    i += run;
  }
  return absl::Base64Escape(bytes);
}

absl::StatusOr<ArrivalBuckets> DecodeArrivalBuckets(absl::Duration bucket, absl::Time start,
                                                    std::string_view data) {
  if (bucket < absl::Seconds(1) || bucket > absl::Hours(24) ||
      bucket % absl::Milliseconds(1) != absl::ZeroDuration()) {
    return Bad(absl::StrCat("bucket ", absl::FormatDuration(bucket),
                            " is not a whole number of milliseconds from 1s to 24h"));
  }
  if (data.size() > kMaxArrivalCodecChars) {
    return Bad(absl::StrCat(data.size(), " characters of data, more than the limit of ",
                            kMaxArrivalCodecChars));
  }
  std::string bytes;
  if (!absl::Base64Unescape(absl::string_view(data.data(), data.size()), &bytes))
    return Bad("data is not base64");
  Reader r(bytes);
  absl::StatusOr<uint64_t> version = r.Varint("the version");
  if (!version.ok()) return version.status();
  if (*version != static_cast<uint64_t>(kArrivalCodecVersion)) {
    return Bad(absl::StrCat("unknown format version ", *version));
  }
  absl::StatusOr<uint64_t> n = r.Varint("the bucket count");
  if (!n.ok()) return n.status();
  // Each bucket takes at least one byte of arrivals: a count beyond the bytes left is a lie, and
  // must not size an allocation.
  if (*n > static_cast<uint64_t>(kMaxArrivalCodecBuckets) || *n > r.left()) {
    return Bad(absl::StrCat(*n, " buckets: more than ",
                            *n > static_cast<uint64_t>(kMaxArrivalCodecBuckets)
                                ? absl::StrCat("the limit of ", kMaxArrivalCodecBuckets)
                                : absl::StrCat("the ", r.left(), " bytes of data hold")));
  }
  ArrivalBuckets out;
  out.bucket = bucket;
  out.start = start;
  out.arrivals.reserve(*n);
  out.observed_s.reserve(*n);
  int64_t count = 0;
  for (uint64_t i = 0; i < *n; ++i) {
    absl::StatusOr<uint64_t> z = r.Varint("an arrival count");
    if (!z.ok()) return z.status();
    const int64_t d = UnZigZag(*z);
    // count is in [0, kMax]: neither comparison overflows.
    if (d > kMaxArrivalCodecCount - count || d < -count) {
      return Bad(absl::StrCat("bucket ", i, "'s arrival count is outside [0, ",
                              kMaxArrivalCodecCount, "]"));
    }
    count += d;
    out.arrivals.push_back(static_cast<double>(count));
  }
  const uint64_t bucket_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(bucket));
  while (out.observed_s.size() < *n) {
    absl::StatusOr<uint64_t> ms = r.Varint("an observed time");
    if (!ms.ok()) return ms.status();
    absl::StatusOr<uint64_t> run = r.Varint("a run length");
    if (!run.ok()) return run.status();
    if (*ms > bucket_ms) {
      return Bad(absl::StrCat(*ms, " ms observed in a bucket of ", bucket_ms, " ms"));
    }
    if (*run == 0 || *run > *n - out.observed_s.size()) {
      return Bad(absl::StrCat("a run of ", *run, " buckets where ", *n - out.observed_s.size(),
                              " are left"));
    }
    out.observed_s.insert(out.observed_s.end(), *run, static_cast<double>(*ms) / 1000);
  }
  if (r.left() != 0) return Bad(absl::StrCat(r.left(), " bytes left over"));
  return out;
}

}  // namespace twinscale::state
