// Extraction of vLLM's families from a parsed exposition; see vllm_observation.h for the rules.
//
// One pass over the samples dispatches each vllm:* sample by name to an accumulator of its
// (engine, model_name) pair; a second pass turns the accumulated bucket samples into validated
// CumulativeHistograms and attaches vllm:cache_config_info. Everything is keyed by ordered maps,
// so the result never depends on hash order.
#include "controller/metrics/vllm_observation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/histogram_window.h"

namespace twinscale::metrics {
namespace {

constexpr std::string_view kPrefix = "vllm:";
constexpr std::string_view kCacheConfigInfo = "vllm:cache_config_info";
// Label values quoted in errors are cut to this many bytes: they are outside input.
constexpr size_t kMaxQuoted = 48;

// This abseil build has its own absl::string_view, distinct from std::string_view.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Quote(std::string_view s) {
  if (s.size() <= kMaxQuoted) return absl::StrCat("\"", absl::CHexEscape(Av(s)), "\"");
  return absl::StrCat("\"", absl::CHexEscape(Av(s.substr(0, kMaxQuoted))), "...\"");
}

// The scalar values read, gauges and counters, including the older names kept as fallbacks.
enum Scalar : int {
  kRunning,
  kWaiting,
  kKvUsage,
  kKvUsageOld,
  kPromptTokens,
  kGenerationTokens,
  kFinished,
  kPreemptions,
  kPrefixQueries,
  kPrefixHits,
  kPrefixQueriesOld,
  kPrefixHitsOld,
  kNumScalars
};

struct ScalarSpec {
  std::string_view sample;
  Scalar scalar;
  bool gauge;
};

constexpr ScalarSpec kScalars[] = {
    {"vllm:num_requests_running", kRunning, true},
    {"vllm:num_requests_waiting", kWaiting, true},
    {"vllm:kv_cache_usage_perc", kKvUsage, true},
    {"vllm:gpu_cache_usage_perc", kKvUsageOld, true},
    {"vllm:prompt_tokens_total", kPromptTokens, false},
    {"vllm:generation_tokens_total", kGenerationTokens, false},
    {"vllm:request_success_total", kFinished, false},
    {"vllm:num_preemptions_total", kPreemptions, false},
    {"vllm:prefix_cache_queries_total", kPrefixQueries, false},
    {"vllm:prefix_cache_hits_total", kPrefixHits, false},
    {"vllm:gpu_prefix_cache_queries_total", kPrefixQueriesOld, false},
    {"vllm:gpu_prefix_cache_hits_total", kPrefixHitsOld, false},
};

enum Hist : int {
  kTtft,
  kItl,
  kItlOld,
  kE2e,
  kQueue,
  kPrefill,
  kDecode,
  kPromptLength,
  kGenerationLength,
  kNumHists
};

struct HistSpec {
  std::string_view base;
  Hist hist;
};

constexpr HistSpec kHists[] = {
    {"vllm:time_to_first_token_seconds", kTtft},
    {"vllm:inter_token_latency_seconds", kItl},
    {"vllm:time_per_output_token_seconds", kItlOld},
    {"vllm:e2e_request_latency_seconds", kE2e},
    {"vllm:request_queue_time_seconds", kQueue},
    {"vllm:request_prefill_time_seconds", kPrefill},
    {"vllm:request_decode_time_seconds", kDecode},
    {"vllm:request_prompt_tokens", kPromptLength},
    {"vllm:request_generation_tokens", kGenerationLength},
};

enum class Part { kBucket, kSum, kCount };

struct ScalarAcc {
  std::optional<double> value;
  std::set<std::string> label_sets;  // counters: the series seen, to refuse exact duplicates
};

// One histogram series as its samples arrive: finite buckets in text order, +Inf, _sum, _count.
struct SeriesAcc {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  std::optional<double> inf, sum, count;
};

// The samples of one (engine, model_name) pair.
struct Builder {
  std::array<ScalarAcc, kNumScalars> scalars;
  // Per histogram, its series keyed by their labels other than le, engine and model_name.
  std::array<std::map<std::string, SeriesAcc>, kNumHists> hists;
  bool has_cache_info = false;
  std::optional<int64_t> num_gpu_blocks, block_size;
};

using Key = std::pair<std::string, std::string>;  // (engine, model_name)

std::string Where(std::string_view family, const Key& key) {
  return absl::StrCat(Av(family), " (engine ", Quote(key.first), ", model_name ", Quote(key.second),
                      ")");
}

// The sample's labels other than `le`, `engine` and `model_name`, sorted: the identity of a
// series inside one engine (label order in the text doesn't change the series).
std::string OtherLabels(const Sample& s) {
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  for (const auto& [k, v] : s.labels) {
    if (k == "le" || k == "engine" || k == "model_name") continue;
    labels.emplace_back(k, v);
  }
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& [k, v] : labels) {
    // Label names can't contain '=' and values are escaped, so the key is unambiguous.
    absl::StrAppend(&key, Av(k), "=", absl::CHexEscape(Av(v)), ",");
  }
  return key;
}

