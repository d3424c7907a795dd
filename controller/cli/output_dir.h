// The --out directory of `replay` and `plan`, made and proven writable before the first simulated
// second: a run's minutes are not lost to a directory it could not write at the end.
#ifndef TWINSCALE_CONTROLLER_CLI_OUTPUT_DIR_H_
#define TWINSCALE_CONTROLLER_CLI_OUTPUT_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace twinscale::cli {

// Creates `out` (and its parents) and writes and removes a probe file there. InvalidArgument,
// naming --out and the directory, when it cannot be created, is not a directory, or cannot be
// written.
absl::Status CheckOutDir(const std::string& out);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_OUTPUT_DIR_H_
