// Run estimates worked by hand from the stated costs, and the refusals that name what raises the
// limit.
#include "controller/cli/run_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "simulator/model/deployment.h"
#include "tests/util/temp_dir.h"

namespace twinscale::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Llama-3.1-8B on one H100 SXM as built in: 452,400 KV tokens in blocks of 16 = 28,275 blocks
// (the profile's own arithmetic, docs/architecture.md "The twin").
TEST(RunBudgetTest, AReplicaIsItsBlockTableAndItsFixedState) {
  const sim::DeploymentSpec d;
  ASSERT_EQ(sim::KvCapacityBlocks(d), 28275);
  EXPECT_DOUBLE_EQ(ReplicaBytes(d), 28275 * 60.0 + 64 * 1024.0);  // 1.68 MiB
  sim::DeploymentSpec pinned = d;
  pinned.engine.kv_capacity_tokens_override = 16 * 1000;  // 1,000 blocks
  EXPECT_DOUBLE_EQ(ReplicaBytes(pinned), 1000 * 60.0 + 64 * 1024.0);
}

TEST(RunBudgetTest, SimulateAndReplayCostsByHand) {
  sim::DeploymentSpec d;
  d.engine.kv_capacity_tokens_override = 16 * 1000;  // 125,536 bytes a replica
  const RunCost s = SimulateCost(d, 10, 1e6, 3);
  EXPECT_DOUBLE_EQ(s.bytes, 64 * kMiB + 10 * 125536.0 + 1e6 * 40);
  EXPECT_EQ(s.cpu, absl::Seconds(3));  // 3 runs x 1e6 requests x 1 us
  EXPECT_NE(s.what.find("10 replicas"), std::string::npos) << s.what;
  EXPECT_NE(s.what.find("3 runs"), std::string::npos) << s.what;
  const RunCost r = ReplayCost(d, 100, 1e5, 3600, 2);
  EXPECT_DOUBLE_EQ(r.bytes, 64 * kMiB + 100 * 125536.0 + 1e5 * (128 + 16 * 2));
  // 2 x (1e5 x 4 us + 100 x 3600 x 7 us) = 2 x (0.4 + 2.52) s
  EXPECT_LT(absl::AbsDuration(r.cpu - absl::Seconds(5.84)), absl::Milliseconds(1));
  EXPECT_NE(r.what.find("2 policies"), std::string::npos) << r.what;
}

TEST(RunBudgetTest, OverTheMemoryLimitIsRefusedNamingTheFlag) {
  RunLimits limits;
  limits.memory_bytes = 6 * kGiB;
  limits.memory_source = "a quarter of this machine's memory";
  limits.cpu = absl::Hours(2);
  const sim::DeploymentSpec d;
  // static:10000 on a two-request trace: 64 MiB + 10,000 x 1,762,036 bytes = 16.47 GiB.
  const absl::Status big = CheckFits(ReplayCost(d, 10000, 2, 1200, 1), limits);
  ASSERT_EQ(big.code(), absl::StatusCode::kResourceExhausted);
  const std::string m(big.message());
  EXPECT_NE(m.find("about 16.5 GiB"), std::string::npos) << m;
  EXPECT_NE(m.find("6.0 GiB"), std::string::npos) << m;
  EXPECT_NE(m.find("--memory-limit-gib"), std::string::npos) << m;
  EXPECT_NE(m.find("10000 replicas"), std::string::npos) << m;
  EXPECT_TRUE(CheckFits(ReplayCost(d, 3000, 2, 1200, 1), limits).ok());  // 5.0 GiB
}

TEST(RunBudgetTest, OverTheTimeLimitIsRefusedNamingTheFlag) {
  RunLimits limits;
  limits.memory_bytes = 1e15;
  limits.cpu = absl::Minutes(10);
  const sim::DeploymentSpec d;
  // 1e9 simulated requests at 1 us: about 17 minutes.
  const absl::Status slow = CheckFits(SimulateCost(d, 1, 1e9, 1), limits);
  ASSERT_EQ(slow.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(slow.message().find("--time-limit"), std::string::npos) << slow.message();
  EXPECT_NE(slow.message().find("16m40s"), std::string::npos) << slow.message();
  EXPECT_TRUE(CheckFits(SimulateCost(d, 1, 1e8, 1), limits).ok());
}

TEST(RunBudgetTest, ATraceFileIsThreeTimesItsSize) {
  const testutil::TempDir dir("run-budget");
  const std::string path = dir.Write("t.csv", std::string(1000, 'x'));
  const RunCost c = TraceFileCost(path);
  EXPECT_DOUBLE_EQ(c.bytes, 64 * kMiB + 3000);
  EXPECT_NE(c.what.find(path), std::string::npos) << c.what;
  EXPECT_EQ(TraceFileCost(dir.File("missing.csv")).bytes, 0);  // the reader says why
}

TEST(RunBudgetTest, TheMachineHasMemory) { EXPECT_GT(MachineMemoryBytes(), 256 * kMiB); }

}  // namespace
}  // namespace twinscale::cli
