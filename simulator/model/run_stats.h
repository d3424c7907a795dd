// What one simulated run measured: per-request latencies (TTFT, E2E, scheduling delay), per-token
// inter-token latency, SLO attainment, goodput, preemptions, KV peak, GPU-hours and the engine's
// own work counters. Every replica of a run reports into one RunStats; Summarize() turns it into
// the numbers `twinscale simulate` prints.
//
// Definitions (docs/architecture.md "The twin"):
// - TTFT runs from the request's arrival at the fleet's front end (gateway time included) to the
//   emission of its first output token, and is recorded once per request.
// - Scheduling delay runs from the arrival to the most recent time the engine scheduled the request
//   out of its waiting queue (a preempted request is scheduled again).
// - SLO attainment is the share of all injected requests, rejected and aborted ones included as
//   misses, whose TTFT <= threshold + per_prompt_token x prompt tokens.
// - Percentiles interpolate linearly between order statistics (numpy's default); ITL percentiles
//   come from a log-bucketed histogram with 0.5% relative resolution (one update per engine step).
// - Prefix cache (only with enable_prefix_caching): tokens looked up and tokens found cached,
//   counted once per request at its first admission, as vllm:prefix_cache_queries / _hits count
//   them (re-admissions after a preemption are not counted); the hit rate is their ratio.
// Not thread-safe: one per run.
#ifndef TWINSCALE_SIMULATOR_MODEL_RUN_STATS_H_
#define TWINSCALE_SIMULATOR_MODEL_RUN_STATS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "simulator/core/time.h"

namespace twinscale::sim {

struct TtftSlo {
  SimDuration threshold = SimDuration::Millis(500);
  SimDuration per_prompt_token = SimDuration::Zero();
  double percentile = 90.0;
  // A stricter question than the SLO itself, for a safety margin: a request meets it when its TTFT
  // is within `slack_share` of its slack, the time between its unloaded TTFT (`unloaded`, e.g.
  // UnloadedTtft) and its target: TTFT <= unloaded + slack_share x (target - unloaded). 1, or no
  // `unloaded`: the target itself. A request whose unloaded TTFT is past its target misses either
  // way.
  double slack_share = 1.0;
  std::function<SimDuration(int32_t prompt_tokens)> unloaded;
  SimDuration TargetFor(int32_t prompt_tokens) const {
    const SimDuration target = threshold + per_prompt_token * prompt_tokens;
    if (slack_share >= 1.0 || !unloaded) return target;
    const SimDuration floor = unloaded(prompt_tokens);
    if (floor >= target) return floor - SimDuration::Nanos(1);
    return floor + SimDuration::FromSecondsF(slack_share * (target - floor).seconds());
  }
};

enum class RequestOutcome { kCompleted, kRejected, kAborted };

// One request's fate, collected on demand (tests, replay reports).
struct RequestRecord {
  uint64_t id = 0;
  int32_t replica = -1;
  RequestOutcome outcome = RequestOutcome::kCompleted;
  SimTime arrival;
  SimDuration ttft = SimDuration::Nanos(-1);  // -1: no token was ever produced
  SimDuration e2e = SimDuration::Nanos(-1);
  SimDuration scheduling_delay = SimDuration::Nanos(-1);
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  int32_t preemptions = 0;
};

struct LatencySummary {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;  // milliseconds
};

struct RunSummary {
  int64_t injected = 0, completed = 0, rejected = 0, aborted = 0;
  int64_t queued_at_end = 0, running_at_end = 0;
  double simulated_seconds = 0;  // first arrival to the last event
  double throughput_rps = 0;     // completed / simulated_seconds
  double output_tokens_per_s = 0;
  LatencySummary ttft_ms, itl_ms, e2e_ms, scheduling_delay_ms;
  // Prefill time (vllm:request_prefill_time_seconds: from the engine first scheduling a request to
  // its first token), count and mean only, in either detail, and the prompt tokens of the same
  // requests: calibration's second observable is their ratio.
  LatencySummary prefill_ms;
  int64_t prefill_prompt_tokens = 0;
  // Queue time (vllm:request_queue_time_seconds: from reaching the engine to being scheduled, the
  // last time before the first token), count and mean only: calibration's routing observable.
  LatencySummary queue_ms;
  int64_t preemptions = 0;
  double kv_peak_utilization = 0;
  double slo_attainment = 0;     // share of injected requests meeting the TTFT SLO
  int64_t judged_requests = 0;   // injected at or after the judge-from time
  double judged_attainment = 1;  // their share meeting the TTFT SLO
  // With an ITL threshold (RunStats::set_itl_threshold): the output tokens produced from the
  // judge-from time on, and of them those that came more than the threshold after the previous.
  int64_t judged_itl_tokens = 0, judged_itl_over = 0;
  double goodput_rps = 0;  // SLO-meeting requests per simulated second
  double gpu_hours = 0;
  int64_t engine_steps = 0;
  int64_t sequence_steps = 0;  // sum over steps of the sequences in the batch
  int64_t output_tokens = 0;
  int64_t prompt_tokens_computed = 0;       // includes recompute after preemption
  int64_t prefix_cache_queried_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hit_tokens = 0;      // of them, found cached (not computed)
  double prefix_cache_hit_rate = 0;         // hit / queried; 0 when nothing was looked up
};

// Log-bucketed histogram of durations with integer weights (inter-token latency: one bucket update
// per engine step covers every token of the step).
class WeightedDurationHistogram {
 public:
  WeightedDurationHistogram();
  void Add(SimDuration d, int64_t weight);
  int64_t count() const { return count_; }
  double MeanMillis() const;
  double QuantileMillis(double q) const;  // q in [0, 1]

