// One reconciler, live and replayed: one sequence of cluster states through the controller's
// Reconciler over the in-memory API server (tests/fakes: objects, /scale, a pod informer's list
// and watch, a metrics source reading the pods) and through replay's TwinscaleAutoscaler (the same
// Reconciler over the simulated cluster's seams, simulated_api.h) gives the same decisions,
// reasons, status and scale-in victims at every pass.
//
// The cluster is the test's own model, driven by the controller's decisions (the replay's must be
// the same, or the test fails there): a Deployment whose pods are Ready a minute after they are
// created, removed at once when marked as scale-in victims; vLLM counters growing at each Ready
// pod's share of a rate that rises, holds, then falls far enough for a scale-in. The controller
// sees it as Kubernetes objects (whole-second RFC 3339 times, conditions), the replay as a
// ClusterView built from the same model directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/common/clock.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/resource_ref.h"
#include "controller/reconcile/pod_informers.h"
#include "controller/reconcile/reconcile_steps.h"
#include "controller/reconcile/reconciler.h"
#include "controller/replay/twinscale_autoscaler.h"
#include "controller/twin/target_decider.h"
#include "nlohmann/json.hpp"
#include "simulator/profiles/profile_loader.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/autoscaler_object.h"
#include "tests/util/eventually.h"

namespace twinscale::replay {
namespace {

using nlohmann::json;
using Stage = state::PodView::Stage;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);  // 2026-11-21T09:00:00Z
const absl::Duration kInterval = absl::Seconds(15);
const absl::Duration kWarmup = absl::Minutes(1);

json Manifest() {
  json a = testutil::LlamaAutoscaler(12);
  a["spec"]["minReplicas"] = 2;
  a["spec"]["warmup"] = {{"expected", "60s"}};
  a["spec"]["scaleDown"] = {{"stabilizationWindowSeconds", 60}};
  return a;
}

// The test's cluster.
struct ModelPod {
  std::string name;
  absl::Time created;
  double finished = 0;  // vllm:request_success_total
  bool Ready(absl::Time now) const { return now >= created + kWarmup; }
};
struct Model {
  int32_t spec_replicas = 3;
  std::vector<ModelPod> pods;
  int next = 0;
  double rate = 0;  // req/s now

  void AddPod(absl::Time created) { pods.push_back({absl::StrCat("vllm-", next++), created, 0}); }
  int32_t ReadyCount(absl::Time now) const {
    return static_cast<int32_t>(
        std::count_if(pods.begin(), pods.end(), [&](const ModelPod& p) { return p.Ready(now); }));
  }
  // One interval of traffic, spread over the pods Ready at its end.
  void Serve(absl::Time now) {
    const int32_t ready = ReadyCount(now);
    for (ModelPod& p : pods) {
      if (p.Ready(now)) p.finished += rate * absl::ToDoubleSeconds(kInterval) / ready;
    }
  }
  metrics::PodObservation Observation(const ModelPod& p, absl::Time now) const {
    metrics::EngineObservation e;
    e.running = rate * 0.4 / std::max(1, ReadyCount(now));
    e.waiting = 0.0;
    e.kv_cache_usage = 0.1;
    e.requests_finished_total = p.finished;
    metrics::PodObservation o;
    o.engines.push_back(e);
    return o;
  }
};

// Pod `p` as the kubelet reports it.
json PodObject(const ModelPod& p, absl::Time now) {
  json conditions = {{{"type", "PodScheduled"}, {"status", "True"}}};
  const bool ready = p.Ready(now);
  conditions.push_back({{"type", "ContainersReady"}, {"status", ready ? "True" : "False"}});
  json r = {{"type", "Ready"}, {"status", ready ? "True" : "False"}};
  if (ready) r["lastTransitionTime"] = kube::FormatKubeTime(p.created + kWarmup);
  conditions.push_back(r);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", p.name}, {"namespace", "llm"}, {"labels", {{"app", "vllm"}}}}},
          {"status", {{"phase", "Running"}, {"podIP", "10.0.0.1"}, {"conditions", conditions}}}};
}

