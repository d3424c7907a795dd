// One conformance suite for the Kubernetes API, run against the fake API server
// (tests/fake_apiserver, what most tests use because it can fail on demand) and a real
// kube-apiserver v1.26 (control_plane.h). Where both can answer they must agree: each case drives
// the project's own client (kube::HttpKubeClient, what the controller uses) through the same
// requests and checks the same outcome against both. The first case is the rule the fake once
// missed and that blocked installs: a CRD whose root metadata schema says more than name and
// generateName is refused.
//
// The real half is skipped (not passed) where ../shared/k8s is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/common/clock.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/cluster_config.h"
#include "controller/kube/resource_ref.h"
#include "controller/kube/rest_client.h"
#include "controller/reconcile/autoscaler_status.h"
#include "controller/state/arrival_history_codec.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/json_yaml.h"
#include "tests/k8s/control_plane.h"
#include "tests/util/eventually.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::k8s_test {
namespace {

using nlohmann::json;
using testutil::Eventually;

// Polls of the control plane every 200 ms: each is a request to the API server.
constexpr absl::Duration kPoll = absl::Milliseconds(200);

const kube::ResourceRef kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
const kube::ResourceRef kNamespaces{"", "v1", "namespaces", false};
constexpr char kCrdFile[] = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";
constexpr char kNs[] = "conformance";

json CrdJson() { return fake_apiserver::YamlToJson(YAML::LoadFile(kCrdFile)); }

json Autoscaler(const std::string& name, const json& spec_changes = json::object()) {
  json spec = {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
               {"maxReplicas", 4},
               {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}}};
  spec.merge_patch(spec_changes);
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec", spec}};
}

json Deployment(const std::string& name, int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}}}}}};
}

// The server under test, with an admin client.
class Server {
 public:
  virtual ~Server() = default;
  virtual kube::KubeClient& client() = 0;
};

class FakeServer : public Server {
 public:
  static std::unique_ptr<FakeServer> Start() {
    auto s = std::make_unique<FakeServer>();
    auto api = fake_apiserver::FakeApiServer::Start({});
    if (!api.ok()) return nullptr;
    s->api_ = *std::move(api);
    kube::ClusterConfig config;
    config.server = s->api_->url();
    auto client = kube::HttpKubeClient::FromConfig(config, &s->clock_);
    if (!client.ok()) return nullptr;
    s->client_ = *std::move(client);
    return s;
  }
  kube::KubeClient& client() override { return *client_; }

 private:
  RealClock clock_;
  std::unique_ptr<fake_apiserver::FakeApiServer> api_;
  std::unique_ptr<kube::HttpKubeClient> client_;
};

class RealServer : public Server {
 public:
  static absl::StatusOr<std::unique_ptr<RealServer>> Start() {
    auto s = std::make_unique<RealServer>();
    ControlPlaneOptions o;
    o.controller_manager = false;
    auto cp = ControlPlane::Start(o);
    if (!cp.ok()) return cp.status();
    s->cp_ = *std::move(cp);
    auto config = kube::LoadKubeconfig({s->cp_->kubeconfig()}, "");
    if (!config.ok()) return config.status();
    auto client = kube::HttpKubeClient::FromConfig(*config, &s->clock_);
    if (!client.ok()) return client.status();
    s->client_ = *std::move(client);
    return s;
  }
  kube::KubeClient& client() override { return *client_; }

 private:
  RealClock clock_;
  std::unique_ptr<ControlPlane> cp_;
  std::unique_ptr<kube::HttpKubeClient> client_;
};

class ApiConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "real") {
      TS_SKIP_WITHOUT_CONTROL_PLANE();
      auto s = RealServer::Start();
      ASSERT_TRUE(s.ok()) << s.status();
      server_ = *std::move(s);
    } else {
      server_ = FakeServer::Start();
      ASSERT_NE(server_, nullptr);
    }
    auto ns =
        c().Create(kNamespaces, "",
                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}});
    ASSERT_TRUE(ns.ok()) << ns.status();
  }

  kube::KubeClient& c() { return server_->client(); }

  // Creates the shipped CRD and waits until its kind is served (a real server takes a moment).
  void InstallCrd() {
    auto created = c().Create(kCrds, "", CrdJson());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(Eventually([&] { return c().List(kube::kInferenceAutoscalers, kNs).ok(); },
                           absl::Seconds(30), kPoll));
  }

  std::unique_ptr<Server> server_;
};

