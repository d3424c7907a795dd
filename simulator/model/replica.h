// One vLLM-style engine (V1 scheduler semantics) on one replica, as an event-driven state machine.
//
// Each step (docs/architecture.md "The twin"):
//  1. The running list first, in admission order: decoding requests get one token each; requests
//     still in prefill (partial prefills stay in the running list) get their next chunk, within the
//     token budget (max_num_batched_tokens). A chunk is at most long_prefill_token_threshold
//     tokens when that is set (vLLM V1's way to run several prefills side by side; with it unset,
//     its default, one long prompt takes the whole budget step after step, and every request
//     behind it waits for its whole prefill).
//  2. If a running request can't get the KV block it needs, the most recently admitted running
//     request is preempted (recompute: its blocks are freed, it goes to the front of the waiting
//     queue and will re-prefill its prompt plus the tokens it had generated). A step that preempted
//     admits nothing new.
//  3. Otherwise waiting requests are admitted FCFS while the budget and max_num_seqs allow and
//  their
//     blocks can be allocated; the first that can't stops admission. "Its blocks" are the whole
//     prompt's (less prefix-cache hits) with EngineLimits::reserve_full_prompt (vLLM's
//     scheduler_reserve_full_isl, the default since March 2026), else only the first chunk's (the
//     V1 releases before). Either way only the chunk's blocks are taken at admission; later chunks
//     allocate as they run, so nothing is reserved: a partial prefill's remaining blocks still look
//     free to the next admission, as in vLLM. First-chunk admission over-admits long prompts: each
//     admitted prompt's later chunks then need blocks that decodes and other prompts took, the
//     newest running request is preempted, re-prefills from scratch, and under load the wasted
//     prefill feeds on itself (2,000 prompts of 12k tokens at 1.2 req/s on one H100, default
//     profile: 1,848 preemptions and TTFT p50 101 s; with the full-prompt check 32 and 0.86 s;
//     replica_test.cc works a small case by hand).
// Times: TTFT runs from the arrival at the fleet's front end to the first output token and is
// recorded once; queue time runs to the most recent scheduling.
//
// Prefix cache (EngineLimits::enable_prefix_caching; prefix_cache.h): a waiting request being
// admitted (first time or after a preemption) looks up the longest cached run of its prompt's
// leading full blocks, capped at prefill_target - 1 tokens as vLLM caps it (the last token must
// run to give logits); the hit blocks are referenced, `computed` starts after them and only the
// rest is prefilled, counting against the token budget. When a chunk is scheduled, the full prompt
// blocks it fills are registered under their keys at once, as vLLM's allocate_slots does (each
// layer writes the step's KV before its attention reads it, so a request scheduled later in the
// same step may already reuse them). A finished or preempted sequence drops its references (cached
// blocks stay, evictable) and frees its other blocks. Only prompt blocks are cached: vLLM also
// caches full blocks of generated tokens, so a request re-admitted after a preemption recomputes
// its generated tokens here where vLLM would hit them. KV usage counts referenced blocks only.
// Without a prefix cache a request may carry an assumed hit (RequestSpec::assumed_cached_tokens:
// the twin knows the traffic's reuse only as the pods' hit share): at its first admission its
// `computed` starts after those whole blocks, short of the last token, which it holds as its own
// blocks (no other sequence shares them), and only the rest is prefilled. A preempted request
// recomputes its whole prompt.
// With caching off, or for a request without prefix ids, none of this runs.
//
// Cost per step does not grow with the batch. vLLM requires max_num_batched_tokens >=
// max_num_seqs, so every decoding request runs in every step; the decode set is therefore kept in
// aggregate: a global step counter, each sequence's finishing step in a min-heap, the sum of
// contexts advanced by the batch size per step, and block growth read from a histogram of
// (context - step) mod block_size. Only prefill chunks (at most a few per step), admissions,
// completions and preemptions touch individual sequences; the prefix cache adds per-block work
// only for admissions (the lookup) and the blocks a scheduled chunk fills (registration).
//
// Step coalescing (ReplicaOptions::coalesce_steps, on by default). A step of decodes only (no
// prefill running or admitted) is usually followed by more of the same: the batch stays as it is
// until a request finishes, a prompt is admitted or a sequence is preempted, and each step only
// advances the aggregate above. When a step of decodes only starts, the engine works out the steps
// that follow it while nothing can change: no sequence finishes before the last of them (the
// finish heap's top), each one's blocks fit in what is free (no preemption), the waiting queue is
// empty or its head provably stays refused (admission is retried every step; see
// AdmissionStaysBlocked), and every one of them ends by the horizon of the RunUntil in progress
// (Simulation::Horizon), so whoever looks at the replica after RunUntil returns finds it as
// stepping one by one leaves it. Their durations are drawn then, in order (the same StepTime and
// the same noise draws, one per step), and one event is scheduled at the last one's end, ordered
// among ties as the last step's own event would be (Simulation::ScheduleAsIf). That event first
// replays the earlier steps' ends and starts in order, each with the bookkeeping its own event
// would have done (statistics, vLLM metrics, KV blocks taken at its start), then ends the last
// step as usual. Anything from outside that changes what the engine does next (a request entering
// the waiting queue, a phase change, an abort, an adoption) first replays the step ends that come
// before it in the event order (Simulation::CurrentEvent) and cuts the run after the step in
// progress, giving back its noise draws for the steps dropped. Between those points nothing
// outside reads what changes step by step (the router and the fleet read requests in flight and
// waiting, which do not change), so per-request times, statistics, metrics and random draws are
// those of stepping one by one. The one tie this cannot order as stepping does: an outside event at
// the same nanosecond as a coalesced step's end that was also scheduled at the same nanosecond as
// that step's start; it is taken to come after the step's end.
//
// Not thread-safe: owned by one Simulation.
#ifndef TWINSCALE_SIMULATOR_MODEL_REPLICA_H_
#define TWINSCALE_SIMULATOR_MODEL_REPLICA_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "simulator/core/rng.h"
#include "simulator/core/simulation.h"
#include "simulator/model/deployment.h"
#include "simulator/model/kv_cache.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/lifecycle.h"
#include "simulator/model/prefix_cache.h"
#include "simulator/model/run_stats.h"
#include "simulator/model/vllm_metrics.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

