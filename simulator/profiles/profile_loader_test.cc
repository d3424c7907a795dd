// Profiles: every embedded file loads and resolves to a valid deployment whose figures match the
// hand arithmetic; precedence (flag > deployment > model/gpu > built-in default); bad YAML is
// rejected with the file, the 1-based line and the key; validation names the field.
#include "simulator/profiles/profile_loader.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "tests/util/temp_dir.h"

namespace twinscale::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

ProfileRegistry Embedded() {
  absl::StatusOr<ProfileRegistry> r = ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : ProfileRegistry();
}

DeploymentSpec MustResolve(const ProfileRegistry& r, std::string_view name,
                           const DeploymentOverrides& o = {}) {
  absl::StatusOr<DeploymentSpec> d = r.Resolve(name, o);
  EXPECT_TRUE(d.ok()) << name << ": " << d.status();
  return d.ok() ? *std::move(d) : DeploymentSpec();
}

// ---- the embedded profiles ----------------------------------------------------------------------

TEST(EmbeddedProfiles, EveryProfileLoadsAndEveryDeploymentValidates) {
  const ProfileRegistry r = Embedded();
  EXPECT_THAT(r.Names("gpus"), ElementsAre("a100-80g", "h100-pcie", "h100-sxm", "h200"));
  EXPECT_THAT(r.Names("models"),
              ElementsAre("llama-2-70b", "llama-2-7b", "llama-3.1-70b", "llama-3.1-8b"));
  EXPECT_THAT(r.Names("deployments"),
              IsSupersetOf({"llama-3.1-8b-h100-sxm-tp1", "llama-3.1-70b-h100-sxm-tp4",
                            "llama-2-7b-h100-sxm-tp1", "llama-2-70b-h100-sxm-tp4",
                            "blis-llama-3.1-8b-h100-tp2", "llama-3.1-8b-h200-tp1",
                            "llama-3.1-70b-h200-tp4"}));
  EXPECT_THAT(r.Names("deployments"), ::testing::Contains(std::string(kDefaultDeploymentProfile)));
  EXPECT_TRUE(r.Names("widgets").empty());
  for (const std::string& name : r.Names("deployments")) {
    SCOPED_TRACE(name);
    const DeploymentSpec d = MustResolve(r, name);
    EXPECT_EQ(d.name, name);
    EXPECT_TRUE(ValidateDeployment(d).ok());
    EXPECT_GT(KvCapacityTokens(d), 0);
  }
  // Every model on every GPU, at the smallest TP that fits it (8B: 1; 70B: 4), also validates.
  for (const std::string& gpu : r.Names("gpus")) {
    for (const std::string& model : r.Names("models")) {
      SCOPED_TRACE(model + " on " + gpu);
      DeploymentOverrides o;
      o.gpu = gpu;
      o.model = model;
      o.tensor_parallel = model.find("70b") != std::string::npos ? 4 : 1;
      const DeploymentSpec d = MustResolve(r, "", o);
      EXPECT_EQ(d.name, model + "-" + gpu + "-tp" + std::to_string(*o.tensor_parallel));
    }
  }
}

TEST(EmbeddedProfiles, KvCapacitiesMatchTheHandArithmeticAndTheLogs) {
  const ProfileRegistry r = Embedded();
  struct Case {
    std::string deployment;
    int64_t want;    // simulator/model/deployment_test.cc works these by hand
    int64_t logged;  // vLLM's "GPU KV cache size" (docs/reference.md), 0 if none
  };
  const Case cases[] = {
      {"llama-2-7b-h100-sxm-tp1", 119040, 119408},   // -0.31%
      {"llama-2-70b-h100-sxm-tp4", 498752, 501712},  // -0.59%
      // 76,968,728,985.6 - 16.06e9 - 1.5 GiB = 59,298,116,249.6 / 131,072 -> 452,400 ("~450k").
      {"llama-3.1-8b-h100-sxm-tp1", 452400, 0},
      // 76,968,728,985.6 - 35.3e9 (70.6e9 x 2 / 4) - 2 GiB (2,147,483,648) = 39,521,245,337.6
      // / 81,920 = 482,437.1 -> 30,152 blocks = 482,432.
      {"llama-3.1-70b-h100-sxm-tp4", 482432, 0},
      // H200 (143,771 MiB): 0.9 x 143,771 x 1,048,576 = 135,679,338,086.4.
      // - 16.06e9 - 1.5 GiB = 118,008,725,350.4 / 131,072 = 900,335.1 -> 56,270 blocks = 900,320.
      {"llama-3.1-8b-h200-tp1", 900320, 0},
      // - 35.3e9 - 2 GiB = 98,231,854,438.4 / 81,920 = 1,199,119.3 -> 74,944 blocks = 1,199,104.
      {"llama-3.1-70b-h200-tp4", 1199104, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.deployment);
    const DeploymentSpec d = MustResolve(r, c.deployment);
    EXPECT_EQ(KvCapacityTokens(d), c.want);
    if (c.logged > 0) {
      EXPECT_NEAR(static_cast<double>(KvCapacityTokens(d)), c.logged, 0.02 * c.logged);
    }
  }
}

