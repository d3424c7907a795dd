// TempDir: see temp_dir.h.
#include "tests/util/temp_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace twinscale::testutil {

TempDir::TempDir(std::string_view prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::error_code ec;
  const std::filesystem::path base = tmpdir != nullptr && *tmpdir != '\0'
                                         ? std::filesystem::path(tmpdir)
                                         : std::filesystem::temp_directory_path(ec);
  std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(std::string_view relative) const {
  return (std::filesystem::path(path_) / relative).string();
}

std::string TempDir::Write(std::string_view relative, std::string_view text) const {
  const std::filesystem::path p = std::filesystem::path(path_) / relative;
  std::error_code ignored;
  std::filesystem::create_directories(p.parent_path(), ignored);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  return p.string();
}

}  // namespace twinscale::testutil
