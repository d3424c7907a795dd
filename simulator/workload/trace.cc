// Trace transforms, replay and summary: see trace.h.
#include "simulator/workload/trace.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "simulator/core/rng.h"

namespace twinscale::sim {
namespace {

constexpr double kMaxRateScale = 1000;

void StableSortByArrival(std::vector<RequestSpec>& requests) {
  std::stable_sort(
      requests.begin(), requests.end(),
      [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
}

void RenumberIds(std::vector<RequestSpec>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) requests[i].id = i;
}

class TraceSource final : public RequestSource {
 public:
  explicit TraceSource(std::shared_ptr<const Trace> trace) : trace_(std::move(trace)) {}

  bool Next(RequestSpec& out) override {
    if (trace_ == nullptr || next_ >= trace_->requests.size()) return false;
    out = trace_->requests[next_++];  // copy-assignment reuses out.prefix_hashes' buffer
    return true;
  }

 private:
  std::shared_ptr<const Trace> trace_;
  size_t next_ = 0;
};

// The nearest-rank 99th percentile: the ceil(0.99 n)-th smallest value (n > 0).
int32_t P99(std::vector<int32_t> values) {
  const size_t n = values.size();
  const size_t rank = (99 * n + 99) / 100;  // ceil(99 n / 100), in integers
  auto it = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), it, values.end());
  return *it;
}

// A copy's own prefix id for `id` (trace.h): SplitMix64's finalizer over the id and the copy's
// number, so distinct (id, copy) pairs get distinct ids except with negligible probability.
uint64_t CopyPrefixId(uint64_t id, uint64_t copy) {
  uint64_t z = id ^ (copy * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void NormalizeTrace(Trace& trace) {
  std::vector<RequestSpec>& requests = trace.requests;
  StableSortByArrival(requests);
  if (!requests.empty()) {
    const SimDuration shift = requests.front().arrival - SimTime::Zero();
    for (RequestSpec& r : requests) r.arrival = r.arrival - shift;
  }
  RenumberIds(requests);
}

absl::StatusOr<RateScaleMode> ParseRateScaleMode(std::string_view name) {
  if (name == "jitter") return RateScaleMode::kJitter;
  if (name == "spread") return RateScaleMode::kSpread;
  return absl::InvalidArgumentError(
      absl::StrCat("rate scale mode \"", std::string(name), "\" is not one of jitter, spread"));
}

absl::StatusOr<Trace> ScaleRate(const Trace& trace, double k, uint64_t seed,
                                const RateScaleOptions& options) {
  if (!(k > 0) || k > kMaxRateScale) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate scale must be in (0, ", kMaxRateScale, "], got ", k));
  }
  if (options.jitter < SimDuration::Zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate scale jitter must be >= 0, got ", options.jitter.nanos(), " ns"));
  }
  Trace out;
  out.source = trace.source;
  const std::vector<RequestSpec>& in = trace.requests;
  if (in.empty()) return out;

  // First and last by value, so an unsorted input still wraps inside its own span.
  int64_t first = in.front().arrival.nanos(), last = first;
  for (const RequestSpec& r : in) {
    first = std::min(first, r.arrival.nanos());
    last = std::max(last, r.arrival.nanos());
  }
  const int64_t span = last - first;
  const int64_t whole = static_cast<int64_t>(std::floor(k));
  const double fraction = k - static_cast<double>(whole);
  const int64_t copies = whole + (fraction > 0 ? 1 : 0);
  // Copies 1.. need distinct nonzero offsets: in [1, span] (spread), or in [-reach, -1] u
  // [1, reach] (jitter; a shift beyond the span would only wrap back inside it).
  const bool spread = options.mode == RateScaleMode::kSpread;
  const int64_t reach = spread ? span : std::min(span, options.jitter.nanos());
  const int64_t choices = spread ? span : 2 * reach;
  if (copies - 1 > choices) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate scale ", k, ": trace spans ", span, " ns",
                     spread ? "" : absl::StrCat(" (jitter ", options.jitter.nanos(), " ns)"),
                     ", too short for ", copies, " copies at distinct offsets"));
  }

  std::vector<int64_t> offsets(static_cast<size_t>(copies), 0);
  Rng offset_rng(seed, 0, Stream::kRateScale, 0);
  for (size_t c = 1; c < offsets.size(); ++c) {
    int64_t o;
    do {
      o = static_cast<int64_t>(offset_rng.UniformInt(static_cast<uint64_t>(choices)));
      // spread: [0, span) -> [1, span]; jitter: [0, 2 reach) -> [-reach, -1] u [1, reach].
      o = spread ? o + 1 : (o < reach ? o - reach : o - reach + 1);
    } while (std::find(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(c), o) !=
             offsets.begin() + static_cast<std::ptrdiff_t>(c));
    offsets[c] = o;
  }

  // Circumference span + 1 ns: a shifted copy stays inside [first, first + span], and its first and
  // last requests (0 and span apart) remain distinct points.
  const int64_t circle = span + 1;
  Rng thin_rng(seed, 0, Stream::kRateScale, 1);
  out.requests.reserve(in.size() * static_cast<size_t>(copies));
  for (int64_t c = 0; c < copies; ++c) {
    const bool thinned = c == whole;  // the fractional copy is the last one
    const int64_t offset = offsets[static_cast<size_t>(c)];
    for (const RequestSpec& r : in) {
      if (thinned && !(thin_rng.Uniform01() < fraction)) continue;
      RequestSpec copy = r;
      // offset > -circle, so the sum is non-negative before the modulo.
      copy.arrival =
          SimTime::FromNanos(first + (r.arrival.nanos() - first + offset + circle) % circle);
      if (c > 0) {
        for (uint64_t& id : copy.prefix_hashes) id = CopyPrefixId(id, static_cast<uint64_t>(c));
      }
      out.requests.push_back(std::move(copy));
    }
  }
  StableSortByArrival(out.requests);
  RenumberIds(out.requests);
  return out;
}