TEST(EmbeddedProfiles, BlisDeploymentCarriesTheExactCoefficients) {
  const DeploymentSpec d = MustResolve(Embedded(), "blis-llama-3.1-8b-h100-tp2");
  EXPECT_EQ(d.latency_model, LatencyModelKind::kLinear);
  EXPECT_EQ(d.tensor_parallel, 2);
  EXPECT_EQ(d.engine.max_num_seqs, 256);
  EXPECT_EQ(d.engine.max_num_batched_tokens, 2048);
  // "6910.42us" -> 6,910,420 ns -> / 1e3: the same double as the literal 6910.42.
  EXPECT_EQ(d.linear.b0_us, 6910.42);
  EXPECT_EQ(d.linear.b1_us, 17.67);
  EXPECT_EQ(d.linear.b2_us, 2.84);
  EXPECT_EQ(d.linear.a0_us, 1601.35);
  EXPECT_EQ(d.linear.a1_us, 3.51);
  EXPECT_EQ(d.linear.a2_us, 1805.54);
  // 6,910.42 + 17.67 x 2,048 + 2.84 x 100 = 43,382.58 us.
  BatchShape s;
  s.prefill_seqs = 1;
  s.prefill_tokens = 2048;
  s.decode_seqs = 100;
  EXPECT_EQ(MakeLatencyModel(d)->StepTime(s), SimDuration::Nanos(43382580));
}

TEST(EmbeddedProfiles, DefaultProfileAgreesWithTheBuiltInDefaults) {
  // deployment.h's defaults describe the same deployment; if one changes, so should the other.
  const DeploymentSpec p = MustResolve(Embedded(), kDefaultDeploymentProfile);
  const DeploymentSpec b;
  EXPECT_EQ(p.name, b.name);
  EXPECT_EQ(p.gpu.name, b.gpu.name);
  EXPECT_EQ(p.gpu.memory_bytes, b.gpu.memory_bytes);
  EXPECT_EQ(p.gpu.peak_flops, b.gpu.peak_flops);
  EXPECT_EQ(p.gpu.memory_bandwidth, b.gpu.memory_bandwidth);
  EXPECT_EQ(p.gpu.interconnect_bandwidth, b.gpu.interconnect_bandwidth);
  EXPECT_EQ(p.model.name, b.model.name);
  EXPECT_EQ(p.model.params, b.model.params);
  EXPECT_EQ(p.model.layers, b.model.layers);
  EXPECT_EQ(p.model.kv_heads, b.model.kv_heads);
  EXPECT_EQ(p.model.activation_workspace_bytes, b.model.activation_workspace_bytes);
  EXPECT_EQ(p.engine.max_num_seqs, b.engine.max_num_seqs);
  EXPECT_EQ(p.engine.max_num_batched_tokens, b.engine.max_num_batched_tokens);
  EXPECT_EQ(p.engine.gpu_memory_utilization, b.engine.gpu_memory_utilization);
  EXPECT_EQ(p.engine.enable_prefix_caching, b.engine.enable_prefix_caching);
  EXPECT_EQ(p.engine.reserve_full_prompt, b.engine.reserve_full_prompt);
  EXPECT_EQ(p.engine.long_prefill_token_threshold, b.engine.long_prefill_token_threshold);
  EXPECT_EQ(p.roofline.mfu, b.roofline.mfu);
  EXPECT_EQ(p.roofline.attention_mfu, b.roofline.attention_mfu);
  EXPECT_EQ(p.roofline.per_step_overhead_us, b.roofline.per_step_overhead_us);
  // vLLM V1's defaults (docs/reference.md "vLLM engine"): prefix caching on; since PR #37307 a
  // prompt is admitted only when all its blocks are free; no per-request cap on prefill tokens per
  // step.
  EXPECT_TRUE(p.engine.enable_prefix_caching);
  EXPECT_TRUE(p.engine.reserve_full_prompt);
  EXPECT_EQ(p.engine.long_prefill_token_threshold, 0);
  EXPECT_EQ(KvCapacityTokens(p), KvCapacityTokens(b));
}

