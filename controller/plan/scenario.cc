// A review's scenario applied to the baseline's trace: see scenario.h.
#include "controller/plan/scenario.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "simulator/core/rng.h"

namespace twinscale::plan {
namespace {

constexpr int32_t kPrefixBlockTokens = 512;  // Mooncake's prefix ids: one per 512-token block

int32_t Scaled(int32_t tokens, double k) {
  const double x = std::round(static_cast<double>(tokens) * k);
  return static_cast<int32_t>(std::clamp(x, 1.0, 2147483647.0));
}

// A prefix id no other request carries: the request's place and the block's, mixed with a salt.
uint64_t FreshId(uint64_t salt, uint64_t request, uint64_t block) {
  return sim::Mix64(sim::Mix64(salt ^ request) ^ (block * 0x9e3779b97f4a7c15ULL));
}

int32_t Blocks(int32_t prompt_tokens) {
  return (prompt_tokens + kPrefixBlockTokens - 1) / kPrefixBlockTokens;
}

std::string Factor(double k) { return absl::StrFormat("%g", k); }

std::string Percent(double share) { return absl::StrFormat("%g%%", 100 * share); }

std::string Span(absl::Duration d) { return absl::FormatDuration(d); }

}  // namespace

std::string DescribeChanges(const Scenario& s) {
  std::vector<std::string> parts;
  if (s.rate != 1) parts.push_back(absl::StrCat("rate x", Factor(s.rate)));
  if (s.prompt_length != 1) parts.push_back(absl::StrCat("prompts x", Factor(s.prompt_length)));
  if (s.output_length != 1) parts.push_back(absl::StrCat("outputs x", Factor(s.output_length)));
  if (s.long_context.has_value()) {
    parts.push_back(absl::StrCat(Percent(s.long_context->share), " with ",
                                 s.long_context->prompt_tokens, "-token prompts"));
  }
  if (s.retry_spike.has_value()) {
    const Scenario::RetrySpike& r = *s.retry_spike;
    std::string window =
        r.start > absl::ZeroDuration() || r.span > absl::ZeroDuration()
            ? absl::StrCat(" from ", Span(r.start),
                           r.span > absl::ZeroDuration() ? absl::StrCat(" for ", Span(r.span))
                                                         : std::string())
            : std::string();
    parts.push_back(absl::StrCat(Percent(r.share), " retried after ", Span(r.timeout), window));
  }
  if (s.prefix_cache_miss) parts.push_back("no prefix reuse");
  if (s.burst.has_value()) {
    parts.push_back(absl::StrCat(Factor(s.burst->peak_to_mean), "x the mean rate over ",
                                 Span(s.burst->window), " from ", Span(s.burst->at)));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

double EstimatedRequests(const Scenario& s, double requests, double span_seconds) {
  double n = requests * std::max(1.0, std::ceil(s.rate));
  if (s.retry_spike.has_value()) n *= 1 + s.retry_spike->share;
  if (s.burst.has_value()) {
    n += s.burst->peak_to_mean * n / std::max(1e-9, span_seconds) *
         absl::ToDoubleSeconds(s.burst->window);
  }
  return n;
}

absl::StatusOr<sim::Trace> ApplyScenario(const sim::Trace& baseline, const Scenario& s,
                                         uint64_t seed) {
  if (baseline.requests.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scenario ", s.name, ": the baseline has no requests"));
  }
  auto rng = [&](uint64_t index) { return sim::Rng(seed, index, sim::Stream::kPlanScenario); };
  sim::Trace t = baseline;
  const sim::SimTime first = t.requests.front().arrival;
  const sim::SimDuration span = t.requests.back().arrival - first;
  if (s.rate != 1) {
    absl::StatusOr<sim::Trace> scaled = sim::ScaleRate(t, s.rate, seed);
    if (!scaled.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scenario ", s.name, ": rate: ", scaled.status().message()));
    }
    t = *std::move(scaled);
  }
  if (s.prompt_length != 1) {
    const uint64_t salt = rng(1).NextU64();
    for (sim::RequestSpec& r : t.requests) {
      r.prompt_tokens = Scaled(r.prompt_tokens, s.prompt_length);
      if (r.prefix_hashes.empty()) continue;
      const size_t blocks = static_cast<size_t>(Blocks(r.prompt_tokens));
      const size_t had = r.prefix_hashes.size();
      r.prefix_hashes.resize(blocks);
      for (size_t b = had; b < blocks; ++b) r.prefix_hashes[b] = FreshId(salt, r.id, b);
    }
  }
  if (s.output_length != 1) {
    for (sim::RequestSpec& r : t.requests) {
      r.output_tokens = Scaled(r.output_tokens, s.output_length);
    }
  }
  if (s.long_context.has_value()) {
    sim::Rng pick = rng(2);
    for (sim::RequestSpec& r : t.requests) {
      if (pick.Uniform01() < s.long_context->share) {
        r.prompt_tokens = s.long_context->prompt_tokens;
        r.prefix_hashes.clear();
      }
    }
  }
  if (s.retry_spike.has_value()) {
    const Scenario::RetrySpike& spike = *s.retry_spike;
    const sim::SimTime from = first + sim::SimDuration::FromAbsl(spike.start);
    if (from > t.requests.back().arrival) {
      return absl::InvalidArgumentError(
          absl::StrCat("scenario ", s.name, ": retrySpike.start ", Span(spike.start),
                       " is after the trace's last arrival (",
                       Span(absl::Nanoseconds((t.requests.back().arrival - first).nanos())), ")"));
    }
    const sim::SimTime until = spike.span > absl::ZeroDuration()
                                   ? from + sim::SimDuration::FromAbsl(spike.span)
                                   : sim::SimTime::Max();
    const sim::SimDuration timeout = sim::SimDuration::FromAbsl(spike.timeout);
    sim::Rng pick = rng(3);
    std::vector<sim::RequestSpec> retries;
    for (const sim::RequestSpec& r : t.requests) {
      if (r.arrival < from || r.arrival >= until) continue;
      if (pick.Uniform01() < spike.share) {
        sim::RequestSpec again = r;
        again.arrival = r.arrival + timeout;
        retries.push_back(std::move(again));
      }
    }
    t.requests.insert(t.requests.end(), retries.begin(), retries.end());
  }
  if (s.prefix_cache_miss) {
    const uint64_t salt = rng(4).NextU64();
    for (size_t i = 0; i < t.requests.size(); ++i) {
      std::vector<uint64_t>& ids = t.requests[i].prefix_hashes;
      for (size_t b = 0; b < ids.size(); ++b) ids[b] = FreshId(salt, i, b);
    }
  }
  if (s.burst.has_value()) {
    const Scenario::Burst& burst = *s.burst;
    const sim::SimDuration window = sim::SimDuration::FromAbsl(burst.window);
    const sim::SimTime at = first + sim::SimDuration::FromAbsl(burst.at);
    if (at + window > first + span) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scenario ", s.name, ": burst window ", Span(burst.at), " + ", Span(burst.window),
          " ends after the trace's span (", Span(absl::Nanoseconds(span.nanos())), ")"));
    }
    // The mean rate before the burst: the requests so far over the baseline's span.
    const double mean_rate =
        static_cast<double>(t.requests.size()) / std::max(1e-9, span.seconds());
    int64_t in_window = 0;
    for (const sim::RequestSpec& r : t.requests) {
      if (r.arrival >= at && r.arrival < at + window) ++in_window;
    }
    const int64_t wanted = std::llround(burst.peak_to_mean * mean_rate * window.seconds());
    sim::Rng pick = rng(5);
    const size_t n = t.requests.size();
    for (int64_t k = in_window; k < wanted; ++k) {
      sim::RequestSpec extra = t.requests[pick.UniformInt(n)];
      extra.prefix_hashes.clear();
      extra.arrival = at + sim::SimDuration::FromSecondsF(pick.Uniform01() * window.seconds());
      t.requests.push_back(std::move(extra));
    }
  }
  sim::NormalizeTrace(t);
  return t;
}

}  // namespace twinscale::plan