absl::StatusOr<Trace> ScaleTime(const Trace& trace, double f) {
  if (!(f > 0) || !std::isfinite(f)) {
    return absl::InvalidArgumentError(absl::StrCat("time scale must be finite and > 0, got ", f));
  }
  Trace out = trace;
  for (RequestSpec& r : out.requests) {
    const double scaled = static_cast<double>(r.arrival.nanos()) * f;
    if (!(std::abs(scaled) < 9.2e18)) {
      return absl::InvalidArgumentError(
          absl::StrCat("time scale ", f, ": arrival ", r.arrival.nanos(), " ns overflows"));
    }
    r.arrival = SimTime::FromNanos(std::llround(scaled));
  }
  return out;
}

std::unique_ptr<RequestSource> MakeTraceSource(std::shared_ptr<const Trace> trace) {
  return std::make_unique<TraceSource>(std::move(trace));
}

TraceSummary Summarize(const Trace& trace) {
  TraceSummary s;
  const std::vector<RequestSpec>& rs = trace.requests;
  if (rs.empty()) return s;
  const size_t n = rs.size();
  s.requests = static_cast<int64_t>(n);

  int64_t first = rs.front().arrival.nanos(), last = first;
  for (const RequestSpec& r : rs) {
    first = std::min(first, r.arrival.nanos());
    last = std::max(last, r.arrival.nanos());
  }
  s.span_seconds = static_cast<double>(last - first) * 1e-9;
  s.mean_rate_rps = s.span_seconds > 0 ? static_cast<double>(n) / s.span_seconds : 0;

  constexpr int64_t kMinute = 60'000'000'000;
  std::vector<int64_t> minute(n);
  std::vector<int32_t> prompts(n), outputs(n);
  double prompt_sum = 0, output_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    minute[i] = (rs[i].arrival.nanos() - first) / kMinute;
    prompts[i] = rs[i].prompt_tokens;
    outputs[i] = rs[i].output_tokens;
    prompt_sum += rs[i].prompt_tokens;
    output_sum += rs[i].output_tokens;
  }
  // Sorting the bucket indices (rather than a vector indexed by minute) keeps memory bounded by n
  // however long the span.
  std::sort(minute.begin(), minute.end());
  int64_t peak = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && minute[j] == minute[i]) ++j;
    peak = std::max(peak, static_cast<int64_t>(j - i));
    i = j;
  }
  s.peak_minute_rps = static_cast<double>(peak) / 60.0;
  s.prompt_mean = prompt_sum / static_cast<double>(n);
  s.output_mean = output_sum / static_cast<double>(n);
  s.prompt_p99 = P99(std::move(prompts));
  s.output_p99 = P99(std::move(outputs));
  return s;
}

}  // namespace twinscale::sim
