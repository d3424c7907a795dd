// Replica engine: see replica.h for the scheduling rules this file implements.
#include "simulator/model/replica.h"

#include <algorithm>
#include <cassert>
#include <functional>

#include "simulator/core/event_tag.h"
#include "simulator/core/samplers.h"

namespace twinscale::sim {
namespace {

// The engine's events: the end of a step (id: the step's epoch), a request through the front end
// (id: its slot, detail: the slot's epoch) and the start of a step on an idle engine.
enum class ReplicaEvent : uint8_t { kStepEnd = 0, kTransit = 1, kKick = 2 };
using ReplicaTag = EventTag<ReplicaEvent>;

// The most steps one event advances. Bounds the planning an outside change throws away (the steps
// planned past it are planned again later): on a busy fleet an arrival routed to the replica cuts
// most runs within a few tens of steps, and a longer plan is mostly thrown away, while a shorter
// one takes more events (docs/simulator-performance.md has the measurements). A run cut or
// planned short gives the same steps as one planned long (coalescing_test.cc).
constexpr int64_t kMaxCoalescedSteps = 64;

uint64_t TransitTag(int32_t slot, uint32_t epoch) {
  return ReplicaTag{ReplicaEvent::kTransit, static_cast<uint32_t>(slot), epoch}.Pack();
}

uint64_t StepEndTag(uint32_t step_epoch) {
  return ReplicaTag{ReplicaEvent::kStepEnd, step_epoch}.Pack();
}

constexpr uint64_t kKickTag = ReplicaTag{ReplicaEvent::kKick}.Pack();

VllmMetricsOptions MetricsOptionsFor(const ReplicaOptions& o, int64_t blocks) {
  VllmMetricsOptions m;
  m.model_name = o.model_name;
  m.engine = "0";
  m.num_gpu_blocks = blocks;
  m.block_size = o.deployment->engine.block_size;
  m.gpu_memory_utilization = o.deployment->engine.gpu_memory_utilization;
  m.enable_prefix_caching = o.deployment->engine.enable_prefix_caching;
  m.max_model_len = o.deployment->engine.max_model_len;
  return m;
}

}  // namespace

Replica::Replica(Simulation& sim, ReplicaOptions options)
    : sim_(sim),
      options_(std::move(options)),
      deployment_(*options_.deployment),
      latency_(*options_.latency),
      stats_(*options_.stats),
      pool_(KvCapacityBlocks(deployment_), deployment_.engine.block_size),
      metrics_(MetricsOptionsFor(options_, KvCapacityBlocks(deployment_))),
      noise_rng_(options_.seed, options_.run, Stream::kStepNoise,
                 static_cast<uint64_t>(options_.index)),
      emission_delay_(latency_.TokenEmissionDelay()),
      residue_hist_(static_cast<size_t>(deployment_.engine.block_size), 0) {
  seqs_.reserve(256);
  if (deployment_.engine.enable_prefix_caching) {
    prefix_cache_ = std::make_unique<PrefixCache>(pool_);
  }
}

void Replica::SetPhase(ReplicaPhase phase, SimTime now, bool slow_start) {
  SyncRun();  // the slow start and kGone change the steps to come
  if (phase == ReplicaPhase::kReady && phase_ != ReplicaPhase::kReady) {
    slow_until_ = slow_start ? now + deployment_.lifecycle.slow_period : now;
  }
  phase_ = phase;
  phase_since_ = now;
  if (phase_ == ReplicaPhase::kDraining && in_flight() == 0 && options_.observer != nullptr) {
    options_.observer->OnDrained(options_.index);
  }
}

int32_t Replica::AllocSlot() {
  if (!free_slots_.empty()) {
    const int32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  seqs_.emplace_back();
  return static_cast<int32_t>(seqs_.size() - 1);
}

int32_t Replica::AllocFreshSeq() {
  // A reused slot starts from a default Seq, but keeps its epoch (stale events must still see a
  // mismatch) and its vectors' capacity (no allocation per request in steady state).
  const int32_t slot = AllocSlot();
  Seq& s = seqs_[slot];
  const uint32_t epoch = s.epoch;
  std::vector<uint64_t> prefix_ids = std::move(s.prefix_ids);
  std::vector<int32_t> cache_refs = std::move(s.cache_refs);
  s = Seq{};
  s.epoch = epoch;
  s.prefix_ids = std::move(prefix_ids);
  s.prefix_ids.clear();
  s.cache_refs = std::move(cache_refs);
  s.cache_refs.clear();
  return slot;
}

void Replica::FreeSlot(int32_t slot) {
  Seq& s = seqs_[slot];
  s.state = SeqState::kFree;
  ++s.epoch;
  free_slots_.push_back(slot);
}

void Replica::LinkRunningTail(int32_t slot) {
  Seq& s = seqs_[slot];
  s.prev = run_tail_;
  s.next = -1;
  if (run_tail_ >= 0) {
    seqs_[run_tail_].next = slot;
  } else {
    run_head_ = slot;
  }
  run_tail_ = slot;
  ++num_running_;
}

void Replica::UnlinkRunning(int32_t slot) {
  Seq& s = seqs_[slot];
  if (s.prev >= 0) {
    seqs_[s.prev].next = s.next;
  } else {
    run_head_ = s.next;
  }
  if (s.next >= 0) {
    seqs_[s.next].prev = s.prev;
  } else {
    run_tail_ = s.prev;
  }
  s.prev = s.next = -1;
  --num_running_;
}

int32_t Replica::ResidueKey(int64_t computed, int64_t step) const {
  const int64_t bs = deployment_.engine.block_size;
  int64_t k = (computed - step) % bs;
  if (k < 0) k += bs;
  return static_cast<int32_t>(k);
}

void Replica::JoinDecode(int32_t slot) {
  // Called at the end of the step that finished this sequence's prefill, after step_index_ was
  // advanced: the sequence decodes from step step_index_ on.
  Seq& s = seqs_[slot];
  s.state = SeqState::kDecode;
  s.d0_step = step_index_;
  s.d0_computed = s.computed;
  s.d0_generated = s.generated;
  ++residue_hist_[ResidueKey(s.d0_computed, s.d0_step)];
  ++num_decode_;
  decode_ctx_sum_ += s.d0_computed;
  // One token per step; the last one (number `output`) comes in step d0 + (output - generated) - 1.
  finish_heap_.push_back(HeapEntry{s.d0_step + (s.output - s.generated) - 1, slot, s.epoch});
  std::push_heap(finish_heap_.begin(), finish_heap_.end(), std::greater<>());
}

void Replica::LeaveDecode(int32_t slot) {
  Seq& s = seqs_[slot];
  s.computed = DecodeComputed(s);
  s.generated = DecodeGenerated(s);
  s.blocks = pool_.BlocksFor(s.computed);
  --residue_hist_[ResidueKey(s.d0_computed, s.d0_step)];
  --num_decode_;
  decode_ctx_sum_ -= s.computed;
  ++s.epoch;  // its heap entry is now stale
}

bool Replica::AllocateBlocks(int64_t n) {
  return prefix_cache_ != nullptr ? prefix_cache_->Allocate(n) : pool_.TryAllocate(n);
}

void Replica::ReleaseBlocks(Seq& s) {
  const int64_t shared = static_cast<int64_t>(s.cache_refs.size());
  pool_.Release(s.blocks - shared);
  if (shared > 0) {
    prefix_cache_->Release(s.cache_refs);
    s.cache_refs.clear();
  }
  s.blocks = 0;
  s.keyed_done = 0;
  s.chain_key = PrefixCache::kRootKey;
}

void Replica::RegisterPromptBlocks(Seq& s, int64_t tokens) {
  const int64_t bs = deployment_.engine.block_size;
  const int64_t full = std::min(s.keyed_blocks, tokens / bs);
  if (full <= s.keyed_done) return;
  new_keys_.clear();
  for (int64_t b = s.keyed_done; b < full; ++b) {
    s.chain_key = PrefixCache::BlockKey(s.chain_key, s.prefix_ids, b, static_cast<int32_t>(bs));
    new_keys_.push_back(s.chain_key);
  }
  // A block another sequence already cached under its key stays this sequence's own and is freed
  // with its other private blocks (vLLM caches the duplicate as well, but lookups only ever return
  // the first, so it matters only to which block is evicted when).
  prefix_cache_->InsertAll(new_keys_, s.cache_refs);
  s.keyed_done = full;
}

void Replica::Accept(const RequestSpec& r, SimTime now) {
  // A request longer than --max-model-len is refused by vLLM's API server ("This model's maximum
  // context length is ..."); one whose prompt plus output could never fit in the whole cache would
  // block the head of the queue forever, and vLLM refuses it at start-up's limit as well.
  const int64_t context = static_cast<int64_t>(r.prompt_tokens) + r.output_tokens;
  if (context > deployment_.engine.max_model_len || context > pool_.capacity_tokens()) {
    RequestRecord rec;
    rec.id = r.id;
    rec.replica = options_.index;
    rec.outcome = RequestOutcome::kRejected;
    rec.arrival = r.arrival;
    rec.prompt_tokens = r.prompt_tokens;
    rec.output_tokens = r.output_tokens;
    stats_.OnRejected(rec);
    return;
  }
  const int32_t slot = AllocFreshSeq();
  Seq& s = seqs_[slot];
  s.id = r.id;
  s.arrival = r.arrival;
  s.prompt = std::max(1, r.prompt_tokens);
  s.output = std::max(1, r.output_tokens);
  s.prefill_target = s.prompt;
  if (prefix_cache_ != nullptr && !r.prefix_hashes.empty()) {
    s.keyed_blocks =
        PrefixCache::KeyedBlocks(s.prompt, r.prefix_hashes.size(), deployment_.engine.block_size);
    if (s.keyed_blocks > 0) s.prefix_ids.assign(r.prefix_hashes.begin(), r.prefix_hashes.end());
  }
  if (prefix_cache_ == nullptr) s.assumed_cached = std::max(0, r.assumed_cached_tokens);
  const SimDuration front_end = latency_.FrontEndDelay(s.prompt);
  if (front_end > SimDuration::Zero()) {
    s.state = SeqState::kTransit;
    ++in_transit_;
    sim_.Schedule(now + front_end, this, TransitTag(slot, s.epoch));
  } else {
    EnterWaiting(slot, now);
  }
}

bool Replica::AdoptRunning(const RequestSpec& r, int32_t generated, SimTime now) {
  const int32_t prompt = std::max(1, r.prompt_tokens);
  const int32_t output = std::max(generated + 1, r.output_tokens);
  generated = std::max(1, generated);
  const int64_t computed = static_cast<int64_t>(prompt) + generated - 1;
  const int64_t blocks = pool_.BlocksFor(computed);
  SyncRun();
  if (num_running_ >= deployment_.engine.max_num_seqs || !pool_.TryAllocate(blocks)) return false;
  const int32_t slot = AllocFreshSeq();
  Seq& s = seqs_[slot];
  s.id = r.id;
  s.arrival = r.arrival;
  s.engine_arrival = r.arrival;
  s.first_scheduled = s.last_scheduled = now;
  s.first_token = s.last_token = now;
  s.prompt = prompt;
  s.output = output;
  s.generated = generated;
  s.computed = computed;
  s.prefill_target = computed;
  s.blocks = blocks;
  s.has_first_token = true;
  s.adopted = true;
  LinkRunningTail(slot);
  JoinDecode(slot);
  PublishGauges();
  if (!busy_ && !kick_pending_) {
    kick_pending_ = true;
    sim_.Schedule(now, this, kKickTag, Simulation::Band::kLate);
  }
  return true;
}

void Replica::EnterWaiting(int32_t slot, SimTime now) {
  SyncRun();  // the next step's admission sees this request
  Seq& s = seqs_[slot];
  s.state = SeqState::kWaiting;
  s.engine_arrival = now;
  waiting_.push_back(slot);
  PublishGauges();
  // An idle engine starts its step after every arrival of this instant is queued (late band).
  if (!busy_ && !kick_pending_) {
    kick_pending_ = true;
    sim_.Schedule(now, this, kKickTag, Simulation::Band::kLate);
  }
}

void Replica::OnEvent(uint64_t tag, SimTime now) {
  const ReplicaTag event = ReplicaTag::Unpack(tag);
  if (event.kind == ReplicaEvent::kTransit) {
    const int32_t slot = static_cast<int32_t>(event.id);
    if (slot >= static_cast<int32_t>(seqs_.size())) return;
    Seq& s = seqs_[slot];
    if (s.state != SeqState::kTransit || (s.epoch & ReplicaTag::kDetailMask) != event.detail) {
      return;  // aborted
    }
    --in_transit_;
    EnterWaiting(slot, now);
    return;
  }
  if (event.kind == ReplicaEvent::kKick) {
    kick_pending_ = false;
    MaybeStartStep(now);
    return;
  }
  // Step end; ignore a step that AbortAll cancelled.
  if (event.id != step_epoch_ || !busy_) return;
  ApplyQuietSteps(run_ends_.size() - 1);
  EndStep(now);
  busy_ = false;
  MaybeStartStep(now);
}

int64_t Replica::AssumedHitBlocks(const Seq& s) const {
  if (s.assumed_cached <= 0 || s.preemptions > 0) return 0;
  const int64_t bs = deployment_.engine.block_size;
  return std::min<int64_t>(s.assumed_cached, s.prefill_target - 1) / bs;
}

int64_t Replica::CapChunk(int64_t tokens) const {
  const int64_t threshold = deployment_.engine.long_prefill_token_threshold;
  return threshold > 0 && tokens > threshold ? threshold : tokens;
}

void Replica::MaybeStartStep(SimTime now) {
  if (busy_ || phase_ == ReplicaPhase::kGone) return;
  if (num_running_ == 0 && waiting_.empty()) return;
  StartStep(now);
}

void Replica::Preempt(int32_t slot, SimTime now) {
  Seq& s = seqs_[slot];
  if (s.state == SeqState::kDecode) {
    LeaveDecode(slot);
    // Every decoding sequence emitted its latest token when the previous step ended (now).
    s.last_token = now + emission_delay_;
  } else {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), slot));
  }
  ReleaseBlocks(s);  // its cached prompt blocks stay cached: re-admission may hit them
  UnlinkRunning(slot);
  s.computed = 0;
  s.prefill_target = static_cast<int64_t>(s.prompt) + s.generated;  // recompute
  s.state = SeqState::kWaiting;
  ++s.preemptions;
  waiting_.push_front(slot);
}

