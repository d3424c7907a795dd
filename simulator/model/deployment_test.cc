// KV-cache arithmetic against what vLLM prints on real H100s ("GPU KV cache size: N tokens",
// docs/reference.md "KV capacity in vLLM's logs"). Every expected value is worked by hand in the
// comment beside it; the models' figures are the Hugging Face configs' (docs/reference.md
// "Models"), written out here rather than read from the profiles so this test needs nothing but
// the arithmetic (the profile loader's test checks that the YAML profiles resolve to the same
// capacities).
#include "simulator/model/deployment.h"

#include <cstdint>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace twinscale::sim {
namespace {

constexpr double kGiB = 1073741824.0;
// H100 80GB HBM3 as nvidia-smi reports it: 81,559 MiB = 85,520,809,984 bytes.
constexpr double kH100Bytes = 81559.0 * 1024 * 1024;

DeploymentSpec H100(ModelSpec model, int32_t tp) {
  DeploymentSpec d;
  d.gpu.memory_bytes = kH100Bytes;
  d.model = std::move(model);
  d.tensor_parallel = tp;
  d.engine.gpu_memory_utilization = 0.9;
  d.engine.block_size = 16;
  d.engine.kv_capacity_tokens_override = 0;
  return d;
}

ModelSpec Llama2_7B() {
  ModelSpec m;
  m.name = "llama-2-7b";
  m.params = 6.74e9;
  m.layers = 32;
  m.query_heads = 32;
  m.kv_heads = 32;  // no GQA in Llama-2-7B
  m.head_dim = 128;
  m.hidden = 4096;
  m.dtype_bytes = 2;
  m.activation_workspace_bytes = 1.0 * kGiB;  // small vocab (32k): no big logits buffer
  return m;
}

ModelSpec Llama2_70B() {
  ModelSpec m;
  m.name = "llama-2-70b";
  m.params = 69.0e9;
  m.layers = 80;
  m.query_heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.hidden = 8192;
  m.dtype_bytes = 2;
  m.activation_workspace_bytes = 1.5 * kGiB;  // + NCCL / custom all-reduce buffers at TP4
  return m;
}

ModelSpec Llama31_8B() {
  ModelSpec m;
  m.name = "llama-3.1-8b";
  m.params = 8.03e9;
  m.layers = 32;
  m.query_heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.hidden = 4096;
  m.dtype_bytes = 2;
  m.activation_workspace_bytes = 1.5 * kGiB;  // docs/reference.md "vLLM engine"
  return m;
}

TEST(KvBytesPerTokenPerGpu, MatchesTheModelTable) {
  struct Case {
    std::string name;
    ModelSpec model;
    int32_t tp;
    double want;
  };
  const Case cases[] = {
      // 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 (128 KiB).
      {"llama-3.1-8b tp1: 128 KiB", Llama31_8B(), 1, 131072},
      // 8 KV heads over 2 ranks: 4 per GPU -> 65,536.
      {"llama-3.1-8b tp2: half per gpu", Llama31_8B(), 2, 65536},
      // 1 KV head per GPU: 2 x 32 x 1 x 128 x 2 = 16,384.
      {"llama-3.1-8b tp8: one head per gpu", Llama31_8B(), 8, 16384},
      // 8 heads over 16 ranks: vLLM replicates, still one head per GPU -> 16,384.
      {"llama-3.1-8b tp16: heads replicated, not fractional", Llama31_8B(), 16, 16384},
      // 2 x 32 x 32 x 128 x 2 = 524,288 (512 KiB).
      {"llama-2-7b tp1: 512 KiB (no GQA)", Llama2_7B(), 1, 524288},
      // 2 x 80 x (8 / 4 = 2) x 128 x 2 = 81,920 (80 KiB); a 16-token block is 1.25 MiB per GPU,
      // 5 MiB across the 4 ranks (docs/reference.md "Models").
      {"llama-2-70b tp4: 80 KiB per gpu", Llama2_70B(), 4, 81920},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(KvBytesPerTokenPerGpu(H100(c.model, c.tp)), c.want);
  }
}

TEST(WeightBytesPerGpu, SplitsOverTensorParallelRanks) {
  // 8.03e9 params x 2 bytes = 16.06e9 (docs/reference.md "Models": 16.06 GB bf16); TP2: 8.03e9.
  EXPECT_DOUBLE_EQ(WeightBytesPerGpu(H100(Llama31_8B(), 1)), 16.06e9);
  EXPECT_DOUBLE_EQ(WeightBytesPerGpu(H100(Llama31_8B(), 2)), 8.03e9);
  // 69.0e9 x 2 / 4 = 34.5e9 per GPU (docs/reference.md "KV capacity in vLLM's logs").
  EXPECT_DOUBLE_EQ(WeightBytesPerGpu(H100(Llama2_70B(), 4)), 34.5e9);
}

// Budget on one H100 at 0.9: 85,520,809,984 x 0.9 = 76,968,728,985.6 bytes.
TEST(KvCapacityTokens, MatchesRealVllmLogsWithin2Percent) {
  struct Case {
    std::string name;
    DeploymentSpec d;
    int64_t want;    // hand-computed below
    int64_t logged;  // what vLLM printed, 0 if no log
  };
  const Case cases[] = {
      // 76,968,728,985.6 - 13,480,000,000 weights (6.74e9 x 2) - 1,073,741,824 workspace
      // = 62,414,987,161.6 bytes / 524,288 = 119,048.3 tokens -> 7,440 blocks of 16 = 119,040.
      // Log: 119,408 (-0.31%).
      {"llama-2-7b tp1", H100(Llama2_7B(), 1), 119040, 119408},
      // 76,968,728,985.6 - 34,500,000,000 (69.0e9 x 2 / 4) - 1,610,612,736 (1.5 GiB)
      // = 40,858,116,249.6 / 81,920 = 498,756.3 -> 31,172 blocks = 498,752. Log: 501,712 (-0.59%).
      {"llama-2-70b tp4", H100(Llama2_70B(), 4), 498752, 501712},
      // 76,968,728,985.6 - 16,060,000,000 - 1,610,612,736 = 59,298,116,249.6 / 131,072
      // = 452,408.4 -> 28,275 blocks = 452,400 (docs/reference.md "vLLM engine").
      {"llama-3.1-8b tp1", H100(Llama31_8B(), 1), 452400, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t got = KvCapacityTokens(c.d);
    EXPECT_EQ(got, c.want);
    EXPECT_EQ(got % 16, 0);
    EXPECT_EQ(KvCapacityBlocks(c.d), c.want / 16);
    if (c.logged > 0) {
      EXPECT_NEAR(static_cast<double>(got), static_cast<double>(c.logged), 0.02 * c.logged);
    }
  }
  // The 8B's "about 450k tokens": within 1% of 450,000 and about 55 GiB of KV
  // (452,400 x 131,072 = 59.30e9 bytes = 55.2 GiB).
  const DeploymentSpec d8b = H100(Llama31_8B(), 1);
  EXPECT_NEAR(static_cast<double>(KvCapacityTokens(d8b)), 450000.0, 4500.0);
  EXPECT_NEAR(KvCapacityTokens(d8b) * KvBytesPerTokenPerGpu(d8b) / kGiB, 55.0, 0.5);
}

TEST(KvCapacityTokens, HigherUtilizationGivesMoreKv) {
  // At 0.92 (newer vLLM): + 0.02 x 85,520,809,984 = 1,710,416,199.7 bytes more
  // = 13,049.4 tokens more for the 8B: 59,298,116,249.6 + 1,710,416,199.68 = 61,008,532,449.3
  // / 131,072 = 465,458.2 -> 29,091 blocks = 465,456.
  DeploymentSpec d = H100(Llama31_8B(), 1);
  d.engine.gpu_memory_utilization = 0.92;
  EXPECT_EQ(KvCapacityTokens(d), 465456);
}

TEST(KvCapacityTokens, RoundsToTheBlockSize) {
  // Block 32: 452,408.4 tokens -> 14,137 blocks of 32 = 452,384.
  DeploymentSpec d = H100(Llama31_8B(), 1);
  d.engine.block_size = 32;
  EXPECT_EQ(KvCapacityTokens(d), 452384);
  EXPECT_EQ(KvCapacityBlocks(d), 14137);
}

TEST(KvCapacityTokens, OverrideWins) {
  DeploymentSpec d = H100(Llama31_8B(), 1);
  d.engine.kv_capacity_tokens_override = 100000;
  EXPECT_EQ(KvCapacityTokens(d), 100000);
  EXPECT_EQ(KvCapacityBlocks(d), 6250);
}

TEST(KvCapacityTokens, ZeroWhenTheWeightsDoNotFit) {
  // Llama-2-70B on one GPU: 138e9 bytes of weights > 77e9 of budget.
  EXPECT_EQ(KvCapacityTokens(H100(Llama2_70B(), 1)), 0);
}

TEST(KvCapacityTokens, AbsurdInputsAreCappedNotOverflowed) {
  // A 1e300-byte GPU would hold ~1e294 tokens, far beyond int64: capped at 1e15 tokens
  // (62,500,000,000,000 blocks of 16).
  DeploymentSpec d = H100(Llama31_8B(), 1);
  d.gpu.memory_bytes = 1e300;
  EXPECT_EQ(KvCapacityTokens(d), 1000000000000000);
}

}  // namespace
}  // namespace twinscale::sim
