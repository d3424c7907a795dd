// The --out directory, checked early: see output_dir.h.
#include "controller/cli/output_dir.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace twinscale::cli {

absl::Status CheckOutDir(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", out, ": cannot create the directory: ", ec.message()));
  }
  if (!std::filesystem::is_directory(out, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--out ", out, ": not a directory"));
  }
  const std::string probe = absl::StrCat(out, "/.twinscale-write-check");
  {
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    f << "x";
    f.flush();
    if (!f) {
      return absl::InvalidArgumentError(
          absl::StrCat("--out ", out, ": cannot write files there (", std::strerror(errno), ")"));
    }
  }
  std::filesystem::remove(probe, ec);
  return absl::OkStatus();
}

}  // namespace twinscale::cli
