// Extraction of vLLM's families from a parsed exposition; see vllm_observation.h for the rules.
//
// One pass over the samples dispatches each vllm:* sample by name to an accumulator of its
// (engine, model_name) pair; a second pass turns the accumulated bucket samples into validated
// CumulativeHistograms and attaches vllm:cache_config_info. Everything is keyed by ordered maps,
// so the result never depends on hash order.
//
// Cost (replay scrapes every simulated pod every 15 s through here): the name dispatch and the
// (engine, model_name) lookup are redone only when they change from one sample to the next, a
// series' key is built without allocating when it has no labels besides le/engine/model_name,
// and every histogram's vectors are allocated once, at their final size.
#include "controller/metrics/vllm_observation.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// Whether `s` starts with "vllm:" (a fixed-size compare, which compiles to a load or two).
bool HasVllmPrefix(std::string_view s) {
  static_assert(kPrefix.size() == 5);
  return s.size() >= 5 && std::memcmp(s.data(), "vllm:", 5) == 0;
}

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

// What a vllm:* sample name is read as.
struct Target {
  enum class Kind { kIgnored, kCacheInfo, kScalar, kHistogram } kind = Kind::kIgnored;
  const ScalarSpec* scalar = nullptr;
  const HistSpec* hist = nullptr;
  Part part = Part::kBucket;
};

Target Classify(std::string_view name) {
  Target t;
  if (name == kCacheConfigInfo) {
    t.kind = Target::Kind::kCacheInfo;
    return t;
  }
  const auto scalar = std::find_if(std::begin(kScalars), std::end(kScalars),
                                   [&](const ScalarSpec& sp) { return sp.sample == name; });
  if (scalar != std::end(kScalars)) {
    t.kind = Target::Kind::kScalar;
    t.scalar = &*scalar;
    return t;
  }
  for (const auto& [suffix, part] : {std::make_pair(std::string_view("_bucket"), Part::kBucket),
                                     std::make_pair(std::string_view("_sum"), Part::kSum),
                                     std::make_pair(std::string_view("_count"), Part::kCount)}) {
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const std::string_view base = name.substr(0, name.size() - suffix.size());
    const auto hist = std::find_if(std::begin(kHists), std::end(kHists),
                                   [&](const HistSpec& sp) { return sp.base == base; });
    if (hist != std::end(kHists)) {
      t.kind = Target::Kind::kHistogram;
      t.hist = &*hist;
      t.part = part;
    }
    break;
  }
  return t;
}

struct ScalarAcc {
  std::optional<double> value;
  std::set<std::string, std::less<>> label_sets;  // counters: the series seen, to refuse repeats
};

// One histogram series as its samples arrive: +Inf, _sum and _count at once; the finite buckets
// are counted here and kept in the extraction's one bucket list (BucketSample) until Finish
// copies them into `h`, whose vectors are then allocated once at their final size.
struct SeriesAcc {
  size_t num_buckets = 0;
  std::optional<double> inf, sum, count;
  CumulativeHistogram h;  // upper_bounds and cumulative: the finite buckets in text order
};

// A finite bucket sample: (le, cumulative count) of `series`.
struct BucketSample {
  SeriesAcc* series;
  double le;
  double value;
};

// The samples of one (engine, model_name) pair.
struct Builder {
  std::array<ScalarAcc, kNumScalars> scalars;
  // Per histogram, its series keyed by their labels other than le, engine and model_name.
  std::array<std::map<std::string, SeriesAcc, std::less<>>, kNumHists> hists;
  bool has_cache_info = false;
  std::optional<int64_t> num_gpu_blocks, block_size;
};

using Key = std::pair<std::string, std::string>;  // (engine, model_name)
using KeyView = std::pair<std::string_view, std::string_view>;

// Orders Keys as std::less<Key> does, and finds them by KeyView without building strings.
struct KeyLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    const int c = std::string_view(a.first).compare(std::string_view(b.first));
    if (c != 0) return c < 0;
    return std::string_view(a.second) < std::string_view(b.second);
  }
};

std::string Where(std::string_view family, const Key& key) {
  return absl::StrCat(Av(family), " (engine ", Quote(key.first), ", model_name ", Quote(key.second),
                      ")");
}

// Whether absl::CHexEscape would leave `v` as it is (printable ASCII, no quote or backslash).
bool NeedsNoEscape(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\'' && c != '\\';
  });
}

