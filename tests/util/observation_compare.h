// GoogleTest helper: field-by-field comparison of two PodObservations (metrics/vllm_observation.h),
// with a message naming the engine and the field that differs. Values must be EXACTLY equal (both
// sides come from the same numbers, printed and parsed back); NaN equals NaN (a histogram _sum
// absent from an excerpt).
#ifndef TWINSCALE_TESTS_UTIL_OBSERVATION_COMPARE_H_
#define TWINSCALE_TESTS_UTIL_OBSERVATION_COMPARE_H_

#include <cmath>
#include <optional>
#include <string>

#include "controller/metrics/vllm_observation.h"
#include "gtest/gtest.h"

namespace twinscale::testutil {

inline bool SameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

inline void ExpectSameValue(const std::optional<double>& got, const std::optional<double>& want,
                            const std::string& what) {
  ASSERT_EQ(got.has_value(), want.has_value()) << what;
  if (want.has_value()) {
    EXPECT_TRUE(SameNumber(*got, *want)) << what << ": " << *got << " vs " << *want;
  }
}

inline void ExpectSameHistogram(const std::optional<metrics::CumulativeHistogram>& got,
                                const std::optional<metrics::CumulativeHistogram>& want,
                                const std::string& what) {
  ASSERT_EQ(got.has_value(), want.has_value()) << what;
  if (!want.has_value()) return;
  EXPECT_EQ(got->upper_bounds, want->upper_bounds) << what;
  EXPECT_EQ(got->cumulative, want->cumulative) << what;
  EXPECT_TRUE(SameNumber(got->count, want->count)) << what;
  EXPECT_TRUE(SameNumber(got->sum, want->sum)) << what << ": " << got->sum << " vs " << want->sum;
}

inline void ExpectSameObservation(const metrics::PodObservation& got,
                                  const metrics::PodObservation& want) {
  ASSERT_EQ(got.engines.size(), want.engines.size());
  for (size_t i = 0; i < want.engines.size(); ++i) {
    const metrics::EngineObservation& g = got.engines[i];
    const metrics::EngineObservation& w = want.engines[i];
    const std::string e = "engine \"" + w.engine + "\" model \"" + w.model_name + "\": ";
    EXPECT_EQ(g.engine, w.engine);
    EXPECT_EQ(g.model_name, w.model_name);
    ExpectSameValue(g.running, w.running, e + "running");
    ExpectSameValue(g.waiting, w.waiting, e + "waiting");
    ExpectSameValue(g.kv_cache_usage, w.kv_cache_usage, e + "kv_cache_usage");
    ExpectSameValue(g.prompt_tokens_total, w.prompt_tokens_total, e + "prompt_tokens_total");
    ExpectSameValue(g.generation_tokens_total, w.generation_tokens_total,
                    e + "generation_tokens_total");
    ExpectSameValue(g.requests_finished_total, w.requests_finished_total,
                    e + "requests_finished_total");
    ExpectSameValue(g.preemptions_total, w.preemptions_total, e + "preemptions_total");
    ExpectSameValue(g.prefix_cache_queries_total, w.prefix_cache_queries_total,
                    e + "prefix_cache_queries_total");
    ExpectSameValue(g.prefix_cache_hits_total, w.prefix_cache_hits_total,
                    e + "prefix_cache_hits_total");
    ExpectSameHistogram(g.ttft, w.ttft, e + "ttft");
    ExpectSameHistogram(g.itl, w.itl, e + "itl");
    ExpectSameHistogram(g.e2e, w.e2e, e + "e2e");
    ExpectSameHistogram(g.queue_time, w.queue_time, e + "queue_time");
    ExpectSameHistogram(g.prefill_time, w.prefill_time, e + "prefill_time");
    ExpectSameHistogram(g.decode_time, w.decode_time, e + "decode_time");
    ExpectSameHistogram(g.prompt_tokens, w.prompt_tokens, e + "prompt_tokens");
    ExpectSameHistogram(g.generation_tokens, w.generation_tokens, e + "generation_tokens");
    EXPECT_EQ(g.num_gpu_blocks, w.num_gpu_blocks) << e;
    EXPECT_EQ(g.block_size, w.block_size) << e;
  }
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_OBSERVATION_COMPARE_H_
