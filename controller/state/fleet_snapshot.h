// FleetSnapshot: the policy's whole view of one target's fleet at one decision — per replica its
// lifecycle stage, age, queue, running batch and KV use; fleet-wide the arrival rate (from the
// change in finished requests plus the change in waiting + running, so overload doesn't hide it)
// over the last interval and over the last minute, its burstiness (index of dispersion of
// per-interval arrival counts, and the rate's CV from one interval to the next), prompt and output
// length means, and the observed TTFT over the last window (fleet-wide histogram, summed before any
// quantile).
//
// SnapshotBuilder turns successive ClusterViews into snapshots. It keeps the previous scrape of
// every pod (counters and histograms) to take increases — counter resets handled as Prometheus'
// increase() does — and a short history of arrival counts for the dispersion. Pure: no I/O, no
// clock; time comes in with the view. Not thread-safe: one builder per target.
#ifndef TWINSCALE_CONTROLLER_STATE_FLEET_SNAPSHOT_H_
#define TWINSCALE_CONTROLLER_STATE_FLEET_SNAPSHOT_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/metrics/cumulative_histogram.h"
#include "controller/state/arrival_history.h"
#include "controller/state/cluster_view.h"
#include "controller/state/input.h"
#include "controller/state/rate_estimators.h"  // the workload's rate level and persistence
#include "controller/state/seasonal_forecast.h"