// a == b, as one memcmp (std::string_view's operator== goes through an out-of-line compare()).
bool Same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Whether `s` is the literal `lit`; the fixed-size compare compiles to a load or two, not a call.
template <size_t N>
bool Is(const std::string& s, const char (&lit)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// What one pass over a sample's labels finds: the first engine, model_name and le label (as
// Sample::Label would), and how many labels are none of those three.
struct LabelsRead {
  std::string_view engine, model, le;
  bool has_le = false;
  size_t others = 0;
};

LabelsRead ReadLabels(const Sample& s) {
  LabelsRead r;
  bool has_engine = false, has_model = false;
  for (const auto& [k, v] : s.labels) {
    if (Is(k, "engine")) {
      if (!has_engine) r.engine = v, has_engine = true;
    } else if (Is(k, "model_name")) {
      if (!has_model) r.model = v, has_model = true;
    } else if (Is(k, "le")) {
      if (!r.has_le) r.le = v, r.has_le = true;
    } else {
      ++r.others;
    }
  }
  return r;
}

// The sample's labels other than `le`, `engine` and `model_name`, sorted, into `key`: the
// identity of a series inside one engine (label order in the text doesn't change the series).
// vLLM's histograms have no other label, and its counters one (finished_reason).
void OtherLabels(const Sample& s, const LabelsRead& read, std::string& key) {
  key.clear();
  const auto other = [](const std::string& k) {
    return !Is(k, "le") && !Is(k, "engine") && !Is(k, "model_name");
  };
  const size_t n = read.others;
  if (n == 0) return;
  const auto append = [&key](std::string_view k, std::string_view v) {
    // Label names can't contain '=' and values are escaped, so the key is unambiguous.
    key.append(k);
    key.push_back('=');
    if (NeedsNoEscape(v)) {
      key.append(v);
    } else {
      key.append(absl::CHexEscape(Av(v)));
    }
    key.push_back(',');
  };
  if (n == 1) {
    for (const auto& [k, v] : s.labels) {
      if (other(k)) append(k, v);
    }
    return;
  }
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  labels.reserve(n);
  for (const auto& [k, v] : s.labels) {
    if (other(k)) labels.emplace_back(k, v);
  }
  std::sort(labels.begin(), labels.end());
  for (const auto& [k, v] : labels) append(k, v);
}

// Clinger's fast path for the `le` values exporters print ("0.001", "2560.0"): digits with an
// optional fraction, at most 19 digits in all, whose value is at most 2^53. Both the digits and
// the power of ten (at most 1e19) are then exact doubles, so one IEEE division gives the correctly
// rounded result, the double absl::SimpleAtod returns. False for anything else, which takes the
// general way. (prometheus_text.cc has the parser's own, wider version.)
bool ParsePlainDecimal(std::string_view s, double* out) {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                      1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
  constexpr int kMaxDigits = 19;
  uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (++digits > kMaxDigits) return false;
    mantissa = mantissa * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (digits == 0) return false;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (++digits > kMaxDigits) return false;
      mantissa = mantissa * 10 + static_cast<uint64_t>(s[i] - '0');
      ++fraction_digits;
    }
    if (fraction_digits == 0) return false;
  }
  if (i != s.size() || mantissa > (uint64_t{1} << 53)) return false;
  *out = static_cast<double>(mantissa) / kPow10[fraction_digits];
  return true;
#else
  return false;
#endif
}

