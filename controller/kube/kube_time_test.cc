// Kubernetes time formats against hand-written RFC 3339 strings.
#include "controller/kube/kube_time.h"

#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

// 2024-05-06T07:08:09Z is 1714979289 s after the Unix epoch.
constexpr int64_t kSeconds = 1714979289;

TEST(KubeTimeTest, MicroTimeKeepsSixDigitsAndTruncates) {
  const absl::Time t = absl::FromUnixSeconds(kSeconds) + absl::Nanoseconds(123456789);
  EXPECT_EQ(FormatMicroTime(t), "2024-05-06T07:08:09.123456Z");
  EXPECT_EQ(FormatMicroTime(absl::FromUnixSeconds(kSeconds)), "2024-05-06T07:08:09.000000Z");
}

TEST(KubeTimeTest, TimeIsWholeSecondsTruncated) {
  EXPECT_EQ(FormatKubeTime(absl::FromUnixSeconds(kSeconds) + absl::Milliseconds(999)),
            "2024-05-06T07:08:09Z");
}

TEST(KubeTimeTest, ParsesBothFormatsAndOffsets) {
  EXPECT_EQ(*ParseKubeTime("2024-05-06T07:08:09Z"), absl::FromUnixSeconds(kSeconds));
  EXPECT_EQ(*ParseKubeTime("2024-05-06T07:08:09.250000Z"),
            absl::FromUnixSeconds(kSeconds) + absl::Milliseconds(250));
  EXPECT_EQ(*ParseKubeTime("2024-05-06T09:08:09+02:00"), absl::FromUnixSeconds(kSeconds));
}

TEST(KubeTimeTest, RejectsWhatIsNotRfc3339) {
  for (const char* bad : {"", "yesterday", "2024-05-06", "2024-05-06 07:08:09Z"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ParseKubeTime(bad).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace twinscale::kube
