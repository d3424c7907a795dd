// A subcommand's command line, parsed into its abseil flags without abseil's own parser, so that
// every mistake is one line naming the flag and what it takes, and the caller exits 2 (abseil's
// ParseCommandLine prints "ERROR: Illegal value ..." and exits 1 itself).
//
// Accepted: --name=value and --name value (names with dashes or underscores); a boolean as
// --name, --name=true|false, --noname or --no-name. Repeatable flags (--policy a --policy b)
// arrive as one newline-joined value. A number must be finite. No positional arguments.
#ifndef TWINSCALE_CONTROLLER_CLI_COMMAND_LINE_H_
#define TWINSCALE_CONTROLLER_CLI_COMMAND_LINE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace twinscale::cli {

// What a flag's value must look like, for messages: "an integer", "a duration such as 30s or 5m".
std::string ExpectedValueOf(const absl::CommandLineFlag& flag);

// The flag's name as users type it: "max-num-seqs".
std::string DashedName(absl::string_view flag_name);

// Parses `args` (the words after the subcommand) into the process's flags. `belongs` says which
// flags the subcommand takes; `repeatable` names flags (as typed, with dashes) that may be given
// more than once. InvalidArgument, with one line naming the flag, for an unknown flag (with the
// subcommand's `help_hint`), a missing or malformed value, a non-finite number, a flag given twice
// that is not repeatable, or a positional argument. Flags parsed before an error keep the value.
absl::Status ParseSubcommandFlags(const std::vector<std::string>& args,
                                  const std::function<bool(const absl::CommandLineFlag&)>& belongs,
                                  const std::vector<std::string>& repeatable,
                                  absl::string_view help_hint);

// A subcommand's exit code for a failed run: 2 for bad input (InvalidArgument; NotFound, a file or
// profile named that is not there; ResourceExhausted, a run refused as too large), else 1.
int ExitCodeFor(const absl::Status& status);

// A subcommand's run ended with `status`: 0 when it is OK; else its message on stderr as one line,
// "twinscale <subcommand>: <message>", and ExitCodeFor's code.
int Finish(absl::string_view subcommand, const absl::Status& status);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_COMMAND_LINE_H_