// Told by a replica about changes the fleet reacts to.
class ReplicaObserver {
 public:
  virtual ~ReplicaObserver() = default;
  // A request left the replica (finished or aborted): capacity freed.
  virtual void OnRequestLeft(int32_t replica) = 0;
  // A draining replica has no work left.
  virtual void OnDrained(int32_t replica) = 0;
};

struct ReplicaOptions {
  int32_t index = 0;
  const DeploymentSpec* deployment = nullptr;  // outlives the replica
  const LatencyModel* latency = nullptr;       // outlives the replica
  RunStats* stats = nullptr;                   // outlives the replica
  ReplicaObserver* observer = nullptr;         // may be null
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";
  double step_noise_cv = 0.0;  // multiplicative gamma noise on step time (truth perturbation)
  // Keep the vLLM-format metrics (metrics()). false: metrics() stays at its initial state and the
  // engine skips every update — about a tenth of a what-if's cost, and the twin reads none of it
  // (it judges from RunStats).
  bool vllm_metrics = true;
  // Advance runs of decode-only steps in one event (see above); false: one event per step. Results
  // are the same either way.
  bool coalesce_steps = true;
  uint64_t seed = 1;
  uint64_t run = 0;
};

class Replica : public EventHandler {
 public:
  Replica(Simulation& sim, ReplicaOptions options);
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  int32_t index() const { return options_.index; }
  ReplicaPhase phase() const { return phase_; }
  // Lifecycle transitions are decided by the fleet. Entering Ready starts the slow period.
  void SetPhase(ReplicaPhase phase, SimTime now, bool slow_start = true);
  SimTime phase_since() const { return phase_since_; }

  // A request routed here at the front door at `now`; it reaches the waiting queue after the
  // latency model's front-end delay. Requests that could never fit in the KV cache are rejected.
  void Accept(const RequestSpec& request, SimTime now);

  // Seeds the engine with a request that is already decoding (the twin starting from an observed
  // fleet): `generated` >= 1 tokens are out, its prompt and all but the newest token are in KV. It
  // joins the running list at the tail and reports nothing to the run's statistics (its TTFT
  // happened before the run). Returns false, changing nothing, if its blocks don't fit.
  bool AdoptRunning(const RequestSpec& request, int32_t generated, SimTime now);

  // Aborts everything in flight (drain deadline passed). Returns how many were aborted.
  int64_t AbortAll(SimTime now);

