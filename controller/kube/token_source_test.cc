// The token file is re-read once the clock has moved a minute on (projected tokens rotate), not
// before; a failed re-read keeps the last good token; the fixed token is the fallback.
#include "controller/kube/token_source.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace twinscale::kube {
namespace {

using testutil::TempDir;

TEST(TokenSourceTest, RereadsTheFileAfterAMinute) {
  TempDir dir;
  const std::string file = dir.Write("token", "first-token\n");
  ManualClock clock(absl::FromUnixSeconds(1000));
  TokenSource tokens("", file, &clock);
  EXPECT_EQ(*tokens.Token(), "first-token");  // trailing newline dropped

  dir.Write("token", "second-token");
  clock.Advance(absl::Seconds(59));
  EXPECT_EQ(*tokens.Token(), "first-token") << "re-read before the minute was up";
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*tokens.Token(), "second-token");
}

TEST(TokenSourceTest, InvalidateForcesARereadNow) {
  TempDir dir;
  const std::string file = dir.Write("token", "a");
  ManualClock clock;
  TokenSource tokens("", file, &clock);
  EXPECT_EQ(*tokens.Token(), "a");
  dir.Write("token", "b");
  tokens.Invalidate();
  EXPECT_EQ(*tokens.Token(), "b");
}

TEST(TokenSourceTest, AFailedRereadKeepsTheLastGoodToken) {
  TempDir dir;
  const std::string file = dir.Write("token", "good");
  ManualClock clock;
  TokenSource tokens("fixed", file, &clock);
  EXPECT_EQ(*tokens.Token(), "good") << "the file wins over the fixed token once read";
  std::filesystem::remove(file);
  clock.Advance(absl::Minutes(2));
  EXPECT_EQ(*tokens.Token(), "good");
}

TEST(TokenSourceTest, FallsBackToTheFixedTokenThenFailsWithoutLeakingIt) {
  ManualClock clock;
  TokenSource with_fixed("fixed-secret", "/nonexistent/token", &clock);
  EXPECT_EQ(*with_fixed.Token(), "fixed-secret");

  TempDir dir;
  const std::string file = dir.Write("token", "   \n");  // empty after trimming
  TokenSource without("", file, &clock);
  const absl::StatusOr<std::string> t = without.Token();
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(t.status().message(), file)) << t.status();
}

TEST(TokenSourceTest, NoTokenConfiguredIsEmpty) {
  ManualClock clock;
  TokenSource none("", "", &clock);
  EXPECT_EQ(*none.Token(), "");
}

}  // namespace
}  // namespace twinscale::kube
