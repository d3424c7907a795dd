// The real vLLM /metrics text shipped in tests/data/fixtures/vllm_metrics_excerpts.txt is a
// commented file holding verbatim blocks between "# ---- BEGIN VERBATIM" and "# ---- END VERBATIM"
// lines. VllmFixtureBlocks splits it into those blocks, dropping the shell prompt ("$ curl ...")
// and "..." elision lines one source has, which are not exposition text (hack/fuzz.sh extracts the
// same way for the fuzzers' seeds). ReadVllmFixture reads the file. Header-only: tests of the
// simulator, the metrics code and the benchmarks all read it.
#ifndef TWINSCALE_TESTS_UTIL_VLLM_FIXTURE_H_
#define TWINSCALE_TESTS_UTIL_VLLM_FIXTURE_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace twinscale::testutil {

// The fixture, relative to the repository root (where the tests run).
inline constexpr char kVllmFixturePath[] = "tests/data/fixtures/vllm_metrics_excerpts.txt";

// The fixture's whole text; empty when it can't be read.
inline std::string ReadVllmFixture() {
  std::ifstream in(kVllmFixturePath, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> VllmFixtureBlocks(const std::string& fixture_text) {
  std::vector<std::string> blocks;
  std::istringstream in(fixture_text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("# ---- BEGIN VERBATIM", 0) == 0) {
      blocks.emplace_back();
      inside = true;
    } else if (line.rfind("# ---- END VERBATIM", 0) == 0) {
      inside = false;
    } else if (inside && line.rfind("$ ", 0) != 0 && line != "...") {
      blocks.back() += line + "\n";
    }
  }
  return blocks;
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_VLLM_FIXTURE_H_
