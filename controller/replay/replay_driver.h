// `twinscale replay`'s loop: one autoscaler against a simulated cluster driven by a trace, on
// simulated time, and what it cost and delivered.
//
// RunReplay builds a SimulatedCluster (the truth fleet: the deployment perturbed by the truth
// perturbations, the trace, the seed), starts it with `initial_replicas` Ready pods, and then,
// every SyncPeriod of the autoscaler (at SyncPeriod, 2 x SyncPeriod, ...): advances the cluster,
// builds the view a controller would see, asks the autoscaler, and scales to its answer. When the
// trace has ended it goes on (the autoscaler still deciding) until every request has left the
// fleet, or for at most `max_drain` after the last arrival. GPU-hours count every pod from
// Loading until it is gone, from time 0 to the last decision.
//
// Pre-roll: a replayed hour stands for an hour of a fleet that was already running, under a
// controller that had been deciding on the traffic before it. Started cold, every autoscaler
// would meet the trace's first minutes with whatever fleet the replay chose for it (the oracle's
// first minute: a zero-lag lower bound), while a static fleet meets them at its full size. With
// `pre_roll` > 0 the run first plays the trace's first `pre_roll` of arrivals (WithPreRoll), with
// the autoscaler deciding as usual, and only then the trace itself: each policy meets the trace
// with the fleet its own rule holds for that traffic (simulation's warm-up deletion). Nothing of
// the pre-roll is counted: not its requests (their fates are dropped), its GPU-hours, its
// decisions, nor its timeline; "time 0" below is the trace's first arrival, after the pre-roll.
//
// Common random numbers: the fleet's random streams (routing, lifecycle delays, step noise) come
// from (seed, run 0), so every policy replayed with the same config sees the same trace and the
// same truth; the run is deterministic for a seed (only wall_seconds varies).
//
// Definitions used by the summary (every request of the trace counts):
// - A request meets the SLO when its TTFT <= slo.threshold + slo.per_prompt_token x its prompt.
//   Rejected requests, requests aborted before their first token, and requests still in the
//   fleet when the drain limit stops the run are misses.
// - attainment = requests meeting the SLO / requests in the trace.
// - A minute (of arrival time, [60k, 60k + 60) s from the first arrival) with traffic meets the
//   SLO when at least slo.percentile% of the requests arriving in it meet the SLO: its p90 TTFT
//   (for percentile 90) is within the SLO, counted exactly as the attainment is, rejected ones as
//   misses. minute_share = such minutes / minutes with traffic, each weighing 1 but the trace's
//   last, which weighs the part of it up to the last arrival (a partial minute by its length).
// - TTFT percentiles are over the requests that produced a first token (linear interpolation, as
//   `twinscale simulate` reports them); scale events count the decisions that changed the desired
//   count; max_replicas is the largest desired count (the initial one, or the one the pre-roll
//   left, included).
//
// Timeline: one row per decision at time t, about the interval [t - SyncPeriod, t): the trace's
// arrivals and their tokens in it, the truth fleet's state at t and the decision taken at t. Its
// TTFT p90 is over the requests whose first token came in the interval (emission time = arrival +
// TTFT); rejections are counted at their arrival time.
//
// The twin's error: after each decision the autoscaler's LastPrediction, if any, is checked
// against the truth's per-request record and its queue at each decision (twin_error.h says how);
// requests still in the fleet when the drain limit stops the run are not in that record.
//
// Thread-safety: none inside; separate RunReplay calls (with separate autoscalers) may run on
// separate threads.
#ifndef TWINSCALE_CONTROLLER_REPLAY_REPLAY_DRIVER_H_
#define TWINSCALE_CONTROLLER_REPLAY_REPLAY_DRIVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/replay/autoscaler.h"
#include "controller/replay/truth.h"
#include "controller/replay/twin_error.h"
#include "simulator/core/time.h"
#include "simulator/model/deployment.h"
#include "simulator/model/router.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/trace.h"

