// A fleet of replicas of one deployment behind one router: what the twin simulates, and what replay
// uses as the stand-in for the cluster. The fleet takes arrivals (pulled from a RequestSource or
// injected one by one), routes them to Ready replicas, holds them at the gateway while none can
// take them, and follows scale requests through the replica lifecycle (Provisioning -> Loading ->
// WarmingUp -> Ready; scale-in drains the chosen victims).
//
// Scale-in drains the victims the caller names (replay: the pods the controller marked with
// pod-deletion-cost, chosen by policy::ChooseScaleInVictims, the one victim rule); beyond them,
// the ReplicaSet's order among otherwise equal pods: replicas not yet Ready first, newest first.
//
// Admission (optional, advisory limits enforced at the gateway): with max_in_flight_per_replica
// set, a request that finds every Ready replica at the limit waits at the gateway (its wait counts
// in TTFT); beyond max_gateway_queue it is rejected, counted as a miss, never dropped silently. The
// limits twinscale advises (its admission API) shed instead: max_arrival_rate is a token bucket
// (one second's worth of tokens, refilled continuously) that rejects what arrives with none left,
// and max_waiting_per_replica rejects a request that finds every Ready replica with at least that
// many waiting. SetAdmission changes the limits during a run (replay enforcing a policy's advice).
//
// Not thread-safe: owned by one Simulation.
#ifndef TWINSCALE_SIMULATOR_MODEL_FLEET_H_
#define TWINSCALE_SIMULATOR_MODEL_FLEET_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "simulator/core/rng.h"
#include "simulator/core/simulation.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/replica.h"
#include "simulator/model/router.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

struct AdmissionLimits {
  int64_t max_in_flight_per_replica = 0;  // 0: no limit
  int64_t max_gateway_queue = 0;        // with a limit set: queue beyond this is rejected (0: none)
  double max_arrival_rate = 0;          // requests per second through the gateway (0: no limit)
  int64_t max_waiting_per_replica = 0;  // 0: no limit
};

struct FleetOptions {
  DeploymentSpec deployment;
  SpeedFactors speed;
  RouterOptions router;
  AdmissionLimits admission;
  int32_t initial_replicas = 1;  // Ready at time 0, without the slow start
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";
  double step_noise_cv = 0.0;
  bool vllm_metrics = true;    // ReplicaOptions::vllm_metrics for every replica
  bool coalesce_steps = true;  // ReplicaOptions::coalesce_steps for every replica
  uint64_t seed = 1;
  uint64_t run = 0;
};

// Read-only view of one replica, for status, scraping and reports.
struct ReplicaView {
  int32_t index;
  ReplicaPhase phase;
  SimTime phase_since;
  SimTime created;
  int64_t waiting, running, in_transit;
  double kv_usage;
};

class Fleet : public EventHandler, public ReplicaObserver {
 public:
  Fleet(Simulation& sim, FleetOptions options, RunStats* stats);
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Pulls arrivals from `source` (not owned; must outlive the run) as simulated time advances.
  void AttachSource(RequestSource* source);
  // Delivers one request at the current simulated time.
  void Inject(const RequestSpec& request);

  // Scales to `n` replicas (counting every replica not Draining or Gone). Scale-out starts new
  // replicas in Provisioning; scale-in drains `victims` (replica indices, in order; those already
  // Draining or Gone, or out of range, are skipped) and then, while more must go, the others in
  // the ReplicaSet's order (see above).
  void SetDesiredReplicas(int32_t n, const std::vector<int32_t>& victims = {});
  // Replaces the admission limits from now on (a new arrival-rate limit starts with a full bucket).
  void SetAdmission(const AdmissionLimits& limits);

  // The twin starting from an observed fleet: a replica that becomes Ready after `ready_after`
  // (zero: Ready now, without the slow start). Counts toward current_replicas(). Returns its index.
  int32_t AddReplicaReadyAfter(SimDuration ready_after);
  // Seeds replica `index` with a request already decoding (see Replica::AdoptRunning).
  bool AdoptRunning(int32_t index, const RequestSpec& request, int32_t generated);
  // Delivers a request straight to replica `index`'s engine, bypassing the router (a request that
  // was already queued there when the fleet was observed). Counted as injected.
  void InjectTo(int32_t index, const RequestSpec& request);

  int32_t desired_replicas() const { return desired_; }
  int32_t current_replicas() const;  // not Draining or Gone
  int32_t ready_replicas() const { return static_cast<int32_t>(ready_.size()); }
  int64_t gateway_queue() const { return static_cast<int64_t>(gateway_.size()); }
  int64_t in_flight() const;  // in replicas, at the gateway excluded
  int64_t waiting() const;
  int64_t running() const;
  bool arrivals_done() const { return source_ == nullptr || source_done_; }
  bool Idle() const { return arrivals_done() && in_flight() == 0 && gateway_.empty(); }

  std::vector<ReplicaView> Replicas() const;
  const Replica& replica(int32_t index) const { return *replicas_[static_cast<size_t>(index)]; }
  int32_t replica_count_ever() const { return static_cast<int32_t>(replicas_.size()); }
  const DeploymentSpec& deployment() const { return options_.deployment; }
  const LatencyModel& latency_model() const { return *latency_; }

  // GPU-seconds held by all replicas up to `now` (a replica holds its GPUs from Loading to Gone).
  double GpuSeconds(SimTime now) const;
  // Adds GpuSeconds(now) to the run's statistics; call once at the end of a run.
  void FinalizeStats(SimTime now);

  // EventHandler / ReplicaObserver.
  void OnEvent(uint64_t tag, SimTime now) override;
  void OnRequestLeft(int32_t replica) override;
  void OnDrained(int32_t replica) override;

 private:
  struct Life {
    SimTime created;
    SimTime gpu_from = SimTime::Max();
    SimTime gpu_until = SimTime::Max();
  };
  int32_t AddReplica(bool ready_now);
  void Advance(int32_t index, ReplicaPhase to);
  void ScheduleNextArrival();
  void Route(const RequestSpec& request, SimTime now);
  bool TryDispatch(const RequestSpec& request, SimTime now);
  // Whether the advised limits shed `request` now (taking a token when they don't).
  bool Shed(SimTime now);
  void Reject(const RequestSpec& request);
  void DrainGateway(SimTime now);
  void RebuildReady();
  void BeginDrain(int32_t index);

  Simulation& sim_;
  FleetOptions options_;
  RunStats* stats_;
  std::unique_ptr<LatencyModel> latency_;
  Router router_;
  Rng lifecycle_rng_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<Life> life_;
  std::vector<Replica*> ready_;
  std::deque<RequestSpec> gateway_;
  double tokens_ = 0;  // the arrival-rate bucket
  SimTime tokens_at_;  // when it was last refilled
  int32_t desired_ = 0;

  RequestSource* source_ = nullptr;
  bool source_done_ = false;
  bool has_pending_arrival_ = false;
  RequestSpec pending_arrival_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_FLEET_H_
