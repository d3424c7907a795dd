// Fleet: see fleet.h.
#include "simulator/model/fleet.h"

#include <algorithm>

#include "simulator/core/event_tag.h"
#include "simulator/core/samplers.h"

namespace twinscale::sim {
namespace {

// The fleet's events: the next arrival from the source, a replica's next lifecycle phase (id: the
// replica, detail: the phase) and a draining replica's deadline (id: the replica).
enum class FleetEvent : uint8_t { kArrival = 1, kAdvance = 2, kDrainDeadline = 3 };
using FleetTag = EventTag<FleetEvent>;

uint64_t AdvanceTag(int32_t index, ReplicaPhase to) {
  return FleetTag{FleetEvent::kAdvance, static_cast<uint32_t>(index), static_cast<uint32_t>(to)}
      .Pack();
}

SimDuration SampleDelay(Rng& rng, const DelayDistribution& d) {
  if (d.median <= SimDuration::Zero()) return SimDuration::Zero();
  return SimDuration::FromSecondsF(
      SampleLogNormalMedianP90(rng, d.median.seconds(), d.p90_over_median));
}

}  // namespace

Fleet::Fleet(Simulation& sim, FleetOptions options, RunStats* stats)
    : sim_(sim),
      options_(std::move(options)),
      stats_(stats),
      latency_(MakeLatencyModel(options_.deployment, options_.speed)),
      router_(options_.router, options_.seed, options_.run),
      lifecycle_rng_(options_.seed, options_.run, Stream::kLifecycle) {
  for (int32_t i = 0; i < options_.initial_replicas; ++i) AddReplica(/*ready_now=*/true);
  desired_ = options_.initial_replicas;
  tokens_ = options_.admission.max_arrival_rate;  // a full bucket: one second's worth
  RebuildReady();
}

int32_t Fleet::AddReplica(bool ready_now) {
  ReplicaOptions ro;
  ro.index = static_cast<int32_t>(replicas_.size());
  ro.deployment = &options_.deployment;
  ro.latency = latency_.get();
  ro.stats = stats_;
  ro.observer = this;
  ro.model_name = options_.model_name;
  ro.step_noise_cv = options_.step_noise_cv;
  ro.vllm_metrics = options_.vllm_metrics;
  ro.coalesce_steps = options_.coalesce_steps;
  ro.seed = options_.seed;
  ro.run = options_.run;
  auto r = std::make_unique<Replica>(sim_, ro);
  const SimTime now = sim_.Now();
  Life life;
  life.created = now;
  if (ready_now) {
    r->SetPhase(ReplicaPhase::kReady, now, /*slow_start=*/false);
    life.gpu_from = now;
  } else {
    r->SetPhase(ReplicaPhase::kProvisioning, now);
    sim_.Schedule(now + SampleDelay(lifecycle_rng_, options_.deployment.lifecycle.provisioning),
                  this, AdvanceTag(ro.index, ReplicaPhase::kLoading));
  }
  replicas_.push_back(std::move(r));
  life_.push_back(life);
  return ro.index;
}

int32_t Fleet::AddReplicaReadyAfter(SimDuration ready_after) {
  if (ready_after <= SimDuration::Zero()) {
    const int32_t i = AddReplica(/*ready_now=*/true);
    ++desired_;
    RebuildReady();
    return i;
  }
  const int32_t i = AddReplica(/*ready_now=*/true);  // created holding its GPU ...
  Replica& r = *replicas_[static_cast<size_t>(i)];
  r.SetPhase(ReplicaPhase::kWarmingUp, sim_.Now());  // ... but not serving until ready_after
  sim_.Schedule(sim_.Now() + ready_after, this, AdvanceTag(i, ReplicaPhase::kReady));
  ++desired_;
  RebuildReady();
  return i;
}

bool Fleet::AdoptRunning(int32_t index, const RequestSpec& request, int32_t generated) {
  return replicas_[static_cast<size_t>(index)]->AdoptRunning(request, generated, sim_.Now());
}

void Fleet::InjectTo(int32_t index, const RequestSpec& request) {
  const SimTime now = sim_.Now();
  stats_->OnInjected(request.arrival < now ? request.arrival : now);
  replicas_[static_cast<size_t>(index)]->Accept(request, now);
}

void Fleet::Advance(int32_t index, ReplicaPhase to) {
  Replica& r = *replicas_[static_cast<size_t>(index)];
  const SimTime now = sim_.Now();
  // A replica drained (or gone) before it finished starting stops here: lazy cancellation.
  if (r.phase() == ReplicaPhase::kDraining || r.phase() == ReplicaPhase::kGone) return;
  const LifecycleSpec& lc = options_.deployment.lifecycle;
  r.SetPhase(to, now);
  switch (to) {
    case ReplicaPhase::kLoading:
      life_[static_cast<size_t>(index)].gpu_from = now;
      sim_.Schedule(now + SampleDelay(lifecycle_rng_, lc.loading), this,
                    AdvanceTag(index, ReplicaPhase::kWarmingUp));
      break;
    case ReplicaPhase::kWarmingUp:
      sim_.Schedule(now + SampleDelay(lifecycle_rng_, lc.warming_up), this,
                    AdvanceTag(index, ReplicaPhase::kReady));
      break;
    case ReplicaPhase::kReady:
      RebuildReady();
      DrainGateway(now);
      break;
    default:
      break;
  }
}

void Fleet::RebuildReady() {
  ready_.clear();
  for (auto& r : replicas_) {
    if (r->phase() == ReplicaPhase::kReady) ready_.push_back(r.get());
  }
}

int32_t Fleet::current_replicas() const {
  int32_t n = 0;
  for (const auto& r : replicas_) {
    if (r->phase() != ReplicaPhase::kDraining && r->phase() != ReplicaPhase::kGone) ++n;
  }
  return n;
}

int64_t Fleet::in_flight() const {
  int64_t n = 0;
  for (const auto& r : replicas_) n += r->in_flight();
  return n;
}
int64_t Fleet::waiting() const {
  int64_t n = 0;
  for (const auto& r : replicas_) n += r->num_waiting();
  return n;
}
int64_t Fleet::running() const {
  int64_t n = 0;
  for (const auto& r : replicas_) n += r->num_running();
  return n;
}

void Fleet::SetDesiredReplicas(int32_t n, const std::vector<int32_t>& victims) {
  n = std::max(0, n);
  desired_ = n;
  int32_t current = current_replicas();
  while (current < n) {
    AddReplica(/*ready_now=*/false);
    ++current;
  }
  const auto counted = [&](int32_t i) {
    const ReplicaPhase p = replicas_[static_cast<size_t>(i)]->phase();
    return p != ReplicaPhase::kDraining && p != ReplicaPhase::kGone;
  };
  for (int32_t v : victims) {
    if (current <= n) break;
    if (v < 0 || v >= static_cast<int32_t>(replicas_.size()) || !counted(v)) continue;
    BeginDrain(v);
    --current;
  }
  while (current > n) {
    // Beyond the named victims: not yet Ready first, newest first (the ReplicaSet's order among
    // pods no deletion cost tells apart).
    int32_t victim = -1;
    for (int32_t i = static_cast<int32_t>(replicas_.size()) - 1; i >= 0; --i) {
      const ReplicaPhase p = replicas_[static_cast<size_t>(i)]->phase();
      if (p == ReplicaPhase::kProvisioning || p == ReplicaPhase::kLoading ||
          p == ReplicaPhase::kWarmingUp) {
        victim = i;
        break;
      }
    }
    for (int32_t i = static_cast<int32_t>(replicas_.size()) - 1; i >= 0 && victim < 0; --i) {
      if (counted(i)) victim = i;
    }
    if (victim < 0) break;
    BeginDrain(victim);
    --current;
  }
}

void Fleet::BeginDrain(int32_t index) {
  Replica& r = *replicas_[static_cast<size_t>(index)];
  const bool was_serving = r.phase() == ReplicaPhase::kReady;
  const SimTime now = sim_.Now();
  if (!was_serving) {
    // Never served: goes straight away.
    r.SetPhase(ReplicaPhase::kGone, now);
    Life& life = life_[static_cast<size_t>(index)];
    if (life.gpu_from != SimTime::Max()) life.gpu_until = now;
    return;
  }
  r.SetPhase(ReplicaPhase::kDraining, now);  // may call OnDrained at once when empty
  RebuildReady();
  if (r.phase() == ReplicaPhase::kDraining) {
    sim_.Schedule(now + options_.deployment.lifecycle.drain_grace, this,
                  FleetTag{FleetEvent::kDrainDeadline, static_cast<uint32_t>(index)}.Pack());
  }
}

void Fleet::OnDrained(int32_t index) {
  Replica& r = *replicas_[static_cast<size_t>(index)];
  if (r.phase() != ReplicaPhase::kDraining) return;
  const SimTime now = sim_.Now();
  r.SetPhase(ReplicaPhase::kGone, now);
  life_[static_cast<size_t>(index)].gpu_until = now;
}

void Fleet::OnRequestLeft(int32_t /*replica*/) {
  if (!gateway_.empty()) DrainGateway(sim_.Now());
}

void Fleet::AttachSource(RequestSource* source) {
  source_ = source;
  source_done_ = false;
  ScheduleNextArrival();
}

void Fleet::ScheduleNextArrival() {
  if (source_ == nullptr) return;
  if (!source_->Next(pending_arrival_)) {
    source_done_ = true;
    has_pending_arrival_ = false;
    return;
  }
  has_pending_arrival_ = true;
  const SimTime at = std::max(pending_arrival_.arrival, sim_.Now());
  sim_.Schedule(at, this, FleetTag{FleetEvent::kArrival}.Pack());
}

void Fleet::Inject(const RequestSpec& request) {
  const SimTime now = sim_.Now();
  stats_->OnInjected(request.arrival < now ? request.arrival : now);
  Route(request, now);
}

void Fleet::OnEvent(uint64_t tag, SimTime now) {
  const FleetTag event = FleetTag::Unpack(tag);
  switch (event.kind) {
    case FleetEvent::kArrival: {
      if (!has_pending_arrival_) return;
      RequestSpec r = std::move(pending_arrival_);
      has_pending_arrival_ = false;
      stats_->OnInjected(r.arrival);
      ScheduleNextArrival();  // before routing: keeps the pull strictly ordered
      Route(r, now);
      return;
    }
    case FleetEvent::kAdvance:
      Advance(static_cast<int32_t>(event.id), static_cast<ReplicaPhase>(event.detail));
      return;
    case FleetEvent::kDrainDeadline: {
      Replica& r = *replicas_[static_cast<size_t>(event.id)];
      if (r.phase() == ReplicaPhase::kDraining) r.AbortAll(now);  // calls OnDrained
      return;
    }
  }
}

bool Fleet::TryDispatch(const RequestSpec& request, SimTime now) {
  if (ready_.empty()) return false;
  const int64_t limit = options_.admission.max_in_flight_per_replica;
  size_t pos = router_.Pick(request, ready_);
  if (limit > 0 && ready_[pos]->in_flight() >= limit) {
    // The router's choice is full: the gateway takes the least loaded replica under the limit.
    size_t best = ready_.size();
    for (size_t i = 0; i < ready_.size(); ++i) {
      if (ready_[i]->in_flight() < limit &&
          (best == ready_.size() || ready_[i]->in_flight() < ready_[best]->in_flight())) {
        best = i;
      }
    }
    if (best == ready_.size()) return false;
    pos = best;
  }
  ready_[pos]->Accept(request, now);
  return true;
}

void Fleet::SetAdmission(const AdmissionLimits& limits) {
  if (limits.max_arrival_rate > 0 &&
      (options_.admission.max_arrival_rate <= 0 ||
       limits.max_arrival_rate != options_.admission.max_arrival_rate)) {
    tokens_ = limits.max_arrival_rate;  // one second's worth
    tokens_at_ = sim_.Now();
  }
  options_.admission = limits;
}

bool Fleet::Shed(SimTime now) {
  const AdmissionLimits& a = options_.admission;
  if (a.max_waiting_per_replica > 0 && !ready_.empty()) {
    bool room = false;
    for (const Replica* r : ready_) room = room || r->num_waiting() < a.max_waiting_per_replica;
    if (!room) return true;
  }
  if (a.max_arrival_rate > 0) {
    tokens_ =
        std::min(a.max_arrival_rate, tokens_ + (now - tokens_at_).seconds() * a.max_arrival_rate);
    tokens_at_ = now;
    if (tokens_ < 1) return true;
    tokens_ -= 1;
  }
  return false;
}

void Fleet::Reject(const RequestSpec& request) {
  RequestRecord rec;
  rec.id = request.id;
  rec.outcome = RequestOutcome::kRejected;
  rec.arrival = request.arrival;
  rec.prompt_tokens = request.prompt_tokens;
  rec.output_tokens = request.output_tokens;
  stats_->OnRejected(rec);
}

void Fleet::Route(const RequestSpec& request, SimTime now) {
  if (Shed(now)) {
    Reject(request);
    return;
  }
  if (gateway_.empty() && TryDispatch(request, now)) return;
  const AdmissionLimits& a = options_.admission;
  if (a.max_in_flight_per_replica > 0 && a.max_gateway_queue > 0 &&
      static_cast<int64_t>(gateway_.size()) >= a.max_gateway_queue) {
    Reject(request);
    return;
  }
  gateway_.push_back(request);
}

void Fleet::DrainGateway(SimTime now) {
  while (!gateway_.empty()) {
    if (!TryDispatch(gateway_.front(), now)) return;
    gateway_.pop_front();
  }
}

std::vector<ReplicaView> Fleet::Replicas() const {
  std::vector<ReplicaView> out;
  out.reserve(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const Replica& r = *replicas_[i];
    out.push_back(ReplicaView{r.index(), r.phase(), r.phase_since(), life_[i].created,
                              r.num_waiting(), r.num_running(), r.num_in_transit(), r.kv_usage()});
  }
  return out;
}

double Fleet::GpuSeconds(SimTime now) const {
  double total = 0;
  for (const Life& l : life_) {
    if (l.gpu_from == SimTime::Max() || l.gpu_from > now) continue;
    const SimTime until = std::min(l.gpu_until, now);
    total += (until - l.gpu_from).seconds();
  }
  return total * options_.deployment.tensor_parallel;
}

void Fleet::FinalizeStats(SimTime now) { stats_->AddGpuSeconds(GpuSeconds(now)); }

}  // namespace twinscale::sim