 private:
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  // In integer nanoseconds: exact, so the sum does not depend on the order the replicas of a run
  // report their steps in (coalesced steps report late; replica.h).
  int64_t sum_ns_ = 0;
};

// What a run's judged TTFT attainment is counted from, kept so that the run can be judged again
// against another target or from another time without simulating it again (the twin judges one
// simulated fleet at the SLO and at a safety margin, from now and from a warm-up's end): every
// injected request's arrival, and the arrival, prompt length and TTFT of every first token.
struct TtftLog {
  struct FirstToken {
    int64_t arrival_ns;
    int64_t ttft_ns;
    int32_t prompt_tokens;
  };
  std::vector<int64_t> arrivals_ns;
  std::vector<FirstToken> first_tokens;
  size_t requests() const { return arrivals_ns.size(); }
};

// The judged requests (arrived at `judge_from` or later) and those of them whose first token came
// within `slo`'s target: what RunStats counts as RunSummary::judged_requests and the numerator of
// judged_attainment, for a run whose log is `log`.
struct JudgedCount {
  int64_t judged = 0;
  int64_t met = 0;
};
JudgedCount Judge(const TtftLog& log, const TtftSlo& slo, SimTime judge_from);

// How much a run keeps beyond its counters (requests, SLO attainment overall and judged,
// preemptions, steps, tokens, KV peak, GPU time: always kept).
enum class StatsDetail {
  kFull,  // every latency distribution: TTFT, E2E, scheduling delay, inter-token latency
  // TTFT's count, mean and p90, the scheduling delay's and the inter-token latency's count and
  // mean only (e2e_ms stays empty, the other percentiles 0): what the twin's what-ifs and its
  // calibration read. Saves a log per engine
  // step, two of the three per-request samples, and most of the selection work.
  kSloOnly,
};

class RunStats {
 public:
  explicit RunStats(TtftSlo slo, StatsDetail detail = StatsDetail::kFull)
      : slo_(slo), detail_(detail) {}

  // Collects one RequestRecord per request (completed, rejected or aborted) when set.
  void set_record_sink(std::function<void(const RequestRecord&)> sink) { sink_ = std::move(sink); }
  const TtftSlo& slo() const { return slo_; }
  // Appends every arrival and first token to `log` (not owned; null: none) as they come.
  void set_ttft_log(TtftLog* log) { log_ = log; }

