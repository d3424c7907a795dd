// Engine semantics, rule by rule (docs/architecture.md "The twin"), each expected value worked by
// hand with a linear step-time model whose coefficients make the arithmetic visible.
#include "simulator/model/replica.h"

#include <gtest/gtest.h>

#include "tests/util/engine_test_util.h"

namespace twinscale::sim {
namespace {

using testing::HandDeployment;
using testing::Harness;
using testing::Req;

constexpr double kMs = 1.0;

TEST(ReplicaTest, SingleRequestTtftAndE2eByHand) {
  // b0 = 1000 us, b1 = 10 us/prefill token, b2 = 100 us/decode token; front end a0 = 500 us +
  // a1 = 1 us/prompt token; every token leaves a2 = 50 us after its step.
  // prompt 100, output 5:
  //   front end: 500 + 100 = 600 us
  //   prefill step: 1000 + 10 x 100 = 2000 us -> first token at 600 + 2000 + 50 = 2650 us
  //   4 decode steps of 1000 + 100 x 1 = 1100 us -> last token at 600 + 2000 + 4400 + 50 = 7050 us
  Harness h(HandDeployment(256, 2048, 100000, 1000, 10, 100, 500, 1, 50));
  h.Run({Req(1, 0, 100, 5)});
  const RequestRecord& r = h.records.at(1);
  EXPECT_EQ(r.ttft.nanos(), 2'650'000);
  EXPECT_EQ(r.e2e.nanos(), 7'050'000);
  // Scheduled as soon as it reached the waiting queue (after the front end).
  EXPECT_EQ(r.scheduling_delay.nanos(), 600'000);
  EXPECT_EQ(r.outcome, RequestOutcome::kCompleted);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.engine_steps, 5);
  EXPECT_EQ(s.output_tokens, 5);
  // ITL: 4 tokens, each 1100 us apart (histogram resolution 0.5%).
  EXPECT_EQ(s.itl_ms.count, 4);
  EXPECT_NEAR(s.itl_ms.mean, 1.1, 1e-9);
}

TEST(ReplicaTest, ChunkedPrefillSplitsALongPromptOverTheTokenBudget) {
  // Budget 2048: prompt 5000 runs as chunks 2048, 2048, 904 in three steps:
  //   1000 + 10 x 2048 = 21480 us, twice, then 1000 + 10 x 904 = 10040 us -> TTFT 53000 us.
  Harness h(HandDeployment(256, 2048, 100000, 1000, 10, 0));
  h.Run({Req(1, 0, 5000, 1)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 53'000'000);
  EXPECT_EQ(h.Summary().engine_steps, 3);
  EXPECT_EQ(h.Summary().prompt_tokens_computed, 5000);
}

TEST(ReplicaTest, DecodesShareTheBudgetWithAPartialPrefill) {
  // A (prompt 10, output 3) at 0; B (prompt 3000) arrives at 0.5 ms while A's prefill step runs.
  // b0 = 1000, b1 = 1, b2 = 0, budget 2048.
  //   step 0 [0, 1010 us): A prefill 10 tokens (1000 + 10).
  //   step 1 [1010, 1010 + 1000 + 2047 = 4057 us): A decode (1 token) + B chunk 2047 (budget 2048 -
  //   1). step 2 [4057, 4057 + 1000 + 953 = 6010 us): A decode (its 3rd and last token) + B chunk
  //   953.
  // A: TTFT 1010 us, E2E 6010 us. B: TTFT 6010 - 500 = 5510 us.
  Harness h(HandDeployment(256, 2048, 100000, 1000, 1, 0));
  h.Run({Req(1, 0, 10, 3), Req(2, 0.5, 3000, 1)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 1'010'000);
  EXPECT_EQ(h.records.at(1).e2e.nanos(), 6'010'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 5'510'000);
}

TEST(ReplicaTest, PreemptsTheMostRecentlyAdmittedWhenBlocksRunOutAndRecomputes) {
  // KV: 64 tokens = 4 blocks of 16. Every step takes 1 ms (b0 only).
  // A: prompt 32 (2 blocks), output 20. B: prompt 16 (1 block), output 40. Both at t = 0, A first.
  //   step 0: admit A (2 blocks) and B (1 block); free 1. Both emit their first token at 1 ms.
  //   step 1: A (32 tokens of KV) and B (16) both start a new block: need 2, free 1 -> preempt the
  //     most recently admitted running request, B (frees 1 block; it needed 1: need 1, free 2).
  //     B goes to the front of the waiting queue to recompute 16 + 1 = 17 tokens; nothing is
  //     admitted in a step that preempted.
  //   steps 2..19: A decodes alone; B needs 2 blocks but only 1 is free -> admission stops. A takes
  //     the last block at step 17 (KV 48) and emits its 20th token at the end of step 19 (20 ms).
  //   step 20: B re-prefills 17 tokens (2 blocks) and emits its 2nd token; steps 21..58 decode
  //     tokens 3..40 -> B's last token at 59 ms. B's TTFT stays the first one: 1 ms.
  Harness h(HandDeployment(256, 2048, 64, 1000));
  h.Run({Req(1, 0, 32, 20), Req(2, 0, 16, 40)});
  const RequestRecord& a = h.records.at(1);
  const RequestRecord& b = h.records.at(2);
  EXPECT_EQ(a.ttft.nanos(), 1'000'000);
  EXPECT_EQ(a.e2e.nanos(), 20'000'000);
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(b.ttft.nanos(), 1'000'000);
  EXPECT_EQ(b.e2e.nanos(), 59'000'000);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.scheduling_delay.nanos(), 20'000'000);  // most recent scheduling: step 20
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.prompt_tokens_computed, 32 + 16 + 17);  // the recompute of prompt + 1 generated
  EXPECT_EQ(s.engine_steps, 59);
  EXPECT_EQ(s.output_tokens, 20 + 40);
  EXPECT_DOUBLE_EQ(s.kv_peak_utilization, 1.0);
}

TEST(ReplicaTest, AdmissionStopsAtTheFirstWaitingRequestThatCannotGetItsBlocks) {
  // KV 4 blocks; 1 ms steps. A prompt 48 (3 blocks) output 2; B prompt 32 (2 blocks) output 2;
  // C prompt 1 (1 block) output 2; all at t = 0 in that order.
  //   step 0: admit A (free 1); B needs 2 -> admission stops, so C is not admitted although its
  //     one block would fit (FCFS).
  //   step 1: A decodes (KV 48 opens block 4: free 0) and finishes (2 tokens) at 2 ms.
  //   step 2: admit B and C; both emit their first token at 3 ms.
  //   step 3: B (KV 32) takes a block (free 0); C fits in its block; both finish at 4 ms.
  Harness h(HandDeployment(256, 2048, 64, 1000));
  h.Run({Req(1, 0, 48, 2), Req(2, 0, 32, 2), Req(3, 0, 1, 2)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 1'000'000);
  EXPECT_EQ(h.records.at(1).e2e.nanos(), 2'000'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 3'000'000);
  EXPECT_EQ(h.records.at(3).ttft.nanos(), 3'000'000);
  EXPECT_EQ(h.records.at(3).e2e.nanos(), 4'000'000);
  EXPECT_EQ(h.Summary().preemptions, 0);
}

TEST(ReplicaTest, FullPromptAdmissionWaitsWhereFirstChunkAdmissionPreempts) {
  // vLLM's scheduler_reserve_full_isl. KV 128 tokens = 8 blocks; budget 64 tokens; 1 ms steps.
  // A and B: prompt 96 (6 blocks), output 4, both at t = 0, A first.
  // Full prompt (the default):
  //   step 0: admit A, chunk 64 (4 blocks); budget spent.
  //   step 1: A's last 32 (2 blocks: free 2); B needs 6 blocks free for its prompt -> waits.
  //     A's first token at 2 ms.
  //   steps 2-4: A decodes (position 96 opens a 7th block at step 2: free 1); its 4th token at
  //     5 ms; it leaves, freeing 8.
  //   steps 5-6: B 64 + 32; first token at 7 ms; steps 7-9 decode: done at 10 ms.
  // First chunk only (vLLM before March 2026):
  //   step 1: A's last 32 (free 2) and B admitted on its first chunk, 32 tokens = 2 blocks (free
  //   0). step 2: A's decode needs a block and B's next chunk (63 = 64 - A's decode) needs 4 more:
  //   5 >
  //     0 free -> preempt the most recently admitted, B (its 2 blocks back: free 2 >= A's 1).
  //   steps 3-4: B needs 4 blocks for a first chunk of 63, 1 is free -> waits; A as above.
  //   steps 5-9: B recomputes its prompt from scratch, as above.
  // Same latencies here, but B's first 32 tokens were computed twice and one preemption happened:
  // with long prompts under load that waste is what snowballs (replica.h).
  for (const bool full : {true, false}) {
    SCOPED_TRACE(full ? "full prompt" : "first chunk");
    DeploymentSpec d = HandDeployment(256, 64, 128, 1000);
    d.engine.reserve_full_prompt = full;
    Harness h(d);
    h.Run({Req(1, 0, 96, 4), Req(2, 0, 96, 4)});
    EXPECT_EQ(h.records.at(1).ttft.nanos(), 2'000'000);
    EXPECT_EQ(h.records.at(1).e2e.nanos(), 5'000'000);
    EXPECT_EQ(h.records.at(2).ttft.nanos(), 7'000'000);
    EXPECT_EQ(h.records.at(2).e2e.nanos(), 10'000'000);
    EXPECT_EQ(h.records.at(2).preemptions, full ? 0 : 1);
    EXPECT_EQ(h.Summary().preemptions, full ? 0 : 1);
    EXPECT_EQ(h.Summary().prompt_tokens_computed, full ? 192 : 224);
  }
}

TEST(ReplicaTest, LongPrefillTokenThresholdLetsAShortPromptPastALongOne) {
  // Budget 64; every step 1 ms whatever it holds (b1 = b2 = 0). A: prompt 256 at t = 0; B: prompt
  // 16 at 0.5 ms; one output token each.
  // Without a threshold (vLLM's default): A takes the whole budget for 4 steps (first token at
  //   4 ms); B waits behind it and runs in step 4: first token at 5 ms, TTFT 4.5 ms.
  // With long_prefill_token_threshold 16: A takes 16 tokens per step, leaving 48 to others; B is
  //   admitted in step 1 beside A's second chunk: first token at 2 ms, TTFT 1.5 ms; A needs
  //   256 / 16 = 16 steps: first token at 16 ms.
  struct Case {
    const char* name;
    int32_t threshold;
    int64_t want_a_ns, want_b_ns;
  };
  const Case cases[] = {
      {"no threshold: the short prompt waits for the long one", 0, 4'000'000, 4'500'000},
      {"threshold 16: they share the budget", 16, 16'000'000, 1'500'000},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    DeploymentSpec d = HandDeployment(256, 64, 100000, 1000);
    d.engine.long_prefill_token_threshold = tc.threshold;
    Harness h(d);
    h.Run({Req(1, 0, 256, 1), Req(2, 0.5, 16, 1)});
    EXPECT_EQ(h.records.at(1).ttft.nanos(), tc.want_a_ns);
    EXPECT_EQ(h.records.at(2).ttft.nanos(), tc.want_b_ns);
    EXPECT_EQ(h.Summary().prompt_tokens_computed, 272);
  }
}

TEST(ReplicaTest, MaxNumSeqsCapsTheRunningBatch) {
  // max_num_seqs 2, 1 ms steps, three requests of output 3 at t = 0: the third is admitted in the
  // step after the first two finish (they finish at the end of step 2 = 3 ms).
  Harness h(HandDeployment(2, 2048, 100000, 1000));
  h.Run({Req(1, 0, 10, 3), Req(2, 0, 10, 3), Req(3, 0, 10, 3)});
  EXPECT_EQ(h.records.at(2).e2e.nanos(), 3'000'000);
  EXPECT_EQ(h.records.at(3).ttft.nanos(), 4'000'000);
  EXPECT_EQ(h.records.at(3).e2e.nanos(), 6'000'000);
}

TEST(ReplicaTest, RejectsARequestThatCouldNeverFitInTheCache) {
  Harness h(HandDeployment(256, 2048, 64, 1000));
  h.Run({Req(1, 0, 60, 10), Req(2, 0, 10, 2)});
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kRejected);
  EXPECT_EQ(h.records.at(2).outcome, RequestOutcome::kCompleted);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.rejected, 1);
  EXPECT_EQ(s.completed, 1);
  // Attainment counts the rejected request as a miss.
  EXPECT_DOUBLE_EQ(s.slo_attainment, 0.5);
}

TEST(ReplicaTest, RefusesARequestLongerThanMaxModelLenAsVllmsApiServerDoes) {
  // --max-model-len 100 on a cache of 100,000 tokens: prompt 95 + output 10 = 105 > 100 is refused
  // though it would fit in the cache; 90 + 10 = 100 is served.
  DeploymentSpec d = HandDeployment(256, 2048, 100000, 1000);
  d.engine.max_model_len = 100;
  Harness h(d);
  h.Run({Req(1, 0, 95, 10), Req(2, 0, 90, 10)});
  EXPECT_EQ(h.records.at(1).outcome, RequestOutcome::kRejected);
  EXPECT_EQ(h.records.at(2).outcome, RequestOutcome::kCompleted);
  EXPECT_EQ(h.Summary().rejected, 1);
}

TEST(ReplicaTest, TtftSloIsLengthAware) {
  // 1 ms steps + 10 us per prefill token. Prompt 1000: TTFT = 1000 + 10000 us = 11 ms.
  // Threshold 5 ms alone misses; with 10 us per prompt token the target is 15 ms and it meets.
  TtftSlo plain{.threshold = SimDuration::Millis(5),
                .per_prompt_token = SimDuration::Zero(),
                .percentile = 90,
                .slack_share = 1,
                .unloaded = {}};
  TtftSlo aware{.threshold = SimDuration::Millis(5),
                .per_prompt_token = SimDuration::Micros(10),
                .percentile = 90,
                .slack_share = 1,
                .unloaded = {}};
  Harness h1(HandDeployment(256, 2048, 100000, 1000, 10), 1, plain);
  h1.Run({Req(1, 0, 1000, 1)});
  Harness h2(HandDeployment(256, 2048, 100000, 1000, 10), 1, aware);
  h2.Run({Req(1, 0, 1000, 1)});
  EXPECT_DOUBLE_EQ(h1.Summary().slo_attainment, 0.0);
  EXPECT_DOUBLE_EQ(h2.Summary().slo_attainment, 1.0);
}

TEST(ReplicaTest, SaturatedReplicaCompletesInWavesOfMaxNumSeqs) {
  // 800 requests at t = 0, max_num_seqs 8, output 100, every step 10 ms (b1 = b2 = 0): each
  // request holds a slot for exactly 100 steps (prefill + 99 decodes) and a freed slot is refilled
  // in the very next step, so wave k (k = 1..100) finishes at k x 1 s.
  //   throughput = 8 / 1 s; makespan 100 s; mean E2E = (1 + ... + 100) / 100 = 50.5 s.
  // Little's law over the run: integral of L(t) = sum_{k=0}^{99} (800 - 8k) x 1 s = 40400
  //   request-seconds = 800 x mean E2E.
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 800; ++i) reqs.push_back(Req(static_cast<uint64_t>(i), 0, 16, 100));
  Harness h(HandDeployment(8, 2048, 1'000'000, 10000));
  h.Run(std::move(reqs));
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.completed, 800);
  EXPECT_DOUBLE_EQ(s.simulated_seconds, 100.0);
  EXPECT_DOUBLE_EQ(s.throughput_rps, 8.0);
  EXPECT_NEAR(s.e2e_ms.mean, 50500.0, 1e-6);
  double sum_e2e_s = 0;
  for (const auto& [id, r] : h.records) sum_e2e_s += r.e2e.seconds();
  EXPECT_NEAR(sum_e2e_s, 40400.0, 1e-6);
}

