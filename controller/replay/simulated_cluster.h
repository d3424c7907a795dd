// The stand-in for Kubernetes and the serving fleet in `twinscale replay`: a truth fleet of the
// simulator (the deployment of a profile, perturbed by the truth perturbations) driven by a
// request trace, which takes scale calls as a target's /scale subresource does and shows itself
// the way a controller would see a real cluster.
//
// What a controller sees (View): every pod of the target that is not gone, with its stage from the
// replica's lifecycle phase (Provisioning -> kPending, Loading -> kLoading, WarmingUp ->
// kWarmingUp, Ready -> kReady, Draining -> kTerminating), its age and how long it has been Ready,
// and, for pods that serve /metrics (Ready and Draining: vLLM's HTTP server comes up only after
// the engine has warmed up), the newest scrape of its vLLM /metrics TEXT, rendered by the
// replica's VllmMetrics, then parsed and extracted by controller/metrics exactly as the live
// scraper does. Nothing of the fleet reaches a policy except through that text.
//
// Scrapes are taken of every serving pod at once, either on a fixed grid (every scrape_interval of
// simulated time from 0, as a Prometheus with that scrape_interval takes them) or, when the
// interval is zero, at the end of every AdvanceTo (a controller scraping pods itself at decision
// time). View(scrape_delay) shows, per pod, the newest scrape taken at or before now -
// scrape_delay: the data of a pipeline that lags by that much. A pod that became Ready after that
// scrape has scrape_ok = false, as it would in Prometheus. Texts are rendered at scrape time (the
// engine's counters move on) and parsed only when a view asks for them.
//
// Truth for reports (State, outcomes): the fleet's own numbers, which no policy sees.
//
// Time: simulated time 0 is the trace's first arrival and absl::Time `options.start`. The
// cluster only moves forward. Not thread-safe; one per replay run.
#ifndef TWINSCALE_CONTROLLER_REPLAY_SIMULATED_CLUSTER_H_
#define TWINSCALE_CONTROLLER_REPLAY_SIMULATED_CLUSTER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/replay/autoscaler.h"
#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/request.h"
#include "simulator/workload/trace.h"

namespace twinscale::replay {

// How long the initial replicas show as having been Ready at time 0: they stand for a fleet that
// was serving before the trace began, so a controller sees them settled (calibration leaves out
// pods Ready for less than a minute and a half) rather than freshly started.
inline constexpr absl::Duration kInitialReplicasServingFor = absl::Hours(1);

struct ClusterOptions {
  // The truth fleet: deployment, router, speed, noise, seed, already perturbed (ApplyTruth).
  // initial_replicas are Ready at time 0 without the slow start.
  sim::FleetOptions fleet;
  sim::TtftSlo slo;
  absl::Time start = absl::UnixEpoch();  // the absl::Time of simulated time 0
  std::string pod_prefix = "vllm";       // pods are "<pod_prefix>-<replica index>"
  // Zero: scrape at the end of every AdvanceTo; else every scrape_interval from time 0.
  absl::Duration scrape_interval = absl::ZeroDuration();
  // The largest scrape_delay View serves exactly (older scrapes are dropped); larger delays are
  // clamped to it.
  absl::Duration scrape_retention = absl::Minutes(5);
};

// The truth of the fleet at one moment (not visible to any policy).
struct FleetState {
  int32_t desired = 0;  // the last Scale (or the initial replicas)
  int32_t ready = 0;    // serving
  int32_t warming = 0;  // Provisioning, Loading or WarmingUp
  int32_t draining = 0;
  int64_t waiting = 0;  // in the engines' waiting queues
  int64_t gateway = 0;  // held at the gateway (no Ready replica could take them)
  int64_t running = 0;  // in the engines' batches
  double kv_mean = 0;   // mean KV use (0..1) over Ready replicas; 0 when none is Ready
};

// What happened to one request of the trace (from the run's request records). TTFT is negative
// when the request never produced a token (rejected, or aborted before its first token).
struct RequestFate {
  sim::SimTime arrival;
  sim::SimDuration ttft;
  int32_t prompt_tokens = 0;
  sim::RequestOutcome outcome = sim::RequestOutcome::kCompleted;
};

class SimulatedCluster {
 public:
  // `trace` (normalised: sorted, first arrival at 0) is replayed from time 0; it may be null or
  // empty. The deployment is used as given (validate it before).
  SimulatedCluster(ClusterOptions options, std::shared_ptr<const sim::Trace> trace);
  SimulatedCluster(const SimulatedCluster&) = delete;
  SimulatedCluster& operator=(const SimulatedCluster&) = delete;

  absl::Time Now() const { return ToAbsl(sim_.Now()); }
  absl::Time ToAbsl(sim::SimTime t) const { return options_.start + absl::Nanoseconds(t.nanos()); }
  sim::SimTime ToSim(absl::Time t) const {
    return sim::SimTime::FromNanos(absl::ToInt64Nanoseconds(t - options_.start));
  }

  // Runs the fleet up to `t` inclusive (events at `t` fire), taking scrapes on the way (see the
  // file comment). Precondition: t >= Now().
  void AdvanceTo(absl::Time t);

  // Sets the target's spec.replicas, as a PATCH of /scale: new pods start in Provisioning and go
  // through the lifecycle. Scale-in drains `victims` (pod names: the ones a controller marked)
  // first; when none are named, the cluster picks by policy::ChooseScaleInVictims, the rule the
  // controller marks by, on its newest scrapes (not Ready first, then the fewest requests in
  // flight). Negative counts are taken as 0.
  void Scale(int32_t replicas, const std::vector<std::string>& victims = {});
  int32_t spec_replicas() const { return fleet_->desired_replicas(); }
  // The gateway's admission limits from now on (sim::Fleet::SetAdmission): what a gateway
  // enforcing a policy's advisory limits does. Rejected requests are fates like any other.
  void SetAdmission(const sim::AdmissionLimits& limits) { fleet_->SetAdmission(limits); }

  // The cluster as a controller sees it now, with metrics as of now - scrape_delay (see above).
  ClusterView View(absl::Duration scrape_delay = absl::ZeroDuration()) const;

  // Truth, for the timeline and the summary.
  FleetState State() const;
  // Every arrival delivered and nothing left in the fleet.
  bool Done() const { return fleet_->Idle(); }
  // The fate of every request that left the fleet so far (completed, rejected or aborted), in the
  // order they left. Requests still in flight have none.
  const std::vector<RequestFate>& fates() const { return fates_; }
  // GPU-hours held by every pod up to Now() (a pod holds its GPUs from Loading until it is gone).
  double GpuHours() const { return fleet_->GpuSeconds(sim_.Now()) / 3600.0; }
  int64_t events() const { return sim_.events_fired(); }
  int64_t scrapes() const { return scrapes_taken_; }
  const sim::Fleet& fleet() const { return *fleet_; }

 private:
  struct Scrape {
    sim::SimTime at;
    std::string text;
  };
  void ScrapeAll();

  ClusterOptions options_;
  sim::Simulation sim_;
  sim::RunStats stats_;
  std::unique_ptr<sim::RequestSource> source_;
  std::unique_ptr<sim::Fleet> fleet_;
  std::vector<RequestFate> fates_;
  std::vector<std::deque<Scrape>> scrapes_;  // per replica index, oldest first
  sim::SimTime next_scrape_ = sim::SimTime::Zero();
  int64_t scrapes_taken_ = 0;
};

// The Kubernetes stage a pod shows in each lifecycle phase (kGone has none: not called for it).
PodView::Stage StageOf(sim::ReplicaPhase phase);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_SIMULATED_CLUSTER_H_
