// The simulated cluster: see simulated_cluster.h.
#include "controller/replay/simulated_cluster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"
#include "controller/policy/scale_in_victims.h"

namespace twinscale::replay {

PodView::Stage StageOf(sim::ReplicaPhase phase) {
  switch (phase) {
    case sim::ReplicaPhase::kProvisioning:
      return PodView::Stage::kPending;
    case sim::ReplicaPhase::kLoading:
      return PodView::Stage::kLoading;
    case sim::ReplicaPhase::kWarmingUp:
      return PodView::Stage::kWarmingUp;
    case sim::ReplicaPhase::kReady:
      return PodView::Stage::kReady;
    case sim::ReplicaPhase::kDraining:
    case sim::ReplicaPhase::kGone:
      return PodView::Stage::kTerminating;
  }
  return PodView::Stage::kTerminating;
}

namespace {

// Pods whose vLLM server answers /metrics.
bool ServesMetrics(sim::ReplicaPhase phase) {
  return phase == sim::ReplicaPhase::kReady || phase == sim::ReplicaPhase::kDraining;
}

}  // namespace

SimulatedCluster::SimulatedCluster(ClusterOptions options, std::shared_ptr<const sim::Trace> trace)
    : options_(std::move(options)), stats_(options_.slo) {
  stats_.set_record_sink([this](const sim::RequestRecord& r) {
    fates_.push_back(RequestFate{r.arrival, r.ttft, r.prompt_tokens, r.outcome});
  });
  if (trace != nullptr) fates_.reserve(trace->requests.size());
  source_ = sim::MakeTraceSource(std::move(trace));
  fleet_ = std::make_unique<sim::Fleet>(sim_, options_.fleet, &stats_);
  fleet_->AttachSource(source_.get());
}

void SimulatedCluster::AdvanceTo(absl::Time t) {
  const sim::SimTime target = std::max(ToSim(t), sim_.Now());
  if (options_.scrape_interval > absl::ZeroDuration()) {
    const sim::SimDuration every = sim::SimDuration::FromAbsl(options_.scrape_interval);
    while (next_scrape_ <= target) {
      sim_.RunUntil(next_scrape_);
      ScrapeAll();
      next_scrape_ += every;
    }
    sim_.RunUntil(target);
  } else {
    sim_.RunUntil(target);
    ScrapeAll();
  }
}

void SimulatedCluster::ScrapeAll() {
  const sim::SimTime now = sim_.Now();
  const sim::SimTime keep_after = now - sim::SimDuration::FromAbsl(options_.scrape_retention);
  scrapes_.resize(static_cast<size_t>(fleet_->replica_count_ever()));
  for (int32_t i = 0; i < fleet_->replica_count_ever(); ++i) {
    std::deque<Scrape>& q = scrapes_[static_cast<size_t>(i)];
    const sim::Replica& r = fleet_->replica(i);
    if (r.phase() == sim::ReplicaPhase::kGone) {
      q.clear();
      continue;
    }
    if (ServesMetrics(r.phase())) {
      q.push_back(Scrape{now, r.metrics().Render()});
      ++scrapes_taken_;
    }
    // Keep the newest scrape at or before now - retention: a view with the largest delay needs it.
    while (q.size() >= 2 && q[1].at <= keep_after) q.pop_front();
  }
}

void SimulatedCluster::Scale(int32_t replicas, const std::vector<std::string>& victims) {
  replicas = std::max(0, replicas);
  const int32_t removed = fleet_->current_replicas() - replicas;
  std::vector<std::string> names = victims;
  if (names.empty() && removed > 0) {
    names = policy::ChooseScaleInVictims(policy::VictimCandidatesOf(View()), removed);
  }
  // Pod "<pod_prefix>-<index>" is replica <index>.
  const std::string prefix = absl::StrCat(options_.pod_prefix, "-");
  std::vector<int32_t> indices;
  for (const std::string& name : names) {
    int32_t index = 0;
    if (absl::StartsWith(name, prefix) && absl::SimpleAtoi(name.substr(prefix.size()), &index)) {
      indices.push_back(index);
    }
  }
  fleet_->SetDesiredReplicas(replicas, indices);
}

ClusterView SimulatedCluster::View(absl::Duration scrape_delay) const {
  const sim::SimTime now = sim_.Now();
  const absl::Duration delay =
      std::clamp(scrape_delay, absl::ZeroDuration(), options_.scrape_retention);
  const sim::SimTime as_of = now - sim::SimDuration::FromAbsl(delay);
  ClusterView view;
  view.now = ToAbsl(now);
  view.spec_replicas = fleet_->desired_replicas();
  for (const sim::ReplicaView& r : fleet_->Replicas()) {
    if (r.phase == sim::ReplicaPhase::kGone) continue;
    PodView pod;
    pod.name = absl::StrCat(options_.pod_prefix, "-", r.index);
    pod.stage = StageOf(r.phase);
    pod.age = (now - r.created).ToAbsl();
    pod.ready_for = r.phase == sim::ReplicaPhase::kReady ? (now - r.phase_since).ToAbsl()
                                                         : absl::ZeroDuration();
    if (r.index < options_.fleet.initial_replicas) {
      // The initial replicas stand for a fleet that was serving before the trace began.
      pod.age += kInitialReplicasServingFor;
      if (r.phase == sim::ReplicaPhase::kReady) pod.ready_for += kInitialReplicasServingFor;
    }
    // The truth fleet's Provisioning is a node being brought up for a scheduled pod: capacity on
    // its way, not an Unschedulable pod.
    pod.unschedulable = false;
    pod.scraped_at = absl::InfinitePast();
    const size_t idx = static_cast<size_t>(r.index);
    if (idx < scrapes_.size()) {
      const std::deque<Scrape>& q = scrapes_[idx];
      for (auto it = q.rbegin(); it != q.rend(); ++it) {
        if (it->at > as_of) continue;
        pod.scraped_at = ToAbsl(it->at);
        absl::StatusOr<metrics::Exposition> parsed = metrics::ParsePrometheusText(it->text);
        if (parsed.ok()) {
          absl::StatusOr<metrics::PodObservation> obs = metrics::ExtractVllmObservation(*parsed);
          if (obs.ok()) {
            pod.observation = *std::move(obs);
            pod.scrape_ok = true;
          }
        }
        break;
      }
    }
    view.pods.push_back(std::move(pod));
  }
  return view;
}

FleetState SimulatedCluster::State() const {
  FleetState s;
  s.desired = fleet_->desired_replicas();
  double kv_sum = 0;
  for (int32_t i = 0; i < fleet_->replica_count_ever(); ++i) {
    const sim::Replica& r = fleet_->replica(i);
    switch (r.phase()) {
      case sim::ReplicaPhase::kProvisioning:
      case sim::ReplicaPhase::kLoading:
      case sim::ReplicaPhase::kWarmingUp:
        ++s.warming;
        break;
      case sim::ReplicaPhase::kReady:
        ++s.ready;
        kv_sum += r.kv_usage();
        break;
      case sim::ReplicaPhase::kDraining:
        ++s.draining;
        break;
      case sim::ReplicaPhase::kGone:
        continue;
    }
    s.waiting += r.num_waiting();
    s.running += r.num_running();
  }
  s.gateway = fleet_->gateway_queue();
  s.kv_mean = s.ready > 0 ? kv_sum / s.ready : 0.0;
  return s;
}

}  // namespace twinscale::replay