  void OnInjected(SimTime arrival);
  void OnFirstToken(int32_t prompt_tokens, SimDuration ttft, SimTime arrival);
  // A request's prefill time (its first token's time minus the time the engine first scheduled
  // it) and its queue time (the time it was scheduled minus the time it reached the engine), at
  // its first token.
  void OnPrefillAndQueueTime(SimDuration prefill, SimDuration queue, int32_t prompt_tokens) {
    ++prefill_count_;
    prefill_prompt_tokens_ += prompt_tokens;
    prefill_sum_ns_ += std::max<int64_t>(0, prefill.nanos());
    queue_sum_ns_ += std::max<int64_t>(0, queue.nanos());
  }
  // Requests arriving before `t` are left out of the judged attainment (what-if questions judge
  // only what a decision can still change).
  void set_judge_from(SimTime t) { judge_from_ = t; }
  void OnFinished(const RequestRecord& r);  // outcome kCompleted or kAborted
  void OnRejected(const RequestRecord& r);
  // An ITL objective (spec.slo.itl): the output-token gaps, from the judge-from time on, longer
  // than `threshold` are counted (RunSummary::judged_itl_*). Zero: none.
  void set_itl_threshold(SimDuration threshold) { itl_threshold_ = threshold; }
  // The inter-token latency summary (RunSummary::itl_ms) counts only the gaps whose step ended at
  // or after `t` (the ITL objective's judged tokens keep judge-from).
  void set_itl_from(SimTime t) { itl_from_ = t; }
  // `at`: when the step that produced the tokens ended.
  void OnInterTokenLatency(SimDuration itl, int64_t tokens, SimTime at) {
    if (itl_threshold_ > SimDuration::Zero() && at >= judge_from_ && tokens > 0) {
      judged_itl_tokens_ += tokens;
      if (itl > itl_threshold_) judged_itl_over_ += tokens;
    }
    if (at < itl_from_) return;
    if (detail_ == StatsDetail::kFull) {
      itl_.Add(itl, tokens);
    } else if (tokens > 0) {
      itl_tokens_ += tokens;
      itl_sum_ns_ += std::max<int64_t>(1, itl.nanos()) * tokens;
    }
  }
  // `count` consecutive steps of `tokens` decodes and nothing else that end at ends[0, count), the
  // first started at `first_start` and each next one when the one before ended: the same as
  // OnInterTokenLatency(end - start, tokens, end) and OnTokens(tokens, 0) for each (coalesced
  // steps; replica.h).
  void OnDecodeSteps(const SimTime* ends, SimTime first_start, int64_t count, int64_t tokens);
  void OnStep(int64_t sequences) {
    ++engine_steps_;
    sequence_steps_ += sequences;
  }
  // `count` steps of `sequences` sequences each.
  void OnSteps(int64_t count, int64_t sequences) {
    engine_steps_ += count;
    sequence_steps_ += count * sequences;
  }
  void OnTokens(int64_t output_tokens, int64_t prompt_tokens_computed) {
    output_tokens_ += output_tokens;
    prompt_tokens_computed_ += prompt_tokens_computed;
  }
  void OnPreemptions(int64_t n) { preemptions_ += n; }
  void OnPrefixCache(int64_t queried_tokens, int64_t hit_tokens) {
    prefix_queried_ += queried_tokens;
    prefix_hits_ += hit_tokens;
  }
  void OnKvUsage(double usage) {
    if (usage > kv_peak_) kv_peak_ = usage;
  }
  void AddGpuSeconds(double s) { gpu_seconds_ += s; }
  void OnEvent(SimTime t) {
    if (t > last_event_) last_event_ = t;
  }

  // queued/running: what is still in the fleet at the end of the run.
  RunSummary Summarize(int64_t queued_at_end, int64_t running_at_end) const;

 private:
  TtftSlo slo_;
  StatsDetail detail_;
  std::function<void(const RequestRecord&)> sink_;
  TtftLog* log_ = nullptr;
  int64_t injected_ = 0, completed_ = 0, rejected_ = 0, aborted_ = 0, slo_met_ = 0;
  SimTime judge_from_ = SimTime::Zero();
  SimTime itl_from_ = SimTime::Zero();
  int64_t judged_ = 0, judged_met_ = 0;
  bool any_arrival_ = false;
  SimTime first_arrival_, last_event_;
  std::vector<double> ttft_ms_, e2e_ms_, sched_ms_;  // e2e and sched: kFull only
  // kSloOnly: the scheduling delays' count and sum, added in the order the records come (the
  // order SummarizeLatencies would add them in, so the mean is the same to the last bit).
  int64_t sched_count_ = 0;
  double sched_sum_ms_ = 0;
  WeightedDurationHistogram itl_;  // kFull
  // kSloOnly: the inter-token gaps' token count and sum (as WeightedDurationHistogram sums them).
  int64_t itl_tokens_ = 0;
  int64_t itl_sum_ns_ = 0;
  int64_t prefill_count_ = 0, prefill_sum_ns_ = 0, queue_sum_ns_ = 0, prefill_prompt_tokens_ = 0;
  SimDuration itl_threshold_ = SimDuration::Zero();
  int64_t judged_itl_tokens_ = 0, judged_itl_over_ = 0;
  int64_t preemptions_ = 0, engine_steps_ = 0, sequence_steps_ = 0;
  int64_t output_tokens_ = 0, prompt_tokens_computed_ = 0;
  int64_t prefix_queried_ = 0, prefix_hits_ = 0;
  double kv_peak_ = 0, gpu_seconds_ = 0;
};

// Linear-interpolation quantile of an unsorted sample (copied); q in [0, 1]. Empty -> 0.
double Quantile(std::vector<double> values, double q);
LatencySummary SummarizeLatencies(const std::vector<double>& millis);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_RUN_STATS_H_
