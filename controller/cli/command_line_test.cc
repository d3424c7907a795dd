// The subcommand parser: every spelling a user types, and one line naming the flag for each
// mistake. The flags are this file's own, so the cases do not depend on any subcommand's.
#include "controller/cli/command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"

ABSL_FLAG(int32_t, cl_test_count, 7, "an int");
ABSL_FLAG(double, cl_test_rate, 1.5, "a double");
ABSL_FLAG(bool, cl_test_verbose, false, "a bool");
ABSL_FLAG(absl::Duration, cl_test_window, absl::Seconds(30), "a duration");
ABSL_FLAG(std::string, cl_test_policy, "", "repeatable");
ABSL_FLAG(std::string, cl_test_name, "", "a string");

namespace twinscale::cli {
namespace {

bool OwnFlag(const absl::CommandLineFlag& f) { return absl::StartsWith(f.Name(), "cl_test_"); }

class CommandLineTest : public ::testing::Test {
 protected:
  absl::FlagSaver saver_;  // every test starts from the defaults
};

TEST_F(CommandLineTest, EverySpellingSetsTheFlag) {
  ASSERT_TRUE(
      ParseSubcommandFlags({"--cl-test-count=3", "--cl_test_rate", "2.25", "--cl-test-verbose",
                            "--cl-test-window=5m", "--cl-test-name", "--dashes-are-a-value"},
                           OwnFlag, {}, "h")
          .ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_count), 3);
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_rate), 2.25);
  EXPECT_TRUE(absl::GetFlag(FLAGS_cl_test_verbose));
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_window), absl::Minutes(5));
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_name), "--dashes-are-a-value");
}

TEST_F(CommandLineTest, BooleansNegateInEachForm) {
  for (const char* off : {"--no-cl-test-verbose", "--no_cl_test_verbose", "--nocl_test_verbose",
                          "--cl-test-verbose=false"}) {
    absl::SetFlag(&FLAGS_cl_test_verbose, true);
    ASSERT_TRUE(ParseSubcommandFlags({off}, OwnFlag, {}, "h").ok()) << off;
    EXPECT_FALSE(absl::GetFlag(FLAGS_cl_test_verbose)) << off;
  }
}

TEST_F(CommandLineTest, ARepeatableFlagJoinsItsValuesInOrder) {
  ASSERT_TRUE(ParseSubcommandFlags(
                  {"--cl-test-policy", "a.yaml", "--cl-test-count=1", "--cl-test-policy=static:2"},
                  OwnFlag, {"cl-test-policy"}, "h")
                  .ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_policy), "a.yaml\nstatic:2");
}

TEST_F(CommandLineTest, EachMistakeIsOneLineNamingTheFlag) {
  const struct {
    std::vector<std::string> args;
    const char* want;
  } cases[] = {
      {{"--cl-test-cuont=3"}, "unknown flag --cl-test-cuont (see 'h')"},
      {{"--trace=x"}, "unknown flag --trace"},  // exists elsewhere, not this subcommand's
      {{"--cl-test-count"}, "--cl-test-count needs a value: an integer"},
      {{"--cl-test-count=abc"}, "--cl-test-count: \"abc\" is not valid: want an integer"},
      {{"--cl-test-count=1e3"}, "want an integer"},
      {{"--cl-test-rate=nan"}, "--cl-test-rate: \"nan\" is not valid: want a finite number"},
      {{"--cl-test-rate=inf"}, "want a finite number"},
      {{"--cl-test-window=5"}, "want a duration such as 30s, 5m or 1h30m"},
      {{"--cl-test-window=inf"}, "want a duration"},
      {{"--cl-test-verbose=maybe"}, "want true or false"},
      {{"--no-cl-test-verbose=true"}, "--no-cl-test-verbose takes no value"},
      {{"--no-cl-test-count"}, "unknown flag --no-cl-test-count"},  // not a boolean
      {{"stray"}, "unexpected argument \"stray\""},
      {{"--cl-test-verbose", "false"}, "unexpected argument \"false\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args.front());
    absl::FlagSaver saver;
    const absl::Status s = ParseSubcommandFlags(c.args, OwnFlag, {}, "h");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line";
  }
}

TEST_F(CommandLineTest, ABadValueLeavesTheFlagAsItWas) {
  ASSERT_FALSE(ParseSubcommandFlags({"--cl-test-count=x"}, OwnFlag, {}, "h").ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_cl_test_count), 7);
}

TEST(ExitCodeForTest, BadInputIsTwoAndAFailureIsOne) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), 2);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("no such file")), 2);
  EXPECT_EQ(ExitCodeFor(absl::ResourceExhaustedError("too large")), 2);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("server down")), 1);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("bug")), 1);
}

TEST(DashedNameTest, UnderscoresBecomeDashes) {
  EXPECT_EQ(DashedName("max_num_seqs"), "max-num-seqs");
}

}  // namespace
}  // namespace twinscale::cli
