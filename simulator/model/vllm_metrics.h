// The per-replica Prometheus text a vLLM (V1 engine) server exports on /metrics, kept by the twin.
//
// A simulated replica owns one VllmMetrics per engine and feeds it as its engine steps: scheduler
// gauges, token and preemption counters, latency and length histograms. Render() then produces the
// exposition text (format 0.0.4) byte for byte as vLLM's PrometheusStatLogger and prometheus_client
// would: the same family names, HELP text, types, bucket edges, family order, sample order, label
// order (labels sorted by name: engine, [finished_reason | le], model_name), counter families named
// `<name>_total` each followed by a `<name>_created` gauge family, histogram samples as buckets,
// _count, _sum and then a `<name>_created` gauge family, and numbers formatted by
// prometheus_client's floatToGoString (Python's repr of the float, "1.0", "9.75010481363281e-06",
// "1.7e+09"). The controller can therefore scrape a simulated fleet with the same code it scrapes a
// real one.
//
// Families emitted (vLLM 0.11 names; the 0.10 gauge vllm:gpu_cache_usage_perc is kept for older
// scrapers, with the same value as vllm:kv_cache_usage_perc):
//   gauges      vllm:num_requests_running, vllm:num_requests_waiting, vllm:gpu_cache_usage_perc,
//               vllm:kv_cache_usage_perc, vllm:cache_config_info (= 1, the cache config in labels)
//   counters    vllm:prefix_cache_queries, vllm:prefix_cache_hits, vllm:num_preemptions,
//               vllm:prompt_tokens, vllm:generation_tokens, vllm:request_success{finished_reason}
//   histograms  vllm:request_prompt_tokens, vllm:request_generation_tokens (1-2-5 ladders up to
//               max_model_len), vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
//               vllm:request_time_per_output_token_seconds, vllm:e2e_request_latency_seconds,
//               vllm:request_queue_time_seconds, vllm:request_inference_time_seconds,
//               vllm:request_prefill_time_seconds, vllm:request_decode_time_seconds
// Not emitted: vLLM's families the twin has no data for (request parameter histograms, iteration
// tokens, LoRA, speculative decoding, the HTTP server's and the Python process's own metrics).
//
// Cost: every update is O(1) or a binary search over at most 22 bucket edges, and allocates
// nothing, so the replica engine can call it on its hot path. Rendering allocates (the output).
// Thread-safety: none; a VllmMetrics belongs to one replica in one Simulation. Rendering is
// deterministic (no clocks, no hash maps): the same updates give the same bytes.
#ifndef TWINSCALE_SIMULATOR_MODEL_VLLM_METRICS_H_
#define TWINSCALE_SIMULATOR_MODEL_VLLM_METRICS_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace twinscale::sim {

// Upper bounds (the finite `le` edges; +Inf is implied) of vLLM's histograms.
// vllm:time_to_first_token_seconds.
inline constexpr std::array<double, 22> kVllmTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// vllm:inter_token_latency_seconds and vllm:request_time_per_output_token_seconds.
inline constexpr std::array<double, 19> kVllmTokenLatencyBuckets = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
// vllm:e2e_request_latency_seconds and the queue, inference, prefill and decode time histograms.
inline constexpr std::array<double, 21> kVllmRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// vLLM's build_1_2_5_buckets(max_value): 1, 2, 5, 10, 20, 50, ... while <= max_value (empty when
// max_value < 1). The edges of vllm:request_prompt_tokens and vllm:request_generation_tokens.
std::vector<double> VllmOneTwoFiveBuckets(int64_t max_value);

// Python's repr() of a double: the shortest digits that round-trip, fixed notation for decimal
// exponents -4..15 (with ".0" on integral values), else "d.ddde+XX". repr(0.9) == "0.9",
// repr(1e16) == "1e+16", repr(1e-05) == "1e-05"; "nan", "inf", "-inf".
std::string PythonFloatRepr(double v);

// prometheus_client's floatToGoString: "+Inf", "-Inf", "NaN"; otherwise PythonFloatRepr, except
// that a positive value with 7 or more integer digits is written as a mantissa and "e+0<exp>"
// ("1.7537953269352946e+09", "1e+06"). For exponents of 10 and more this keeps the library's
// quirk of a zero before the exponent ("1.0931263819e+010"), which parsers accept.
std::string FormatPrometheusClientFloat(double v);
void AppendPrometheusClientFloat(std::string& out, double v);

struct VllmMetricsOptions {
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";  // served model name label
  std::string engine = "0";    // the engine label (data-parallel rank within the pod)
  int64_t num_gpu_blocks = 0;  // KV blocks; 0 prints "None", as before the profiling run
  int32_t block_size = 16;     // tokens per KV block
  double gpu_memory_utilization = 0.9;
  bool enable_prefix_caching = true;
  std::string cache_dtype = "auto";
  int32_t max_model_len = 131072;       // top of the 1-2-5 ladder of the token-count histograms
  double created_unix_seconds = 1.7e9;  // value of every *_created gauge
};

// The histograms, in the order vLLM registers (and prints) them.
enum class VllmHistogram {
  kRequestPromptTokens,
  kRequestGenerationTokens,
  kTimeToFirstToken,
  kInterTokenLatency,
  kRequestTimePerOutputToken,
  kE2eRequestLatency,
  kRequestQueueTime,
  kRequestInferenceTime,
  kRequestPrefillTime,
  kRequestDecodeTime,
};
inline constexpr int kNumVllmHistograms = 10;

