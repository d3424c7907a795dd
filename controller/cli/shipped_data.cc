// Shipped files: see shipped_data.h.
#include "controller/cli/shipped_data.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifndef TWINSCALE_SOURCE_DIR
#define TWINSCALE_SOURCE_DIR ""
#endif

namespace twinscale::cli {

std::vector<std::string> ShippedDataRoots() {
  std::vector<std::string> roots = {""};
  const char* env = std::getenv(kDataDirEnv);
  if (env != nullptr && *env != '\0') roots.emplace_back(env);
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back((exe.parent_path().parent_path() / "share" / "twinscale").string());
  if (TWINSCALE_SOURCE_DIR[0] != '\0') roots.emplace_back(TWINSCALE_SOURCE_DIR);
  return roots;
}

absl::StatusOr<std::string> FindShippedFile(absl::string_view relative,
                                            const std::vector<std::string>& roots,
                                            absl::string_view flag) {
  std::vector<std::string> looked;
  for (const std::string& root : roots) {
    const std::filesystem::path p = root.empty()
                                        ? std::filesystem::path(std::string(relative))
                                        : std::filesystem::path(root) / std::string(relative);
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
    looked.push_back(root.empty() ? "the current directory" : root);
  }
  return absl::NotFoundError(absl::StrCat("the shipped file ", relative, " is in none of ",
                                          absl::StrJoin(looked, ", "), " (set $", kDataDirEnv,
                                          " to a checkout, or give --", flag, ")"));
}

}  // namespace twinscale::cli