  // Requests accepted and not yet finished: in the front end, waiting or running.
  int64_t in_flight() const {
    return in_transit_ + static_cast<int64_t>(waiting_.size()) + num_running_;
  }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return num_running_; }
  int64_t num_in_transit() const { return in_transit_; }
  double kv_usage() const { return pool_.Usage(); }
  const KvBlockPool& kv_pool() const { return pool_; }
  // Null unless EngineLimits::enable_prefix_caching.
  const PrefixCache* prefix_cache() const { return prefix_cache_.get(); }
  int64_t steps() const { return step_index_; }
  bool busy() const { return busy_; }
  // Empty (never updated) with ReplicaOptions::vllm_metrics false.
  const VllmMetrics& metrics() const { return metrics_; }

  void OnEvent(uint64_t tag, SimTime now) override;

 private:
  enum class SeqState : uint8_t { kFree, kTransit, kWaiting, kPrefill, kDecode };
  struct Seq {
    uint64_t id = 0;
    SimTime arrival;         // at the fleet's front door
    SimTime engine_arrival;  // entered the waiting queue
    SimTime first_scheduled = SimTime::Max();
    SimTime last_scheduled;
    SimTime first_token;
    SimTime last_token;
    int32_t prompt = 0, output = 0;
    int32_t generated = 0;       // tokens emitted (materialized unless decoding)
    int64_t computed = 0;        // tokens with KV (materialized unless decoding)
    int64_t prefill_target = 0;  // tokens to compute before the next token is sampled
    int64_t blocks = 0;          // blocks held (materialized unless decoding)
    int64_t d0_step = 0;         // decode anchors: step index, computed and generated at that step
    int64_t d0_computed = 0;
    int32_t d0_generated = 0;
    int32_t preemptions = 0;
    int32_t assumed_cached = 0;    // RequestSpec::assumed_cached_tokens (no prefix cache only)
    uint32_t epoch = 0;            // bumped when the slot is reused or leaves decode (lazy heap)
    int32_t prev = -1, next = -1;  // running list links (admission order)
    SeqState state = SeqState::kFree;
    bool has_first_token = false;
    bool adopted = false;  // seeded by AdoptRunning: invisible to statistics
    // Prefix cache; empty / zero unless caching is on and the request has prefix ids. The vectors
    // keep their capacity when the slot is reused.
    std::vector<uint64_t> prefix_ids;  // the request's ids, one per 512 prompt tokens
    std::vector<int32_t> cache_refs;   // cache entries held, one reference each, in block order
    int64_t keyed_blocks = 0;          // leading prompt blocks that have keys (KeyedBlocks)
    int64_t keyed_done = 0;            // of them, those already hit or registered
    uint64_t chain_key = PrefixCache::kRootKey;  // key of block keyed_done - 1
  };
  struct HeapEntry {
    int64_t finish_step;
    int32_t slot;
    uint32_t epoch;
    bool operator>(const HeapEntry& o) const {
      if (finish_step != o.finish_step) return finish_step > o.finish_step;
      return slot > o.slot;
    }
  };
  struct PlannedChunk {
    int32_t slot;
    int64_t tokens;
  };

  int32_t AllocSlot();
  int32_t AllocFreshSeq();  // AllocSlot + reset to a default Seq
  void FreeSlot(int32_t slot);
  void LinkRunningTail(int32_t slot);
  void UnlinkRunning(int32_t slot);
  int32_t ResidueKey(int64_t computed, int64_t step) const;
  int64_t DecodeComputed(const Seq& s) const { return s.d0_computed + (step_index_ - s.d0_step); }
  int32_t DecodeGenerated(const Seq& s) const {
    return s.d0_generated + static_cast<int32_t>(step_index_ - s.d0_step);
  }
  void JoinDecode(int32_t slot);
  void LeaveDecode(int32_t slot);  // materializes computed/generated/blocks
  // Takes n blocks (with the prefix cache: evicting cached ones when no empty block is left).
  bool AllocateBlocks(int64_t n);
  // Gives back every block the sequence holds: references dropped, private blocks freed.
  void ReleaseBlocks(Seq& s);
  // Registers the sequence's keyed prompt blocks that are full once it holds `tokens` of KV.
  void RegisterPromptBlocks(Seq& s, int64_t tokens);
  // The prefill tokens a request may take in one step, before the budget: `tokens` capped at
  // EngineLimits::long_prefill_token_threshold when that is set.
  // The whole blocks of an assumed prefix hit (RequestSpec::assumed_cached_tokens) at `s`'s first
  // admission, short of its last token; 0 after a preemption.
  int64_t AssumedHitBlocks(const Seq& s) const;
  int64_t CapChunk(int64_t tokens) const;
  void Preempt(int32_t slot, SimTime now);
  void Finish(int32_t slot, SimTime last_token_time, bool aborted);
  // The vLLM histograms a finished request feeds (its record `rec` already built).
  void ObserveFinished(const Seq& q, const RequestRecord& rec, SimTime last_token_time,
                       bool aborted);
  void EnterWaiting(int32_t slot, SimTime now);
  void MaybeStartStep(SimTime now);
  void StartStep(SimTime now);
  void EndStep(SimTime now);
  void PublishGauges();
  // The duration of a step of this shape starting at `start`: the latency model, the slow start,
  // and (with step_noise_cv) one noise draw.
  SimDuration StepDuration(const BatchShape& shape, SimTime start);
  // The latency model's `dt` for a step starting at `start`, with the slow start and the noise.
  SimDuration AdjustStepTime(SimDuration dt, SimTime start);
  double NoiseFactor();
  // Step coalescing (see above). PlanQuietSteps extends run_ends_ past the step just started,
  // whose shape is `shape`.
  void PlanQuietSteps(const BatchShape& shape);
  // Whether the admission StartStep tries every step keeps refusing the waiting queue's head while
  // the batch only decodes (true when the queue is empty).
  bool AdmissionStaysBlocked();
  // The blocks the starts of the run's steps 1..j take.
  int64_t RunNeed(int64_t j) const;
  // Replays the ends of the coalesced steps before `upto` and the starts of the steps after them.
  void ApplyQuietSteps(size_t upto);
  // Before an outside change: replays the coalesced step ends that come before the current event
  // and cuts the run after the step in progress.
  void SyncRun();
  // Puts the noise stream where it was after the first step of the run and `draws` more draws.
  void RewindNoise(int64_t draws);

  Simulation& sim_;
  ReplicaOptions options_;
  const DeploymentSpec& deployment_;
  const LatencyModel& latency_;
  RunStats& stats_;
  KvBlockPool pool_;
  std::unique_ptr<PrefixCache> prefix_cache_;  // null unless enable_prefix_caching
  std::vector<int32_t> hit_entries_;           // scratch for admission lookups
  std::vector<uint64_t> new_keys_;             // scratch: keys of the blocks a step filled
  VllmMetrics metrics_;
  Rng noise_rng_;
  SimDuration emission_delay_;

  ReplicaPhase phase_ = ReplicaPhase::kReady;
  SimTime phase_since_;
  SimTime slow_until_;

  std::vector<Seq> seqs_;
  std::vector<int32_t> free_slots_;
  std::deque<int32_t> waiting_;
  int32_t run_head_ = -1, run_tail_ = -1;
  int64_t num_running_ = 0;
  int64_t in_transit_ = 0;
  std::vector<int32_t> prefilling_;  // running sequences in prefill, admission order

  // Decode aggregate.
  int64_t step_index_ = 0;  // index of the next step to run
  // (-step_index_) mod block_size: the residue key of the decodes whose next token opens a new
  // block (ResidueKey). Kept as the steps advance: two 64-bit divisions per step were a third of
  // StartStep's time.
  int32_t due_key_ = 0;
  int64_t num_decode_ = 0;
  int64_t decode_ctx_sum_ = 0;
  std::vector<int64_t> residue_hist_;
  std::vector<HeapEntry> finish_heap_;

  // The step in progress.
  bool busy_ = false;
  bool kick_pending_ = false;
  uint32_t step_epoch_ = 0;
  SimTime step_start_;
  int64_t plan_decode_ = 0;
  std::vector<PlannedChunk> plan_prefill_;

  // The coalesced run in progress: its first step started at run_start_, step j ends at
  // run_ends_[j] (and the next one starts then); the steps before run_next_ have been replayed, so
  // step run_next_ is the one the engine's state shows in progress (since step_start_). One entry
  // when the step in progress is not coalesced with any other.
  SimTime run_start_;
  std::vector<SimTime> run_ends_;
  // The blocks the starts of steps 1..i take, for i in [0, block_size]; they repeat every
  // block_size steps (RunNeed).
  std::vector<int64_t> run_need_;
  size_t run_next_ = 0;
  std::vector<SimDuration> step_times_;  // scratch for PlanQuietSteps
  std::optional<Rng> run_rng_;  // with step noise: the stream after the run's first step's draw
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_REPLICA_H_