// An `le` value as Prometheus reads it: a float, "+Inf" in any case.
std::optional<double> ParseLe(std::string_view text) {
  if (double v = 0; ParsePlainDecimal(text, &v)) return v;
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

// The extraction's working state: the builders, the cache_config_info samples, every finite
// bucket sample, and a scratch string for series keys.
struct Extraction {
  std::map<Key, Builder, KeyLess> builders;
  std::vector<const Sample*> cache_infos;
  std::vector<BucketSample> buckets;
  std::string series_key;

  absl::Status AddScalar(const ScalarSpec& spec, const Sample& s, const LabelsRead& labels,
                         const Key& key, Builder& b) {
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
    OtherLabels(s, labels, series_key);
    if (!acc.label_sets.insert(series_key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(spec.sample, key), ": the same series twice"));
    }
    acc.value = acc.value.value_or(0) + s.value;
    return absl::OkStatus();
  }

  absl::Status AddHistogramSample(const HistSpec& spec, Part part, const Sample& s,
                                  const LabelsRead& labels, const Key& key, Builder& b) {
    OtherLabels(s, labels, series_key);
    auto& all = b.hists[spec.hist];
    auto it = all.begin();
    if (all.size() != 1 || it->first != series_key) {  // not the usual one series
      it = all.find(series_key);
      if (it == all.end()) it = all.emplace(series_key, SeriesAcc()).first;
    }
    SeriesAcc& series = it->second;
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
    if (!labels.has_le) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(spec.base, key), ": a _bucket sample without an le label"));
    }
    const std::optional<double> le = ParseLe(labels.le);
    if (!le.has_value() || *le == -std::numeric_limits<double>::infinity()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(spec.base, key), ": le=", Quote(labels.le), " is not a bucket upper bound"));
    }
    if (std::isinf(*le)) {
      if (series.inf.has_value()) return duplicate("le=\"+Inf\"");
      series.inf = s.value;
    } else {
      ++series.num_buckets;
      buckets.push_back(BucketSample{&series, *le, s.value});
    }
    return absl::OkStatus();
  }

  // Hands each series its finite buckets, in text order, in vectors allocated once.
  void DistributeBuckets() {
    for (const BucketSample& b : buckets) {
      CumulativeHistogram& h = b.series->h;
      if (h.upper_bounds.capacity() == 0) {
        h.upper_bounds.reserve(b.series->num_buckets);
        h.cumulative.reserve(b.series->num_buckets + 1);  // and +Inf
      }
      h.upper_bounds.push_back(b.le);
      h.cumulative.push_back(b.value);
    }
  }
};

// ValidateHistogram's rules (cumulative_histogram.cc) as a yes or no; it must never pass what
// ValidateHistogram refuses. ValidateHistogram formats every bucket's edge for its messages even
// when nothing is wrong, which would be a fifth of the extraction; only a histogram that fails here
// goes through it, for the message.
bool PassesValidation(const CumulativeHistogram& h) {
  if (h.cumulative.size() != h.upper_bounds.size() + 1) return false;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    const double le = h.upper_bounds[i];
    if (!std::isfinite(le) || (i > 0 && !(h.upper_bounds[i - 1] < le))) return false;
  }
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    const double c = h.cumulative[i];
    if (!std::isfinite(c) || c < 0 || (i > 0 && c < h.cumulative[i - 1])) return false;
  }
  return h.count == h.cumulative.back();
}

// One series' samples as a validated histogram (see "Histogram completion" in the header).
absl::StatusOr<CumulativeHistogram> FinishSeries(std::string_view family, const Key& key,
                                                 SeriesAcc& series) {
  if (!series.inf.has_value() && !series.count.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(family, key), ": a series with neither a le=\"+Inf\" bucket nor _count"));
  }
  CumulativeHistogram h = std::move(series.h);
  // Buckets sorted by le, equal ones in text order. Exporters print them sorted already.
  if (!std::is_sorted(h.upper_bounds.begin(), h.upper_bounds.end())) {
    std::vector<std::pair<double, double>> buckets;
    buckets.reserve(h.upper_bounds.size());
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      buckets.emplace_back(h.upper_bounds[i], h.cumulative[i]);
    }
    std::stable_sort(buckets.begin(), buckets.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < buckets.size(); ++i) {
      h.upper_bounds[i] = buckets[i].first;
      h.cumulative[i] = buckets[i].second;
    }
  }
  for (size_t i = 1; i < h.upper_bounds.size(); ++i) {
    if (h.upper_bounds[i - 1] == h.upper_bounds[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(family, key), ": bucket le=", h.upper_bounds[i], " appears twice in one series"));
    }
  }
  h.cumulative.push_back(series.inf.has_value() ? *series.inf : *series.count);
  h.count = series.count.has_value() ? *series.count : *series.inf;
  h.sum = series.sum.value_or(std::numeric_limits<double>::quiet_NaN());
  if (!PassesValidation(h)) {
    if (absl::Status st = ValidateHistogram(h); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(family, key), ": ", st.message()));
    }
  }
  return h;
}