// A read-only view of one histogram's state; valid until the next update of its VllmMetrics.
struct VllmHistogramView {
  std::span<const double> upper_bounds;    // finite edges, ascending
  std::span<const int64_t> bucket_counts;  // per bucket, NOT cumulative; size upper_bounds + 1,
                                           // the last one being (last edge, +Inf)
  double sum = 0;
  int64_t count = 0;
};

class VllmMetrics {
 public:
  explicit VllmMetrics(VllmMetricsOptions options);

  // Scheduler state after an engine step: requests running (in the batch, prefill or decode) and
  // waiting, and the fraction of KV blocks in use (0..1). vLLM sets these every step.
  void SetScheduler(int64_t running, int64_t waiting, double kv_cache_usage);

  // Counters. Arguments must be >= 0 (counters only go up; a negative one is ignored).
  void AddPromptTokens(int64_t n);      // prompt tokens computed this step (prefill chunks)
  void AddGenerationTokens(int64_t n);  // output tokens produced this step
  void AddPreemptions(int64_t n);
  // Prefix cache lookups, in tokens: tokens looked up and tokens found cached.
  void AddPrefixCache(int64_t queried_tokens, int64_t hit_tokens);

  // Latency observations in seconds. A value equal to an edge falls into that edge's bucket
  // (le is inclusive); NaN observations are ignored.
  void ObserveTtft(double seconds);  // once per request, when its first token is produced
  // `count` observations of the same inter-token latency: once per engine step for the `count`
  // decoding requests that all waited `seconds` for this token. _sum grows by seconds * count.
  void ObserveInterTokenLatency(double seconds, int64_t count);

  // A request left the engine. Observes e2e, queue, inference (= prefill + decode), prefill,
  // decode and mean time per output token, the prompt and generation token counts, and counts the
  // request under its finished_reason.
  struct Finished {
    double e2e = 0;
    double queue = 0;
    double inference = 0;
    double prefill = 0;
    double decode = 0;
    double time_per_output_token = 0;
    int64_t prompt_tokens = 0;
    int64_t generation_tokens = 0;
    enum class Reason { kStop, kLength, kAbort } reason = Reason::kStop;
  };
  void ObserveFinished(const Finished& f);

  // The exposition text of this engine alone (a complete, valid page).
  std::string Render() const;
  // Appends the same text to `out`. Two engines' RenderTo output concatenated is NOT a valid page
  // (each family's HELP/TYPE would appear twice): use RenderPod for a multi-engine pod.
  void RenderTo(std::string& out) const;

  // Read-only accessors, for tests and the fleet's own statistics.
  const VllmMetricsOptions& options() const { return options_; }
  int64_t running() const { return running_; }
  int64_t waiting() const { return waiting_; }
  double kv_cache_usage() const { return kv_cache_usage_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generation_tokens() const { return generation_tokens_; }
  int64_t preemptions() const { return preemptions_; }
  int64_t prefix_cache_queries() const { return prefix_cache_queries_; }
  int64_t prefix_cache_hits() const { return prefix_cache_hits_; }
  int64_t requests_finished(Finished::Reason reason) const {
    return request_success_[static_cast<int>(reason)];
  }
  VllmHistogramView histogram(VllmHistogram which) const;

 private:
  struct Histogram {
    std::vector<double> upper_bounds;  // finite edges
    // The `le` label value of each edge, then "+Inf": formatted at the first render (the twin's
    // replicas, which are never rendered, are built by the thousand per decision).
    mutable std::vector<std::string> le_text;
    std::vector<int64_t> counts;  // per bucket, size upper_bounds + 1
    double sum = 0;
    int64_t count = 0;

    void Init(std::span<const double> edges);
    void Observe(double value, int64_t n);
    const std::vector<std::string>& LeText() const;
  };

  friend std::string RenderPod(const std::vector<const VllmMetrics*>& engines);
  static void RenderEngines(std::span<const VllmMetrics* const> engines, std::string& out);

  Histogram& hist(VllmHistogram which) { return histograms_[static_cast<int>(which)]; }

  VllmMetricsOptions options_;
  // `engine="0"` and `model_name="..."` (escaped), rendered once.
  std::string engine_label_;
  std::string model_label_;

  int64_t running_ = 0;
  int64_t waiting_ = 0;
  double kv_cache_usage_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t preemptions_ = 0;
  int64_t prefix_cache_queries_ = 0;
  int64_t prefix_cache_hits_ = 0;
  std::array<int64_t, 3> request_success_ = {0, 0, 0};  // by Finished::Reason
  std::array<Histogram, kNumVllmHistograms> histograms_;
};

// Renders several engines of one pod as one valid exposition, as a multi-engine (data-parallel)
// vLLM server does: each family's HELP/TYPE once, then that family's samples for every engine in
// the order given (for vllm:request_success_total, reason-major then engine, as vLLM creates the
// children). Null entries are skipped; no engines gives "".
std::string RenderPod(const std::vector<const VllmMetrics*>& engines);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_VLLM_METRICS_H_