TEST_P(ApiConformance, ACrdWhoseRootMetadataSaysMoreThanNameIsRefused) {
  json crd = CrdJson();
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["description"] =
      "Standard object metadata.";
  auto created = c().Create(kCrds, "", crd);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << created.status();
  EXPECT_TRUE(absl::StrContains(created.status().message(), "properties[metadata]"))
      << created.status();
}

TEST_P(ApiConformance, TheShippedCrdIsAcceptedAndServesItsKind) {
  InstallCrd();
  auto created = c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("ok"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["generation"], 1);
  // Defaults come from the schema, as the loader fills them in.
  EXPECT_EQ((*created)["spec"]["mode"], "Recommend");
  EXPECT_EQ((*created)["spec"]["minReplicas"], 1);
}

TEST_P(ApiConformance, AnInvalidAutoscalerIsRefusedNamingTheField) {
  InstallCrd();
  auto created =
      c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("bad", {{"minReplicas", 0}}));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(created.status().message(), "spec.minReplicas"))
      << created.status();
  auto missing =
      c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("bad", {{"maxReplicas", nullptr}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "spec.maxReplicas"))
      << missing.status();
}

TEST_P(ApiConformance, AMissingObjectIsNotFoundAndANameTakenAlreadyExists) {
  InstallCrd();
  EXPECT_TRUE(absl::IsNotFound(c().Get(kube::kInferenceAutoscalers, kNs, "nope").status()));
  ASSERT_TRUE(c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("twice")).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(
      c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("twice")).status()));
  EXPECT_TRUE(absl::IsNotFound(c().Delete(kube::kInferenceAutoscalers, kNs, "nope")));
}

TEST_P(ApiConformance, AWriteWithAStaleResourceVersionConflicts) {
  InstallCrd();
  auto created = c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("rv"));
  ASSERT_TRUE(created.ok()) << created.status();
  json first = *created;
  first["spec"]["maxReplicas"] = 5;
  ASSERT_TRUE(c().Update(kube::kInferenceAutoscalers, kNs, first).ok());
  json stale = *created;  // still carries the first resourceVersion
  stale["spec"]["maxReplicas"] = 6;
  const absl::Status s = c().Update(kube::kInferenceAutoscalers, kNs, stale).status();
  EXPECT_TRUE(kube::IsConflict(s)) << s;
}

