// The kubelet's part for a node-less control plane: see loopback_kubelet.h.
#include "tests/k8s/loopback_kubelet.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/kube/cluster_config.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/resource_ref.h"
#include "nlohmann/json.hpp"

namespace twinscale::k8s_test {
namespace {

using nlohmann::json;

json Condition(const std::string& type, absl::Time since) {
  return {{"type", type}, {"status", "True"}, {"lastTransitionTime", kube::FormatKubeTime(since)}};
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoopbackKubelet>> LoopbackKubelet::Start(
    LoopbackKubeletOptions options) {
  std::unique_ptr<LoopbackKubelet> k(new LoopbackKubelet(std::move(options)));
  auto config = kube::LoadKubeconfig({k->options_.kubeconfig}, "");
  if (!config.ok()) return config.status();
  kube::HttpKubeClientOptions co;
  co.user_agent = "loopback-kubelet";
  co.request_timeout = absl::Seconds(10);
  auto client = kube::HttpKubeClient::FromConfig(*config, &k->clock_, co);
  if (!client.ok()) return client.status();
  k->client_ = *std::move(client);

  e2e::LiveFleetOptions fo;
  fo.initial_replicas = k->options_.initial_replicas;
  fo.trace = k->options_.trace;
  fo.warmup = k->options_.warmup;
  fo.pod_prefix = k->options_.app;
  fo.first_address = k->options_.first_address;
  auto fleet = e2e::LiveFleet::Start(fo, &k->clock_);
  if (!fleet.ok()) return fleet.status();
  k->fleet_ = *std::move(fleet);
  k->Tick();
  k->thread_ = std::thread([raw = k.get()] { raw->Run(); });
  return k;
}

LoopbackKubelet::~LoopbackKubelet() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (fleet_) fleet_->Stop();
}

int32_t LoopbackKubelet::pods_made_ready() const {
  absl::MutexLock lock(&mu_);
  return made_ready_;
}

int32_t LoopbackKubelet::ready_pods() const {
  absl::MutexLock lock(&mu_);
  return ready_now_;
}

void LoopbackKubelet::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  serving_ = serving;
}

std::string LoopbackKubelet::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

void LoopbackKubelet::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.tick)) return;
    }
    Tick();
  }
}

void LoopbackKubelet::Tick() {
  kube::ListOptions lo;
  lo.label_selector = absl::StrCat("app=", options_.app);
  auto listed = client_->List(kube::kPods, options_.namespace_name, lo);
  if (!listed.ok()) {
    absl::MutexLock lock(&mu_);
    last_error_ = absl::StrCat("list pods: ", listed.status().message());
    return;
  }
  // Live Pods, oldest first (the ReplicaSet's creation order, as the fleet's replicas are).
  std::vector<const json*> pods;
  for (const json& p : listed->items) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    pods.push_back(&p);
  }
  std::sort(pods.begin(), pods.end(), [](const json* a, const json* b) {
    const std::string ca = (*a)["metadata"].value("creationTimestamp", "");
    const std::string cb = (*b)["metadata"].value("creationTimestamp", "");
    return ca != cb ? ca < cb
                    : (*a)["metadata"].value("name", "") < (*b)["metadata"].value("name", "");
  });
  std::set<std::string> names;
  for (const json* p : pods) names.insert((*p)["metadata"].value("name", ""));
  for (auto it = backing_.begin(); it != backing_.end();) {
    if (names.count(it->first) == 0) {
      ready_ip_.erase(it->first);
      it = backing_.erase(it);
    } else {
      ++it;
    }
  }
  const int32_t want = static_cast<int32_t>(pods.size());
  if (fleet_->spec_replicas() != want) {
    fleet_->Scale(want);
    fleet_->WaitForTick();
  }
  // The fleet's replicas now, and which of them back no Pod.
  std::map<std::string, e2e::LivePod> live;
  for (const e2e::LivePod& r : fleet_->Pods()) live.emplace(r.name, r);
  std::set<std::string> free;
  for (const auto& [name, r] : live) free.insert(name);
  for (auto it = backing_.begin(); it != backing_.end();) {
    if (live.count(it->second) == 0) {  // the fleet removed this Pod's replica on scale-in
      ready_ip_.erase(it->first);
      it = backing_.erase(it);
    } else {
      free.erase(it->second);
      ++it;
    }
  }
  for (const json* p : pods) {
    const std::string name = (*p)["metadata"].value("name", "");
    if (backing_.count(name) != 0 || free.empty()) continue;
    // A new Pod takes the fleet's newest unbacked replica that is not older than it needs: the
    // first Pods take the initial replicas in order, later ones the replicas the scale made.
    backing_[name] = *free.begin();
    free.erase(free.begin());
  }
  {
    // Faults follow the replicas: every replica answers 500 while not serving, new ones too.
    absl::MutexLock lock(&mu_);
    if (!serving_) {
      for (const auto& [name, r] : live) {
        if (faulted_.insert(name).second) fleet_->SetFault(name, e2e::PodFault::kHttp500);
      }
    } else {
      for (const std::string& name : faulted_) fleet_->SetFault(name, e2e::PodFault::kNone);
      faulted_.clear();
    }
  }
  int32_t ready = 0;
  const absl::Time now = clock_.Now();
  for (const json* p : pods) {
    const std::string name = (*p)["metadata"].value("name", "");
    auto b = backing_.find(name);
    if (b == backing_.end()) continue;
    const e2e::LivePod& r = live.at(b->second);
    if (!r.serving) continue;
    ++ready;
    auto known = ready_ip_.find(name);
    if (known != ready_ip_.end() && known->second == r.ip) continue;
    const absl::Time since =
        std::min(now, r.ready_since == absl::InfinitePast() ? now : r.ready_since);
    json status = {
        {"phase", "Running"},
        {"hostIP", "127.0.0.1"},
        {"podIP", r.ip},
        {"podIPs", json::array({{{"ip", r.ip}}})},
        {"startTime", (*p)["metadata"].value("creationTimestamp", kube::FormatKubeTime(now))},
        {"conditions",
         json::array({Condition("PodScheduled", since), Condition("Initialized", since),
                      Condition("ContainersReady", since), Condition("Ready", since)})},
        {"containerStatuses",
         json::array({{{"name", "vllm"},
                       {"ready", true},
                       {"started", true},
                       {"restartCount", 0},
                       {"image", "vllm/vllm-openai:v0.8.5"},
                       {"imageID", ""},
                       {"state", {{"running", {{"startedAt", kube::FormatKubeTime(since)}}}}}}})}};
    auto patched = client_->MergePatch(kube::kPods, options_.namespace_name, name,
                                       {{"status", status}}, "status");
    absl::MutexLock lock(&mu_);
    if (patched.ok()) {
      if (known == ready_ip_.end()) ++made_ready_;
      ready_ip_[name] = r.ip;
    } else {
      last_error_ = absl::StrCat("patch pod ", name, "/status: ", patched.status().message());
    }
  }
  absl::MutexLock lock(&mu_);
  ready_now_ = ready;
}

}  // namespace twinscale::k8s_test