TEST(EmbeddedProfiles, LifecycleDelaysComeFromTheWarmUpFigures) {
  const ProfileRegistry r = Embedded();
  // 8B: loading 20 s + warming 25 s = 45 s of medians, inside the 30-90 s of docs/reference.md
  // "Warm-up lag".
  const DeploymentSpec small = MustResolve(r, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(small.lifecycle.provisioning.median, SimDuration::Zero());
  EXPECT_EQ(small.lifecycle.loading.median, SimDuration::Seconds(20));
  EXPECT_EQ(small.lifecycle.warming_up.median, SimDuration::Seconds(25));
  EXPECT_EQ(small.lifecycle.warming_up.p90_over_median, 1.6);
  // 70B: 90 s + 120 s = 3.5 min, inside 3-5 min.
  const DeploymentSpec big = MustResolve(r, "llama-3.1-70b-h100-sxm-tp4");
  EXPECT_EQ(big.lifecycle.loading.median + big.lifecycle.warming_up.median,
            SimDuration::Seconds(210));
  EXPECT_EQ(big.lifecycle.drain_grace, SimDuration::Seconds(120));
}

// ---- precedence ---------------------------------------------------------------------------------

// A registry of small profiles whose values differ at every level, so each row sees which won.
ProfileRegistry PrecedenceRegistry() {
  ProfileRegistry r;
  EXPECT_TRUE(r.AddYaml("gpus/g.yaml", R"(
memoryMiB: 81559
peakTflops: 989
memoryBandwidthTBps: 3.35
interconnectGBps: 450
engineDefaults: {maxNumSeqs: 256, maxNumBatchedTokens: 2048, blockSize: 32}
)")
                  .ok());
  EXPECT_TRUE(r.AddYaml("gpus/other-gpu.yaml", R"(
memoryMiB: 143771
peakTflops: 989
memoryBandwidthTBps: 4.8
interconnectGBps: 450
)")
                  .ok());
  for (const auto& [name, layers, workspace] :
       {std::tuple<std::string, int, double>{"m", 32, 1.5}, {"other-model", 40, 2.0}}) {
    EXPECT_TRUE(r.AddYaml("models/" + name + ".yaml",
                          "parameters: 8.03e9\nlayers: " + std::to_string(layers) +
                              "\nqueryHeads: 32\nkvHeads: 8\nheadDim: 128\nhidden: 4096\n"
                              "ffn: 14336\nvocab: 128256\nactivationWorkspaceGiB: " +
                              std::to_string(workspace) + "\n")
                    .ok());
  }
  // Names the profiles but sets nothing itself.
  EXPECT_TRUE(r.AddYaml("deployments/bare.yaml", "model: m\ngpu: g\n").ok());
  // Sets one value at each level the table checks.
  EXPECT_TRUE(r.AddYaml("deployments/full.yaml", R"(
model: m
gpu: g
tensorParallel: 2
engine: {maxNumSeqs: 512, maxNumBatchedTokens: 4096, maxModelLen: 16384}
latencyModel: linear
roofline: {mfu: 0.5}
)")
                  .ok());
  return r;
}

TEST(Resolve, PrecedenceFlagBeatsDeploymentBeatsModelGpuBeatsDefault) {
  const ProfileRegistry r = PrecedenceRegistry();
  struct Case {
    std::string name;
    std::string deployment;
    DeploymentOverrides overrides;
    std::function<double(const DeploymentSpec&)> field;
    double want;
  };
  auto seqs = [](const DeploymentSpec& d) { return static_cast<double>(d.engine.max_num_seqs); };
  auto tp = [](const DeploymentSpec& d) { return static_cast<double>(d.tensor_parallel); };
  auto block = [](const DeploymentSpec& d) { return static_cast<double>(d.engine.block_size); };
  auto mfu = [](const DeploymentSpec& d) { return d.roofline.mfu; };
  auto layers = [](const DeploymentSpec& d) { return static_cast<double>(d.model.layers); };
  auto bandwidth = [](const DeploymentSpec& d) { return d.gpu.memory_bandwidth; };
  auto linear = [](const DeploymentSpec& d) {
    return d.latency_model == LatencyModelKind::kLinear ? 1.0 : 0.0;
  };
  auto kv = [](const DeploymentSpec& d) { return static_cast<double>(KvCapacityTokens(d)); };
  auto util = [](const DeploymentSpec& d) { return d.engine.gpu_memory_utilization; };
  auto context = [](const DeploymentSpec& d) {
    return static_cast<double>(d.engine.max_model_len);
  };
  DeploymentOverrides gpu_g;
  gpu_g.gpu = "g";
  DeploymentOverrides seqs_64;
  seqs_64.max_num_seqs = 64;
  DeploymentOverrides tp_4;
  tp_4.tensor_parallel = 4;
  DeploymentOverrides block_16;
  block_16.block_size = 16;
  DeploymentOverrides other_model;
  other_model.model = "other-model";
  DeploymentOverrides other_gpu;
  other_gpu.gpu = "other-gpu";
  DeploymentOverrides roofline;
  roofline.latency_model = LatencyModelKind::kRoofline;
  DeploymentOverrides kv_1000;
  kv_1000.kv_capacity_tokens = 1000;
  DeploymentOverrides util_half;
  util_half.gpu_memory_utilization = 0.5;
  DeploymentOverrides context_8k;
  context_8k.max_model_len = 8192;

  const Case cases[] = {
      {"default: no profile sets max_num_seqs", "", {}, seqs, 1024},
      {"gpu profile (named by a flag) beats the default", "", gpu_g, seqs, 256},
      {"gpu profile (named by the deployment) beats the default", "bare", {}, seqs, 256},
      {"deployment beats the gpu profile", "full", {}, seqs, 512},
      {"flag beats the deployment", "full", seqs_64, seqs, 64},
      {"default tensor_parallel is 1", "bare", {}, tp, 1},
      {"deployment sets tensor_parallel", "full", {}, tp, 2},
      {"flag beats the deployment's tensor_parallel", "full", tp_4, tp, 4},
      {"gpu's block size beats the default 16", "full", {}, block, 32},
      {"flag beats the gpu's block size", "full", block_16, block, 16},
      {"default roofline mfu when the deployment has none", "bare", {}, mfu, 0.45},
      {"deployment's roofline mfu", "full", {}, mfu, 0.5},
      {"model named by the deployment", "full", {}, layers, 32},
      {"model flag replaces the deployment's model", "full", other_model, layers, 40},
      {"gpu flag replaces the deployment's gpu", "full", other_gpu, bandwidth, 4.8e12},
      {"deployment's latency model", "full", {}, linear, 1},
      {"flag beats the deployment's latency model", "full", roofline, linear, 0},
      // The 8B's 452,408.4 tokens in the GPU's 32-token blocks: 14,137 x 32 = 452,384.
      {"computed KV capacity", "bare", {}, kv, 452384},
      {"KV capacity flag beats the computed one", "bare", kv_1000, kv, 1000},
      {"default gpu_memory_utilization", "bare", {}, util, 0.9},
      {"flag beats gpu_memory_utilization", "bare", util_half, util, 0.5},
      {"default max_model_len: Llama 3.1's context", "bare", {}, context, 131072},
      {"deployment's max_model_len", "full", {}, context, 16384},
      {"flag beats the deployment's max_model_len", "full", context_8k, context, 8192},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeploymentSpec> d = r.Resolve(c.deployment, c.overrides);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(c.field(*d), c.want);
  }
}

TEST(Resolve, EmptyDeploymentIsBuiltInDefaultsPlusNamedProfiles) {
  const ProfileRegistry r = Embedded();
  // Nothing named: the built-in defaults, named after their model and GPU.
  const DeploymentSpec d = MustResolve(r, "");
  EXPECT_EQ(d.name, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(KvCapacityTokens(d), 452400);
  // Model, GPU and TP by flag: the 70B TP4 figures without its deployment profile (so the
  // built-in lifecycle, not the 70B's).
  DeploymentOverrides o;
  o.model = "llama-3.1-70b";
  o.gpu = "h100-sxm";
  o.tensor_parallel = 4;
  const DeploymentSpec big = MustResolve(r, "", o);
  EXPECT_EQ(big.name, "llama-3.1-70b-h100-sxm-tp4");
  EXPECT_EQ(KvCapacityTokens(big), 482432);
  EXPECT_EQ(big.lifecycle.loading.median, LifecycleSpec{}.loading.median);
}

// A deployment profile whose hardware a flag changes is named for what was simulated; engine
// limits and a same-valued override leave the profile's name.
TEST(Resolve, AnOverrideOfModelGpuOrTpRenamesTheDeployment) {
  const ProfileRegistry r = Embedded();
  const struct {
    const char* name;
    void (*set)(DeploymentOverrides&);  // the overrides (the others left unset)
    const char* want;
  } cases[] = {
      {"no override", [](DeploymentOverrides&) {}, "llama-3.1-8b-h100-sxm-tp1"},
      {"another GPU", [](DeploymentOverrides& o) { o.gpu = "h200"; }, "llama-3.1-8b-h200-tp1"},
      {"another model", [](DeploymentOverrides& o) { o.model = "llama-2-7b"; },
       "llama-2-7b-h100-sxm-tp1"},
      {"another TP", [](DeploymentOverrides& o) { o.tensor_parallel = 2; },
       "llama-3.1-8b-h100-sxm-tp2"},
      {"the profile's own GPU and TP",
       [](DeploymentOverrides& o) {
         o.gpu = "h100-sxm";
         o.tensor_parallel = 1;
       },
       "llama-3.1-8b-h100-sxm-tp1"},
      {"an engine limit", [](DeploymentOverrides& o) { o.max_num_seqs = 64; },
       "llama-3.1-8b-h100-sxm-tp1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    DeploymentOverrides o;
    c.set(o);
    EXPECT_EQ(MustResolve(r, "llama-3.1-8b-h100-sxm-tp1", o).name, c.want);
  }
  // The H200 override is the H200 hardware: the same KV capacity as the H200 profile.
  DeploymentOverrides h200;
  h200.gpu = "h200";
  EXPECT_EQ(KvCapacityTokens(MustResolve(r, "llama-3.1-8b-h100-sxm-tp1", h200)),
            KvCapacityTokens(MustResolve(r, "llama-3.1-8b-h200-tp1")));
}

TEST(Resolve, UnknownNamesListTheKnownOnes) {
  const ProfileRegistry r = Embedded();
  absl::StatusOr<DeploymentSpec> d = r.Resolve("llama-9-8b", {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("unknown deployment profile \"llama-9-8b\""));
  EXPECT_THAT(d.status().message(), HasSubstr("blis-llama-3.1-8b-h100-tp2, llama-2-70b-h100-sxm"));

  DeploymentOverrides o;
  o.model = "gpt-5";
  d = r.Resolve(kDefaultDeploymentProfile, o);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("unknown model profile \"gpt-5\"; known: llama-2-70b, llama-2-7b, "
                        "llama-3.1-70b, llama-3.1-8b"));

  ProfileRegistry broken = Embedded();
  ASSERT_TRUE(broken.AddYaml("deployments/x.yaml", "model: llama-3.1-8b\ngpu: b200\n").ok());
  d = broken.Resolve("x", {});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("unknown gpu profile \"b200\" named by deployment profile \"x\" "
                        "(deployments/x.yaml); known: a100-80g, h100-pcie, h100-sxm, h200"));
}

TEST(Resolve, InvalidResultsNameTheField) {
  const ProfileRegistry r = Embedded();
  struct Case {
    std::string name;
    std::string deployment;
    DeploymentOverrides overrides;
    std::string want;
  };
  DeploymentOverrides few_tokens;
  few_tokens.max_num_batched_tokens = 128;  // BLIS runs 256 seqs
  DeploymentOverrides util_high;
  util_high.gpu_memory_utilization = 1.2;
  DeploymentOverrides util_zero;
  util_zero.gpu_memory_utilization = 0;
  DeploymentOverrides tp3;
  tp3.tensor_parallel = 3;
  DeploymentOverrides tp1;
  tp1.tensor_parallel = 1;
  DeploymentOverrides tp0;
  tp0.tensor_parallel = 0;
  DeploymentOverrides block0;
  block0.block_size = 0;
  DeploymentOverrides seqs0;
  seqs0.max_num_seqs = 0;
  DeploymentOverrides kv_negative;
  kv_negative.kv_capacity_tokens = -5;
  DeploymentOverrides kv_tiny;
  kv_tiny.kv_capacity_tokens = 8;
  const Case cases[] = {
      {"fewer batched tokens than sequences", "blis-llama-3.1-8b-h100-tp2", few_tokens,
       "max_num_batched_tokens (128) must be >= max_num_seqs (256): vLLM requires it"},
      {"utilization above 1", "", util_high, "gpu_memory_utilization must be in (0, 1], got 1.2"},
      {"utilization 0", "", util_zero, "gpu_memory_utilization must be in (0, 1], got 0"},
      {"TP3 doesn't divide 32 query heads", "", tp3, "tensor_parallel (3) must divide"},
      {"TP0", "", tp0, "tensor_parallel must be >= 1, got 0"},
      {"block size 0", "", block0, "block_size must be >= 1, got 0"},
      {"max_num_seqs 0", "", seqs0, "max_num_seqs must be >= 1, got 0"},
      {"negative KV override", "", kv_negative, "kv_capacity_tokens must be >= 0"},
      {"KV override below one block", "", kv_tiny, "KV capacity is 8 tokens"},
      // 70.6e9 x 2 = 141.2 GB of weights in a 71.7 GiB budget.
      {"70B on one GPU doesn't fit", "llama-3.1-70b-h100-sxm-tp4", tp1,
       "KV capacity is 0 tokens: weights (131.5 GiB per GPU)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DeploymentSpec> d = r.Resolve(c.deployment, c.overrides);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(c.want));
  }
}

TEST(ValidateDeployment, TableOfBadSpecs) {
  struct Case {
    std::string name;
    std::function<void(DeploymentSpec&)> break_it;
    std::string want;
  };
  const Case cases[] = {
      {"kv heads don't divide query heads", [](DeploymentSpec& d) { d.model.kv_heads = 5; },
       "model.query_heads (32) must be a multiple of model.kv_heads (5)"},
      {"TP 16 doesn't divide 40 query heads",
       [](DeploymentSpec& d) {
         d.model.query_heads = 40;
         d.model.kv_heads = 8;
         d.tensor_parallel = 16;
       },
       "tensor_parallel (16) must divide model.query_heads (40)"},
      {"a negative prefill chunk cap",
       [](DeploymentSpec& d) { d.engine.long_prefill_token_threshold = -1; },
       "long_prefill_token_threshold must be >= 0 (0 = off), got -1"},
      {"a context too short for any request", [](DeploymentSpec& d) { d.engine.max_model_len = 1; },
       "max_model_len must be >= 2 (a prompt token and an output token), got 1"},
      {"mfu above 1", [](DeploymentSpec& d) { d.roofline.mfu = 1.5; },
       "roofline.mfu must be in (0, 1], got 1.5"},
      {"negative step overhead", [](DeploymentSpec& d) { d.roofline.per_step_overhead_us = -1; },
       "roofline.per_step_overhead_us must be >= 0"},
      {"negative linear coefficient", [](DeploymentSpec& d) { d.linear.b2_us = -2.84; },
       "linear.b2_us must be >= 0"},
      {"a linear step that takes no time",
       [](DeploymentSpec& d) { d.linear = {.b0_us = 0, .b1_us = 17.67, .b2_us = 0}; },
       "a step must take time"},
      {"p90 below the median", [](DeploymentSpec& d) { d.lifecycle.loading.p90_over_median = 0.5; },
       "lifecycle.loading.p90_over_median must be >= 1"},
      {"slow factor that speeds up", [](DeploymentSpec& d) { d.lifecycle.slow_factor = 0.5; },
       "lifecycle.slow_factor must be >= 1"},
      {"negative drain grace",
       [](DeploymentSpec& d) { d.lifecycle.drain_grace = SimDuration::Seconds(-1); },
       "lifecycle.drain_grace must be >= 0, got -1s"},
      {"zero bandwidth", [](DeploymentSpec& d) { d.gpu.memory_bandwidth = 0; },
       "gpu.memory_bandwidth must be > 0"},
      {"zero layers", [](DeploymentSpec& d) { d.model.layers = 0; }, "model.layers must be > 0"},
  };
  EXPECT_TRUE(ValidateDeployment(DeploymentSpec{}).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DeploymentSpec d;
    c.break_it(d);
    const absl::Status s = ValidateDeployment(d);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(c.want));
  }
  // vLLM's KV-head rule: TP 4 with 6 KV heads divides neither way; TP 16 with 8 KV heads
  // replicates each KV head on two ranks, which is fine.
  DeploymentSpec d;
  d.model.query_heads = 48;
  d.model.kv_heads = 6;
  d.tensor_parallel = 4;
  EXPECT_THAT(ValidateDeployment(d).message(),
              HasSubstr("tensor_parallel (4) and model.kv_heads (6) must divide one another"));
  d.model.query_heads = 32;
  d.model.kv_heads = 8;
  d.tensor_parallel = 16;
  d.engine.kv_capacity_tokens_override = 0;
  EXPECT_TRUE(ValidateDeployment(d).ok()) << ValidateDeployment(d);
}

// ---- bad YAML -----------------------------------------------------------------------------------

TEST(AddYaml, BadFilesAreRejectedWithFileLineAndKey) {
  struct Case {
    std::string name;  // why the text is bad
    std::string path;
    std::string text;
    std::string want;  // fragment of the message, with the 1-based line
  };
  const Case cases[] = {
      {"a typo in a key must not be ignored", "deployments/typo.yaml",
       "model: llama-3.1-8b\ngpu: h100-sxm\nengine:\n  maxNumSeq: 256\n",
       "deployments/typo.yaml:4: unknown key engine.maxNumSeq (known: blockSize, "
       "enablePrefixCaching, gpuMemoryUtilization, kvCapacityTokens, longPrefillTokenThreshold, "
       "maxModelLen, maxNumBatchedTokens, maxNumSeqs, schedulerReserveFullIsl)"},
      {"a misspelt top-level key", "deployments/typo.yaml",
       "model: llama-3.1-8b\ngpu: h100-sxm\ntensorParalel: 2\n",
       "deployments/typo.yaml:3: unknown key tensorParalel"},
      {"a word where an integer belongs", "deployments/t.yaml",
       "model: m\ngpu: g\nengine:\n  maxNumSeqs: lots\n",
       "deployments/t.yaml:4: engine.maxNumSeqs: expected an integer, got \"lots\""},
      {"a fraction where an integer belongs", "deployments/t.yaml",
       "model: m\ngpu: g\ntensorParallel: 1.5\n",
       "deployments/t.yaml:3: tensorParallel: expected an integer, got \"1.5\""},
      {"an integer too big for its field", "deployments/t.yaml",
       "model: m\ngpu: g\ntensorParallel: 99999999999\n",
       "deployments/t.yaml:3: tensorParallel: integer out of range"},
      {"a list where a number belongs", "gpus/g.yaml",
       "memoryMiB: [1, 2]\npeakTflops: 989\nmemoryBandwidthTBps: 3.35\ninterconnectGBps: 450\n",
       "gpus/g.yaml:1: memoryMiB: expected a number, got a list"},
      {"a duration without a unit", "deployments/t.yaml",
       "model: m\ngpu: g\nlifecycle:\n  slowPeriod: 30\n",
       "deployments/t.yaml:4: lifecycle.slowPeriod: expected a duration such as \"30s\""},
      {"a negative duration", "deployments/t.yaml",
       "model: m\ngpu: g\nlifecycle:\n  loading: {median: -5s}\n",
       "deployments/t.yaml:4: lifecycle.loading.median: must not be negative"},
      {"an unknown latency model", "deployments/t.yaml",
       "model: m\ngpu: g\nlatencyModel: quantum\n",
       "deployments/t.yaml:3: latencyModel: expected roofline or linear, got \"quantum\""},
      {"yes is not a boolean here (YAML 1.1 would say true)", "deployments/t.yaml",
       "model: m\ngpu: g\nengine:\n  enablePrefixCaching: yes\n",
       "deployments/t.yaml:4: engine.enablePrefixCaching: expected true or false"},
      {"a section that is not a mapping", "deployments/t.yaml", "model: m\ngpu: g\nengine: 5\n",
       "deployments/t.yaml:3: engine: expected a mapping of keys, got \"5\""},
      {"an engine key a GPU profile can't set", "gpus/g.yaml",
       "memoryMiB: 1\npeakTflops: 1\nmemoryBandwidthTBps: 1\ninterconnectGBps: 1\n"
       "engineDefaults:\n  kvCapacityTokens: 5\n",
       "gpus/g.yaml:6: unknown key engineDefaults.kvCapacityTokens"},
      {"a model without its layer count", "models/m.yaml",
       "parameters: 8e9\nqueryHeads: 32\nkvHeads: 8\nheadDim: 128\nhidden: 4096\nffn: 1\n"
       "vocab: 1\n",
       "models/m.yaml:1: missing required key layers"},
      {"a deployment that names no GPU", "deployments/t.yaml", "model: m\n",
       "deployments/t.yaml:1: missing required key gpu"},
      {"a key given twice", "deployments/t.yaml", "model: m\ngpu: g\nmodel: n\n",
       "deployments/t.yaml:3: duplicate key model"},
      {"a name that contradicts the file name", "deployments/t.yaml",
       "name: other\nmodel: m\ngpu: g\n",
       "deployments/t.yaml:1: name: \"other\" differs from the file name \"t\""},
      {"YAML syntax: an unclosed flow mapping", "deployments/t.yaml",
       "model: m\ngpu: g\nengine: {maxNumSeqs: 256\n\n", "deployments/t.yaml:5: "},
      {"YAML syntax: a tab-broken indentation", "deployments/t.yaml",
       "model: m\ngpu: g\nengine:\n  maxNumSeqs: 1\n bad: 2\n", "deployments/t.yaml:5: "},
      {"a list at the top", "deployments/t.yaml", "- model: m\n",
       "deployments/t.yaml:1: expected a mapping of keys at the top, got a list"},
      {"an empty file", "deployments/t.yaml", "",
       "deployments/t.yaml: expected a mapping of keys at the top, got nothing"},
      {"not a number", "deployments/t.yaml", "model: m\ngpu: g\nroofline: {mfu: .nan}\n",
       "deployments/t.yaml:3: roofline.mfu: expected a number"},
      {"an unknown kind of profile", "widgets/w.yaml", "a: 1\n",
       "widgets/w.yaml: unknown profile kind \"widgets\""},
      {"a path without a kind", "w.yaml", "a: 1\n", "is not <gpus|models|deployments>/<name>.yaml"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ProfileRegistry r;
    const absl::Status s = r.AddYaml(c.path, c.text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.want));
    EXPECT_TRUE(r.Names("deployments").empty());
    EXPECT_TRUE(r.Names("gpus").empty());
  }
}

// ---- directories --------------------------------------------------------------------------------

class AddDirectoryTest : public ::testing::Test {
 protected:
  void Write(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  const testutil::TempDir tmp_{"twinscale-profiles"};
  const std::filesystem::path dir_{tmp_.path()};
};

TEST_F(AddDirectoryTest, FilesOverrideEmbeddedProfilesByKindAndName) {
  ProfileRegistry r = Embedded();
  Write(
      "deployments/llama-3.1-8b-h100-sxm-tp1.yaml",
      "model: llama-3.1-8b\ngpu: h100-sxm\nengine: {maxNumSeqs: 128, maxNumBatchedTokens: 4096}\n");
  Write("gpus/b200.yml",
        "memoryMiB: 183359\npeakTflops: 2250\nmemoryBandwidthTBps: 8\ninterconnectGBps: 900\n");
  Write("gpus/README.md", "not a profile: ignored\n");
  ASSERT_TRUE(r.AddDirectory(dir_.string()).ok());
  const DeploymentSpec d = MustResolve(r, kDefaultDeploymentProfile);
  EXPECT_EQ(d.engine.max_num_seqs, 128);
  EXPECT_EQ(d.engine.max_num_batched_tokens, 4096);
  EXPECT_THAT(r.Names("gpus"), ElementsAre("a100-80g", "b200", "h100-pcie", "h100-sxm", "h200"));
  // The other embedded profiles are still there.
  EXPECT_EQ(MustResolve(r, "blis-llama-3.1-8b-h100-tp2").engine.max_num_seqs, 256);
}

TEST_F(AddDirectoryTest, BrokenFileNamesItsPathAndLineAndChangesNothing) {
  ProfileRegistry r = Embedded();
  Write("gpus/aaa.yaml",
        "memoryMiB: 1\npeakTflops: 1\nmemoryBandwidthTBps: 1\ninterconnectGBps: 1\n");
  Write("deployments/bad.yaml", "model: llama-3.1-8b\ngpu: h100-sxm\n\nengine:\n  maxNumSeq: 5\n");
  const absl::Status s = r.AddDirectory(dir_.string());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr((dir_ / "deployments" / "bad.yaml").string() +
                                     ":5: unknown key engine.maxNumSeq"));
  // All or nothing: the good file before the bad one wasn't added either.
  EXPECT_THAT(r.Names("gpus"), ElementsAre("a100-80g", "h100-pcie", "h100-sxm", "h200"));
}

TEST_F(AddDirectoryTest, MissingOrEmptyDirectories) {
  ProfileRegistry r;
  EXPECT_EQ(r.AddDirectory((dir_ / "nope").string()).code(), absl::StatusCode::kNotFound);
  Write("deployment/x.yaml", "model: m\ngpu: g\n");  // singular: a typo of deployments/
  const absl::Status s = r.AddDirectory(dir_.string());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("holds none of gpus/, models/, deployments/"));
}

// ---- names --------------------------------------------------------------------------------------

TEST(LatencyModelKindNames, RoundTrip) {
  for (LatencyModelKind k : {LatencyModelKind::kRoofline, LatencyModelKind::kLinear}) {
    absl::StatusOr<LatencyModelKind> parsed = ParseLatencyModelKind(LatencyModelKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_EQ(LatencyModelKindName(LatencyModelKind::kLinear), "linear");
  const absl::StatusOr<LatencyModelKind> bad = ParseLatencyModelKind("Roofline");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("known: roofline, linear"));
}

}  // namespace
}  // namespace twinscale::sim
