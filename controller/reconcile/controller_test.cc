// The Controller against the in-memory API (fakes::FakeKubeClient): its informer must watch the
// InferenceAutoscalers themselves, so an object that appears is reconciled without anyone asking,
// and with leader election only the Lease holder acts. The decider is scripted (always "3
// replicas"); the Reconciler is the real one. Real time, short waits (polls with a deadline).
#include "controller/reconcile/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "controller/common/metrics_registry.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/resource_ref.h"
#include "controller/outputs/decision_board.h"
#include "controller/reconcile/controller_metrics.h"
#include "nlohmann/json.hpp"
#include "tests/fakes/fake_kube_client.h"

namespace twinscale::reconcile {
namespace {

using nlohmann::json;

class FixedDecider : public policy::Decider {
 public:
  policy::Decision Decide(const state::ClusterView& view) override {
    policy::Decision d;
    d.at = view.now;
    d.current = view.spec_replicas;
    d.replicas = 3;
    d.reasons.push_back({"Fixed", "the test decides 3"});
    return d;
  }
  const state::FleetSnapshot* last_snapshot() const override { return nullptr; }
  policy::CalibrationFactors calibration() const override { return {}; }
  void RestoreCalibration(const policy::CalibrationFactors&) override {}
  std::optional<double> last_prediction_error_ms() const override { return std::nullopt; }
};

class FixedFactory : public policy::DeciderFactory {
 public:
  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const policy::InferenceAutoscalerSpec&) override {
    return std::make_unique<FixedDecider>();
  }
  absl::Status Reconfigure(const policy::InferenceAutoscalerSpec&, policy::Decider&) override {
    return absl::OkStatus();
  }
};

class NoPodsSource : public metrics::MetricsSource {
 public:
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>&) const override {
    return std::vector<metrics::PodResult>{};
  }
};

json Ias() {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", "llama"}, {"namespace", "llm"}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
            {"mode", "Direct"},
            {"maxReplicas", 8},
            {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}},
            {"metrics", {{"interval", "1s"}, {"staleAfter", "5s"}}}}}};
}

json Deployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "vllm"}, {"namespace", "llm"}}},
          {"spec", {{"replicas", 1}, {"selector", {{"matchLabels", {{"app", "vllm"}}}}}}}};
}

bool WaitFor(const std::function<bool()>& done, absl::Duration timeout) {
  RealClock clock;
  const absl::Time deadline = clock.Now() + timeout;
  while (!done()) {
    if (clock.Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class ControllerTest : public ::testing::Test {
 protected:
  ControllerTest() : api_(&clock_) {
    deps_.client = &api_;
    deps_.clock = &clock_;
    deps_.deciders = &factory_;
    deps_.metrics_sources =
        [](const policy::MetricsSpec&,
           const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
      return std::make_unique<NoPodsSource>();
    };
  }
  int32_t SpecReplicas() {
    return (*api_.Get(kube::kDeployments, "llm", "vllm"))["spec"].value("replicas", 0);
  }
  int ScalePatches() {
    int n = 0;
    for (const auto& r : api_.requests()) {
      if (r.verb == "patch" && r.subresource == "scale") ++n;
    }
    return n;
  }

  RealClock clock_;
  fakes::FakeKubeClient api_;
  FixedFactory factory_;
  ReconcilerDeps deps_;
};

TEST_F(ControllerTest, AnAutoscalerThatAppearsIsFoundByTheInformerAndReconciled) {
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment()).ok());
  Reconciler reconciler(deps_);
  ControllerOptions options;
  options.leader_election = false;
  Controller controller(options, &api_, &reconciler, &clock_, nullptr, nullptr);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return controller.Synced(); }, absl::Seconds(5)));
  // Created after the first list: only the watch of InferenceAutoscalers can bring it.
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Ias()).ok());
  EXPECT_TRUE(WaitFor([&] { return SpecReplicas() == 3; }, absl::Seconds(5)))
      << "the controller never reconciled the new InferenceAutoscaler";
  bool listed_autoscalers = false;
  for (const auto& r : api_.requests()) {
    if (r.verb == "list" && r.resource == kube::kInferenceAutoscalers) listed_autoscalers = true;
  }
  EXPECT_TRUE(listed_autoscalers);
  controller.Stop();
}