namespace twinscale::replay {

struct ReplayConfig {
  std::shared_ptr<const sim::Trace> trace;  // normalised (the trace readers return it so)
  sim::DeploymentSpec deployment;           // the profile's, before the truth perturbations
  Truth truth;
  // The router in front of the truth fleet (the twin assumes LeastRequests); Truth::routing
  // replaces it with Random.
  sim::RouterKind router = sim::RouterKind::kLeastRequests;
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";  // the vLLM model_name label
  uint64_t seed = 1;
  int32_t initial_replicas = 1;  // Ready at time 0 (the policy's minimum, or a given start)
  sim::TtftSlo slo;
  // How the autoscaler's metrics are taken (simulated_cluster.h): zero interval = at each
  // decision; scrape_delay = how old they are when it decides.
  absl::Duration scrape_interval = absl::ZeroDuration();
  absl::Duration scrape_delay = absl::ZeroDuration();
  absl::Duration max_drain = absl::Minutes(30);  // after the last arrival
  absl::Time start = absl::UnixEpoch();          // absl::Time of the first arrival
  // Played before the trace and not counted (see the file comment). Rounded up to whole sync
  // periods of the autoscaler, and at most the trace's span so rounded (a short trace is
  // pre-rolled once, whole).
  absl::Duration pre_roll = absl::ZeroDuration();
  // What came before the trace, when the source knows it (a rate curve played from its middle):
  // arrivals from 0, its last pre_roll played as the pre-roll in place of the trace's own first
  // pre_roll, so the counted run starts with the fleet the earlier traffic left. Null: the trace's
  // own start is pre-rolled.
  std::shared_ptr<const sim::Trace> history;
  absl::Duration history_span = absl::ZeroDuration();  // the history's length
  // Enforce the autoscaler's advisory admission limits (Autoscaler::Admission) at the simulated
  // gateway after every decision, the pre-roll's included: what admission would have done. Off
  // for the comparison of policies, whose rows admit everything.
  bool enforce_admission = false;
  // Called after every decision with the simulated time reached (for a progress bar).
  std::function<void(absl::Duration)> progress;
};

struct TimelineRow {
  absl::Duration time;      // since the first arrival: the decision's time, the interval's end
  absl::Duration interval;  // its length (the sync period)
  int64_t arrivals = 0;
  double arrival_rps = 0;
  double prompt_tokens_per_s = 0;  // of the requests arriving in the interval
  double output_tokens_per_s = 0;
  int32_t desired = 0;  // decided at `time`
  int32_t ready = 0;    // truth at `time`
  int32_t warming = 0;
  int64_t waiting = 0;  // engines' queues plus the gateway
  int64_t running = 0;
  double kv_mean = 0;
  int64_t first_tokens = 0;           // requests whose first token came in the interval
  std::optional<double> ttft_p90_ms;  // of those; empty when none
  int64_t rejected = 0;
  std::string reason;  // the autoscaler's LastReason()
};

struct ReplaySummary {
  std::string policy;  // Autoscaler::Name()
  std::string family;  // PolicyFamily(policy)
  std::string truth;   // Describe(truth)
  uint64_t seed = 0;
  double gpu_hours = 0;
  int64_t requests = 0;  // in the trace
  int64_t served = 0;    // completed
  int64_t rejected = 0;
  int64_t aborted = 0;     // cut off by a drain deadline
  int64_t unfinished = 0;  // still in the fleet when the drain limit stopped the run
  double ttft_p50_ms = 0, ttft_p90_ms = 0, ttft_p99_ms = 0;
  double attainment = 0;
  int64_t minutes_with_traffic = 0;
  int64_t minutes_meeting_slo = 0;
  // The same minutes weighed as the target counts them: every minute whole but the trace's last,
  // which weighs the part of it up to the last arrival (last_minute_weight, 0..1; the oracles
  // weigh it alike). minute_share = minutes_met_weighted / minutes_weighted (1 when no minute has
  // traffic; the plain counts' share where the traffic weighs nothing, all of it at one instant).
  double minutes_weighted = 0;
  double minutes_met_weighted = 0;
  double last_minute_weight = 1;
  double minute_share = 0;
  int32_t scale_events = 0;
  int32_t max_replicas = 0;
  double simulated_seconds = 0;     // from the first arrival to the last decision
  double pre_roll_seconds = 0;      // played before the first arrival, not counted
  bool admission_enforced = false;  // ReplayConfig::enforce_admission: not in the comparison
  double wall_seconds = 0;          // 0 without a clock
  int64_t decisions = 0;
  // The twin's error over the run's settled decisions (twin_error.h); nullopt for a policy
  // without a twin (Autoscaler::LastPrediction) or when no decision counts.
  std::optional<TwinError> twin_error;
};

struct ReplayResult {
  ReplaySummary summary;
  std::vector<TimelineRow> timeline;
  // Each counted decision's prediction beside the truth's record over its span (twin_error.h),
  // in order; empty for a policy without a twin.
  std::vector<CheckedPrediction> twin_checks;
};

// The quality target of docs/architecture.md "Quality target": spec.slo.target as shares (its
// percent / 100); `twinscale replay` takes the first manifest's, else these defaults.
struct AttainmentTarget {
  double requests = 0.95;  // share of requests within the TTFT SLO
  double minutes = 0.95;   // share of minutes with traffic whose p90 meets it
};
bool MeetsTarget(const ReplaySummary& s, const AttainmentTarget& target = {});

// A policy's family: its name without a trailing "-<number>" ("keda-queue-5" -> "keda-queue",
// "hpa-kv-0.7" -> "hpa-kv", "static-8" -> "static", "twinscale" -> "twinscale").
std::string PolicyFamily(std::string_view policy);

// The trace a pre-rolled run plays (normalised: first arrival at 0, ids renumbered): the
// requests of `trace` arriving before `pre_roll`, each with prefix ids of its own (mixed with a
// fixed salt, as ScaleRate gives a copy its own: a pre-rolled conversation must not warm the
// prefix cache for the same conversation in the trace), then every request of `trace` shifted by
// `pre_roll`. So the requests arriving before `pre_roll` are exactly the pre-roll's.
sim::Trace WithPreRoll(const sim::Trace& trace, sim::SimDuration pre_roll);
// The same with `history` (arrivals from 0, spanning `history_span`) as the pre-roll: its last
// `pre_roll` is played, ending where the trace begins.
sim::Trace WithPreRoll(const sim::Trace& trace, sim::SimDuration pre_roll,
                       const sim::Trace& history, sim::SimDuration history_span);

// InvalidArgument for a missing trace, initial_replicas < 0, a non-positive SyncPeriod, a
// pre_roll < 0 or max_drain < 0. `wall_clock` (may be null) times the run for wall_seconds.
absl::StatusOr<ReplayResult> RunReplay(const ReplayConfig& config, Autoscaler& autoscaler,
                                       const Clock* wall_clock = nullptr);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_REPLAY_DRIVER_H_
