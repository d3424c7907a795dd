// FollowRunningEngines: the pods' flags and reported KV capacity replace the spec's engine where
// they differ, each difference said in words; the tensor-parallel size is reported, not followed.
#include "controller/twin/running_engine.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/util/sample_target_test_util.h"

namespace twinscale::twin {
namespace {

sim::DeploymentSpec SampleDeployment() {
  return ResolveSample("deploy/samples/llama-3.1-8b-h100.yaml").resolved.deployment;
}

TEST(RunningEngineTest, NothingObservedKeepsTheSpecsEngine) {
  const sim::DeploymentSpec spec = SampleDeployment();
  const RunningEngine r = FollowRunningEngines(spec, {}, state::FleetSnapshot{});
  EXPECT_TRUE(r.differences.empty());
  EXPECT_TRUE(SameEngine(r.deployment, spec));
}

TEST(RunningEngineTest, ThePodsFlagsReplaceTheSpecsWhereTheyDiffer) {
  const sim::DeploymentSpec spec = SampleDeployment();
  ASSERT_EQ(spec.engine.max_num_seqs, 1024);  // the profile's (vLLM's default on an H100)
  ASSERT_EQ(spec.engine.max_model_len, 131072);
  ASSERT_EQ(spec.tensor_parallel, 1);
  state::FleetSnapshot snap;
  snap.engine_args = state::EngineArgs{};
  snap.engine_args->max_num_seqs = 128;
  snap.engine_args->max_model_len = 8192;
  snap.engine_args->max_num_batched_tokens = spec.engine.max_num_batched_tokens;  // the same
  snap.engine_args->enable_prefix_caching = false;
  snap.engine_args->tensor_parallel_size = 2;
  const RunningEngine r = FollowRunningEngines(spec, {}, snap);
  EXPECT_EQ(r.deployment.engine.max_num_seqs, 128);
  EXPECT_EQ(r.deployment.engine.max_model_len, 8192);
  EXPECT_FALSE(r.deployment.engine.enable_prefix_caching);
  EXPECT_EQ(r.deployment.tensor_parallel, 1);  // not followed: it changes the GPU profile
  EXPECT_FALSE(SameEngine(r.deployment, spec));
  EXPECT_EQ(
      r.differences,
      (std::vector<std::string>{
          "pods run --max-num-seqs 128 (profile: 1024)",
          "pods run --max-model-len 8192 (profile: 131072)",
          "pods run --no-enable-prefix-caching (profile: prefix caching on)",
          "pods run --tensor-parallel-size 2 but the twin simulates 1 GPU(s) per replica: set "
          "spec.model.tensorParallel"}));
}

TEST(RunningEngineTest, ASettingTheSpecStatesWinsAndTheDisagreementIsSaid) {
  // spec.model.maxNumSeqs: 256 while the pods run 128: the CRD documents the field as the default
  // "from the profile or the pods", so the stated value stands, and one of the two is out of date.
  sim::DeploymentSpec spec = SampleDeployment();
  spec.engine.max_num_seqs = 256;  // as Resolve leaves a stated override
  StatedEngineSettings stated;
  stated.max_num_seqs = true;
  state::FleetSnapshot snap;
  snap.engine_args = state::EngineArgs{};
  snap.engine_args->max_num_seqs = 128;
  snap.engine_args->max_num_batched_tokens = 4096;  // not stated: followed
  const RunningEngine r = FollowRunningEngines(spec, stated, snap);
  EXPECT_EQ(r.deployment.engine.max_num_seqs, 256);
  EXPECT_EQ(r.deployment.engine.max_num_batched_tokens, 4096);
  EXPECT_EQ(r.differences,
            (std::vector<std::string>{
                "pods run --max-num-seqs 128 but spec.model.maxNumSeqs says 256: the twin follows "
                "the spec",
                "pods run --max-num-batched-tokens 4096 (profile: 8192)"}));
}

TEST(RunningEngineTest, TheReportedKvCapacityReplacesTheComputedOneWhenItDiffersByABlock) {
  const sim::DeploymentSpec spec = SampleDeployment();
  const int64_t computed = sim::KvCapacityTokens(spec);
  const int64_t block = spec.engine.block_size;
  ASSERT_GT(computed, 0);
  state::FleetSnapshot snap;
  snap.kv_capacity_tokens_per_engine = computed;  // what vLLM reports for the same engine
  RunningEngine r = FollowRunningEngines(spec, {}, snap);
  EXPECT_TRUE(r.differences.empty());
  EXPECT_TRUE(SameEngine(r.deployment, spec));
  // Engines that hold a block less (a larger CUDA graph pool, another process on the GPU): the
  // twin takes the reported capacity.
  snap.kv_capacity_tokens_per_engine = computed - block;
  r = FollowRunningEngines(spec, {}, snap);
  EXPECT_EQ(r.deployment.engine.kv_capacity_tokens_override, computed - block);
  EXPECT_EQ(sim::KvCapacityTokens(r.deployment), computed - block);
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0],
            absl::StrCat("engines report ", computed - block,
                         " KV tokens (vllm:cache_config_info; the twin computed ", computed, ")"));
  // --gpu-memory-utilization 0.5 with no report: the capacity the twin computes follows the flag.
  state::FleetSnapshot flag_only;
  flag_only.engine_args = state::EngineArgs{};
  flag_only.engine_args->gpu_memory_utilization = 0.5;
  r = FollowRunningEngines(spec, {}, flag_only);
  EXPECT_LT(sim::KvCapacityTokens(r.deployment), computed / 2);  // weights come off the budget
}

}  // namespace
}  // namespace twinscale::twin