// An `le` value as Prometheus reads it: a float, "+Inf" in any case.
std::optional<double> ParseLe(std::string_view text) {
  std::string_view t = text;
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (absl::EqualsIgnoreCase(Av(t), "inf") || absl::EqualsIgnoreCase(Av(t), "infinity")) {
    return std::numeric_limits<double>::infinity();
  }
  double v = 0;
  if (!absl::SimpleAtod(Av(text), &v) || std::isnan(v)) return std::nullopt;
  return v;
}

// num_gpu_blocks / block_size of vllm:cache_config_info: an integer, or "None" / absent.
absl::Status ParseInfoInt(const Sample& s, std::string_view label, const Key& key,
                          std::optional<int64_t>& out) {
  const std::string_view text = s.Label(label);
  if (text.empty() || text == "None") return absl::OkStatus();
  int64_t v = 0;
  if (!absl::SimpleAtoi(Av(text), &v) || v < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Where(kCacheConfigInfo, key), ": label ",
                                                   Av(label), "=", Quote(text),
                                                   " is not a non-negative integer"));
  }
  out = v;
  return absl::OkStatus();
}

absl::Status AddScalar(const ScalarSpec& spec, const Sample& s, const Key& key, Builder& b) {
  if (!std::isfinite(s.value) || s.value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Where(spec.sample, key), ": value ", s.value,
                                                   " is not a finite non-negative number"));
  }
  ScalarAcc& acc = b.scalars[spec.scalar];
  if (spec.gauge) {
    if (acc.value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(spec.sample, key), ": more than one series of a gauge"));
    }
    acc.value = s.value;
    return absl::OkStatus();
  }
  if (!acc.label_sets.insert(OtherLabels(s)).second) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(spec.sample, key), ": the same series twice"));
  }
  acc.value = acc.value.value_or(0) + s.value;
  return absl::OkStatus();
}

absl::Status AddHistogramSample(const HistSpec& spec, Part part, const Sample& s, const Key& key,
                                Builder& b) {
  SeriesAcc& series = b.hists[spec.hist][OtherLabels(s)];
  const auto duplicate = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(spec.base, key), ": ", Av(what), " appears twice in one series"));
  };
  switch (part) {
    case Part::kSum:
      if (series.sum.has_value()) return duplicate("_sum");
      series.sum = s.value;
      return absl::OkStatus();
    case Part::kCount:
      if (series.count.has_value()) return duplicate("_count");
      series.count = s.value;
      return absl::OkStatus();
    case Part::kBucket:
      break;
  }
  if (!s.HasLabel("le")) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(spec.base, key), ": a _bucket sample without an le label"));
  }
  const std::optional<double> le = ParseLe(s.Label("le"));
  if (!le.has_value() || *le == -std::numeric_limits<double>::infinity()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(spec.base, key), ": le=", Quote(s.Label("le")), " is not a bucket upper bound"));
  }
  if (std::isinf(*le)) {
    if (series.inf.has_value()) return duplicate("le=\"+Inf\"");
    series.inf = s.value;
  } else {
    series.buckets.emplace_back(*le, s.value);
  }
  return absl::OkStatus();
}

