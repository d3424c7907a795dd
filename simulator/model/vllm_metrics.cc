// vLLM's per-engine Prometheus metrics for the twin. See vllm_metrics.h for what is emitted and
// why it matches vLLM (vllm/v1/metrics/loggers.py) and prometheus_client (exposition.py, utils.py).
#include "simulator/model/vllm_metrics.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace twinscale::sim {
namespace {

struct HistogramInfo {
  VllmHistogram which;
  std::string_view name;
  std::string_view help;
};

// vLLM's documentation strings, verbatim (typos and all: scrapers and dashboards match on names,
// humans read these).
constexpr std::array<HistogramInfo, kNumVllmHistograms> kHistograms = {{
    {VllmHistogram::kRequestPromptTokens, "vllm:request_prompt_tokens",
     "Number of prefill tokens processed."},
    {VllmHistogram::kRequestGenerationTokens, "vllm:request_generation_tokens",
     "Number of generation tokens processed."},
    {VllmHistogram::kTimeToFirstToken, "vllm:time_to_first_token_seconds",
     "Histogram of time to first token in seconds."},
    {VllmHistogram::kInterTokenLatency, "vllm:inter_token_latency_seconds",
     "Histogram of inter-token latency in seconds."},
    {VllmHistogram::kRequestTimePerOutputToken, "vllm:request_time_per_output_token_seconds",
     "Histogram of time_per_output_token_seconds per request."},
    {VllmHistogram::kE2eRequestLatency, "vllm:e2e_request_latency_seconds",
     "Histogram of e2e request latency in seconds."},
    {VllmHistogram::kRequestQueueTime, "vllm:request_queue_time_seconds",
     "Histogram of time spent in WAITING phase for request."},
    {VllmHistogram::kRequestInferenceTime, "vllm:request_inference_time_seconds",
     "Histogram of time spent in RUNNING phase for request."},
    {VllmHistogram::kRequestPrefillTime, "vllm:request_prefill_time_seconds",
     "Histogram of time spent in PREFILL phase for request."},
    {VllmHistogram::kRequestDecodeTime, "vllm:request_decode_time_seconds",
     "Histogram of time spent in DECODE phase for request."},
}};

// FinishReason order in vLLM (STOP, LENGTH, ABORT) and its str() values.
constexpr std::array<std::string_view, 3> kFinishReasons = {"stop", "length", "abort"};

// Label values as prometheus_client escapes them: backslash, newline, double quote.
void AppendEscapedLabelValue(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
}

std::string Label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  AppendEscapedLabelValue(out, value);
  out += '"';
  return out;
}

void AppendHeader(std::string& out, std::string_view name, std::string_view help,
                  std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;  // constants without backslashes or newlines: nothing to escape
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

}  // namespace

std::vector<double> VllmOneTwoFiveBuckets(int64_t max_value) {
  std::vector<double> out;
  for (int64_t power = 1; power <= max_value; power *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * power > max_value) return out;
      out.push_back(static_cast<double>(m * power));
    }
    if (power > max_value / 10) break;  // the next decade would overflow or exceed anyway
  }
  return out;
}

std::string PythonFloatRepr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, as Python's repr picks them (both are "shortest, then
  // closest"); only the layout differs.
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(end - buf));  // "-d.ddde-XX"
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += exponent < 0 ? '-' : '+';
    const int abs_exp = std::abs(exponent);
    if (abs_exp < 10) out += '0';
    AppendInt(out, abs_exp);
    return out;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out += digits;
    return out;
  }
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    out += digits;
    out.append(int_digits - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, int_digits);
    out += '.';
    out.append(digits, int_digits);
  }
  return out;
}

void AppendPrometheusClientFloat(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  const std::string s = PythonFloatRepr(v);
  const size_t dot = s.find('.');
  // floatToGoString: "Go switches to exponents sooner than Python" (positive values only).
  if (v > 0 && dot != std::string::npos && dot > 6) {
    std::string mantissa;
    mantissa += s[0];
    mantissa += '.';
    mantissa.append(s, 1, dot - 1);
    mantissa.append(s, dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) {
      mantissa.pop_back();  // Python's rstrip('0.')
    }
    out += mantissa;
    out += "e+0";
    AppendInt(out, static_cast<int64_t>(dot - 1));
    return;
  }
  out += s;
}