// The pods' /metrics as the controller's scraper would read them from the model.
class ModelSource : public metrics::MetricsSource {
 public:
  ModelSource(const Model* model, const Clock* clock) : model_(model), clock_(clock) {}
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>& targets) const override {
    const absl::Time now = clock_->Now();
    std::vector<metrics::PodResult> out;
    for (const metrics::PodTarget& t : targets) {
      metrics::PodResult r{t.pod, absl::UnavailableError("connection refused")};
      for (const ModelPod& p : model_->pods) {
        if (p.name == t.pod && p.Ready(now)) {
          r.reading = metrics::PodReading{now, model_->Observation(p, now)};
        }
      }
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  const Model* model_;
  const Clock* clock_;
};

// The same model as replay's cluster shows it.
state::ClusterView ViewOf(const Model& m, absl::Time now) {
  state::ClusterView v;
  v.now = now;
  v.spec_replicas = m.spec_replicas;
  for (const ModelPod& p : m.pods) {
    state::PodView pod;
    pod.name = p.name;
    pod.age = now - p.created;
    if (p.Ready(now)) {
      pod.stage = Stage::kReady;
      pod.ready_for = now - (p.created + kWarmup);
      pod.scrape_ok = true;
      pod.scraped_at = now;
      pod.observation = m.Observation(p, now);
    } else {
      pod.stage = Stage::kLoading;
    }
    v.pods.push_back(std::move(pod));
  }
  return v;
}

double RateAt(int pass) {
  if (pass < 8) return 20;   // light
  if (pass < 24) return 90;  // a rise the fleet must grow for
  return 8;                  // a fall it can shrink after
}

TEST(ReplayParityTest, TheControllerAndReplayDecideAlikeOnOneSequenceOfClusterStates) {
  auto loaded = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const sim::ProfileRegistry profiles = *std::move(loaded);

  // The controller's side.
  ManualClock clock(kT0 - absl::Hours(1));
  fakes::FakeKubeClient api(&clock);
  reconcile::PodInformers informers(&api);
  twin::TwinDeciderFactory deciders(&profiles);
  Model model;
  reconcile::ReconcilerDeps deps;
  deps.client = &api;
  deps.clock = &clock;
  deps.pods = &informers;
  deps.deciders = &deciders;
  deps.metrics_sources =
      [&](const api::MetricsSpec&,
          const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
    return std::make_unique<ModelSource>(&model, &clock);
  };
  reconcile::Reconciler controller(deps);

  // Replay's side.
  auto replayed = TwinscaleAutoscaler::FromManifest("twinscale", Manifest(), &profiles);
  ASSERT_TRUE(replayed.ok()) << replayed.status();

  // Three pods serving for an hour.
  for (int i = 0; i < 3; ++i) model.AddPod(clock.Now());
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
      {"spec", {{"replicas", 3}, {"selector", {{"matchLabels", {{"app", "vllm"}}}}}}}};
  ASSERT_TRUE(api.Create(kube::kDeployments, "llm", deployment).ok());
  for (const ModelPod& p : model.pods) {
    ASSERT_TRUE(api.Create(kube::kPods, "llm", PodObject(p, kT0)).ok());
  }
  ASSERT_TRUE(api.Create(kube::kInferenceAutoscalers, "llm", Manifest()).ok());

  int scale_ups = 0, scale_ins = 0;
  std::vector<int32_t> sizes;
  for (int pass = 0; pass < 48; ++pass) {
    const absl::Time now = kT0 + pass * kInterval;
    clock.Set(now);
    model.rate = RateAt(pass);
    model.Serve(now);
    // The API server as the model stands: /scale, the pods' conditions.
    ASSERT_TRUE(api.MergePatch(kube::kDeployments, "llm", "vllm",
                               {{"spec", {{"replicas", model.spec_replicas}}}})
                    .ok());
    for (const ModelPod& p : model.pods) {
      const json obj = PodObject(p, now);
      auto got = api.Get(kube::kPods, "llm", p.name);
      ASSERT_TRUE(got.ok()) << got.status();
      if ((*got)["status"] != obj["status"]) {
        ASSERT_TRUE(
            api.MergePatch(kube::kPods, "llm", p.name, {{"status", obj["status"]}}, "status").ok());
      }
    }
    // The informer's cache caught up with the server before the pass.
    const std::vector<json> listed = api.List(kube::kPods, "llm")->items;
    ASSERT_TRUE(testutil::Eventually([&] {
      auto cached = informers.Pods("probe", "llm", "app=vllm", now, kInterval);
      if (!cached.ok() || cached->size() != listed.size()) return false;
      for (const json& c : *cached) {
        if (std::find(listed.begin(), listed.end(), c) == listed.end()) return false;
      }
      return true;
    }));

    const reconcile::ReconcileResult live = controller.Reconcile("llm", "llama");
    ASSERT_TRUE(live.status.ok()) << "pass " << pass << ": " << live.status;
    const int32_t replay_count = (*replayed)->Decide(ViewOf(model, now));

    const json live_status = (*api.Get(kube::kInferenceAutoscalers, "llm", "llama"))["status"];
    ASSERT_EQ(live_status, (*replayed)->status()) << "pass " << pass;
    const int32_t live_count =
        (*api.Get(kube::kDeployments, "llm", "vllm"))["spec"]["replicas"].get<int32_t>();
    ASSERT_EQ(live_count, replay_count) << "pass " << pass;
    ASSERT_EQ((*replayed)->decisions().back().replicas, live_status["desiredReplicas"]);

    // Victims: the pods the controller marked, the ones replay's cluster drains.
    std::vector<std::string> marked;
    const std::vector<json> after = api.List(kube::kPods, "llm")->items;
    for (const json& p : after) {
      if (p["metadata"].value("annotations", json::object()).contains(reconcile::kDeletionCost)) {
        marked.push_back(p["metadata"]["name"]);
      }
    }
    std::vector<std::string> victims = (*replayed)->Victims();
    std::sort(victims.begin(), victims.end());
    if (live_count < model.spec_replicas) {
      ++scale_ins;
      ASSERT_EQ(marked, victims) << "pass " << pass;
      ASSERT_EQ(static_cast<int32_t>(victims.size()), model.spec_replicas - live_count);
      for (const std::string& v : victims) {
        std::erase_if(model.pods, [&](const ModelPod& p) { return p.name == v; });
        ASSERT_TRUE(api.Delete(kube::kPods, "llm", v).ok());
      }
    } else {
      EXPECT_TRUE(victims.empty()) << "pass " << pass;
      if (live_count > model.spec_replicas) ++scale_ups;
      // The ReplicaSet's new pods, created now.
      for (int32_t i = model.spec_replicas; i < live_count; ++i) {
        model.AddPod(now);
        ASSERT_TRUE(api.Create(kube::kPods, "llm", PodObject(model.pods.back(), now)).ok());
      }
    }
    model.spec_replicas = live_count;
    sizes.push_back(live_count);
  }
  // The sequence did what it is for: the fleet grew for the rise and shrank after the fall.
  EXPECT_GE(scale_ups, 1) << ::testing::PrintToString(sizes);
  EXPECT_GE(scale_ins, 1) << ::testing::PrintToString(sizes);
  EXPECT_GT(*std::max_element(sizes.begin(), sizes.end()), 3);
}

}  // namespace
}  // namespace twinscale::replay