// One series' samples as a validated histogram (see "Histogram completion" in the header).
absl::StatusOr<CumulativeHistogram> FinishSeries(std::string_view family, const Key& key,
                                                 SeriesAcc& series) {
  if (!series.inf.has_value() && !series.count.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(family, key), ": a series with neither a le=\"+Inf\" bucket nor _count"));
  }
  std::stable_sort(series.buckets.begin(), series.buckets.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  CumulativeHistogram h;
  for (const auto& [le, value] : series.buckets) {
    if (!h.upper_bounds.empty() && h.upper_bounds.back() == le) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(family, key), ": bucket le=", le, " appears twice in one series"));
    }
    h.upper_bounds.push_back(le);
    h.cumulative.push_back(value);
  }
  h.cumulative.push_back(series.inf.has_value() ? *series.inf : *series.count);
  h.count = series.count.has_value() ? *series.count : *series.inf;
  h.sum = series.sum.value_or(std::numeric_limits<double>::quiet_NaN());
  if (absl::Status st = ValidateHistogram(h); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(family, key), ": ", st.message()));
  }
  return h;
}

// All series of one histogram of one engine, summed; nullopt when the family was absent.
absl::StatusOr<std::optional<CumulativeHistogram>> FinishHistogram(
    std::string_view family, const Key& key, std::map<std::string, SeriesAcc>& all) {
  if (all.empty()) return std::optional<CumulativeHistogram>();
  std::vector<CumulativeHistogram> parts;
  for (auto& [labels, series] : all) {
    absl::StatusOr<CumulativeHistogram> h = FinishSeries(family, key, series);
    if (!h.ok()) return h.status();
    parts.push_back(*std::move(h));
  }
  if (parts.size() == 1) return std::optional<CumulativeHistogram>(std::move(parts[0]));
  absl::StatusOr<CumulativeHistogram> total = SumHistograms(parts);
  if (!total.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(family, key), ": series of one engine with different bucket edges"));
  }
  return std::optional<CumulativeHistogram>(*std::move(total));
}

absl::StatusOr<EngineObservation> Finish(const Key& key, Builder& b) {
  EngineObservation o;
  o.engine = key.first;
  o.model_name = key.second;
  const auto& sc = b.scalars;
  // The current name wins over the older one when a server exports both (vLLM 0.10 does).
  const auto either = [&](Scalar current, Scalar older) {
    return sc[current].value.has_value() ? sc[current].value : sc[older].value;
  };
  o.running = sc[kRunning].value;
  o.waiting = sc[kWaiting].value;
  o.kv_cache_usage = either(kKvUsage, kKvUsageOld);
  o.prompt_tokens_total = sc[kPromptTokens].value;
  o.generation_tokens_total = sc[kGenerationTokens].value;
  o.requests_finished_total = sc[kFinished].value;
  o.preemptions_total = sc[kPreemptions].value;
  o.prefix_cache_queries_total = either(kPrefixQueries, kPrefixQueriesOld);
  o.prefix_cache_hits_total = either(kPrefixHits, kPrefixHitsOld);

  std::array<std::optional<CumulativeHistogram>, kNumHists> hists;
  for (const HistSpec& spec : kHists) {
    absl::StatusOr<std::optional<CumulativeHistogram>> h =
        FinishHistogram(spec.base, key, b.hists[spec.hist]);
    if (!h.ok()) return h.status();
    hists[spec.hist] = *std::move(h);
  }
  o.ttft = std::move(hists[kTtft]);
  o.itl = hists[kItl].has_value() ? std::move(hists[kItl]) : std::move(hists[kItlOld]);
  o.e2e = std::move(hists[kE2e]);
  o.queue_time = std::move(hists[kQueue]);
  o.prefill_time = std::move(hists[kPrefill]);
  o.decode_time = std::move(hists[kDecode]);
  o.prompt_tokens = std::move(hists[kPromptLength]);
  o.generation_tokens = std::move(hists[kGenerationLength]);
  o.num_gpu_blocks = b.num_gpu_blocks;
  o.block_size = b.block_size;
  return o;
}