namespace twinscale::state {

struct ReplicaState {
  std::string name;
  PodView::Stage stage = PodView::Stage::kReady;
  absl::Duration age;
  absl::Duration ready_for;
  bool unschedulable = false;
  bool fresh = false;   // scraped successfully within staleAfter
  int32_t engines = 0;  // vLLM engines in the pod (a replica is {pods, engines})
  double waiting = 0;   // summed over engines
  double running = 0;
  double kv_usage = 0;             // mean over engines, 0..1
  int64_t kv_capacity_tokens = 0;  // num_gpu_blocks x block_size summed over engines (0: unknown)
};

struct WorkloadEstimate {
  Input<double> arrival_rate = Input<double>::Stale("no data yet");  // requests per second
  // The rate's level, around which rate_cv describes the swings from one interval to the next:
  // the mean over the intervals since the level last shifted (LevelOf, rate_estimators.h), at most
  // SnapshotOptions::rate_level_intervals of them. 0 until an interval was counted.
  double arrival_rate_level = 0;
  int32_t rate_level_intervals = 0;  // the intervals it averages
  bool rate_level_shifted = false;   // this interval's count found a new level
  // Where the rate goes from its level, and how fast: the mean over the newest
  // SnapshotOptions::rate_level_intervals intervals whatever the shifts (0 until an interval was
  // counted), and RatePersistence's regression weights on the level's departure from it, one per
  // interval ahead (empty until there is history enough: the level then holds). The twin draws
  // interval k's rate around baseline + persistence[k-1] x (level - baseline) (forecaster.h).
  double arrival_rate_baseline = 0;
  std::vector<double> rate_persistence;
  // The seasonal part of the forecast (seasonal_forecast.h): for the k-th interval ahead, how the
  // rate moved one or more days ago from the level's window to that interval; the twin's rate there
  // is the persistence path's times rate_season[k - 1], the last ratio standing for every later
  // interval. Empty until the arrival history covers a past day, and while the season has lately
  // forecast worse than the level alone (season_skill; the path alone then holds).
  std::vector<double> rate_season;
  SeasonSkill::Score season_skill;
  double dispersion = 1.0;  // variance / mean of per-interval arrival counts (Poisson: 1)
  // The same burstiness as the twin uses it: the CV of the per-interval arrival rate beyond
  // Poisson noise, sqrt(max(0, dispersion - 1) / mean count) (a rate varying by this CV from one
  // interval to the next, Poisson within, has that dispersion), and the intervals' mean length.
  // Computed from the unclamped dispersion; 0 until 4 intervals are seen.
  double rate_cv = 0;
  absl::Duration rate_interval = absl::Seconds(15);
  Input<double> prompt_tokens_mean = Input<double>::Stale("no data yet");
  Input<double> output_tokens_mean = Input<double>::Stale("no data yet");
  Input<double> ttft_p90_seconds = Input<double>::Stale("no data yet");  // observed, last window
  // The share of the window's first tokens within the SLO's threshold; Stale where the SLO's
  // target grows with the prompt (SnapshotOptions::slo_per_prompt_token_seconds).
  Input<double> ttft_attainment = Input<double>::Stale("no data yet");
  std::optional<metrics::CumulativeHistogram> ttft_window;  // fleet-wide TTFT increase
  // Fleet-wide request length histograms: the latest windows that saw requests finish, until they
  // hold SnapshotOptions::min_length_requests.
  std::optional<metrics::CumulativeHistogram> prompt_lengths, output_lengths;
  // Mean inter-token latency over the window (fleet-wide), over itl_tokens token gaps (settled
  // Ready pods only): what calibration fits the twin's speed against.
  Input<double> itl_mean_seconds = Input<double>::Stale("no data yet");
  double itl_tokens = 0;
  // Mean prefill time over the window (vllm:request_prefill_time_seconds, sum / count: from the
  // engine first scheduling a request to its first token), over prefill_requests requests that
  // finished in it (settled Ready pods only): what calibration fits the prefill speed against.
  Input<double> prefill_mean_seconds = Input<double>::Stale("no data yet");
  double prefill_requests = 0;
  // The same requests' prefill time over their prompt tokens (vllm:request_prompt_tokens, both
  // observed as a request finishes): calibration's prefill observable. Stale where the two
  // histograms counted different requests.
  Input<double> prefill_seconds_per_prompt_token = Input<double>::Stale("no data yet");
  // The same for the queue time (vllm:request_queue_time_seconds: reaching the engine to being
  // scheduled): what calibration fits the gateway's balance against.
  Input<double> queue_mean_seconds = Input<double>::Stale("no data yet");
  double queue_requests = 0;
  // The time before the engine (calibration's front end), over front_end_requests requests that
  // finished in the window on settled pods: their mean end-to-end latency less their mean queue,
  // prefill and decode times (vllm:e2e_request_latency_seconds, request_queue_time_seconds,
  // request_prefill_time_seconds, request_decode_time_seconds, all observed as a request
  // finishes, so the four means are over the same requests). vLLM's arrival time is stamped in
  // the API server, its queue time starts when the engine has the request, and the four phases
  // are consecutive, so the difference is the API server's own time (tokenization, hand-over).
  // Stale where the four histograms counted different requests.
  Input<double> front_end_seconds = Input<double>::Stale("no data yet");
  double front_end_requests = 0;
  // The share of prompt tokens the pods found in their prefix caches (vllm:prefix_cache_hits over
  // vllm:prefix_cache_queries, both in tokens, counted at a request's first admission), over the
  // latest windows (at most dispersion_history) that looked up any; the twin skips that share of
  // its prompts' prefill (twin::PrefixReuse). Stale until a pod reports the counters.
  Input<double> prefix_cache_hit_share = Input<double>::Stale("no data yet");
  double prefix_cache_queried_tokens = 0;  // the tokens that share is over
  double kv_usage_mean = 0;
};

struct FleetSnapshot {
  absl::Time at;
  int32_t spec_replicas = 0;
  std::vector<ReplicaState> replicas;
  WorkloadEstimate workload;
  // The engine the pods run, for the twin to simulate it rather than the spec's guess
  // (docs/architecture.md "The InferenceAutoscaler spec"): the vLLM flags most non-terminating pods
  // run (the first such pod's on a tie; nullopt when no pod's command line was read), the first pod
  // whose flags could not be read, and each engine's KV capacity in tokens from
  // vllm:cache_config_info (num_gpu_blocks x block_size), the median over fresh Ready replicas (0:
  // no engine reports it).
  std::optional<EngineArgs> engine_args;
  std::string engine_args_error;
  int64_t kv_capacity_tokens_per_engine = 0;
  bool stale = false;  // some input is Stale: scale-in is frozen
  std::string stale_reason;