std::string FormatPrometheusClientFloat(double v) {
  std::string out;
  AppendPrometheusClientFloat(out, v);
  return out;
}

void VllmMetrics::Histogram::Init(std::span<const double> edges) {
  upper_bounds.assign(edges.begin(), edges.end());
  le_text.clear();
  counts.assign(upper_bounds.size() + 1, 0);
  sum = 0;
  count = 0;
}

const std::vector<std::string>& VllmMetrics::Histogram::LeText() const {
  if (le_text.size() != upper_bounds.size() + 1) {
    le_text.clear();
    for (double e : upper_bounds) le_text.push_back(FormatPrometheusClientFloat(e));
    le_text.push_back("+Inf");
  }
  return le_text;
}

void VllmMetrics::Histogram::Observe(double value, int64_t n) {
  if (std::isnan(value) || n <= 0) return;
  // The first edge >= value: prometheus_client's `if amount <= bound` scan, as a binary search.
  const auto it = std::lower_bound(upper_bounds.begin(), upper_bounds.end(), value);
  counts[static_cast<size_t>(it - upper_bounds.begin())] += n;
  sum += n == 1 ? value : value * static_cast<double>(n);
  count += n;
}

VllmMetrics::VllmMetrics(VllmMetricsOptions options)
    : options_(std::move(options)),
      engine_label_(Label("engine", options_.engine)),
      model_label_(Label("model_name", options_.model_name)) {
  const std::vector<double> tokens = VllmOneTwoFiveBuckets(options_.max_model_len);
  for (const HistogramInfo& info : kHistograms) {
    Histogram& h = hist(info.which);
    switch (info.which) {
      case VllmHistogram::kRequestPromptTokens:
      case VllmHistogram::kRequestGenerationTokens:
        h.Init(tokens);
        break;
      case VllmHistogram::kTimeToFirstToken:
        h.Init(kVllmTtftBuckets);
        break;
      case VllmHistogram::kInterTokenLatency:
      case VllmHistogram::kRequestTimePerOutputToken:
        h.Init(kVllmTokenLatencyBuckets);
        break;
      case VllmHistogram::kE2eRequestLatency:
      case VllmHistogram::kRequestQueueTime:
      case VllmHistogram::kRequestInferenceTime:
      case VllmHistogram::kRequestPrefillTime:
      case VllmHistogram::kRequestDecodeTime:
        h.Init(kVllmRequestLatencyBuckets);
        break;
    }
  }
}

void VllmMetrics::SetScheduler(int64_t running, int64_t waiting, double kv_cache_usage) {
  running_ = running;
  waiting_ = waiting;
  kv_cache_usage_ = kv_cache_usage;
}

void VllmMetrics::AddPromptTokens(int64_t n) {
  assert(n >= 0);
  if (n > 0) prompt_tokens_ += n;
}

void VllmMetrics::AddGenerationTokens(int64_t n) {
  assert(n >= 0);
  if (n > 0) generation_tokens_ += n;
}

void VllmMetrics::AddPreemptions(int64_t n) {
  assert(n >= 0);
  if (n > 0) preemptions_ += n;
}

void VllmMetrics::AddPrefixCache(int64_t queried_tokens, int64_t hit_tokens) {
  assert(queried_tokens >= 0 && hit_tokens >= 0);
  if (queried_tokens > 0) prefix_cache_queries_ += queried_tokens;
  if (hit_tokens > 0) prefix_cache_hits_ += hit_tokens;
}

void VllmMetrics::ObserveTtft(double seconds) {
  hist(VllmHistogram::kTimeToFirstToken).Observe(seconds, 1);
}

void VllmMetrics::ObserveInterTokenLatency(double seconds, int64_t count) {
  hist(VllmHistogram::kInterTokenLatency).Observe(seconds, count);
}