// Engine labels are data-parallel ranks: order "2" before "10", integers before anything else.
std::optional<uint64_t> EngineNumber(std::string_view engine) {
  if (engine.empty() || engine.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : engine) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

bool EngineLess(const EngineObservation& a, const EngineObservation& b) {
  const std::optional<uint64_t> na = EngineNumber(a.engine);
  const std::optional<uint64_t> nb = EngineNumber(b.engine);
  const int class_a = na.has_value() ? 0 : 1;
  const int class_b = nb.has_value() ? 0 : 1;
  const uint64_t value_a = na.value_or(0);
  const uint64_t value_b = nb.value_or(0);
  return std::tie(class_a, value_a, a.engine, a.model_name) <
         std::tie(class_b, value_b, b.engine, b.model_name);
}

}  // namespace

absl::StatusOr<PodObservation> ExtractVllmObservation(const Exposition& exposition,
                                                      std::string_view model_name_filter) {
  const bool is_vllm =
      std::any_of(exposition.families.begin(), exposition.families.end(),
                  [](const MetricFamily& f) { return StartsWith(f.name, kPrefix); });
  if (!is_vllm) {
    return absl::FailedPreconditionError("not a vLLM server: the page has no vllm:* family");
  }

  std::map<Key, Builder> builders;
  std::vector<const Sample*> cache_infos;
  for (const MetricFamily& family : exposition.families) {
    if (!StartsWith(family.name, kPrefix)) continue;
    for (const Sample& s : family.samples) {
      if (!StartsWith(s.name, kPrefix)) continue;
      if (s.name == kCacheConfigInfo) {
        cache_infos.push_back(&s);
        continue;
      }
      const std::string_view model = s.Label("model_name");
      if (!model_name_filter.empty() && model != model_name_filter) continue;
      const Key key(std::string(s.Label("engine")), std::string(model));
      Builder& b = builders[key];

      const auto scalar = std::find_if(std::begin(kScalars), std::end(kScalars),
                                       [&](const ScalarSpec& sp) { return sp.sample == s.name; });
      if (scalar != std::end(kScalars)) {
        if (absl::Status st = AddScalar(*scalar, s, key, b); !st.ok()) return st;
        continue;
      }
      for (const auto& [suffix, part] :
           {std::make_pair(std::string_view("_bucket"), Part::kBucket),
            std::make_pair(std::string_view("_sum"), Part::kSum),
            std::make_pair(std::string_view("_count"), Part::kCount)}) {
        const std::string_view name = s.name;
        if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
          continue;
        }
        const std::string_view base = name.substr(0, name.size() - suffix.size());
        const auto hist = std::find_if(std::begin(kHists), std::end(kHists),
                                       [&](const HistSpec& sp) { return sp.base == base; });
        if (hist == std::end(kHists)) break;
        if (absl::Status st = AddHistogramSample(*hist, part, s, key, b); !st.ok()) return st;
        break;
      }
    }
  }

  // vllm:cache_config_info names only its engine: it joins every observation of that engine, or,
  // unfiltered, stands for an engine no other sample named.
  for (const Sample* s : cache_infos) {
    const std::string engine(s->Label("engine"));
    std::vector<std::pair<const Key, Builder>*> targets;
    for (auto& entry : builders) {
      if (entry.first.first == engine) targets.push_back(&entry);
    }
    if (targets.empty() && model_name_filter.empty()) {
      targets.push_back(&*builders.try_emplace(Key(engine, "")).first);
    }
    for (auto* entry : targets) {
      Builder& b = entry->second;
      if (b.has_cache_info) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(kCacheConfigInfo, entry->first), ": more than one series"));
      }
      b.has_cache_info = true;
      if (absl::Status st = ParseInfoInt(*s, "num_gpu_blocks", entry->first, b.num_gpu_blocks);
          !st.ok()) {
        return st;
      }
      if (absl::Status st = ParseInfoInt(*s, "block_size", entry->first, b.block_size); !st.ok()) {
        return st;
      }
    }
  }

  PodObservation pod;
  for (auto& [key, builder] : builders) {
    absl::StatusOr<EngineObservation> engine = Finish(key, builder);
    if (!engine.ok()) return engine.status();
    pod.engines.push_back(*std::move(engine));
  }
  std::sort(pod.engines.begin(), pod.engines.end(), EngineLess);
  return pod;
}

}  // namespace twinscale::metrics