  int32_t CountStage(PodView::Stage s) const;
  int32_t ready() const { return CountStage(PodView::Stage::kReady); }
  double total_waiting() const;
  double total_running() const;
  double max_kv_usage() const;  // over fresh Ready replicas
};

struct SnapshotOptions {
  absl::Duration stale_after = absl::Seconds(45);
  double slo_threshold_seconds = 0.5;  // for the observed attainment
  int32_t dispersion_history = 20;     // intervals kept for the dispersion estimate
  // Pods Ready for less than this are left out of the inter-token latency used for calibration:
  // a freshly started engine runs slower for a while (compilation, cold caches) and would make
  // the whole fleet look slow.
  absl::Duration settled_after = absl::Seconds(90);
  // The arrival rate's level (WorkloadEstimate::arrival_rate_level): the mean over up to
  // rate_level_intervals intervals (5 minutes; at most dispersion_history), restarted at the latest
  // rate_shift_intervals (a minute) when their rate departs from the level before them by more
  // than level_shift_z standard errors of the measured burstiness. The test runs at every interval,
  // up to 20 times over one level: 3 SE (0.27% each, about 5% over the 20, Bonferroni) keeps a
  // level of swings from restarting by chance, where 2 SE (4.6% each) would restart most 5-minute
  // levels. Why a level at all: on stationary bursty traffic (the Azure code trace: the minute's
  // count has an autocorrelation of 0.16 at one minute) the last minute's mean is mostly noise,
  // and the twin, asked about it, would order each swing; a real step (a ramp, traffic stopping) is
  // still taken up within a minute or two.
  int32_t rate_shift_intervals = 4;
  int32_t rate_level_intervals = 20;
  double level_shift_z = 3.0;
  // RatePersistence's history (intervals kept: 35 minutes), the least number of (departure,
  // outcome) pairs it fits a lag on, and the lags it fits (4 minutes ahead: the horizon of a
  // decision, the warm-up plus a minute, at the profiles' warm-ups).
  int32_t persistence_history = 140;
  int32_t persistence_min_pairs = 40;
  int32_t persistence_lags = 16;
  // The length histograms (and means) are summed over the latest windows, newest first, until
  // they hold this many finished requests (or dispersion_history windows that saw any): one window
  // of a handful of requests (a quiet spell, traffic stopping) would otherwise set the lengths of
  // every request the twin draws. A busy window alone suffices (the Azure traces' 15 s windows
  // hold 400-3,200), so the lengths still follow a change in traffic within one interval.
  double min_length_requests = 200;
  // The seasonal forecast (WorkloadEstimate::rate_season): its period and history; how far ahead
  // it forecasts (a decision's horizon) and the span its skill is checked on (the span a decision
  // judges: from the warm-up to the horizon); the window of checks that decides whether it is used
  // (three hours of a day: spans of a few minutes that do not overlap give it dozens of checks)
  // and the least number of them.
  SeasonOptions season = {};
  absl::Duration season_lead = absl::Minutes(10);
  absl::Duration season_judged_from = absl::Minutes(1);
  double season_skill_share = 1.0 / 8;
  int32_t season_min_checks = 8;
  // The SLO's TTFT target per prompt token (slo.ttft.perPromptToken). Where it is > 0 each
  // request's target depends on its own prompt, which the TTFT histogram does not pair with its
  // first token: the observed attainment is left Stale rather than judged against the threshold
  // alone, which would count every long prompt as a miss (WorkloadEstimate::ttft_attainment).
  double slo_per_prompt_token_seconds = 0;
};

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(SnapshotOptions options);
  // Builds the snapshot of `view` and remembers its scrapes for the next increase.
  FleetSnapshot Build(const ClusterView& view);
  // New options take effect at the next Build; the arrival history is kept unless the season's
  // period changes (its buckets would no longer line up).
  void set_options(const SnapshotOptions& o);
  // Arrivals observed before this builder's first view (replay's traffic before the replayed
  // span; a history read from Prometheus): `arrivals[i]` over [from + i x step, from + (i + 1) x
  // step). They feed the seasonal forecast only; nothing else of the snapshot reads them.
  void SeedArrivals(absl::Time from, absl::Duration step, const std::vector<double>& arrivals);
  const ArrivalHistory& arrival_history() const { return arrival_history_; }

 private:
  struct PodMemory {
    absl::Time scraped_at;
    double finished = 0, in_flight = 0;
    std::optional<metrics::CumulativeHistogram> ttft, prompt_tokens, generation_tokens, itl,
        prefill, queue, e2e, decode;
    std::optional<double> prefix_queries, prefix_hits;  // summed over the pod's engines
  };
  SnapshotOptions options_;
  std::map<std::string, PodMemory> previous_;  // by pod name (ordered: deterministic)
  std::deque<double> arrival_counts_;
  std::deque<double> count_windows_s_;  // the length of each counted interval
  std::optional<absl::Time> last_build_;
  int32_t level_intervals_ = 0;  // the intervals the rate's level averaged last time
  // The longer history RatePersistence fits (persistence_history intervals).
  std::deque<double> history_counts_;
  std::deque<double> history_windows_s_;
  // Arrivals by time of day over the last days, for the seasonal forecast, and its record.
  ArrivalHistory arrival_history_;
  SeasonSkill season_skill_;
  // The latest windows' length histogram increases that saw requests finish, newest last, at most
  // dispersion_history of them: lengths change slowly and a quiet window says nothing new.
  std::deque<metrics::CumulativeHistogram> prompt_windows_, output_windows_;
  // The latest windows' prefix-cache (queried, hit) token increases that queried any, newest last,
  // at most dispersion_history of them.
  std::deque<std::pair<double, double>> prefix_windows_;
};

}  // namespace twinscale::state

#endif  // TWINSCALE_CONTROLLER_STATE_FLEET_SNAPSHOT_H_
