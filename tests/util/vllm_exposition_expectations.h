// The expectations any vLLM /metrics page must meet, applied alike to the real vLLM text in
// tests/data/fixtures/ and to the twin's own VllmMetrics output (tests/integration/
// vllm_exposition_test.cc), so "the twin speaks vLLM's format" is checked by the same code that
// checks vLLM itself. Header-only; uses GoogleTest and the controller's parser.
//
// ExpectVllmExposition checks, over every sample whose name starts with "vllm:":
//   - labels: sorted by name (prometheus_client sorts them); `model_name` present and non-empty
//     (except on vllm:cache_config_info, which vLLM labels with the cache config and engine only);
//     `engine` present when the page is from a vLLM with engine labels (0.9 and later);
//   - counters: every family typed counter is named <base>_total and holds only that sample name,
//     with non-negative integral values; every *_created family is a gauge holding Unix times;
//   - histograms (found by their _bucket samples, typed or not, so excerpts count too): per
//     series, `le` printed the way prometheus_client prints floats, edges strictly increasing,
//     counts cumulative (non-decreasing), the +Inf bucket equal to _count when both are present,
//     and the edges a contiguous run of vLLM's edge list for the families it knows (TTFT, the
//     per-token pair, the five request latencies, the 1-2-5 token ladders, request_params_n);
//   - histogram families hold only _bucket, _count and _sum samples (prometheus_client moves
//     _created into a gauge family of its own);
//   - the KV-cache gauges lie in [0, 1] and the request gauges are non-negative integers.
// With `complete` (a whole page rather than an excerpt) it also requires the families the
// controller reads, every histogram series to have all of vLLM's edges, +Inf, _count and _sum,
// and every counter a <base>_created companion with the same label sets.
#ifndef TWINSCALE_TESTS_UTIL_VLLM_EXPOSITION_EXPECTATIONS_H_
#define TWINSCALE_TESTS_UTIL_VLLM_EXPOSITION_EXPECTATIONS_H_

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/metrics/prometheus_text.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"