// The status the controller writes comes back whole: a server prunes fields its schema lacks, and
// a new leader restores the calibration and the arrival history from what it reads back.
TEST_P(ApiConformance, TheControllersStatusWithTheArrivalHistoryRoundTrips) {
  InstallCrd();
  ASSERT_TRUE(c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("history")).ok());
  const absl::Time start = absl::FromUnixSeconds(1795219200);  // a bucket boundary
  state::ArrivalBuckets week;
  week.start = start;
  for (int i = 0; i < 2016; ++i) {
    week.arrivals.push_back(60000 + 30000 * std::sin(i * 6.283185307179586 / 288) + (i * 37) % 500);
    week.observed_s.push_back(i == 700 ? 0 : 300);  // one bucket the controller did not see
  }
  reconcile::AutoscalerStatus s;
  s.observed_generation = 1;
  s.calibration = reconcile::AutoscalerStatus::Calibration{0.75, 0.8, 40, 0.35, 0.030};
  s.arrival_history = reconcile::AutoscalerStatus::ArrivalHistory{
      week.bucket, week.start, week.end(), state::EncodeArrivalBuckets(week)};
  ASSERT_TRUE(c().MergePatch(kube::kInferenceAutoscalers, kNs, "history",
                             {{"status", reconcile::StatusToJson(s)}}, "status")
                  .ok());
  auto got = c().Get(kube::kInferenceAutoscalers, kNs, "history");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["status"]["arrivalHistory"], reconcile::StatusToJson(s)["arrivalHistory"]);
  auto back = reconcile::StatusFromJson((*got)["status"]);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->arrival_history.has_value()) << "the server pruned status.arrivalHistory";
  auto buckets = state::DecodeArrivalBuckets(
      back->arrival_history->bucket, back->arrival_history->start, back->arrival_history->data);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  EXPECT_EQ(buckets->start, start);
  ASSERT_EQ(buckets->size(), 2016u);
  EXPECT_EQ(buckets->observed_s[700], 0);
  EXPECT_EQ(buckets->arrivals[1], std::round(week.arrivals[1]));
  EXPECT_EQ(back->arrival_history->end, start + absl::Hours(24 * 7));
  ASSERT_TRUE(back->calibration.has_value());
  EXPECT_EQ(back->calibration->updates, 40);
  EXPECT_EQ(back->calibration->router_random_share, 0.35)
      << "the server pruned status.calibration.routerRandomShare";
  EXPECT_EQ(back->calibration->extra_front_end_seconds, 0.030)
      << "the server pruned status.calibration.extraFrontEndSeconds";
}

TEST_P(ApiConformance, StatusAndSpecAreWrittenApartAndOnlySpecBumpsTheGeneration) {
  InstallCrd();
  ASSERT_TRUE(c().Create(kube::kInferenceAutoscalers, kNs, Autoscaler("gen")).ok());
  auto status = c().MergePatch(
      kube::kInferenceAutoscalers, kNs, "gen",
      {{"status", {{"desiredReplicas", 3}}}, {"spec", {{"maxReplicas", 9}}}}, "status");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ((*status)["status"]["desiredReplicas"], 3);
  EXPECT_EQ((*status)["spec"]["maxReplicas"], 4) << "a status write changed the spec";
  EXPECT_EQ((*status)["metadata"]["generation"], 1);
  auto spec =
      c().MergePatch(kube::kInferenceAutoscalers, kNs, "gen",
                     {{"spec", {{"maxReplicas", 7}}}, {"status", {{"desiredReplicas", 1}}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["spec"]["maxReplicas"], 7);
  EXPECT_EQ((*spec)["status"]["desiredReplicas"], 3) << "a spec write changed the status";
  EXPECT_EQ((*spec)["metadata"]["generation"], 2);
}

TEST_P(ApiConformance, TheScaleSubresourceReadsAndWritesADeploymentsReplicas) {
  ASSERT_TRUE(c().Create(kube::kDeployments, kNs, Deployment("web", 2)).ok());
  auto scale = c().Get(kube::kDeployments, kNs, "web", "scale");
  ASSERT_TRUE(scale.ok()) << scale.status();
  EXPECT_EQ((*scale)["kind"], "Scale");
  EXPECT_EQ((*scale)["spec"]["replicas"], 2);
  EXPECT_EQ((*scale)["status"]["selector"], "app=web");
  auto written =
      c().MergePatch(kube::kDeployments, kNs, "web", {{"spec", {{"replicas", 5}}}}, "scale");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ((*written)["spec"]["replicas"], 5);
  auto d = c().Get(kube::kDeployments, kNs, "web");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)["spec"]["replicas"], 5);
  // A precondition on a stale resourceVersion conflicts, as the controller's retry expects.
  const absl::Status stale =
      c().MergePatch(kube::kDeployments, kNs, "web",
                     {{"spec", {{"replicas", 6}}},
                      {"metadata", {{"resourceVersion", (*scale)["metadata"]["resourceVersion"]}}}},
                     "scale")
          .status();
  EXPECT_TRUE(kube::IsConflict(stale)) << stale;
}

INSTANTIATE_TEST_SUITE_P(FakeAndReal, ApiConformance, ::testing::Values("fake", "real"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace twinscale::k8s_test