// All series of one histogram of one engine, summed; nullopt when the family was absent.
absl::StatusOr<std::optional<CumulativeHistogram>> FinishHistogram(
    std::string_view family, const Key& key, std::map<std::string, SeriesAcc, std::less<>>& all) {
  if (all.empty()) return std::optional<CumulativeHistogram>();
  if (all.size() == 1) {
    absl::StatusOr<CumulativeHistogram> h = FinishSeries(family, key, all.begin()->second);
    if (!h.ok()) return h.status();
    return std::optional<CumulativeHistogram>(*std::move(h));
  }
  std::vector<CumulativeHistogram> parts;
  parts.reserve(all.size());
  for (auto& [labels, series] : all) {
    absl::StatusOr<CumulativeHistogram> h = FinishSeries(family, key, series);
    if (!h.ok()) return h.status();
    parts.push_back(*std::move(h));
  }
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
  const bool is_vllm = std::any_of(exposition.families.begin(), exposition.families.end(),
                                   [](const MetricFamily& f) { return HasVllmPrefix(f.name); });
  if (!is_vllm) {
    return absl::FailedPreconditionError("not a vLLM server: the page has no vllm:* family");
  }

  Extraction x;
  size_t vllm_samples = 0;
  for (const MetricFamily& family : exposition.families) {
    if (HasVllmPrefix(family.name)) vllm_samples += family.samples.size();
  }
  x.buckets.reserve(vllm_samples);  // at most one per sample: no growth
  // Consecutive samples mostly share their name and their (engine, model_name): both lookups
  // are redone only when these change.
  bool classified = false;
  std::string_view last_name;
  Target target;
  std::string_view last_engine, last_model;
  const Key* key = nullptr;
  Builder* b = nullptr;
  for (const MetricFamily& family : exposition.families) {
    if (!HasVllmPrefix(family.name)) continue;
    for (const Sample& s : family.samples) {
      if (!HasVllmPrefix(s.name)) continue;
      if (!classified || !Same(s.name, last_name)) {
        classified = true;
        last_name = s.name;
        target = Classify(s.name);
      }
      if (target.kind == Target::Kind::kCacheInfo) {
        x.cache_infos.push_back(&s);
        continue;
      }
      const LabelsRead labels = ReadLabels(s);
      const std::string_view engine = labels.engine;
      const std::string_view model = labels.model;
      if (!model_name_filter.empty() && model != model_name_filter) continue;
      if (b == nullptr || !Same(engine, last_engine) || !Same(model, last_model)) {
        auto it = x.builders.find(KeyView(engine, model));
        if (it == x.builders.end()) {
          it = x.builders.try_emplace(Key(std::string(engine), std::string(model))).first;
        }
        key = &it->first;
        b = &it->second;
        last_engine = engine;
        last_model = model;
      }
      if (target.kind == Target::Kind::kScalar) {
        if (absl::Status st = x.AddScalar(*target.scalar, s, labels, *key, *b); !st.ok()) {
          return st;
        }
      } else if (target.kind == Target::Kind::kHistogram) {
        if (absl::Status st = x.AddHistogramSample(*target.hist, target.part, s, labels, *key, *b);
            !st.ok()) {
          return st;
        }
      }
    }
  }

  // vllm:cache_config_info names only its engine: it joins every observation of that engine, or,
  // unfiltered, stands for an engine no other sample named.
  for (const Sample* s : x.cache_infos) {
    const std::string engine(s->Label("engine"));
    std::vector<std::pair<const Key, Builder>*> targets;
    for (auto& entry : x.builders) {
      if (entry.first.first == engine) targets.push_back(&entry);
    }
    if (targets.empty() && model_name_filter.empty()) {
      targets.push_back(&*x.builders.try_emplace(Key(engine, "")).first);
    }
    for (auto* entry : targets) {
      Builder& builder = entry->second;
      if (builder.has_cache_info) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(kCacheConfigInfo, entry->first), ": more than one series"));
      }
      builder.has_cache_info = true;
      if (absl::Status st =
              ParseInfoInt(*s, "num_gpu_blocks", entry->first, builder.num_gpu_blocks);
          !st.ok()) {
        return st;
      }
      if (absl::Status st = ParseInfoInt(*s, "block_size", entry->first, builder.block_size);
          !st.ok()) {
        return st;
      }
    }
  }

  x.DistributeBuckets();
  PodObservation pod;
  pod.engines.reserve(x.builders.size());
  for (auto& [k, builder] : x.builders) {
    absl::StatusOr<EngineObservation> engine = Finish(k, builder);
    if (!engine.ok()) return engine.status();
    pod.engines.push_back(*std::move(engine));
  }
  std::sort(pod.engines.begin(), pod.engines.end(), EngineLess);
  return pod;
}

}  // namespace twinscale::metrics