namespace twinscale::testutil {

struct VllmExpositionExpectations {
  // Every vllm: sample carries an `engine` label (false for text from before vLLM added it).
  bool engine_label = true;
  // The text is a whole page, not an excerpt: see the file comment.
  bool complete = false;
  // With `complete`: the top of the token histograms' 1-2-5 ladder (the server's max_model_len).
  int64_t max_model_len = 0;
};

namespace vllm_expectations_internal {

using metrics::Exposition;
using metrics::MetricFamily;
using metrics::MetricType;
using metrics::Sample;

inline bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
inline bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// An `le` value: "+Inf" or a decimal float.
inline std::optional<double> ParseLe(std::string_view s) {
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// vLLM's finite edges for a histogram family, and whether the list is open-ended (a 1-2-5
// ladder whose top, max_model_len, an excerpt doesn't tell).
struct Reference {
  std::vector<double> edges;
  bool ladder = false;
};

inline std::optional<Reference> ReferenceEdges(std::string_view family, int64_t max_model_len) {
  auto of = [](const auto& arr) { return Reference{std::vector<double>(arr.begin(), arr.end())}; };
  if (family == "vllm:time_to_first_token_seconds") return of(sim::kVllmTtftBuckets);
  if (family == "vllm:inter_token_latency_seconds" ||
      family == "vllm:time_per_output_token_seconds" ||
      family == "vllm:request_time_per_output_token_seconds") {
    return of(sim::kVllmTokenLatencyBuckets);
  }
  if (family == "vllm:e2e_request_latency_seconds" || family == "vllm:request_queue_time_seconds" ||
      family == "vllm:request_inference_time_seconds" ||
      family == "vllm:request_prefill_time_seconds" ||
      family == "vllm:request_decode_time_seconds") {
    return of(sim::kVllmRequestLatencyBuckets);
  }
  if (family == "vllm:request_params_n") return Reference{{1, 2, 5, 10, 20}};
  if (family == "vllm:request_prompt_tokens" || family == "vllm:request_generation_tokens" ||
      family == "vllm:request_max_num_generation_tokens" ||
      family == "vllm:request_params_max_tokens") {
    if (max_model_len > 0) return Reference{sim::VllmOneTwoFiveBuckets(max_model_len)};
    return Reference{sim::VllmOneTwoFiveBuckets(int64_t{1} << 52), /*ladder=*/true};
  }
  return std::nullopt;
}

// The labels of a sample without `le`, as a key for grouping a histogram's series.
inline std::string SeriesKey(const Sample& s) {
  std::string key;
  for (const auto& [k, v] : s.labels) {
    if (k == "le") continue;
    key += k;
    key += '\x1f';
    key += v;
    key += '\x1e';
  }
  return key;
}

struct Bucket {
  std::string le_text;
  double value = 0;
};

struct Series {
  std::vector<Bucket> buckets;
  std::optional<double> count;
  std::optional<double> sum;
};

inline void ExpectHistogramSeries(std::string_view family, std::string_view key,
                                  const Series& series, const VllmExpositionExpectations& want) {
  SCOPED_TRACE(std::string("histogram ") + std::string(family) + " series " + std::string(key));
  std::vector<double> les;
  for (size_t i = 0; i < series.buckets.size(); ++i) {
    const Bucket& b = series.buckets[i];
    const std::optional<double> le = ParseLe(b.le_text);
    if (!le.has_value()) {
      ADD_FAILURE() << "le=\"" << b.le_text << "\" is not a number";
      return;
    }
    EXPECT_EQ(b.le_text, sim::FormatPrometheusClientFloat(*le))
        << "le not printed the way prometheus_client prints floats";
    if (!les.empty()) {
      EXPECT_LT(les.back(), *le) << "le edges must increase";
      EXPECT_LE(series.buckets[i - 1].value, b.value)
          << "buckets must be cumulative, le=" << b.le_text;
    }
    les.push_back(*le);
  }
  const bool has_inf = !les.empty() && std::isinf(les.back());
  if (has_inf && series.count.has_value()) {
    EXPECT_EQ(series.buckets.back().value, *series.count) << "+Inf bucket != _count";
  }
  if (want.complete) {
    EXPECT_TRUE(has_inf) << "no +Inf bucket";
    EXPECT_TRUE(series.count.has_value()) << "no _count";
    EXPECT_TRUE(series.sum.has_value()) << "no _sum";
    if (series.sum.has_value()) {
      EXPECT_GE(*series.sum, 0.0);
    }
  }

  const std::optional<Reference> ref =
      ReferenceEdges(family, want.complete ? want.max_model_len : 0);
  if (!ref.has_value() || les.empty()) return;
  const std::vector<double> finite(les.begin(), les.end() - (has_inf ? 1 : 0));
  if (!finite.empty()) {
    const auto start = std::find(ref->edges.begin(), ref->edges.end(), finite.front());
    if (start == ref->edges.end()) {
      ADD_FAILURE() << "le=" << finite.front() << " is not one of vLLM's edges";
      return;
    }
    const size_t first = static_cast<size_t>(start - ref->edges.begin());
    if (first + finite.size() > ref->edges.size()) {
      ADD_FAILURE() << "more edges than vLLM has";
      return;
    }
    for (size_t i = 0; i < finite.size(); ++i) {
      EXPECT_EQ(finite[i], ref->edges[first + i]) << "edge " << i << " differs from vLLM's list";
    }
    if (has_inf && !ref->ladder) {
      EXPECT_EQ(first + finite.size(), ref->edges.size()) << "+Inf before vLLM's last edge";
    }
    if (want.complete) {
      EXPECT_EQ(first, 0u) << "first edges missing";
      EXPECT_EQ(finite.size(), ref->edges.size()) << "edges missing";
    }
  } else if (want.complete) {
    EXPECT_TRUE(ref->edges.empty()) << "only a +Inf bucket";
  }
}

}  // namespace vllm_expectations_internal

inline void ExpectVllmExposition(const metrics::Exposition& expo,
                                 const VllmExpositionExpectations& want) {
  using namespace vllm_expectations_internal;  // NOLINT: test helper, local scope

  // Histogram series by family, in text order: family -> series key -> series.
  std::map<std::string, std::map<std::string, Series>> histograms;
  auto series_of = [&](std::string_view sample, std::string_view suffix,
                       const Sample& s) -> Series* {
    if (!EndsWith(sample, suffix)) return nullptr;
    const std::string family(sample.substr(0, sample.size() - suffix.size()));
    return &histograms[family][SeriesKey(s)];
  };
  std::map<std::string, const MetricFamily*> by_name;
  for (const MetricFamily& f : expo.families) by_name[f.name] = &f;

  for (const MetricFamily& f : expo.families) {
    if (!StartsWith(f.name, "vllm:")) continue;
    SCOPED_TRACE("family " + f.name);
    if (f.type == MetricType::kCounter) {
      EXPECT_TRUE(EndsWith(f.name, "_total")) << "counter family not named <base>_total";
    }
    if (EndsWith(f.name, "_created")) {
      EXPECT_EQ(f.type, MetricType::kGauge) << "_created samples live in a gauge family";
    }
    for (const Sample& s : f.samples) {
      SCOPED_TRACE("sample " + s.name);
      // Labels in prometheus_client's sorted order.
      for (size_t i = 1; i < s.labels.size(); ++i) {
        EXPECT_LT(s.labels[i - 1].first, s.labels[i].first) << "labels not sorted";
      }
      if (f.name != "vllm:cache_config_info") {
        EXPECT_NE(s.Label("model_name"), "") << "no model_name label";
      }
      if (want.engine_label) {
        EXPECT_TRUE(s.HasLabel("engine")) << "no engine label";
      }

      if (f.type == MetricType::kCounter) {
        EXPECT_EQ(s.name, f.name);
        EXPECT_GE(s.value, 0.0);
        EXPECT_EQ(s.value, std::floor(s.value)) << "vLLM's counters count whole things";
      }
      if (EndsWith(f.name, "_created")) {
        EXPECT_GT(s.value, 1e9) << "a _created value is a Unix time";
        EXPECT_LT(s.value, 1e10) << "a _created value is a Unix time";
      }
      if (f.type == MetricType::kHistogram) {
        EXPECT_TRUE(s.name == f.name + "_bucket" || s.name == f.name + "_count" ||
                    s.name == f.name + "_sum")
            << "unexpected sample in a histogram family";
      }
      if (f.name == "vllm:kv_cache_usage_perc" || f.name == "vllm:gpu_cache_usage_perc") {
        EXPECT_GE(s.value, 0.0);
        EXPECT_LE(s.value, 1.0);
      }
      if (f.name == "vllm:num_requests_running" || f.name == "vllm:num_requests_waiting") {
        EXPECT_GE(s.value, 0.0);
        EXPECT_EQ(s.value, std::floor(s.value));
      }
      if (f.name == "vllm:cache_config_info") {
        EXPECT_EQ(s.value, 1.0);
      }

      // Histogram pieces, typed or not (an excerpt may have lost the TYPE line).
      if (Series* series = series_of(s.name, "_bucket", s)) {
        EXPECT_TRUE(s.HasLabel("le")) << "bucket without le";
        series->buckets.push_back({std::string(s.Label("le")), s.value});
      } else if (f.type != MetricType::kCounter && !EndsWith(f.name, "_created")) {
        if (Series* c = series_of(s.name, "_count", s); c != nullptr && !s.HasLabel("le")) {
          c->count = s.value;
        } else if (Series* sum = series_of(s.name, "_sum", s); sum != nullptr) {
          sum->sum = s.value;
        }
      }
    }
  }
  // _count/_sum entries whose family has no buckets at all aren't histograms (e.g. a summary).
  for (const auto& [family, series_by_key] : histograms) {
    for (const auto& [key, series] : series_by_key) {
      if (series.buckets.empty()) continue;
      ExpectHistogramSeries(family, key, series, want);
    }
  }

  if (!want.complete) return;
  // The families the controller reads (docs/architecture.md "Policy inputs") and the rest of the
  // twin's set.
  const std::vector<std::pair<std::string, MetricType>> required = {
      {"vllm:num_requests_running", MetricType::kGauge},
      {"vllm:num_requests_waiting", MetricType::kGauge},
      {"vllm:kv_cache_usage_perc", MetricType::kGauge},
      {"vllm:gpu_cache_usage_perc", MetricType::kGauge},
      {"vllm:cache_config_info", MetricType::kGauge},
      {"vllm:prompt_tokens_total", MetricType::kCounter},
      {"vllm:generation_tokens_total", MetricType::kCounter},
      {"vllm:request_success_total", MetricType::kCounter},
      {"vllm:num_preemptions_total", MetricType::kCounter},
      {"vllm:prefix_cache_queries_total", MetricType::kCounter},
      {"vllm:prefix_cache_hits_total", MetricType::kCounter},
      {"vllm:time_to_first_token_seconds", MetricType::kHistogram},
      {"vllm:inter_token_latency_seconds", MetricType::kHistogram},
      {"vllm:request_time_per_output_token_seconds", MetricType::kHistogram},
      {"vllm:e2e_request_latency_seconds", MetricType::kHistogram},
      {"vllm:request_queue_time_seconds", MetricType::kHistogram},
      {"vllm:request_inference_time_seconds", MetricType::kHistogram},
      {"vllm:request_prefill_time_seconds", MetricType::kHistogram},
      {"vllm:request_decode_time_seconds", MetricType::kHistogram},
      {"vllm:request_prompt_tokens", MetricType::kHistogram},
      {"vllm:request_generation_tokens", MetricType::kHistogram},
  };
  for (const auto& [name, type] : required) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      ADD_FAILURE() << "missing family " << name;
      continue;
    }
    EXPECT_EQ(it->second->type, type) << name;
    EXPECT_FALSE(it->second->samples.empty()) << name;
    EXPECT_FALSE(it->second->help.empty()) << name << " has no HELP";
  }
  // Every counter and histogram has its _created gauge, with the same label sets.
  for (const MetricFamily& f : expo.families) {
    if (!StartsWith(f.name, "vllm:")) continue;
    std::string base;
    if (f.type == MetricType::kCounter) base = f.name.substr(0, f.name.size() - 6);
    if (f.type == MetricType::kHistogram) base = f.name;
    if (base.empty()) continue;
    auto it = by_name.find(base + "_created");
    if (it == by_name.end()) {
      ADD_FAILURE() << "no " << base << "_created for " << f.name;
      continue;
    }
    std::map<std::string, int> want_keys;
    for (const Sample& s : f.samples) {
      if (!s.HasLabel("le") && !EndsWith(s.name, "_sum")) want_keys[SeriesKey(s)] = 1;
    }
    std::map<std::string, int> got_keys;
    for (const Sample& s : it->second->samples) got_keys[SeriesKey(s)] = 1;
    EXPECT_EQ(got_keys, want_keys) << base << "_created label sets differ from " << f.name;
  }
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_VLLM_EXPOSITION_EXPECTATIONS_H_
