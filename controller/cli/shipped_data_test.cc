// Shipped files found wherever the binary runs: the roots in order, the first holding the file,
// and a NotFound that says where it looked and which flag gives the file instead.
#include "controller/cli/shipped_data.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/util/temp_dir.h"

namespace twinscale::cli {
namespace {

TEST(ShippedDataTest, TheFirstRootHoldingTheFileWins) {
  const testutil::TempDir a("shipped-a"), b("shipped-b"), c("shipped-c");
  b.Write("deploy/samples/x.yaml", "b");
  c.Write("deploy/samples/x.yaml", "c");
  const absl::StatusOr<std::string> found =
      FindShippedFile("deploy/samples/x.yaml", {a.path(), b.path(), c.path()}, "policy");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, b.File("deploy/samples/x.yaml"));
}

TEST(ShippedDataTest, NotFoundNamesEveryPlaceLookedAndTheFlag) {
  const testutil::TempDir a("shipped-a");
  const absl::StatusOr<std::string> found =
      FindShippedFile("tests/data/traces/t.csv", {"", a.path()}, "trace");
  ASSERT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  const std::string m(found.status().message());
  EXPECT_NE(m.find("tests/data/traces/t.csv"), std::string::npos) << m;
  EXPECT_NE(m.find("the current directory"), std::string::npos) << m;
  EXPECT_NE(m.find(a.path()), std::string::npos) << m;
  EXPECT_NE(m.find("$TWINSCALE_DATA_DIR"), std::string::npos) << m;
  EXPECT_NE(m.find("--trace"), std::string::npos) << m;
}

TEST(ShippedDataTest, AFolderOfTheNameIsNotTheFile) {
  const testutil::TempDir a("shipped-a");
  a.Write("x.yaml/inside", "");
  EXPECT_FALSE(FindShippedFile("x.yaml", {a.path()}, "policy").ok());
}

TEST(ShippedDataTest, RootsAreTheCheckoutTheEnvironmentTheInstallAndTheSource) {
  setenv(kDataDirEnv, "/opt/twinscale-data", 1);
  const std::vector<std::string> roots = ShippedDataRoots();
  unsetenv(kDataDirEnv);
  ASSERT_GE(roots.size(), 3u);
  EXPECT_EQ(roots[0], "");  // the current directory
  EXPECT_EQ(roots[1], "/opt/twinscale-data");
  // The test binary's own directory/../share/twinscale: where `cmake --install` puts the data
  // beside bin/.
  EXPECT_NE(roots[2].find("/share/twinscale"), std::string::npos) << roots[2];
  // This build's source tree (the repository the tests run from) is the last resort, and holds
  // the default trace.
  EXPECT_TRUE(
      FindShippedFile("tests/data/traces/AzureLLMInferenceTrace_conv.csv", {roots.back()}, "trace")
          .ok());
  EXPECT_EQ(ShippedDataRoots().size(), roots.size() - 1) << "no variable, no root";
}

}  // namespace
}  // namespace twinscale::cli
