// Running a shell command from a test: its exit code and what it printed (stdout and stderr
// together, in order).
#ifndef TWINSCALE_TESTS_UTIL_SHELL_H_
#define TWINSCALE_TESTS_UTIL_SHELL_H_

#include <string>

namespace twinscale::testutil {

struct ShellResult {
  int exit_code = -1;  // -1 if the command could not run or did not exit normally
  std::string out;     // stdout and stderr
};

// Runs `script` through /bin/sh with stderr joined to stdout.
ShellResult RunShell(const std::string& script);

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_SHELL_H_
