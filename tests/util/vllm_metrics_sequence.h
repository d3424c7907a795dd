// A hand-worked sequence of observations for the twin's vLLM metrics (simulator/model/
// vllm_metrics.h), shared by the tests of what the twin renders: the text itself, line by line and
// allocation-free (simulator/model/vllm_metrics_test.cc), and the text read back through the
// controller's parser as a scraper would (tests/integration/vllm_exposition_test.cc, which holds
// the hand-worked expected values). Header-only; needs the simulator alone.
#ifndef TWINSCALE_TESTS_UTIL_VLLM_METRICS_SEQUENCE_H_
#define TWINSCALE_TESTS_UTIL_VLLM_METRICS_SEQUENCE_H_

#include <string>
#include <utility>

#include "simulator/model/vllm_metrics.h"

namespace twinscale::testutil {

inline constexpr char kVllmTestModel[] = "meta-llama/Llama-3.1-8B-Instruct";

// An engine of the test model: 28000 KV blocks of 16 tokens, 90% of the GPU's memory,
// max_model_len 131072, its metrics created at 1.7e9 (Unix seconds).
inline sim::VllmMetricsOptions VllmTestOptions(std::string engine = "0") {
  sim::VllmMetricsOptions o;
  o.model_name = kVllmTestModel;
  o.engine = std::move(engine);
  o.num_gpu_blocks = 28000;
  o.block_size = 16;
  o.gpu_memory_utilization = 0.9;
  o.max_model_len = 131072;
  o.created_unix_seconds = 1.7e9;
  return o;
}

// Feeds `m` the hand-worked sequence (its expected values: HandWorkedSequenceReadsBack in
// tests/integration/vllm_exposition_test.cc).
inline void FeedHandWorkedSequence(sim::VllmMetrics& m) {
  m.SetScheduler(/*running=*/3, /*waiting=*/2, /*kv_cache_usage=*/0.25);
  m.AddPromptTokens(1500);
  m.AddPromptTokens(700);
  m.AddGenerationTokens(96 + 2048);
  m.AddPreemptions(1);
  m.AddPrefixCache(2048, 512);
  m.AddPrefixCache(1024, 0);
  for (double ttft : {0.03, 0.3, 0.3, 1.2}) m.ObserveTtft(ttft);
  m.ObserveInterTokenLatency(0.02, 30);
  m.ObserveInterTokenLatency(0.025, 10);  // exactly on an edge: le is inclusive
  m.ObserveInterTokenLatency(0.06, 5);
  m.ObserveFinished({.e2e = 2.0,  // exactly on the 2.0 edge
                     .queue = 0.1,
                     .inference = 1.9,
                     .prefill = 0.2,
                     .decode = 1.7,
                     .time_per_output_token = 1.7 / 95,
                     .prompt_tokens = 1500,
                     .generation_tokens = 96,
                     .reason = sim::VllmMetrics::Finished::Reason::kStop});
  m.ObserveFinished({.e2e = 12.0,
                     .queue = 4.0,
                     .inference = 8.0,
                     .prefill = 0.5,  // exactly on the 0.5 edge
                     .decode = 7.5,
                     .time_per_output_token = 7.5 / 2047,
                     .prompt_tokens = 700,
                     .generation_tokens = 2048,
                     .reason = sim::VllmMetrics::Finished::Reason::kLength});
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_VLLM_METRICS_SEQUENCE_H_
