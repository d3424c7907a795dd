// The simulated cluster behind the Reconciler's seams: pods read back by the controller's own
// parser exactly as the view shows them, /scale and the other reads a pass makes, the metrics
// source, the actuator's orders.
#include "controller/replay/simulated_api.h"

#include <gtest/gtest.h>

#include "controller/kube/resource_ref.h"
#include "controller/reconcile/kube_pod.h"
#include "controller/reconcile/reconcile_steps.h"
#include "tests/util/autoscaler_object.h"

namespace twinscale::replay {
namespace {

using Stage = state::PodView::Stage;
const absl::Time kNow = absl::FromUnixSeconds(1'795'251'600) + absl::Milliseconds(250);

state::PodView Pod(const std::string& name, Stage stage, absl::Duration age,
                   absl::Duration ready_for = absl::ZeroDuration()) {
  state::PodView p;
  p.name = name;
  p.stage = stage;
  p.age = age;
  p.ready_for = ready_for;
  return p;
}

nlohmann::json Object() { return testutil::LlamaAutoscaler(8); }

// Three pods of the Deployment at kNow, the target at 3: vllm-0 and vllm-1 Ready for 58 minutes,
// vllm-2 as given.
state::ClusterView ThreePods(state::PodView third) {
  state::ClusterView view;
  view.now = kNow;
  view.spec_replicas = 3;
  view.pods = {Pod("vllm-0", Stage::kReady, absl::Hours(1), absl::Minutes(58)),
               Pod("vllm-1", Stage::kReady, absl::Hours(1), absl::Minutes(58)), std::move(third)};
  return view;
}

TEST(PodJsonTest, EachStageReadsBackWithItsTimesToTheNanosecond) {
  // Ages with fractions of a second (a simulated pod's), read back by reconcile::ParseKubePod: the
  // stage, the creation time (now - age) and the Ready time (now - ready_for) as they were.
  const absl::Duration age = absl::Seconds(95) + absl::Nanoseconds(123'456'789);
  struct Case {
    Stage stage;
    bool unschedulable;
    bool has_ip;
  };
  for (const Case& c : {Case{Stage::kPending, false, false}, Case{Stage::kPending, true, false},
                        Case{Stage::kLoading, false, true}, Case{Stage::kWarmingUp, false, true},
                        Case{Stage::kReady, false, true}, Case{Stage::kTerminating, false, true}}) {
    state::PodView p = Pod("vllm-3", c.stage, age,
                           c.stage == Stage::kReady ? absl::Seconds(30) : absl::ZeroDuration());
    p.unschedulable = c.unschedulable;
    absl::StatusOr<reconcile::KubePod> k =
        reconcile::ParseKubePod(PodJson(p, kNow, "llm", "10.0.0.3", false));
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ(k->name, "vllm-3");
    EXPECT_EQ(k->stage, c.stage);
    EXPECT_EQ(k->unschedulable, c.unschedulable);
    EXPECT_EQ(k->created, kNow - age);
    EXPECT_EQ(k->ip.empty(), !c.has_ip);
    if (c.stage == Stage::kReady) {
      ASSERT_TRUE(k->ready_since.has_value());
      EXPECT_EQ(*k->ready_since, kNow - absl::Seconds(30));
    } else {
      EXPECT_FALSE(k->ready_since.has_value());
    }
  }
}

TEST(SimulatedApiTest, APassReadsTheObjectScaleNoOtherAutoscalerAndTheViewsPods) {
  SimulatedApi api(Object());
  state::ClusterView view = ThreePods(Pod("vllm-2", Stage::kLoading, absl::Seconds(20)));
  view.pods[0].scrape_ok = true;
  view.pods[0].scraped_at = kNow - absl::Seconds(2);
  metrics::EngineObservation e;
  e.running = 4;
  view.pods[0].observation.engines = {e};
  api.Show(view);
  reconcile::ReconcilerDeps deps = api.Deps();

  auto obj = deps.client->Get(kube::kInferenceAutoscalers, "llm", "llama");
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ((*obj)["metadata"]["generation"], 1);
  EXPECT_FALSE(deps.client->Get(kube::kInferenceAutoscalers, "llm", "other").ok());

  auto scale = deps.client->Get(kube::kDeployments, "llm", "vllm", "scale");
  ASSERT_TRUE(scale.ok()) << scale.status();
  const reconcile::ScaleRead read = reconcile::ParseScale(*scale);
  EXPECT_EQ(read.spec_replicas, 3);
  EXPECT_FALSE(read.selector.empty());

  auto other = reconcile::OtherAutoscaler(*deps.client, "llm", {"apps/v1", "Deployment", "vllm"});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, "");

  auto pods = deps.pods->Pods("llm/llama", "llm", read.selector, kNow, absl::Seconds(15));
  ASSERT_TRUE(pods.ok());
  const reconcile::ListedPods listed = reconcile::ParseListedPods(*pods);
  ASSERT_EQ(listed.pods.size(), 3u);
  EXPECT_TRUE(listed.skipped.empty());

  // The metrics: the scraped pod's reading, the unscraped ones failed reads.
  auto source = deps.metrics_sources(api::MetricsSpec{}, "");
  ASSERT_TRUE(source.ok());
  auto results = (*source)->Read(reconcile::ScrapeTargets(listed.pods, api::MetricsSpec{}));
  ASSERT_TRUE(results.ok());
  const reconcile::PodReadings readings = reconcile::SplitReadings(*std::move(results));
  ASSERT_EQ(readings.readings.size(), 1u);
  EXPECT_EQ(readings.readings.at("vllm-0").scraped_at, kNow - absl::Seconds(2));
  EXPECT_EQ(readings.readings.at("vllm-0").observation.engines.at(0).running, 4.0);
  EXPECT_EQ(readings.unread, 2);  // vllm-1 (never scraped) and vllm-2 (server not up)

  // What the controller then shows its decider is the view it was given.
  const state::ClusterView back =
      reconcile::ClusterViewOf(listed.pods, readings.readings, read.spec_replicas, kNow);
  ASSERT_EQ(back.pods.size(), view.pods.size());
  for (size_t i = 0; i < back.pods.size(); ++i) {
    EXPECT_EQ(back.pods[i].name, view.pods[i].name);
    EXPECT_EQ(back.pods[i].stage, view.pods[i].stage);
    EXPECT_EQ(back.pods[i].age, view.pods[i].age);
    EXPECT_EQ(back.pods[i].ready_for, view.pods[i].ready_for);
    EXPECT_EQ(back.pods[i].scrape_ok, view.pods[i].scrape_ok);
  }

  // Writes: the status merges; creating anything is refused by name.
  ASSERT_TRUE(deps.client
                  ->MergePatch(kube::kInferenceAutoscalers, "llm", "llama",
                               {{"status", {{"desiredReplicas", 4}}}}, "status")
                  .ok());
  EXPECT_EQ(api.status()["desiredReplicas"], 4);
  EXPECT_EQ(deps.client->Get(kube::kInferenceAutoscalers, "llm", "llama")
                ->at("status")
                .at("desiredReplicas"),
            4);
  EXPECT_TRUE(absl::IsUnimplemented(deps.client->Create(kube::kPods, "llm", {}).status()));
}

TEST(SimulatedApiTest, TheActuatorKeepsTheOrderAndScaleShowsItsCount) {
  SimulatedApi api(Object());
  const state::ClusterView view =
      ThreePods(Pod("vllm-2", Stage::kReady, absl::Hours(1), absl::Minutes(58)));
  api.Show(view);
  reconcile::ReconcilerDeps deps = api.Deps();
  EXPECT_FALSE(api.last_order().has_value());
  reconcile::ScaleOrder order;
  order.target = kube::kDeployments;
  order.ns = "llm";
  order.name = "vllm";
  order.read.spec_replicas = 3;
  order.replicas = 2;
  order.victims = {"vllm-1"};
  const reconcile::ScaleWrite w = deps.actuator->Scale(order);
  EXPECT_TRUE(w.Scaled(2));
  EXPECT_EQ(w.base, 3);
  ASSERT_TRUE(api.last_order().has_value());
  EXPECT_EQ(api.last_order()->victims, (std::vector<std::string>{"vllm-1"}));
  EXPECT_EQ(reconcile::ParseScale(*deps.client->Get(kube::kDeployments, "llm", "vllm", "scale"))
                .spec_replicas,
            2);
  // The marked pod shows its mark until it is gone.
  auto pods = deps.pods->Pods("llm/llama", "llm", "app=vllm", kNow, absl::Seconds(15));
  EXPECT_EQ(reconcile::ParseListedPods(*pods).marked, (std::set<std::string>{"vllm-1"}));
  api.Show(view);  // the next sync forgets the order
  EXPECT_FALSE(api.last_order().has_value());
}

}  // namespace
}  // namespace twinscale::replay
