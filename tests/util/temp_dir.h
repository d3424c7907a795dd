// TempDir: a fresh directory for one test's files, removed with everything in it when the object
// goes away (an ASSERT that returns early included). The one temporary-directory helper of the
// tests; made under $TMPDIR (else the system's temp dir), named <prefix>-XXXXXX.
// Thread-safety: const members may be called from any thread.
#ifndef TWINSCALE_TESTS_UTIL_TEMP_DIR_H_
#define TWINSCALE_TESTS_UTIL_TEMP_DIR_H_

#include <string>
#include <string_view>

namespace twinscale::testutil {

class TempDir {
 public:
  // path() is empty (and ok() false) if the directory could not be made.
  explicit TempDir(std::string_view prefix = "twinscale-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // path()/relative, without touching the file system.
  std::string File(std::string_view relative) const;
  // Writes `text` to path()/relative (creating its directories, replacing any file) and returns
  // the full path.
  std::string Write(std::string_view relative, std::string_view text) const;
  // Leaves the directory in place when the object goes away (to look at a failed run's logs).
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_TEMP_DIR_H_
