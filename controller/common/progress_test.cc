// The progress line: the share done, and with a stage, "policy 3 of 4" and the ETA of the whole
// sequence, checked against arithmetic by hand on a manual clock.
#include "controller/common/progress.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace twinscale {
namespace {

TEST(ProgressBarTest, OneRunShowsItsShareAndItsOwnEta) {
  ManualClock clock;
  ProgressBar bar(clock, "simulate", absl::Seconds(100), ProgressMode::kAlways);
  clock.Advance(absl::Seconds(10));
  testing::internal::CaptureStderr();
  bar.Update(absl::Seconds(25));  // a quarter in 10 s: 30 s to go
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("simulate ["), std::string::npos) << line;
  EXPECT_NE(line.find(" 25%"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 30.0s"), std::string::npos) << line;
  EXPECT_EQ(line.find(" of "), std::string::npos) << line;
  testing::internal::CaptureStderr();
  bar.Finish();
  testing::internal::GetCapturedStderr();
}

TEST(ProgressBarTest, AStageNamesItsPlaceAndTheWholeSequencesEta) {
  ManualClock clock;
  const absl::Time started = clock.Now();
  clock.Advance(absl::Seconds(30));  // two runs of four took 30 s
  ProgressBar bar(clock, "replay static:4", absl::Seconds(60), ProgressMode::kAlways,
                  ProgressStage{.index = 2, .count = 4, .started = started});
  clock.Advance(absl::Seconds(6));
  testing::internal::CaptureStderr();
  bar.Update(absl::Seconds(30));  // half of the third: 2.5 of 4 in 36 s, 21.6 s to go
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("policy 3 of 4: replay static:4"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 21.6s for all 4"), std::string::npos) << line;
  testing::internal::CaptureStderr();
  bar.Finish();
  testing::internal::GetCapturedStderr();
}

TEST(ProgressBarTest, NeverDrawsNothingAndTheFirstSecondIsQuiet) {
  ManualClock clock;
  ProgressBar never(clock, "x", absl::Seconds(10), ProgressMode::kNever);
  ProgressBar early(clock, "y", absl::Seconds(10), ProgressMode::kAlways);
  clock.Advance(absl::Milliseconds(500));
  testing::internal::CaptureStderr();
  never.Update(absl::Seconds(5));
  early.Update(absl::Seconds(5));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace twinscale