void VllmMetrics::ObserveFinished(const Finished& f) {
  const int reason = static_cast<int>(f.reason);
  if (reason >= 0 && reason < 3) ++request_success_[reason];
  // The order of vLLM's record(): e2e, queue, prefill, inference, decode, lengths, mean TPOT.
  hist(VllmHistogram::kE2eRequestLatency).Observe(f.e2e, 1);
  hist(VllmHistogram::kRequestQueueTime).Observe(f.queue, 1);
  hist(VllmHistogram::kRequestPrefillTime).Observe(f.prefill, 1);
  hist(VllmHistogram::kRequestInferenceTime).Observe(f.inference, 1);
  hist(VllmHistogram::kRequestDecodeTime).Observe(f.decode, 1);
  hist(VllmHistogram::kRequestPromptTokens).Observe(static_cast<double>(f.prompt_tokens), 1);
  hist(VllmHistogram::kRequestGenerationTokens)
      .Observe(static_cast<double>(f.generation_tokens), 1);
  hist(VllmHistogram::kRequestTimePerOutputToken).Observe(f.time_per_output_token, 1);
}

VllmHistogramView VllmMetrics::histogram(VllmHistogram which) const {
  const Histogram& h = histograms_[static_cast<int>(which)];
  return VllmHistogramView{h.upper_bounds, h.counts, h.sum, h.count};
}

std::string VllmMetrics::Render() const {
  std::string out;
  RenderTo(out);
  return out;
}

void VllmMetrics::RenderTo(std::string& out) const {
  const VllmMetrics* self = this;
  RenderEngines(std::span<const VllmMetrics* const>(&self, 1), out);
}

std::string RenderPod(const std::vector<const VllmMetrics*>& engines) {
  std::vector<const VllmMetrics*> present;
  for (const VllmMetrics* m : engines) {
    if (m != nullptr) present.push_back(m);
  }
  std::string out;
  VllmMetrics::RenderEngines(present, out);
  return out;
}

