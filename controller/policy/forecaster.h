// The policy's only window onto the simulator: "starting from this fleet, with this many replicas
// (the extra ones ready only after warm-up), does TTFT stay inside the SLO over the horizon?"
// An interface, so the policy stays pure and testable with hand-made forecasters; the twin
// (controller/twin) implements it with the discrete-event simulator.
#ifndef TWINSCALE_CONTROLLER_POLICY_FORECASTER_H_
#define TWINSCALE_CONTROLLER_POLICY_FORECASTER_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/pooled_draws.h"

namespace twinscale::policy {

// The shape of a length distribution as observed (vLLM's request_prompt_tokens /
// request_generation_tokens histograms over the window): per-bucket weights over the buckets'
// upper bounds (the last weight is the +Inf bucket). Empty: exponential with the given mean.
struct LengthShape {
  std::vector<double> upper_bounds;
  std::vector<double> weights;  // size upper_bounds + 1
  bool empty() const { return weights.empty(); }
};

// A Ready replica as observed.
struct ReplicaStart {
  double waiting = 0;
  double running = 0;
  double kv_usage = 0;  // 0..1
};

struct ForecastQuestion {
  std::vector<ReplicaStart> ready;               // serving now
  std::vector<absl::Duration> pending_ready_in;  // starting pods that still count: time to Ready
  int32_t candidate_replicas = 1;                // total fleet size asked about
  absl::Duration new_replica_warmup;             // for replicas beyond ready + pending
  double arrival_rate = 0;                       // requests per second, fleet-wide
  // Burstiness at the time scale the controller observes it: the coefficient of variation of the
  // fleet's arrival rate from one `rate_interval` to the next, beyond Poisson counting noise (0:
  // Poisson). The twin draws each interval's rate as arrival_rate x a gamma multiplier (mean 1,
  // this CV) and Poisson arrivals within it (twin_forecaster.h says why this shape).
  double arrival_rate_cv = 0;
  absl::Duration rate_interval = absl::Seconds(15);
  // Where the rate goes from arrival_rate (the level): the twin's rate for the k-th rate_interval
  // ahead (k = 1, 2, ...) is arrival_rate_baseline + rate_persistence[k - 1] x (arrival_rate -
  // arrival_rate_baseline), the last weight standing for every later interval. The weights are
  // what the observed history says of how long a departure lasts (state::RatePersistence): a
  // burst shorter than the warm-up is not forecast to outlast it. Empty: the level holds.
  double arrival_rate_baseline = 0;
  std::vector<double> rate_persistence;
  // The seasonal part of the path (state::WorkloadEstimate::rate_season): the rate for the k-th
  // interval ahead is the path above times rate_season[k - 1], the last ratio standing for every
  // later interval. Empty: no seasonal part.
  std::vector<double> rate_season;
  double prompt_tokens_mean = 512;
  double output_tokens_mean = 256;
  LengthShape prompt_shape, output_shape;  // rescaled to the means above
  // The share of prompt tokens the pods find in their prefix caches
  // (state::WorkloadEstimate::prefix_cache_hit_share; 0: none). The twin's requests, which carry
  // no prefix ids, skip that share of their prefill (twin::FleetArrivalSource::PrefixReuse).
  double prompt_cached_share = 0;
  absl::Duration horizon = absl::Minutes(2);
  // Only requests arriving at or after this are judged: a scale-up can't change what happens
  // before its replicas are ready, so it is judged on the time after the warm-up.
  absl::Duration judge_from = absl::ZeroDuration();
  absl::Duration ttft_threshold = absl::Milliseconds(500);
  absl::Duration ttft_per_prompt_token = absl::ZeroDuration();
  // The scale-in safety margin: the share of each request's slack (its target less its unloaded
  // TTFT, the prefill no fleet size can shorten) it may use. 1: the target itself. A margin on the
  // slack, not on the whole threshold, so that it buys headroom against the wait, which the fleet's
  // size decides: judged against 0.8 x threshold, prompts whose own prefill takes most of the
  // threshold miss at any size, and the question stops depending on the size at all.
  double slack_margin = 1;
  double percentile = 90;  // the SLO holds if attainment >= percentile%
  // spec.slo.itl: when > 0, the SLO also needs itl_percentile% of the output tokens judged (those
  // produced from judge_from on) to come at most this long after the previous token of their
  // request. A scale-in question (slack_margin < 1) asks it at slack_margin x the threshold.
  absl::Duration itl_threshold = absl::ZeroDuration();
  double itl_percentile = 90;
  // > 0: the caller uses the attainment itself, not only the verdict, and wants it within about
  // this much (a standard error, as a fraction) unless it clearly meets `percentile`; a sampling
  // forecaster simulates more until it is or its budget runs out. A caller that reads the value
  // only when it falls short of some level asks at that level (CeilingQuestion). 0: only the
  // verdict matters.
  double attainment_tolerance = 0;
  // Earlier independent draws of this same answer that the caller pools with this one (the
  // scale-in question's draws from the stabilization window: fleet_sizing.h), unless this one is
  // a clear miss, which stands alone. A sampling forecaster stops growing its sample once that
  // pool's verdict is clear and its own draw cannot overturn it: either the pool clearly misses,
  // or it clearly meets and the own draw's estimate meets too (an own draw still short could yet
  // turn into a clear miss, so it grows as it would without a prior). Empty: no prior.
  PooledDraws prior;
  // The same for every candidate of one decision (common random numbers), another for each
  // decision (observed_question.h's DecisionSeed: a fixed one would repeat one draw's error in
  // every decision).
  uint64_t seed = 1;
};

// The entry of a per-interval path (`path`: rate_persistence or rate_season) for the k-th
// rate_interval ahead (k >= 1), the last entry standing for every later interval. path not empty.
inline double PathAt(const std::vector<double>& path, int64_t k) {
  const int64_t last = static_cast<int64_t>(path.size());
  return path[static_cast<size_t>(std::clamp<int64_t>(k, 1, last) - 1)];
}

// The rate a forecast path gives for the k-th rate_interval ahead (k = 1, 2, ...):
// baseline + weights[k - 1] x (level - baseline), the last weight standing for every later
// interval; the level itself without weights or before the first interval
// (ForecastQuestion::rate_persistence).
inline double RateAhead(double level, double baseline, const std::vector<double>& weights,
                        int64_t k) {
  if (weights.empty() || k < 1) return level;
  return baseline + PathAt(weights, k) * (level - baseline);
}
// The same times the seasonal ratio for interval k (ForecastQuestion::rate_season; none when
// `season` is empty or k < 1).
inline double RateAhead(double level, double baseline, const std::vector<double>& weights,
                        const std::vector<double>& season, int64_t k) {
  const double rate = RateAhead(level, baseline, weights, k);
  if (season.empty() || k < 1) return rate;
  return rate * PathAt(season, k);
}

struct Forecast {
  double attainment = 1;  // share of the horizon's requests within their TTFT target
  double ttft_p90_ms = 0;
  double scheduling_delay_mean_ms = 0;
  double preemptions_per_s = 0;
  // Mean gap between a sequence's output tokens over the horizon, weighted per token as vLLM's
  // inter-token latency histogram averages it (0: no gaps); what calibration matches.
  double itl_mean_ms = 0;
  // Mean prefill time (first scheduled to first token, as vllm:request_prefill_time_seconds
  // measures it) over the requests that got their first token, and their count; what
  // calibration matches the prefill speed against.
  double prefill_mean_ms = 0;
  double queue_mean_ms = 0;  // their mean queue time (vllm:request_queue_time_seconds)
  int64_t prefill_count = 0;
  int64_t prefill_prompt_tokens = 0;  // their prompt tokens
  int64_t requests = 0;               // requests the forecast judged
  // Requests waiting (queued in the engines, not yet scheduled) fleet-wide at the horizon: the
  // simulated replicas' mean times candidate_replicas.
  double waiting_at_horizon = 0;
  bool meets_slo = true;
  // The forecast's own noise: the standard error of `attainment` (0: not estimated, as from a
  // single simulation), and whether the verdict stands clear of it (|attainment - target| at
  // least the forecaster's confidence margin of standard errors; true when the noise is not
  // estimated). A sampling forecaster grows its sample until the verdict is clear or its budget
  // runs out; a verdict left unclear is one other random numbers could turn over.
  double attainment_se = 0;
  bool verdict_clear = true;
  // With an ITL objective (ForecastQuestion::itl_threshold): the share of the judged output tokens
  // within it, over itl_tokens tokens, and whether that meets itl_percentile. A miss makes the
  // forecast a clear miss (meets_slo false, verdict_clear true): its tokens number in the tens of
  // thousands, so its noise is far below the TTFT attainment's. Without one: 1, 0, true.
  double itl_within = 1;
  int64_t itl_tokens = 0;
  bool itl_met = true;
};

class Forecaster {
 public:
  virtual ~Forecaster() = default;
  virtual Forecast Evaluate(const ForecastQuestion& question) const = 0;
};

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_FORECASTER_H_
