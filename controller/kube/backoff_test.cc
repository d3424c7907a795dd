// Capped exponential backoff: each wait within its jitter band around initial x 2^n, capped.
#include "controller/kube/backoff.h"

#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

TEST(BackoffTest, DoublesUpToTheCapWithinTheJitterBand) {
  Backoff b(BackoffPolicy{absl::Seconds(1), absl::Seconds(30), 2.0, 0.2});
  // Bases 1, 2, 4, 8, 16, 30, 30 s (the cap); each wait within +-20%, and never above the cap.
  const double bases[] = {1, 2, 4, 8, 16, 30, 30, 30};
  for (double base : bases) {
    SCOPED_TRACE(base);
    const double got = absl::ToDoubleSeconds(b.Next());
    EXPECT_GE(got, base * 0.8);
    EXPECT_LE(got, std::min(base * 1.2, 30.0));
  }
  EXPECT_EQ(b.failures(), 8);
}

TEST(BackoffTest, ResetStartsOverAndNoJitterIsExact) {
  Backoff b(BackoffPolicy{absl::Milliseconds(100), absl::Seconds(1), 2.0, 0.0});
  EXPECT_EQ(b.Next(), absl::Milliseconds(100));
  EXPECT_EQ(b.Next(), absl::Milliseconds(200));
  b.Reset();
  EXPECT_EQ(b.Next(), absl::Milliseconds(100));
}

}  // namespace
}  // namespace twinscale::kube
