// Fuzzes the subcommand parser (controller/cli/command_line.h: argv, typed by a user): any words
// must parse or give one line naming what is wrong, never crash or hang; a number that parses is
// finite. Input: words separated by NUL bytes, parsed against this file's flags (one of each type
// the CLI uses, one repeatable).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "controller/cli/command_line.h"

ABSL_FLAG(int32_t, f_int, 0, "");
ABSL_FLAG(int64_t, f_int64, 0, "");
ABSL_FLAG(uint64_t, f_seed, 1, "");
ABSL_FLAG(double, f_rate, 0, "");
ABSL_FLAG(bool, f_bool, false, "");
ABSL_FLAG(absl::Duration, f_window, absl::Seconds(1), "");
ABSL_FLAG(std::string, f_text, "", "");
ABSL_FLAG(std::string, f_policy, "", "");
ABSL_FLAG(std::vector<std::string>, f_list, {}, "");

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.emplace_back();
    } else {
      words.back() += static_cast<char>(data[i]);
    }
  }
  absl::FlagSaver saver;
  const absl::Status s = twinscale::cli::ParseSubcommandFlags(
      words, [](const absl::CommandLineFlag& f) { return absl::StartsWith(f.Name(), "f_"); },
      {"f-policy"}, "twinscale fuzz --help");
  if (!s.ok()) {
    if (s.message().empty()) abort();  // an error must say what is wrong
    if (s.code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  if (!std::isfinite(absl::GetFlag(FLAGS_f_rate))) abort();
  const absl::Duration w = absl::GetFlag(FLAGS_f_window);
  if (w == absl::InfiniteDuration() || w == -absl::InfiniteDuration()) abort();
  return 0;
}