TEST(ReplicaTest, ConservationHoldsWhenTheRunIsCutShort) {
  // Injected = completed + queued + running + rejected + aborted at any instant.
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 300; ++i) reqs.push_back(Req(static_cast<uint64_t>(i), i * 2.0, 200, 50));
  reqs.push_back(Req(1000, 1.0, 5000, 5000));  // cannot fit: rejected
  std::sort(reqs.begin(), reqs.end(),
            [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  Harness h(HandDeployment(16, 2048, 4096, 2000, 5, 20));
  h.source = std::make_unique<testing::VectorSource>(reqs);
  h.fleet->AttachSource(h.source.get());
  for (int cut_ms : {50, 200, 400, 800}) {
    h.sim.RunUntil(SimTime::FromNanos(cut_ms * 1'000'000LL));
    const RunSummary s = h.Summary();
    EXPECT_EQ(
        s.injected, s.completed + s.queued_at_end + s.running_at_end + s.rejected + s.aborted +
                        h.fleet->gateway_queue() +
                        [&] {
                          int64_t t = 0;
                          for (const auto& v : h.fleet->Replicas()) t += v.in_transit;
                          return t;
                        }())
        << "at " << cut_ms << " ms";
    EXPECT_GT(s.injected, 0);
  }
  h.sim.Run();
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.injected, 301);
  EXPECT_EQ(s.completed + s.rejected, 301);
  EXPECT_EQ(s.rejected, 1);
}

}  // namespace
}  // namespace twinscale::sim
