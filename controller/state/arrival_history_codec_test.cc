// The arrival history's compact form: round trips, its size for a week, and a table of bad inputs,
// each saying why it is bad.
#include "controller/state/arrival_history_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"

namespace twinscale::state {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1795219200);  // a bucket boundary
const absl::Duration kBucket = absl::Minutes(5);

std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}

TEST(ArrivalHistoryCodecTest, RoundTripsCountsRoundedAndObservedTimeToTheMillisecond) {
  ArrivalBuckets b;
  b.bucket = kBucket;
  b.start = kStart;
  b.arrivals = {0, 120.4, 119.6, 5000, 0, 3};
  b.observed_s = {300, 300, 299.9996, 0, 0, 12.345};
  const absl::StatusOr<ArrivalBuckets> back =
      DecodeArrivalBuckets(kBucket, kStart, EncodeArrivalBuckets(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bucket, kBucket);
  EXPECT_EQ(back->start, kStart);
  EXPECT_EQ(back->arrivals, (std::vector<double>{0, 120, 120, 5000, 0, 3}));
  EXPECT_EQ(back->observed_s, (std::vector<double>{300, 300, 300, 0, 0, 12.345}));
}

TEST(ArrivalHistoryCodecTest, AnEmptyHistoryRoundTrips) {
  ArrivalBuckets b;
  const absl::StatusOr<ArrivalBuckets> back =
      DecodeArrivalBuckets(kBucket, kStart, EncodeArrivalBuckets(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), 0u);
}

TEST(ArrivalHistoryCodecTest, OutOfRangeValuesAreClampedWhenEncoded) {
  ArrivalBuckets b;
  b.bucket = kBucket;
  b.arrivals = {-5, std::nan(""), 1e300, 1};
  b.observed_s = {400, -1, std::nan(""), 1e300};
  const absl::StatusOr<ArrivalBuckets> back =
      DecodeArrivalBuckets(kBucket, kStart, EncodeArrivalBuckets(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->arrivals,
            (std::vector<double>{0, 0, static_cast<double>(kMaxArrivalCodecCount), 1}));
  EXPECT_EQ(back->observed_s, (std::vector<double>{300, 0, 0, 300}));
}

// A week of a fleet at about 350 requests/s at its daily peak (a day-shaped curve with noise of
// a few percent): what the status carries.
TEST(ArrivalHistoryCodecTest, AWeekOfABusyFleetTakesAFewKilobytes) {
  ArrivalBuckets b;
  b.bucket = kBucket;
  b.start = kStart;
  uint64_t x = 88172645463325252ull;  // xorshift: deterministic noise
  for (int i = 0; i < 2016; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double noise = 1 + 0.04 * (static_cast<double>(x % 1000) / 1000 - 0.5);
    const double rate = 200 + 150 * std::sin(2 * M_PI * i / 288.0);
    b.arrivals.push_back(rate * 300 * noise);
    b.observed_s.push_back(300);
  }
  const std::string data = EncodeArrivalBuckets(b);
  std::printf("[measured] a week of 5-minute buckets at up to 350 req/s: %zu characters\n",
              data.size());
  EXPECT_LT(data.size(), 8000u);
  const absl::StatusOr<ArrivalBuckets> back = DecodeArrivalBuckets(kBucket, kStart, data);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), 2016u);
  EXPECT_EQ(back->end(), kStart + absl::Hours(24 * 7));
}

TEST(ArrivalHistoryCodecTest, BadInputIsInvalidArgumentNeverACrash) {
  const std::string ok_bytes = Varint(1) + Varint(2) + Varint(20) + Varint(1) + Varint(300000) +
                               Varint(2);  // counts 10, 9; both fully observed
  ASSERT_TRUE(DecodeArrivalBuckets(kBucket, kStart, absl::Base64Escape(ok_bytes)).ok());
  struct Case {
    const char* name;
    absl::Duration bucket;
    std::string data;  // base64 unless raw
  };
  const std::string b64 = absl::Base64Escape(ok_bytes);
  const Case cases[] = {
      {"a zero bucket has no buckets to fill", absl::ZeroDuration(), b64},
      {"a bucket longer than a day is not this history's", absl::Hours(25), b64},
      {"a bucket of a fraction of a millisecond cannot hold milliseconds",
       absl::Microseconds(1500500), b64},
      {"characters outside base64", kBucket, "!!!not base64!!!"},
      {"an empty string has no version", kBucket, ""},
      {"an unknown version", kBucket, absl::Base64Escape(Varint(2) + ok_bytes.substr(1))},
      {"a varint cut off mid-way", kBucket, absl::Base64Escape(Varint(1) + "\x80")},
      {"a varint of eleven bytes", kBucket,
       absl::Base64Escape(Varint(1) + std::string(10, '\xff') + "\x01")},
      {"more buckets than the limit", kBucket,
       absl::Base64Escape(Varint(1) + Varint(kMaxArrivalCodecBuckets + 1))},
      {"more buckets than the data could hold", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1000) + Varint(0))},
      {"a count below zero", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(1) + Varint(0) + Varint(1))},
      {"a count above 2^53", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(uint64_t{1} << 55) + Varint(0) +
                          Varint(1))},
      {"a difference of -2^63 (zigzag's largest)", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(~uint64_t{0}) + Varint(0) + Varint(1))},
      {"observed time beyond the bucket", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(2) + Varint(300001) + Varint(1))},
      {"a run of no buckets", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(2) + Varint(0) + Varint(0))},
      {"a run past the last bucket", kBucket,
       absl::Base64Escape(Varint(1) + Varint(1) + Varint(2) + Varint(0) + Varint(2))},
      {"runs missing", kBucket, absl::Base64Escape(Varint(1) + Varint(1) + Varint(2))},
      {"bytes after the last run", kBucket, absl::Base64Escape(ok_bytes + Varint(0))},
      {"data over the size limit", kBucket, std::string(kMaxArrivalCodecChars + 4, 'A')},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<ArrivalBuckets> got = DecodeArrivalBuckets(c.bucket, kStart, c.data);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
  }
}

TEST(ArrivalHistoryCodecTest, AHistoryExportsItsClosedBucketsOnly) {
  ArrivalHistory h(absl::Seconds(60), absl::Hours(1));
  h.Add(kStart, kStart + absl::Seconds(150), 150);  // 60 + 60 + 30
  const ArrivalBuckets closed = h.Buckets(kStart + absl::Seconds(150));
  EXPECT_EQ(closed.start, kStart);
  EXPECT_EQ(closed.arrivals, (std::vector<double>{60, 60}));
  EXPECT_EQ(closed.observed_s, (std::vector<double>{60, 60}));
  EXPECT_EQ(h.Buckets(kStart + absl::Seconds(180)).size(), 3u);
  EXPECT_EQ(h.Buckets(kStart).size(), 0u);
  EXPECT_EQ(h.retention(), absl::Hours(1));
}

}  // namespace
}  // namespace twinscale::state
