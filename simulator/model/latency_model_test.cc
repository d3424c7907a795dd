// Step times of the roofline and linear latency models against hand calculation. The roofline
// cases check the physics of docs/reference.md "Models" (weights/bandwidth bound a decode step;
// each token of context adds its read; prefill is compute-bound at ~16 GFLOP/token for the 8B;
// attention is quadratic; TP halves the weight read); the linear cases check BLIS's Llama-3.1-8B /
// H100 / TP2 fit term by term. Every knob a case depends on is set here, so a change of the
// built-in defaults can't silently change what a case means.
#include "simulator/model/latency_model.h"

#include <cstdint>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "simulator/core/time.h"
#include "simulator/model/deployment.h"

namespace twinscale::sim {
namespace {

// Step times are rounded to whole nanoseconds; hand values are worked to 0.001 us or better.
constexpr double kTolUs = 0.002;

double Us(SimDuration d) { return static_cast<double>(d.nanos()) / 1e3; }

// Llama-3.1-8B on an H100 SXM, roofline knobs pinned to the built-in values.
DeploymentSpec Llama31_8B_H100(int32_t tp = 1) {
  DeploymentSpec d;
  d.gpu.memory_bytes = 81559.0 * 1024 * 1024;
  d.gpu.peak_flops = 989e12;
  d.gpu.memory_bandwidth = 3.35e12;
  d.gpu.interconnect_bandwidth = 450e9;
  d.model.params = 8.03e9;
  d.model.layers = 32;
  d.model.query_heads = 32;
  d.model.kv_heads = 8;
  d.model.head_dim = 128;
  d.model.hidden = 4096;
  d.model.dtype_bytes = 2;
  d.tensor_parallel = tp;
  d.latency_model = LatencyModelKind::kRoofline;
  d.roofline = RooflineParams{};
  d.roofline.mfu = 0.45;
  d.roofline.attention_mfu = 0.35;
  d.roofline.bandwidth_efficiency = 0.80;
  d.roofline.per_layer_overhead_us = 4.0;
  d.roofline.per_step_overhead_us = 1500.0;
  d.roofline.allreduce_latency_us = 8.0;
  d.roofline.front_end_delay_us = 0.0;
  d.roofline.token_emission_delay_us = 0.0;
  return d;
}

// The same with every efficiency at 1 and no overheads: the bare roofline.
DeploymentSpec Bare(DeploymentSpec d) {
  d.roofline.mfu = 1.0;
  d.roofline.attention_mfu = 1.0;
  d.roofline.bandwidth_efficiency = 1.0;
  d.roofline.per_layer_overhead_us = 0;
  d.roofline.per_step_overhead_us = 0;
  d.roofline.allreduce_latency_us = 0;
  return d;
}

BatchShape Decode(int64_t seqs, int64_t context_each) {
  BatchShape s;
  s.decode_seqs = seqs;
  s.decode_context_tokens = seqs * context_each;
  return s;
}

// One whole prompt of n tokens in one chunk, no cached prefix: n (n + 1) / 2 query-key pairs.
BatchShape Prefill(int64_t n) {
  BatchShape s;
  s.prefill_seqs = 1;
  s.prefill_tokens = n;
  s.prefill_attention_pairs = static_cast<double>(n) * static_cast<double>(n + 1) / 2.0;
  return s;
}

// ---- roofline ---------------------------------------------------------------------------------

TEST(Roofline, WeightReadAloneBoundsAn8BDecodeStepAt4Point8Ms) {
  // Bare roofline, one sequence, no context: 16.06e9 B / 3.35e12 B/s = 4,794.030 us. The compute
  // leg is 1 token x 16.06e9 FLOP / 989e12 = 16.2 us: memory-bound.
  auto bare = MakeLatencyModel(Bare(Llama31_8B_H100()));
  EXPECT_NEAR(Us(bare->StepTime(Decode(1, 0))), 4794.030, kTolUs);
}

TEST(Roofline, SmallDecodeBatchIsAboveTheBoundWithinAPlausibleOverhead) {
  auto m = MakeLatencyModel(Llama31_8B_H100());
  // One sequence with 512 tokens of context: memory (16.06e9 + 512 x 131,072 = 16,127,108,864 B)
  // / (3.35e12 x 0.8 = 2.68e12 B/s) = 6,017.578 us; compute 16.06e9 / (989e12 x 0.45) = 36.086 us;
  // + 32 layers x 4 us + 1,500 us per step = 1,628 us -> 7,645.578 us.
  const double one = Us(m->StepTime(Decode(1, 512)));
  EXPECT_NEAR(one, 7645.578, kTolUs);
  // Eight sequences with 1,000 tokens each: (16.06e9 + 8,000 x 131,072) / 2.68e12 = 6,383.797 us
  // (compute 8 x 36.086 = 289 us) + 1,628 = 8,011.797 us.
  const double eight = Us(m->StepTime(Decode(8, 1000)));
  EXPECT_NEAR(eight, 8011.797, kTolUs);
  // Above the 4.8 ms physical bound, and within 2x of it (the efficiency and the fixed costs are
  // the whole difference; vLLM on an H100 decodes the 8B at roughly 6-8 ms per step at small
  // batch).
  for (double t : {one, eight}) {
    EXPECT_GT(t, 4794.030);
    EXPECT_LT(t, 2 * 4794.030);
  }
}

TEST(Roofline, EachTokenOfContextAddsItsReadTime) {
  // At full bandwidth, 1,000 tokens x 131,072 B = 131.072e6 B / 3.35e12 B/s = 39.126 us
  // (docs/reference.md "Models": about 39 us).
  auto bare = MakeLatencyModel(Bare(Llama31_8B_H100()));
  EXPECT_NEAR(Us(bare->StepTime(Decode(1, 1000))) - Us(bare->StepTime(Decode(1, 0))), 39.126,
              kTolUs);
  // At the profile's 80% efficiency: 39.126 / 0.8 = 48.907 us.
  auto m = MakeLatencyModel(Llama31_8B_H100());
  EXPECT_NEAR(Us(m->StepTime(Decode(1, 1000))) - Us(m->StepTime(Decode(1, 0))), 48.907, kTolUs);
  // 256 sequences of 1,000 tokens at full bandwidth add 256 x 39.126 = 10,016.248 us ("about 10
  // ms"; still memory-bound: compute is 256 x 16.24 = 4,157 us < 14,810 us of reads).
  EXPECT_NEAR(Us(bare->StepTime(Decode(256, 1000))) - Us(bare->StepTime(Decode(256, 0))), 10016.248,
              kTolUs);
}

TEST(Roofline, PrefillIsComputeBoundAt16GflopPerToken) {
  // 2 x 8.03e9 = 16.06 GFLOP per token. Bare: 16.06e9 / 989e12 = 16.239 us per token.
  BatchShape no_attention = Prefill(2048);
  no_attention.prefill_attention_pairs = 0;
  auto bare = MakeLatencyModel(Bare(Llama31_8B_H100()));
  // 2,048 x 16.2386 = 33,256.704 us; the memory leg ((16.06e9 + 2,048 x 131,072) / 3.35e12 =
  // 4,874.16 us) loses.
  EXPECT_NEAR(Us(bare->StepTime(no_attention)), 33256.704, kTolUs);
  // At 45% MFU: 16.06e9 / 445.05e12 = 36.0858 us per token (docs/reference.md "Models");
  // 2,048 tokens: 73,903.786 us.
  auto m = MakeLatencyModel(Llama31_8B_H100());
  EXPECT_NEAR(Us(m->StepTime(no_attention)) - 1628.0, 73903.786, kTolUs);
  // With its causal attention: 2,048 x 2,049 / 2 = 2,098,176 pairs x (4 x 32 layers x 32 heads x
  // 128 = 524,288 FLOP per pair) = 1.1000e12 FLOP / (989e12 x 0.35) = 3,177.953 us;
  // total 73,903.786 + 3,177.953 + 1,628 = 78,709.739 us.
  EXPECT_NEAR(Us(m->StepTime(Prefill(2048))), 78709.739, kTolUs);
}

TEST(Roofline, QuadraticAttentionDominatesAVeryLongPrompt) {
  auto m = MakeLatencyModel(Llama31_8B_H100());
  // 100,000 tokens: GEMMs 100,000 x 36.0858 us = 3.6086 s; attention 100,000 x 100,001 / 2 =
  // 5.00005e9 pairs x 524,288 FLOP / 346.15e12 FLOP/s = 7.5732 s; + 1,628 us -> 11.1834 s.
  const double step = Us(m->StepTime(Prefill(100000)));
  EXPECT_NEAR(step, 11183420.071, 0.01);
  BatchShape no_attention = Prefill(100000);
  no_attention.prefill_attention_pairs = 0;
  const double attention = step - Us(m->StepTime(no_attention));
  EXPECT_NEAR(attention, 7573208.766, 0.01);
  EXPECT_GT(attention, step / 2);  // the quadratic term is most of the step
  // At 2,048 tokens the same term is 4% of the step (3,178 of 78,710 us): it grows with n^2.
  EXPECT_LT(3177.953 / 78709.739, 0.05);
}

TEST(Roofline, TensorParallel2HalvesTheWeightReadBound) {
  // Bare TP2: 8.03e9 B per GPU / 3.35e12 = 2,397.015 us, half of 4,794.030. Plus the all-reduce's
  // bandwidth term (its latency is 0 in the bare model): 2 x 32 layers x 2 (2 - 1) / 2 x 4,096 x 2
  // bytes / 450e9 = 1.165 us for the one token.
  auto tp1 = MakeLatencyModel(Bare(Llama31_8B_H100(1)));
  auto tp2 = MakeLatencyModel(Bare(Llama31_8B_H100(2)));
  EXPECT_NEAR(Us(tp2->StepTime(Decode(1, 0))), 2397.015 + 1.165, kTolUs);
  EXPECT_NEAR(Us(tp2->StepTime(Decode(1, 0))) - 1.165, Us(tp1->StepTime(Decode(1, 0))) / 2, kTolUs);
  // The KV per GPU halves too (4 of 8 KV heads): 1,000 tokens read in 39.126 / 2 = 19.563 us.
  EXPECT_NEAR(Us(tp2->StepTime(Decode(1, 1000))) - Us(tp2->StepTime(Decode(1, 0))), 19.563, kTolUs);
}

TEST(Roofline, AllReduceCostsOfA70BAtTp4) {
  // Llama-3.1-70B TP4: weights 70.6e9 x 2 / 4 = 35.3e9 B per GPU / 2.68e12 = 13,171.642 us;
  // 80 x 4 + 1,500 = 1,820 us; 2 x 80 = 160 all-reduces x 8 us = 1,280 us; and per token
  // 160 x 2 (4 - 1) / 4 x 8,192 x 2 B / 450e9 = 8.738 us -> one decode token: 16,280.380 us
  // (the weight-read bound of docs/reference.md "Models" is 35.3e9 / 3.35e12 = 10.5 ms; measured
  // TP4 70B decode steps are ~15-20 ms).
  DeploymentSpec d = Llama31_8B_H100(4);
  d.model.params = 70.6e9;
  d.model.layers = 80;
  d.model.query_heads = 64;
  d.model.kv_heads = 8;
  d.model.hidden = 8192;
  auto m = MakeLatencyModel(d);
  EXPECT_NEAR(Us(m->StepTime(Decode(1, 0))), 16280.380, kTolUs);
  // Each further decode token adds 8.738 us of all-reduce, and its GEMMs (2 x 70.6e9 / 4 /
  // 445.05e12 = 79.3 us) stay under the memory leg, so 10 more tokens add 87.381 us.
  EXPECT_NEAR(Us(m->StepTime(Decode(11, 0))) - Us(m->StepTime(Decode(1, 0))), 87.381, kTolUs);
}

TEST(Roofline, SpeedFactorsScaleTheirOwnTerms) {
  const DeploymentSpec d = Llama31_8B_H100();
  auto base = MakeLatencyModel(d);
  auto fast_prefill = MakeLatencyModel(d, {.prefill = 2.0, .decode = 1.0});
  auto fast_decode = MakeLatencyModel(d, {.prefill = 1.0, .decode = 2.0});
  constexpr double kFixedUs = 1628.0;  // 32 x 4 + 1,500: never scaled

  // Prefill: GEMM share and attention halve: (78,709.739 - 1,628) / 2 + 1,628 = 40,168.870 us.
  EXPECT_NEAR(Us(fast_prefill->StepTime(Prefill(2048))), 40168.870, kTolUs);
  // A decode-only step is memory-bound: the prefill factor leaves it alone ...
  EXPECT_EQ(fast_prefill->StepTime(Decode(8, 1000)), base->StepTime(Decode(8, 1000)));
  // ... and the decode factor halves the memory leg: 6,383.797 / 2 + 1,628 = 4,819.899 us.
  EXPECT_NEAR(Us(fast_decode->StepTime(Decode(8, 1000))), 4819.899, kTolUs);
  // The decode factor doesn't touch a prefill-only step's compute leg or its attention.
  EXPECT_EQ(fast_decode->StepTime(Prefill(2048)), base->StepTime(Prefill(2048)));
  // Both at 2: every scaled term halves, the fixed costs don't.
  auto both = MakeLatencyModel(d, {.prefill = 2.0, .decode = 2.0});
  for (const BatchShape& s : {Prefill(2048), Decode(8, 1000), Prefill(100000)}) {
    EXPECT_NEAR(Us(both->StepTime(s)) - kFixedUs, (Us(base->StepTime(s)) - kFixedUs) / 2, kTolUs);
  }
}

TEST(Roofline, MixedStepAddsComputeOfBothKinds) {
  // 512 prefill tokens + 64 decodes of 1,000 context each. Compute: 576 x 36.0858 = 20,785.440 us;
  // memory: (16.06e9 + (64,000 + 512) x 131,072) / 2.68e12 = 9,147.656 us: compute-bound.
  // Attention 512 x 513 / 2 = 131,328 pairs x 0.00151463 us = 198.913 us; + 1,628
  // -> 22,612.353 us.
  BatchShape s = Prefill(512);
  s.decode_seqs = 64;
  s.decode_context_tokens = 64000;
  auto m = MakeLatencyModel(Llama31_8B_H100());
  EXPECT_NEAR(Us(m->StepTime(s)), 22612.353, kTolUs);
}

TEST(Roofline, EmptyStepTakesNoTimeAndDelaysComeFromTheProfile) {
  DeploymentSpec d = Llama31_8B_H100();
  d.roofline.front_end_delay_us = 2500;
  d.roofline.token_emission_delay_us = 120;
  auto m = MakeLatencyModel(d);
  EXPECT_EQ(m->StepTime(BatchShape{}), SimDuration::Zero());
  EXPECT_EQ(m->FrontEndDelay(1), SimDuration::Micros(2500));
  EXPECT_EQ(m->FrontEndDelay(100000), SimDuration::Micros(2500));
  EXPECT_EQ(m->TokenEmissionDelay(), SimDuration::Micros(120));
}

TEST(Roofline, StepTimeNeverDecreasesAsTheBatchGrows) {
  auto m = MakeLatencyModel(Llama31_8B_H100(2));
  SimDuration last = SimDuration::Zero();
  for (int64_t seqs = 1; seqs <= 1024; seqs *= 2) {
    const SimDuration t = m->StepTime(Decode(seqs, 700));
    EXPECT_GT(t, last) << seqs;
    last = t;
  }
}

// ---- linear (BLIS's fit: b = [6910.42, 17.67, 2.84] us, a = [1601.35, 3.51, 1805.54] us) --------

DeploymentSpec Blis() {
  DeploymentSpec d = Llama31_8B_H100(2);
  d.latency_model = LatencyModelKind::kLinear;
  d.linear = LinearCoefficients{.b0_us = 6910.42,
                                .b1_us = 17.67,
                                .b2_us = 2.84,
                                .a0_us = 1601.35,
                                .a1_us = 3.51,
                                .a2_us = 1805.54};
  return d;
}

TEST(Linear, StepsByHand) {
  struct Case {
    std::string name;
    int64_t prefill_tokens;
    int64_t decode_seqs;
    SpeedFactors speed;
    double want_us;
  };
  const Case cases[] = {
      // 6,910.42 + 17.67 x 2,048 (36,188.16) + 2.84 x 100 (284) = 43,382.58 us.
      {"2048 prefill + 100 decode", 2048, 100, {}, 43382.58},
      // 6,910.42 + 2.84 x 256 (727.04) = 7,637.46 us.
      {"256 decodes", 0, 256, {}, 7637.46},
      // 6,910.42 + 17.67 x 1 = 6,928.09 us.
      {"one prefill token", 1, 0, {}, 6928.09},
      // Prefill factor 2 halves b1 only: 6,910.42 + 18,094.08 + 284 = 25,288.50 us.
      {"prefill factor 2", 2048, 100, {.prefill = 2.0, .decode = 1.0}, 25288.50},
      // Decode factor 2 halves b2 only: 6,910.42 + 36,188.16 + 142 = 43,240.58 us.
      {"decode factor 2", 2048, 100, {.prefill = 1.0, .decode = 2.0}, 43240.58},
      // Both: 6,910.42 + 18,094.08 + 142 = 25,146.50 us; b0 is never scaled.
      {"both factors 2", 2048, 100, {.prefill = 2.0, .decode = 2.0}, 25146.50},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = MakeLatencyModel(Blis(), c.speed);
    BatchShape s;
    s.prefill_seqs = c.prefill_tokens > 0 ? 1 : 0;
    s.prefill_tokens = c.prefill_tokens;
    s.decode_seqs = c.decode_seqs;
    s.decode_context_tokens = c.decode_seqs * 5000;  // context plays no part in the linear model
    EXPECT_NEAR(Us(m->StepTime(s)), c.want_us, kTolUs);
  }
}

TEST(Linear, FrontEndAndEmissionDelays) {
  auto m = MakeLatencyModel(Blis(), {.prefill = 3.0, .decode = 3.0});  // factors don't apply
  // a0 + a1 x 1,000 = 1,601.35 + 3,510 = 5,111.35 us; a0 alone for an empty prompt.
  EXPECT_EQ(m->FrontEndDelay(1000), SimDuration::Nanos(5111350));
  EXPECT_EQ(m->FrontEndDelay(0), SimDuration::Nanos(1601350));
  // a2 = 1,805.54 us after every step that produced a token.
  EXPECT_EQ(m->TokenEmissionDelay(), SimDuration::Nanos(1805540));
  EXPECT_EQ(m->StepTime(BatchShape{}), SimDuration::Zero());
}

// ---- the unloaded TTFT: what a request's own prefill costs alone -------------------------------

TEST(UnloadedTtft, ChunksTheBudgetAndAddsTheDelaysByHand) {
  auto m = MakeLatencyModel(Blis());
  EngineLimits engine;
  engine.max_num_batched_tokens = 8192;
  struct Case {
    std::string name;
    int32_t prompt;
    int32_t long_prefill_threshold;
    double want_us;
  };
  const Case cases[] = {
      // Front end 1,601.35 + 3.51 x 1,000 = 5,111.35; one step 6,910.42 + 17.67 x 1,000 =
      // 24,580.42; emission 1,805.54. Total 31,497.31 us.
      {"one chunk", 1000, 0, 31497.31},
      // Front end 1,601.35 + 35,100 = 36,701.35; steps of 8,192 and 1,808 tokens: 2 x 6,910.42 +
      // 17.67 x 10,000 = 190,520.84; emission 1,805.54. Total 229,027.73 us.
      {"two chunks at the step budget", 10000, 0, 229027.73},
      // long_prefill_token_threshold 4,096: three steps (4,096, 4,096, 1,808), one b0 more:
      // 229,027.73 + 6,910.42 = 235,938.15 us.
      {"three chunks at the long-prefill limit", 10000, 4096, 235938.15},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    engine.long_prefill_token_threshold = c.long_prefill_threshold;
    EXPECT_NEAR(Us(UnloadedTtft(*m, engine, c.prompt)), c.want_us, kTolUs);
  }
}

TEST(UnloadedTtft, AttentionMakesALongPromptCostMoreThanItsShareOfTokens) {
  // Roofline: each chunk attends to every chunk before it, so 64k tokens in 8 chunks cost more
  // than 8 times the first chunk alone; and a slower engine (speed 0.5) takes longer.
  const DeploymentSpec d = Llama31_8B_H100(1);
  auto m = MakeLatencyModel(d);
  const double one = Us(UnloadedTtft(*m, d.engine, 8192));
  const double eight = Us(UnloadedTtft(*m, d.engine, 65536));
  EXPECT_GT(eight, 8 * one * 1.05);
  auto slow = MakeLatencyModel(d, {.prefill = 0.5, .decode = 0.5});
  EXPECT_GT(Us(UnloadedTtft(*slow, d.engine, 8192)), 1.5 * one);
}

}  // namespace
}  // namespace twinscale::sim
