// Files that ship with twinscale (the sample manifests, the Azure conversation trace replay
// replays by default), found wherever the binary runs from: the current directory (a checkout),
// $TWINSCALE_DATA_DIR, <the binary's directory>/../share/twinscale (an install: `cmake --install`,
// the container image), then the source tree the binary was built from.
#ifndef TWINSCALE_CONTROLLER_CLI_SHIPPED_DATA_H_
#define TWINSCALE_CONTROLLER_CLI_SHIPPED_DATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace twinscale::cli {

// The environment variable that names a data root ahead of the installed ones.
inline constexpr char kDataDirEnv[] = "TWINSCALE_DATA_DIR";

// The roots searched, in order ("" is the current directory).
std::vector<std::string> ShippedDataRoots();

// `relative` (a path in the source tree, e.g. "deploy/samples/llama-3.1-8b-h100.yaml") under the
// first root holding it. NotFound naming every root looked in and `flag`, the flag that gives
// the file explicitly.
absl::StatusOr<std::string> FindShippedFile(absl::string_view relative,
                                            const std::vector<std::string>& roots,
                                            absl::string_view flag);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_SHIPPED_DATA_H_