TEST_F(ControllerTest, AFollowerDoesNotActWhileAnotherReplicaHoldsTheLease) {
  ASSERT_TRUE(api_.Create(kube::kDeployments, "llm", Deployment()).ok());
  ASSERT_TRUE(api_.Create(kube::kInferenceAutoscalers, "llm", Ias()).ok());
  // A peer holds a fresh lease, valid for a minute.
  const std::string now = kube::FormatMicroTime(clock_.Now());
  ASSERT_TRUE(api_.Create(kube::kLeases, "llm",
                          {{"apiVersion", "coordination.k8s.io/v1"},
                           {"kind", "Lease"},
                           {"metadata", {{"name", "twinscale"}, {"namespace", "llm"}}},
                           {"spec",
                            {{"holderIdentity", "peer"},
                             {"leaseDurationSeconds", 60},
                             {"acquireTime", now},
                             {"renewTime", now},
                             {"leaseTransitions", 0}}}})
                  .ok());
  // The gRPC outputs' board, wired as `twinscale controller` wires it: a follower serves nothing.
  outputs::DecisionBoard board;
  board.SetServing(false);
  deps_.board = &board;
  absl::Mutex hook_mu;
  std::vector<bool> hook_calls;
  Reconciler reconciler(deps_);
  MetricsRegistry registry;
  auto metrics = ControllerMetrics::Register(registry);
  ASSERT_TRUE(metrics.ok());
  ControllerOptions options;
  options.lease = {
      "llm", "twinscale", "me", absl::Seconds(3), absl::Seconds(2), absl::Milliseconds(200)};
  options.on_leadership_change = [&](bool leading) {
    board.SetServing(leading);
    absl::MutexLock lock(&hook_mu);
    hook_calls.push_back(leading);
  };
  auto hooks = [&] {
    absl::MutexLock lock(&hook_mu);
    return hook_calls;
  };
  Controller controller(options, &api_, &reconciler, &clock_, nullptr, &*metrics);
  ASSERT_TRUE(controller.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return controller.Synced(); }, absl::Seconds(5)));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // several election attempts
  EXPECT_FALSE(controller.IsLeader());
  EXPECT_TRUE(hooks().empty());  // never told "leading"
  EXPECT_FALSE(board.serving());
  EXPECT_EQ(ScalePatches(), 0);
  EXPECT_EQ(SpecReplicas(), 1);
  // A follower says so on /metrics (a missing series can't be alerted on).
  EXPECT_NE(registry.Render().find("\ntwinscale_leader 0\n"), std::string::npos)
      << registry.Render();

  // The peer gives the lease up: this replica takes it and acts.
  ASSERT_TRUE(api_.MergePatch(kube::kLeases, "llm", "twinscale",
                              {{"spec", {{"holderIdentity", ""}, {"leaseDurationSeconds", 1}}}})
                  .ok());
  EXPECT_TRUE(WaitFor([&] { return controller.IsLeader(); }, absl::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] { return SpecReplicas() == 3; }, absl::Seconds(5)));
  EXPECT_NE(registry.Render().find("\ntwinscale_leader 1\n"), std::string::npos);
  // The leader serves, and its passes publish.
  EXPECT_EQ(hooks(), std::vector<bool>{true});
  EXPECT_TRUE(board.serving());
  EXPECT_TRUE(WaitFor([&] { return board.Get("llm", "llama").has_value(); }, absl::Seconds(5)));
  EXPECT_EQ(board.Get("llm", "llama")->decision.desired_replicas, 3);
  // Stopping (SIGTERM) stops leading: the outputs stop serving, with nothing left published.
  controller.Stop();
  EXPECT_EQ(hooks(), (std::vector<bool>{true, false}));
  EXPECT_FALSE(board.serving());
  EXPECT_TRUE(board.List().empty());
}

}  // namespace
}  // namespace twinscale::reconcile