void VllmMetrics::RenderEngines(std::span<const VllmMetrics* const> engines, std::string& out) {
  if (engines.empty()) return;
  out.reserve(out.size() + engines.size() * 32768);

  // One sample line with the usual labels: name{engine="..",<extra,>model_name=".."} value.
  auto sample = [&out](std::string_view name, const VllmMetrics& m, std::string_view extra,
                       double value) {
    out += name;
    out += '{';
    out += m.engine_label_;
    out += ',';
    if (!extra.empty()) {
      out += extra;
      out += ',';
    }
    out += m.model_label_;
    out += "} ";
    AppendPrometheusClientFloat(out, value);
    out += '\n';
  };
  auto gauge = [&](std::string_view name, std::string_view help, auto value_of) {
    AppendHeader(out, name, help, "gauge");
    for (const VllmMetrics* m : engines) sample(name, *m, {}, value_of(*m));
  };
  // A prometheus_client counter: the <base>_total family, then the <base>_created gauge family.
  auto counter = [&](std::string_view base, std::string_view help, auto value_of) {
    const std::string total = std::string(base) + "_total";
    const std::string created = std::string(base) + "_created";
    AppendHeader(out, total, help, "counter");
    for (const VllmMetrics* m : engines) {
      sample(total, *m, {}, static_cast<double>(value_of(*m)));
    }
    AppendHeader(out, created, help, "gauge");
    for (const VllmMetrics* m : engines) sample(created, *m, {}, m->options_.created_unix_seconds);
  };

  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        [](const VllmMetrics& m) { return static_cast<double>(m.running_); });
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        [](const VllmMetrics& m) { return static_cast<double>(m.waiting_); });
  // Deprecated in vLLM 0.9 (renamed vllm:kv_cache_usage_perc), still emitted by 0.10. The
  // missing space before DEPRECATED is vLLM's.
  gauge("vllm:gpu_cache_usage_perc",
        "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc "
        "instead.",
        [](const VllmMetrics& m) { return m.kv_cache_usage_; });
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        [](const VllmMetrics& m) { return m.kv_cache_usage_; });
  counter("vllm:prefix_cache_queries",
          "Prefix cache queries, in terms of number of queried tokens.",
          [](const VllmMetrics& m) { return m.prefix_cache_queries_; });
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          [](const VllmMetrics& m) { return m.prefix_cache_hits_; });
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
          [](const VllmMetrics& m) { return m.preemptions_; });
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
          [](const VllmMetrics& m) { return m.prompt_tokens_; });
  counter("vllm:generation_tokens", "Number of generation tokens processed.",
          [](const VllmMetrics& m) { return m.generation_tokens_; });

  {  // vllm:request_success: children created reason-major, engine-minor.
    constexpr std::string_view kHelp = "Count of successfully processed requests.";
    AppendHeader(out, "vllm:request_success_total", kHelp, "counter");
    for (size_t r = 0; r < kFinishReasons.size(); ++r) {
      const std::string reason = Label("finished_reason", kFinishReasons[r]);
      for (const VllmMetrics* m : engines) {
        sample("vllm:request_success_total", *m, reason,
               static_cast<double>(m->request_success_[r]));
      }
    }
    AppendHeader(out, "vllm:request_success_created", kHelp, "gauge");
    for (size_t r = 0; r < kFinishReasons.size(); ++r) {
      const std::string reason = Label("finished_reason", kFinishReasons[r]);
      for (const VllmMetrics* m : engines) {
        sample("vllm:request_success_created", *m, reason, m->options_.created_unix_seconds);
      }
    }
  }

  for (const HistogramInfo& info : kHistograms) {
    const std::string bucket = std::string(info.name) + "_bucket";
    const std::string count = std::string(info.name) + "_count";
    const std::string sum = std::string(info.name) + "_sum";
    const std::string created = std::string(info.name) + "_created";
    AppendHeader(out, info.name, info.help, "histogram");
    std::string le;
    for (const VllmMetrics* m : engines) {
      const Histogram& h = m->histograms_[static_cast<int>(info.which)];
      const std::vector<std::string>& le_text = h.LeText();
      int64_t cumulative = 0;
      for (size_t i = 0; i < h.counts.size(); ++i) {
        cumulative += h.counts[i];
        le = "le=\"";
        le += le_text[i];
        le += '"';
        sample(bucket, *m, le, static_cast<double>(cumulative));
      }
      sample(count, *m, {}, static_cast<double>(h.count));
      sample(sum, *m, {}, h.sum);
    }
    AppendHeader(out, created, info.help, "gauge");
    for (const VllmMetrics* m : engines) sample(created, *m, {}, m->options_.created_unix_seconds);
  }

  // vllm:cache_config_info: CacheConfig.metrics_info(), every value str()'d, plus engine; no
  // model_name. prometheus_client sorts the labels. The subset of CacheConfig fields is the one
  // that vLLM releases of 0.10-0.11 share and the twin can fill; readers look labels up by name.
  AppendHeader(out, "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge");
  for (const VllmMetrics* m : engines) {
    const VllmMetricsOptions& o = m->options_;
    const std::string blocks =
        o.num_gpu_blocks > 0 ? std::to_string(o.num_gpu_blocks) : std::string("None");
    const std::pair<std::string_view, std::string> labels[] = {
        {"block_size", std::to_string(o.block_size)},
        {"cache_dtype", o.cache_dtype},
        {"calculate_kv_scales", "False"},
        {"cpu_offload_gb", "0"},
        {"enable_prefix_caching", o.enable_prefix_caching ? "True" : "False"},
        {"engine", o.engine},
        {"gpu_memory_utilization", PythonFloatRepr(o.gpu_memory_utilization)},
        {"is_attention_free", "False"},
        {"num_cpu_blocks", "None"},
        {"num_gpu_blocks", blocks},
        {"num_gpu_blocks_override", "None"},
        {"prefix_caching_hash_algo", "sha256"},
        {"sliding_window", "None"},
    };
    out += "vllm:cache_config_info{";
    bool first = true;
    for (const auto& [name, value] : labels) {
      if (!first) out += ',';
      first = false;
      out += name;
      out += "=\"";
      AppendEscapedLabelValue(out, value);
      out += '"';
    }
    out += "} 1.0\n";
  }
}

}  // namespace twinscale::sim
