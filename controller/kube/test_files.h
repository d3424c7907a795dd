// Test helper: a fresh temporary directory with files written into it, removed at the end.
#ifndef TWINSCALE_CONTROLLER_KUBE_TEST_FILES_H_
#define TWINSCALE_CONTROLLER_KUBE_TEST_FILES_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace twinscale::kube {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "twinscale-kube-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` to path()/relative (creating directories) and returns the full path.
  std::string Write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path p = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_TEST_FILES_H_