void Replica::StartStep(SimTime now) {
  const EngineLimits& lim = deployment_.engine;
  const int64_t bs = lim.block_size;
  plan_prefill_.clear();

  // 1. Running list: decodes (all run: budget >= max_num_seqs) then prefill chunks in order.
  int64_t budget = lim.max_num_batched_tokens - num_decode_;
  const int32_t due_key = due_key_;
  int64_t need_decode = residue_hist_[due_key];  // decodes whose next token opens a new block
  int64_t need_total = need_decode;
  std::vector<int64_t> chunk_need;
  for (int32_t slot : prefilling_) {
    Seq& s = seqs_[slot];
    const int64_t chunk =
        std::min(CapChunk(s.prefill_target - s.computed), std::max<int64_t>(budget, 0));
    if (chunk <= 0) continue;  // budget exhausted: it waits for the next step
    const int64_t need = pool_.BlocksFor(s.computed + chunk) - s.blocks;
    plan_prefill_.push_back({slot, chunk});
    chunk_need.push_back(need);
    need_total += need;
    budget -= chunk;
  }

  // 2. Not enough blocks: preempt from the back of the running list (most recently admitted)
  //    until what remains fits. Equivalent to vLLM's in-order loop, which pops the tail whenever
  //    the request at hand can't allocate (see replica.h).
  int64_t preempted = 0;
  while (need_total > pool_.free_blocks() && run_tail_ >= 0) {
    const int32_t victim = run_tail_;
    Seq& v = seqs_[victim];
    if (v.state == SeqState::kDecode) {
      if (ResidueKey(v.d0_computed, v.d0_step) == due_key) {
        --need_decode;
        --need_total;
      }
    } else {
      for (size_t i = 0; i < plan_prefill_.size(); ++i) {
        if (plan_prefill_[i].slot == victim) {
          need_total -= chunk_need[i];
          budget += plan_prefill_[i].tokens;
          plan_prefill_.erase(plan_prefill_.begin() + static_cast<std::ptrdiff_t>(i));
          chunk_need.erase(chunk_need.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
    Preempt(victim, now);
    ++preempted;
  }
  const bool ok = AllocateBlocks(need_total);
  assert(ok);
  (void)ok;
  for (size_t i = 0; i < plan_prefill_.size(); ++i)
    seqs_[plan_prefill_[i].slot].blocks += chunk_need[i];
  if (prefix_cache_ != nullptr) {
    for (const PlannedChunk& c : plan_prefill_) {
      Seq& s = seqs_[c.slot];
      if (s.keyed_done < s.keyed_blocks) RegisterPromptBlocks(s, s.computed + c.tokens);
    }
  }
  if (preempted > 0) {
    stats_.OnPreemptions(preempted);
    if (options_.vllm_metrics) metrics_.AddPreemptions(preempted);
  }

  // 3. Admission (only in a step that preempted nothing).
  if (preempted == 0) {
    while (!waiting_.empty() && budget > 0 && num_running_ < lim.max_num_seqs) {
      const int32_t slot = waiting_.front();
      Seq& s = seqs_[slot];
      assert(s.computed == 0 && s.blocks == 0);
      // Prefix cache hit: the longest cached run of leading prompt blocks, capped below the last
      // token (prefill_target - 1: the prompt, plus what was generated before a preemption).
      PrefixCache::Match hit;
      if (s.keyed_blocks > 0) {
        // Any admission needs at least one new block (the hit stops short of the last token): a
        // full pool rejects without the lookup, which a blocked head would redo every step.
        if (pool_.free_blocks() == 0) break;
        hit_entries_.clear();
        const int64_t cap = std::min(s.keyed_blocks, (s.prefill_target - 1) / bs);
        hit = prefix_cache_->Lookup(s.prefix_ids, cap, static_cast<int32_t>(bs), hit_entries_);
      }
      // An assumed hit (no prefix cache): its blocks are the request's own, taken with its chunk.
      const int64_t assumed = AssumedHitBlocks(s);
      const int64_t start = (hit.blocks + assumed) * bs;
      const int64_t chunk = std::min(CapChunk(s.prefill_target - start), budget);
      const int64_t need = pool_.BlocksFor(start + chunk) - hit.blocks;
      // The room the request must find free: its first chunk's blocks, or with
      // reserve_full_prompt (vLLM's scheduler_reserve_full_isl) its whole prompt's; only the
      // chunk's are taken now. Hit blocks nobody references are free blocks until taken: they
      // count against the room too.
      const int64_t room =
          lim.reserve_full_prompt ? pool_.BlocksFor(s.prefill_target) - hit.blocks : need;
      if (room + hit.evictable > pool_.free_blocks()) break;  // admission stops for this step
      waiting_.pop_front();
      if (assumed > 0) s.computed = start;
      if (hit.blocks > 0) {
        prefix_cache_->Acquire(hit_entries_);  // before allocating, so it can't evict them
        s.cache_refs.assign(hit_entries_.begin(), hit_entries_.end());
        s.computed = start;
        s.blocks = hit.blocks;
        s.keyed_done = hit.blocks;
        s.chain_key = hit.last_key;
      }
      const bool allocated = AllocateBlocks(need);
      assert(allocated);
      (void)allocated;
      s.blocks += need;
      if (prefix_cache_ != nullptr) {
        // vLLM counts lookups at admission; re-admissions after a preemption go to separate
        // (preempted) counters, not to vllm:prefix_cache_queries / _hits.
        if (s.preemptions == 0) {
          if (options_.vllm_metrics) metrics_.AddPrefixCache(s.prompt, start);
          stats_.OnPrefixCache(s.prompt, start);
        }
        if (s.keyed_done < s.keyed_blocks) RegisterPromptBlocks(s, start + chunk);
      } else if (assumed > 0) {
        if (options_.vllm_metrics) metrics_.AddPrefixCache(s.prompt, start);
        stats_.OnPrefixCache(s.prompt, start);
      }
      s.state = SeqState::kPrefill;
      s.last_scheduled = now;
      if (s.first_scheduled == SimTime::Max()) s.first_scheduled = now;
      LinkRunningTail(slot);
      prefilling_.push_back(slot);
      plan_prefill_.push_back({slot, chunk});
      budget -= chunk;
    }
  }

  plan_decode_ = num_decode_;
  if (plan_decode_ == 0 && plan_prefill_.empty()) {
    // Nothing runs. If this step preempted everything, the next step (at the same instant)
    // admits from the waiting queue; otherwise the engine idles until a request arrives.
    PublishGauges();
    if (preempted > 0 && !waiting_.empty()) StartStep(now);
    return;
  }

  BatchShape shape;
  shape.decode_seqs = plan_decode_;
  shape.decode_context_tokens = decode_ctx_sum_;
  for (const PlannedChunk& c : plan_prefill_) {
    const Seq& s = seqs_[c.slot];
    shape.prefill_seqs += 1;
    shape.prefill_tokens += c.tokens;
    shape.prefill_context_tokens += s.computed;
    shape.prefill_attention_pairs +=
        static_cast<double>(c.tokens) * (static_cast<double>(s.computed) + (c.tokens + 1) / 2.0);
  }
  const SimDuration dt = StepDuration(shape, now);

  stats_.OnKvUsage(pool_.Usage());
  stats_.OnStep(plan_decode_ + static_cast<int64_t>(plan_prefill_.size()));
  busy_ = true;
  step_start_ = now;
  run_start_ = now;
  run_ends_.clear();
  run_next_ = 0;
  run_ends_.push_back(now + dt);
  if (options_.coalesce_steps && plan_prefill_.empty() && prefilling_.empty()) {
    PlanQuietSteps(shape);
  }
  const size_t n = run_ends_.size();
  if (n == 1) {
    sim_.Schedule(run_ends_[0], this, StepEndTag(step_epoch_));
  } else {
    sim_.ScheduleAsIf(run_ends_[n - 1], run_ends_[n - 2], this, StepEndTag(step_epoch_));
  }
}

double Replica::NoiseFactor() {
  const double k = 1.0 / (options_.step_noise_cv * options_.step_noise_cv);
  return SampleGamma(noise_rng_, k, 1.0 / k);
}

SimDuration Replica::AdjustStepTime(SimDuration dt, SimTime start) {
  double factor = start < slow_until_ ? deployment_.lifecycle.slow_factor : 1.0;
  if (options_.step_noise_cv > 0) factor *= NoiseFactor();
  if (factor != 1.0) dt = SimDuration::FromSecondsF(dt.seconds() * factor);
  if (dt <= SimDuration::Zero()) dt = SimDuration::Nanos(1);
  return dt;
}

SimDuration Replica::StepDuration(const BatchShape& shape, SimTime start) {
  return AdjustStepTime(latency_.StepTime(shape), start);
}

bool Replica::AdmissionStaysBlocked() {
  if (waiting_.empty()) return true;
  const EngineLimits& lim = deployment_.engine;
  const int64_t bs = lim.block_size;
  // While only decodes run, the budget and the running count stay as they are, and the free blocks
  // only shrink (each step takes the blocks its decodes open, nothing is released).
  const int64_t budget = lim.max_num_batched_tokens - num_decode_;
  if (budget <= 0 || num_running_ >= lim.max_num_seqs) return true;
  const Seq& s = seqs_[waiting_.front()];
  const int64_t free = pool_.free_blocks();
  if (s.keyed_blocks > 0) {
    if (free == 0) return true;
    // With a prefix hit, the room the head needs plus the evictable hit blocks is what must be
    // free. Evictions (the steps' allocations may evict cached blocks) can only shorten the hit,
    // which never lowers that sum when the whole prompt's room is asked for (reserve_full_prompt,
    // or a first chunk that is the whole rest of the prompt whatever the hit): then a refusal now
    // is a refusal at every step to come. A capped first chunk with evictable hit blocks could be
    // admitted once they are evicted: not coalesced.
    const bool whole_prompt =
        lim.reserve_full_prompt ||
        (CapChunk(s.prefill_target) == s.prefill_target && s.prefill_target <= budget);
    if (!whole_prompt) return false;
    hit_entries_.clear();
    const int64_t cap = std::min(s.keyed_blocks, (s.prefill_target - 1) / bs);
    const PrefixCache::Match hit =
        prefix_cache_->Lookup(s.prefix_ids, cap, static_cast<int32_t>(bs), hit_entries_);
    const int64_t start = hit.blocks * bs;
    const int64_t chunk = std::min(CapChunk(s.prefill_target - start), budget);
    const int64_t need = pool_.BlocksFor(start + chunk) - hit.blocks;
    const int64_t room =
        lim.reserve_full_prompt ? pool_.BlocksFor(s.prefill_target) - hit.blocks : need;
    return room + hit.evictable > free;
  }
  const int64_t start = AssumedHitBlocks(s) * bs;
  const int64_t chunk = std::min(CapChunk(s.prefill_target - start), budget);
  const int64_t room =
      lim.reserve_full_prompt ? pool_.BlocksFor(s.prefill_target) : pool_.BlocksFor(start + chunk);
  return room > free;
}

void Replica::PlanQuietSteps(const BatchShape& shape) {
  const SimTime horizon = sim_.Horizon();
  if (run_ends_[0] > horizon || !AdmissionStaysBlocked()) return;
  // The step that produces the first completion ends the run (stale heap entries only end it
  // early).
  int64_t max_steps = kMaxCoalescedSteps;
  if (!finish_heap_.empty()) {
    max_steps = std::min(max_steps, finish_heap_.front().finish_step - step_index_ + 1);
  }
  if (max_steps <= 1) return;
  // The steps whose blocks fit: step j takes the blocks of the decodes whose next token opens one,
  // residue_hist_[due_key_ - j mod block_size], which repeats every block_size steps; the first
  // step that doesn't fit preempts, so the run ends before it. run_need_ keeps one cycle's
  // cumulative needs (RunNeed).
  const int32_t bs = deployment_.engine.block_size;
  run_need_.resize(static_cast<size_t>(bs) + 1);
  run_need_[0] = 0;
  // key = (due_key_ - i) mod bs, walked down without a division per step.
  int32_t key = static_cast<int32_t>(((due_key_ - 1) % bs + bs) % bs);
  for (int32_t i = 1; i <= bs; ++i) {
    run_need_[static_cast<size_t>(i)] = run_need_[static_cast<size_t>(i) - 1] + residue_hist_[key];
    key = key == 0 ? bs - 1 : key - 1;
  }
  const int64_t free = pool_.free_blocks();
  const int64_t per_cycle = run_need_[static_cast<size_t>(bs)];
  if (per_cycle > 0 && free / per_cycle < max_steps / bs + 1) {
    // The last step j with RunNeed(j) <= free.
    const int64_t cycles = free / per_cycle;
    const int64_t rest = free - cycles * per_cycle;
    int32_t r = 0;
    while (r + 1 < bs && run_need_[static_cast<size_t>(r) + 1] <= rest) ++r;
    max_steps = std::min(max_steps, cycles * bs + r + 1);
  }
  if (max_steps <= 1) return;
  // Their durations, then the slow start and noise of each in order, up to the horizon.
  const int64_t n = plan_decode_;
  const size_t more = static_cast<size_t>(max_steps - 1);
  step_times_.resize(more);
  latency_.DecodeStepTimes(n, shape.decode_context_tokens + n, static_cast<int64_t>(more),
                           step_times_.data());
  run_ends_.resize(more + 1);
  SimTime end = run_ends_[0];
  size_t j = 1;
  const bool noisy = options_.step_noise_cv > 0;
  if (!noisy && end >= slow_until_) {
    // No factor on any of them (a later start is past the slow period too).
    for (; j <= more; ++j) {
      SimDuration dt = step_times_[j - 1];
      if (dt <= SimDuration::Zero()) dt = SimDuration::Nanos(1);
      if (end + dt > horizon) break;
      end = end + dt;
      run_ends_[j] = end;
    }
  } else {
    if (noisy) run_rng_ = noise_rng_;
    for (; j <= more; ++j) {
      const SimDuration dt = AdjustStepTime(step_times_[j - 1], end);
      if (end + dt > horizon) {
        if (noisy) RewindNoise(static_cast<int64_t>(j) - 1);
        break;
      }
      end = end + dt;
      run_ends_[j] = end;
    }
  }
  run_ends_.resize(j);
}

int64_t Replica::RunNeed(int64_t j) const {
  const int64_t bs = deployment_.engine.block_size;
  return j / bs * run_need_[static_cast<size_t>(bs)] + run_need_[static_cast<size_t>(j % bs)];
}

void Replica::RewindNoise(int64_t draws) {
  noise_rng_ = *run_rng_;
  for (int64_t i = 0; i < draws; ++i) NoiseFactor();
}

void Replica::ApplyQuietSteps(size_t upto) {
  // What EndStep and StartStep do for steps of decodes only that finish nothing, each followed by
  // a step that preempts and admits nothing (PlanQuietSteps checked both): the ends of steps
  // [run_next_, upto) and the starts of the steps after them. Their effects are sums and maxima,
  // taken at once, except the vLLM inter-token histogram, fed step by step in order.
  if (run_next_ >= upto) return;
  const size_t from = run_next_;
  const int64_t count = static_cast<int64_t>(upto - from);
  const int64_t n = plan_decode_;
  const SimTime last_end = run_ends_[upto - 1];
  stats_.OnDecodeSteps(&run_ends_[from], step_start_, count, n);
  if (options_.vllm_metrics) {
    SimTime start = step_start_;
    for (size_t i = from; i < upto; ++i) {
      metrics_.ObserveInterTokenLatency((run_ends_[i] - start).seconds(), n);
      start = run_ends_[i];
    }
    metrics_.AddGenerationTokens(n * count);
  }
  stats_.OnEvent(last_end + emission_delay_);
  // The blocks taken by the starts of steps from + 1 .. upto - 1, the gauges as the last end left
  // them, then the blocks of step upto's start. Allocating in parts or at once evicts the same
  // cached blocks.
  const int64_t last = static_cast<int64_t>(upto);
  bool ok = AllocateBlocks(RunNeed(last - 1) - RunNeed(static_cast<int64_t>(from)));
  PublishGauges();
  ok = AllocateBlocks(RunNeed(last) - RunNeed(last - 1)) && ok;
  assert(ok);
  (void)ok;
  stats_.OnKvUsage(pool_.Usage());  // usage only grows during the run: the last is the peak
  stats_.OnSteps(count, n);

  const int64_t bs = deployment_.engine.block_size;
  step_index_ += count;
  due_key_ = static_cast<int32_t>(((due_key_ - count) % bs + bs) % bs);
  decode_ctx_sum_ += n * count;
  step_start_ = last_end;
  run_next_ = upto;
}

void Replica::SyncRun() {
  if (!busy_ || run_next_ + 1 >= run_ends_.size()) return;
  // Step j's end event, stepping one by one, fires at run_ends_[j] and was scheduled when step j
  // started; it comes before the current event when it is earlier in the kernel's order.
  const Simulation::Position& p = sim_.CurrentEvent();
  const size_t last = run_ends_.size() - 1;
  size_t m = run_next_;
  while (m < last) {
    const SimTime end = run_ends_[m];
    const SimTime start = m == 0 ? run_start_ : run_ends_[m - 1];
    const bool before = !p.in_event   ? end <= sim_.Now()
                        : end != p.at ? end < p.at
                                      : p.late || start <= p.scheduled_at;
    if (!before) break;
    ++m;
  }
  ApplyQuietSteps(m);
  if (m == last) return;
  run_ends_.resize(m + 1);
  ++step_epoch_;
  sim_.ScheduleAsIf(run_ends_[m], step_start_, this, StepEndTag(step_epoch_));
  if (options_.step_noise_cv > 0) RewindNoise(static_cast<int64_t>(m));
}

void Replica::EndStep(SimTime now) {
  const int64_t s = step_index_;
  ++step_index_;
  due_key_ = due_key_ == 0 ? static_cast<int32_t>(deployment_.engine.block_size) - 1 : due_key_ - 1;
  const SimTime emit = now + emission_delay_;
  const SimDuration dt = now - step_start_;

  // Decodes: every decoding sequence produced one token; its context grew by one. Their blocks for
  // this step were allocated at its start (the residue histogram said how many).
  decode_ctx_sum_ += plan_decode_;
  int64_t prompt_tokens_computed = 0;
  int64_t new_tokens = plan_decode_;
  if (plan_decode_ > 0) {
    stats_.OnInterTokenLatency(dt, plan_decode_, now);
    if (options_.vllm_metrics) metrics_.ObserveInterTokenLatency(dt.seconds(), plan_decode_);
  }
  // Completions due at this step.
  while (!finish_heap_.empty() && finish_heap_.front().finish_step <= s) {
    std::pop_heap(finish_heap_.begin(), finish_heap_.end(), std::greater<>());
    const HeapEntry e = finish_heap_.back();
    finish_heap_.pop_back();
    Seq& q = seqs_[e.slot];
    if (q.epoch != e.epoch || q.state != SeqState::kDecode) continue;  // stale
    LeaveDecode(e.slot);
    Finish(e.slot, emit, /*aborted=*/false);
  }
  // Prefill chunks.
  for (const PlannedChunk& c : plan_prefill_) {
    Seq& q = seqs_[c.slot];
    if (q.state != SeqState::kPrefill) continue;
    q.computed += c.tokens;
    prompt_tokens_computed += c.tokens;
    if (q.computed < q.prefill_target) continue;  // partial prefill: stays in the running list
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), c.slot));
    // The step that completes a prefill samples the next token.
    ++q.generated;
    ++new_tokens;
    if (!q.has_first_token) {
      q.has_first_token = true;
      q.first_token = emit;
      const SimDuration ttft = emit - q.arrival;
      stats_.OnFirstToken(q.prompt, ttft, q.arrival);
      if (q.first_scheduled != SimTime::Max()) {
        stats_.OnPrefillAndQueueTime(emit - q.first_scheduled, q.last_scheduled - q.engine_arrival,
                                     q.prompt);
      }
      if (options_.vllm_metrics) {
        metrics_.ObserveTtft(ttft.seconds());
        metrics_.AddPromptTokens(q.prompt);
      }
    } else {
      // First token after a recompute: the gap since the token before the preemption.
      stats_.OnInterTokenLatency(emit - q.last_token, 1, now);
      if (options_.vllm_metrics) {
        metrics_.ObserveInterTokenLatency((emit - q.last_token).seconds(), 1);
      }
    }
    q.last_token = emit;
    if (q.generated >= q.output) {
      q.blocks = pool_.BlocksFor(q.computed);
      Finish(c.slot, emit, /*aborted=*/false);
    } else {
      JoinDecode(c.slot);
    }
  }
  stats_.OnTokens(new_tokens, prompt_tokens_computed);
  if (options_.vllm_metrics) metrics_.AddGenerationTokens(new_tokens);
  stats_.OnEvent(emit);
  PublishGauges();
}

void Replica::PublishGauges() {
  if (options_.vllm_metrics) metrics_.SetScheduler(num_running_, num_waiting(), pool_.Usage());
}

void Replica::Finish(int32_t slot, SimTime last_token_time, bool aborted) {
  Seq& q = seqs_[slot];
  if (q.state == SeqState::kPrefill || q.state == SeqState::kDecode) {
    ReleaseBlocks(q);
    UnlinkRunning(slot);
  }
  RequestRecord rec;
  rec.id = q.id;
  rec.replica = options_.index;
  rec.outcome = aborted ? RequestOutcome::kAborted : RequestOutcome::kCompleted;
  rec.arrival = q.arrival;
  rec.ttft = q.has_first_token ? q.first_token - q.arrival : SimDuration::Nanos(-1);
  rec.e2e = last_token_time - q.arrival;
  rec.scheduling_delay =
      q.first_scheduled == SimTime::Max() ? SimDuration::Nanos(-1) : q.last_scheduled - q.arrival;
  rec.prompt_tokens = q.prompt;
  rec.output_tokens = q.output;
  rec.preemptions = q.preemptions;
  if (!q.adopted) stats_.OnFinished(rec);
  if (options_.vllm_metrics) ObserveFinished(q, rec, last_token_time, aborted);

  FreeSlot(slot);
  if (options_.observer != nullptr) {
    options_.observer->OnRequestLeft(options_.index);
    if (phase_ == ReplicaPhase::kDraining && in_flight() == 0) {
      options_.observer->OnDrained(options_.index);
    }
  }
}

void Replica::ObserveFinished(const Seq& q, const RequestRecord& rec, SimTime last_token_time,
                              bool aborted) {
  VllmMetrics::Finished f;
  f.e2e = rec.e2e.seconds();
  const bool scheduled = q.first_scheduled != SimTime::Max();
  f.queue = scheduled ? (q.last_scheduled - q.engine_arrival).seconds() : 0.0;
  f.inference = scheduled ? (last_token_time - q.last_scheduled).seconds() : 0.0;
  f.prefill = q.has_first_token && scheduled ? (q.first_token - q.first_scheduled).seconds() : 0.0;
  f.decode = q.has_first_token ? (last_token_time - q.first_token).seconds() : 0.0;
  f.time_per_output_token = q.generated > 1 ? f.decode / (q.generated - 1) : 0.0;
  f.prompt_tokens = q.prompt;
  f.generation_tokens = q.generated;
  f.reason =
      aborted ? VllmMetrics::Finished::Reason::kAbort : VllmMetrics::Finished::Reason::kLength;
  metrics_.ObserveFinished(f);
}

int64_t Replica::AbortAll(SimTime now) {
  int64_t aborted = 0;
  SyncRun();
  // Cancel the step in flight (lazy: its end event no longer matches the epoch).
  if (busy_) {
    busy_ = false;
    ++step_epoch_;
  }
  for (int32_t slot = 0; slot < static_cast<int32_t>(seqs_.size()); ++slot) {
    Seq& q = seqs_[slot];
    if (q.state == SeqState::kFree) continue;
    if (q.state == SeqState::kDecode) LeaveDecode(slot);
    if (q.state == SeqState::kTransit) --in_transit_;
    q.state = q.state == SeqState::kTransit ? SeqState::kWaiting : q.state;
    ReplicaObserver* obs = options_.observer;
    options_.observer = nullptr;  // one OnDrained at the end, not one per request
    Finish(slot, now, /*aborted=*/true);
    options_.observer = obs;
    ++aborted;
  }
  waiting_.clear();
  prefilling_.clear();
  finish_heap_.clear();
  run_head_ = run_tail_ = -1;
  num_running_ = 0;
  PublishGauges();
  if (options_.observer != nullptr && phase_ == ReplicaPhase::kDraining) {
    options_.observer->OnDrained(options_.index);
  }
  return aborted;
}

}  // namespace twinscale::sim
