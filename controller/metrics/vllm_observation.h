// From a parsed vLLM /metrics page to the typed values twinscale uses (docs/architecture.md
// "Policy inputs").
//
// ExtractVllmObservation reads an Exposition (prometheus_text.h) of one pod and returns, per vLLM
// engine, the scheduler gauges, the token / request / preemption / prefix-cache counters, the
// latency and length histograms and the KV cache configuration. It reads raw values of ONE scrape;
// differences between scrapes (rates, window histograms, counter resets) are histogram_window.h's.
//
// What it reads (vLLM 0.9-0.11 names, docs/reference.md "vLLM metrics"; each by SAMPLE name, so the
// same code reads prometheus_client's layout, an OpenMetrics-style "# TYPE x counter" family, and
// excerpts without TYPE lines):
//   gauges      vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc
//               (else the older vllm:gpu_cache_usage_perc, which vLLM 0.10 still emits beside it)
//   counters    vllm:prompt_tokens_total, vllm:generation_tokens_total, vllm:num_preemptions_total,
//               vllm:request_success_total (summed over finished_reason),
//               vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total (in tokens; else
//               the deprecated vllm:gpu_prefix_cache_queries_total / _hits_total)
//   histograms  vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds (else the older
//               vllm:time_per_output_token_seconds), vllm:e2e_request_latency_seconds,
//               vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds,
//               vllm:request_decode_time_seconds, vllm:request_prompt_tokens,
//               vllm:request_generation_tokens (each from its _bucket, _count and _sum samples)
//   info        vllm:cache_config_info: labels num_gpu_blocks and block_size ("None" = unknown)
// Everything else (the *_created gauges, request parameter histograms, the HTTP server's and the
// process's own metrics) is ignored.
//
// Engines. A data-parallel pod runs several engines, told apart by the `engine` label; servers
// from before that label give "" as the engine. An engine's values are those of the samples with
// its `engine` and `model_name` labels (one EngineObservation per pair: a page serving two models
// under one engine label gives two). vllm:cache_config_info has no model_name: it applies to every
// observation of its engine. An observation exists for an engine when any vllm:* sample of it
// passes the model filter, whether or not twinscale reads that family.
//
// Aggregation inside one engine: counters are summed over their other labels (vLLM's only one is
// finished_reason), as are histogram series with extra labels (with identical edges); a gauge must
// have exactly one series per engine.
//
// Histogram completion. A series' count is its _count sample, else its +Inf bucket; the +Inf
// bucket is its own sample, else the count (an excerpt may elide either, never both). Buckets are
// sorted by `le`. sum is NaN without a _sum sample.
//
// Errors (all name the family and the engine):
//   FailedPrecondition  the exposition has no vllm:* family at all: "not a vLLM server" (a pod on
//                       the wrong port, a sidecar's page); the caller treats the pod as unscraped.
//   InvalidArgument     present but unusable data: a gauge or counter value that is NaN, infinite
//                       or negative; two series of one gauge for one engine; the same counter
//                       label set twice; a bucket without `le`, or whose `le` is not a number, or
//                       repeated; buckets that are not cumulative (a count lower than the bucket
//                       below it); +Inf bucket != _count; a series with neither a +Inf bucket nor
//                       _count; series of one engine with different edges; a malformed
//                       num_gpu_blocks / block_size label (not an integer, not "None").
// Missing families are never errors: their fields stay empty. A model filter matching nothing
// gives an OK observation with no engines.
//
// Thread-safety: a pure function of its arguments; results are plain values.
#ifndef TWINSCALE_CONTROLLER_METRICS_VLLM_OBSERVATION_H_
#define TWINSCALE_CONTROLLER_METRICS_VLLM_OBSERVATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/metrics/cumulative_histogram.h"
#include "controller/metrics/prometheus_text.h"

namespace twinscale::metrics {

// One vLLM engine's values in one scrape (a pod may run several engines: label `engine`).
struct EngineObservation {
  std::string engine;      // the `engine` label; "" for servers from before it
  std::string model_name;  // the `model_name` label; "" if only cache_config_info named the engine

  // Gauges. kv_cache_usage is a fraction (0..1), as vLLM defines it; passed on as scraped.
  std::optional<double> running, waiting, kv_cache_usage;

  // Counters: cumulative since the server started (see histogram_window.h for increases).
  std::optional<double> prompt_tokens_total, generation_tokens_total;
  std::optional<double> requests_finished_total;  // vllm:request_success_total, all reasons
  std::optional<double> preemptions_total;
  std::optional<double> prefix_cache_queries_total, prefix_cache_hits_total;  // in tokens

  // Histograms, cumulative since the server started. itl is inter-token latency.
  std::optional<CumulativeHistogram> ttft, itl, e2e, queue_time, prefill_time, decode_time;
  std::optional<CumulativeHistogram> prompt_tokens, generation_tokens;  // per-request lengths

  // vllm:cache_config_info; absent when the label is missing or "None" (before the profiling run).
  std::optional<int64_t> num_gpu_blocks, block_size;
};

// One pod's scrape: its engines, sorted by engine label (numerically when both labels are
// integers, so "2" before "10"; integers before other labels), then by model name.
struct PodObservation {
  std::vector<EngineObservation> engines;
};

// Extracts what twinscale uses from one pod's exposition; see the file comment for the rules and
// error codes. With a non-empty `model_name_filter`, only samples whose model_name equals it are
// read (cache_config_info, which has no model_name, attaches to the engines kept).
absl::StatusOr<PodObservation> ExtractVllmObservation(const Exposition& exposition,
                                                      std::string_view model_name_filter = "");

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_VLLM_OBSERVATION_H_
