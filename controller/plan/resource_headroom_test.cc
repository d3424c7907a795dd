// Headroom per resource, worked by hand on the linear (BLIS) profile, whose step time is
// b0 + b1 x prefill tokens + b2 x decode tokens: b0 = 6910.42 us, b1 = 17.67 us, b2 = 2.84 us,
// a budget of 2048 tokens per step, at most 256 sequences, TP2 on H100s.
#include "controller/plan/resource_headroom.h"

#include <cmath>
#include <vector>

#include "controller/plan/scenario.h"
#include "gtest/gtest.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::plan {
namespace {

constexpr double kB0 = 6910.42e-6, kB1 = 17.67e-6, kB2 = 2.84e-6;

sim::DeploymentSpec Linear() {
  absl::StatusOr<sim::ProfileRegistry> reg = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(reg.ok());
  absl::StatusOr<sim::DeploymentSpec> d = reg->Resolve("blis-llama-3.1-8b-h100-tp2", {});
  EXPECT_TRUE(d.ok()) << d.status();
  return *d;
}

sim::RequestSpec Request(double at_seconds, int32_t prompt, int32_t output,
                         std::vector<uint64_t> ids = {}) {
  sim::RequestSpec r;
  r.arrival = sim::SimTime::FromSecondsF(at_seconds);
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  r.prefix_hashes = std::move(ids);
  return r;
}

// `n` requests per second of (prompt, output) for `seconds`, evenly spaced.
sim::Trace Steady(double n, double seconds, int32_t prompt, int32_t output) {
  sim::Trace t;
  for (int64_t i = 0; i < static_cast<int64_t>(n * seconds); ++i) {
    t.requests.push_back(Request(static_cast<double>(i) / n, prompt, output));
  }
  sim::NormalizeTrace(t);
  return t;
}

size_t At(Resource r) { return static_cast<size_t>(r); }

TEST(ReplicaCapacity, KvTokensByHand) {
  // Per GPU: 81559 MiB x 0.9 - 8.03e9 x 2 bytes / 2 GPUs of weights - 1.5 GiB of workspace, over
  // 2 (K, V) x 32 layers x 8 / 2 KV heads per GPU x 128 x 2 bytes = 65536 bytes a token:
  // 1,027,345.5 tokens, 1,027,344 in whole 16-token blocks.
  const PerResource cap = ReplicaCapacity(
      Linear(), {.prompt_mean = 1024, .prompt_computed_mean = 1024, .output_mean = 1024},
      absl::Milliseconds(500));
  EXPECT_EQ(cap[At(Resource::kKvMemory)], 1027344);
}

TEST(ReplicaCapacity, PrefillDecodeAndRequestsByHand) {
  const sim::DeploymentSpec d = Linear();
  // Prompts of 512, outputs of 512. Prefill: 4 prompts fill the 2048-token budget, one step of
  // b0 + 2048 b1. Decode: min(256 sequences, 1027344 / (512 + 256) = 1337) = 256 decodes a step
  // of b0 + 256 b2. The mixed step: one prompt token per decode token, so min(256, 2048 / 2) = 256
  // decodes and 256 prompt tokens, b0 + 256 b1 + 256 b2, 256 / 512 requests finishing a step.
  // Queue: (500 ms + 0) x prefill / 512 requests prefilled within the target.
  const PerResource cap =
      ReplicaCapacity(d, {.prompt_mean = 512, .prompt_computed_mean = 512, .output_mean = 512},
                      absl::Milliseconds(500));
  const double prefill = 2048 / (kB0 + 2048 * kB1);
  EXPECT_NEAR(cap[At(Resource::kPrefill)], prefill, 1e-6 * prefill);
  EXPECT_NEAR(cap[At(Resource::kDecode)], 256 / (kB0 + 256 * kB2), 1e-3);
  EXPECT_NEAR(cap[At(Resource::kRequests)], 256.0 / 512 / (kB0 + 256 * kB1 + 256 * kB2), 1e-6);
  EXPECT_NEAR(cap[At(Resource::kQueue)], 0.5 * prefill / 512, 1e-6);
}

TEST(ReplicaCapacity, APromptLongerThanTheBudgetIsPrefilledInChunks) {
  // 5000 tokens in chunks of 2048, 2048, 904: three steps, 3 b0 + 5000 b1 (the linear model has
  // no attention term).
  const PerResource cap = ReplicaCapacity(
      Linear(), {.prompt_mean = 5000, .prompt_computed_mean = 5000, .output_mean = 100},
      absl::Milliseconds(500));
  EXPECT_NEAR(cap[At(Resource::kPrefill)], 5000 / (3 * kB0 + 5000 * kB1), 1e-3);
}

TEST(ResourceDemand, DoublingThePromptMovesTheBindingResourceFromDecodeToPrefill) {
  // 20 req/s of 1024-token prompts and 1024-token outputs for 5 minutes. Prefill alone sustains
  // 2048 / (b0 + 2048 b1) = 47,511 tokens/s a replica, decode 256 / (b0 + 256 b2) = 33,521; the
  // demand is 20,480 of each, so decode is the busier (61% against 43% of one replica) and binds.
  // Twice the prompt: 40,960 prompt tokens/s (86%) and prefill binds.
  const sim::DeploymentSpec d = Linear();
  const DemandInputs served{
      .itl_seconds = 0.010, .prefill_seconds_per_token = 0, .queue_delay_seconds = 0};
  const sim::Trace base = Steady(20, 300, 1024, 1024);
  const WorkloadMix base_mix = MixOf(base);
  const HeadroomTable before =
      Headroom(ReplicaCapacity(d, base_mix, absl::Milliseconds(500)), ResourceDemand(base, served),
               /*replicas=*/1);
  EXPECT_EQ(before.binding, Resource::kDecode);
  EXPECT_NEAR(before.rows[At(Resource::kDecode)].headroom, 1 - 20480 / (256 / (kB0 + 256 * kB2)),
              1e-6);
  EXPECT_NEAR(before.rows[At(Resource::kPrefill)].headroom, 1 - 20480 / (2048 / (kB0 + 2048 * kB1)),
              1e-6);

  Scenario longer;
  longer.name = "longer";
  longer.prompt_length = 2;
  absl::StatusOr<sim::Trace> doubled = ApplyScenario(base, longer, 1);
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  const HeadroomTable after = Headroom(ReplicaCapacity(d, MixOf(*doubled), absl::Milliseconds(500)),
                                       ResourceDemand(*doubled, served), 1);
  EXPECT_EQ(after.binding, Resource::kPrefill);
  EXPECT_NEAR(after.rows[At(Resource::kPrefill)].demand, 40960, 1e-6);
  EXPECT_NEAR(after.rows[At(Resource::kPrefill)].headroom, 1 - 40960 / (2048 / (kB0 + 2048 * kB1)),
              1e-6);
  EXPECT_EQ(after.rows[At(Resource::kPrefill)].risk, Risk::kTight);  // 14% left
}

TEST(ResourceDemand, ActiveKvTokensAndQueueByLittlesLaw) {
  // One minute: 60 requests of (1000 prompt, 200 output), then a last arrival at 60 s that ends
  // the window. Each holds 1000 tokens through 1000 x 0.1 ms of prefill and 1000 + 100 tokens for
  // 200 x 20 ms: 1000 x 0.1 + 1100 x 4 = 4,500 token-seconds; 60 of them a minute keep 4,500
  // tokens active. Queue: 1 req/s x 50 ms = 0.05 requests.
  sim::Trace t;
  for (int i = 0; i <= 60; ++i) t.requests.push_back(Request(i, 1000, 200));
  const PerResource demand = ResourceDemand(
      t, {.itl_seconds = 0.020, .prefill_seconds_per_token = 0.0001, .queue_delay_seconds = 0.050});
  EXPECT_NEAR(demand[At(Resource::kKvMemory)], 4500, 1e-6);
  EXPECT_NEAR(demand[At(Resource::kQueue)], 0.05, 1e-9);
  EXPECT_NEAR(demand[At(Resource::kRequests)], 1.0, 1e-12);
  EXPECT_NEAR(demand[At(Resource::kDecode)], 200, 1e-9);
  // Against 1,027,344 tokens of one linear replica: 99.56% free.
  const HeadroomTable h =
      Headroom(ReplicaCapacity(Linear(), MixOf(t), absl::Milliseconds(500)), demand, 1);
  EXPECT_NEAR(h.rows[At(Resource::kKvMemory)].headroom, 1 - 4500.0 / 1027344, 1e-9);
  EXPECT_EQ(h.rows[At(Resource::kKvMemory)].risk, Risk::kOkay);
}

TEST(ResourceDemand, TheP95IsTakenPerResourceByNearestRank) {
  // Twenty minutes, one request in each but the last, which has 21: the p95 window is the 19th of
  // 20 (nearest rank ceil(0.95 x 20) = 19), one request: 1/60 req/s, not the spike.
  sim::Trace t;
  for (int m = 0; m < 19; ++m) t.requests.push_back(Request(60.0 * m, 100, 10));
  for (int i = 0; i < 21; ++i) t.requests.push_back(Request(19 * 60 + i, 100, 10));
  t.requests.push_back(Request(20 * 60, 100, 10));  // closes the 20th window
  const PerResource demand = ResourceDemand(t, {});
  EXPECT_NEAR(demand[At(Resource::kRequests)], 1.0 / 60, 1e-12);
}

TEST(ResourceDemand, ACacheMissAddsTheReusedTokensToPrefill) {
  // Three requests sharing prefixes (512-token blocks): A [1, 2] 1024 tokens; B [1, 2, 3] 1536
  // reuses A's two blocks (1024 tokens); C [1, 9] 700 reuses one (512). Prompt tokens 3260,
  // computed 1724, reused 1536. With the cache missing, prefill demand is 1724 + 1536 = 3260.
  sim::Trace t;
  t.requests = {Request(0, 1024, 10, {1, 2}), Request(1, 1536, 10, {1, 2, 3}),
                Request(2, 700, 10, {1, 9})};
  sim::NormalizeTrace(t);
  EXPECT_EQ(ReusedPromptTokens(t), (std::vector<int64_t>{0, 1024, 512}));
  const double seconds = 2;  // one window of the trace's own length
  EXPECT_NEAR(ResourceDemand(t, {})[At(Resource::kPrefill)], 1724 / seconds, 1e-9);
  Scenario miss;
  miss.name = "miss";
  miss.prefix_cache_miss = true;
  absl::StatusOr<sim::Trace> missed = ApplyScenario(t, miss, 7);
  ASSERT_TRUE(missed.ok());
  EXPECT_EQ(ReusedPromptTokens(*missed), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_NEAR(ResourceDemand(*missed, {})[At(Resource::kPrefill)], (1724 + 1536) / seconds, 1e-9);
  EXPECT_DOUBLE_EQ(MixOf(t).prompt_computed_mean, 1724.0 / 3);
}

TEST(ResourceDemand, AFullyCachedPromptStillComputesItsLastToken) {
  sim::Trace t;
  t.requests = {Request(0, 1024, 10, {1, 2}), Request(1, 1024, 10, {1, 2})};
  EXPECT_EQ(ReusedPromptTokens(t), (std::vector<int64_t>{0, 1023}));
}

TEST(Headroom, RiskWordsAndTheBindingResource) {
  PerResource cap{}, demand{};
  cap.fill(100);
  demand[At(Resource::kRequests)] = 150;  // never binding
  demand[At(Resource::kPrefill)] = 85;    // 15%: tight
  demand[At(Resource::kDecode)] = 50;     // okay
  demand[At(Resource::kKvMemory)] = 90;   // 10%: memory risk
  demand[At(Resource::kQueue)] = 120;     // -20%: shortfall, the least headroom
  const HeadroomTable h = Headroom(cap, demand, 1);
  EXPECT_EQ(h.rows[At(Resource::kRequests)].risk, Risk::kShortfall);
  EXPECT_EQ(h.rows[At(Resource::kPrefill)].risk, Risk::kTight);
  EXPECT_EQ(h.rows[At(Resource::kDecode)].risk, Risk::kOkay);
  EXPECT_EQ(h.rows[At(Resource::kKvMemory)].risk, Risk::kMemoryRisk);
  EXPECT_EQ(h.rows[At(Resource::kQueue)].risk, Risk::kShortfall);
  EXPECT_EQ(h.binding, Resource::kQueue);
  // Twice the fleet: capacity doubles.
  EXPECT_DOUBLE_EQ(Headroom(cap, demand, 2).rows[At(Resource::kQueue)].headroom, 0.4);
}

}  // namespace
}  // namespace twinscale::plan
