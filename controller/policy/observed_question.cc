// The observed fleet as the twin's question: see observed_question.h.
#include "controller/policy/observed_question.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinscale::policy {
namespace {

using state::PodView;

LengthShape ShapeOf(const std::optional<metrics::CumulativeHistogram>& h) {
  LengthShape s;
  if (!h || h->count <= 0 || h->cumulative.size() != h->upper_bounds.size() + 1) return s;
  s.upper_bounds = h->upper_bounds;
  double prev = 0;
  for (double c : h->cumulative) {
    s.weights.push_back(std::max(0.0, c - prev));
    prev = c;
  }
  return s;
}

}  // namespace

// Why a seed per decision: with one seed for all of them, every decision would re-draw the same
// arrivals and lengths and a draw's error would persist for the whole run (on the Azure
// conversation trace at x40 one seed's twin sees 23 replicas keep 99% of requests, another's
// 96.5% at 25); drawn afresh, the errors average out over the stabilization window. SplitMix64's
// finalizer over the seed and the decision's second.
uint64_t DecisionSeed(uint64_t seed, absl::Time now) {
  uint64_t x = seed ^ (static_cast<uint64_t>(absl::ToUnixSeconds(now)) * 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double FullAim(const PolicyConfig& c) {
  return std::min(99.5, std::max(c.target_requests, c.percentile + c.min_forecast_headroom));
}

ObservedFleet ObserveFleet(const state::FleetSnapshot& snap, const PolicyConfig& c,
                           absl::Time now) {
  ObservedFleet observed;
  ForecastQuestion& q = observed.question;
  for (const state::ReplicaState& r : snap.replicas) {
    if (r.stage == PodView::Stage::kReady) {
      q.ready.push_back({r.waiting, r.running, r.kv_usage});
    } else if (r.stage == PodView::Stage::kPending || r.stage == PodView::Stage::kLoading ||
               r.stage == PodView::Stage::kWarmingUp) {
      if (r.unschedulable || r.age > c.warmup_p99) {
        observed.not_counted.push_back({r.name, r.age, r.unschedulable});
        continue;
      }
      const absl::Duration remaining = std::max(c.warmup_expected - r.age, c.interval / 2);
      q.pending_ready_in.push_back(remaining);
    }
  }
  if (!observed.not_counted.empty()) {
    observed.reasons.push_back(MakeReason(
        ReasonCode::kPendingNotCounted,
        absl::StrFormat("%d starting pod(s) are unschedulable or older than the p99 warm-up (%s) "
                        "and no longer count as capacity",
                        static_cast<int32_t>(observed.not_counted.size()),
                        absl::FormatDuration(c.warmup_p99))));
  }
  const state::WorkloadEstimate& w = snap.workload;
  // The twin draws each interval's rate around the recent level with the measured swing
  // (arrival_rate_cv); the last interval alone is one such swing, and starting from it would
  // count it twice: a burst would be forecast to continue at its peak and be swung on top of that.
  q.arrival_rate = !w.arrival_rate.usable()   ? 0.0
                   : w.arrival_rate_level > 0 ? w.arrival_rate_level
                                              : w.arrival_rate.value();
  // A rate that swings by more than its mean from one interval to the next is a measurement
  // artefact (a handful of requests per interval), not a shape the twin can use: capped at 1.
  q.arrival_rate_cv = std::clamp(w.rate_cv, 0.0, 1.0);
  q.rate_interval = w.rate_interval;
  if (q.arrival_rate > 0 && w.arrival_rate_baseline > 0 && !w.rate_persistence.empty()) {
    q.arrival_rate_baseline = w.arrival_rate_baseline;
    q.rate_persistence = w.rate_persistence;
  }
  if (q.arrival_rate > 0) q.rate_season = w.rate_season;
  q.prompt_tokens_mean =
      w.prompt_tokens_mean.usable() ? w.prompt_tokens_mean.value() : c.default_prompt_tokens;
  q.output_tokens_mean =
      w.output_tokens_mean.usable() ? w.output_tokens_mean.value() : c.default_output_tokens;
  q.prompt_shape = ShapeOf(w.prompt_lengths);
  q.output_shape = ShapeOf(w.output_lengths);
  if (w.prefix_cache_hit_share.usable()) q.prompt_cached_share = w.prefix_cache_hit_share.value();
  q.new_replica_warmup = c.warmup_expected;
  // Long enough after the warm-up to judge the new fleet on a minute or more of traffic.
  q.horizon = ForecastHorizon(c);
  q.ttft_threshold = c.ttft_threshold;
  q.ttft_per_prompt_token = c.ttft_per_prompt_token;
  q.percentile = FullAim(c);
  q.itl_threshold = c.itl_threshold;
  q.itl_percentile = c.itl_percentile;
  q.seed = DecisionSeed(c.seed, now);
  return observed;
}

ForecastQuestion ObservedQuestion(const state::FleetSnapshot& snapshot,
                                  const PolicyConfig& config) {
  return ObserveFleet(snapshot, config, snapshot.at).question;
}

}  // namespace twinscale::policy
