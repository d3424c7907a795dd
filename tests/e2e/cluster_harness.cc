// ClusterHarness and ControllerInstance: see cluster_harness.h.
#include "tests/e2e/cluster_harness.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/common/json_log.h"
#include "controller/common/metrics_registry.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/rest_client.h"
#include "controller/metrics/pod_scraper.h"
#include "controller/metrics/promql_source.h"
#include "controller/reconcile/controller.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/pod_informers.h"
#include "controller/reconcile/reconciler.h"
#include "controller/twin/target_decider.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::e2e {
namespace {

using nlohmann::json;
using Stage = state::PodView::Stage;

constexpr char kDeletionCost[] = "controller.kubernetes.io/pod-deletion-cost";

json PodCondition(const std::string& type, bool status, absl::Time since,
                  const std::string& reason = "") {
  json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"lastProbeTime", nullptr},
            {"lastTransitionTime", kube::FormatKubeTime(since)}};
  if (!reason.empty()) c["reason"] = reason;
  return c;
}

bool IsWrite(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

std::string HeaderOr(const fake_apiserver::FakeApiServer::LoggedRequest& r, const char* name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

}  // namespace

std::shared_ptr<const sim::Trace> PhasedTrace(const std::vector<TrafficPhase>& phases,
                                              int32_t prompt_tokens, int32_t output_tokens,
                                              uint64_t seed) {
  auto trace = std::make_shared<sim::Trace>();
  std::vector<std::string> parts;
  absl::Duration offset = absl::ZeroDuration();
  for (size_t i = 0; i < phases.size(); ++i) {
    const TrafficPhase& p = phases[i];
    parts.push_back(absl::StrCat(p.rate_rps, " req/s for ", absl::FormatDuration(p.span)));
    if (p.rate_rps > 0) {
      // Each phase is its own Poisson stream (SyntheticTrace starts it at 0), moved to its offset.
      std::shared_ptr<const sim::Trace> piece =
          SyntheticTrace(p.rate_rps, p.span, prompt_tokens, output_tokens, seed + i);
      const sim::SimDuration shift = sim::SimDuration::FromAbsl(offset);
      for (sim::RequestSpec r : piece->requests) {
        r.arrival = r.arrival + shift;
        trace->requests.push_back(std::move(r));
      }
    }
    offset += p.span;
  }
  // Sorted with ids in order, as a normalised trace; not shifted, so phase boundaries stay where
  // the test put them (fleet time 0 is the start of the first phase).
  std::stable_sort(
      trace->requests.begin(), trace->requests.end(),
      [](const sim::RequestSpec& a, const sim::RequestSpec& b) { return a.arrival < b.arrival; });
  for (size_t i = 0; i < trace->requests.size(); ++i) trace->requests[i].id = i;
  trace->source = absl::StrCat("phased Poisson: ", absl::StrJoin(parts, ", then "));
  return trace;
}

json AutoscalerManifest(const AutoscalerOptions& o, const std::string& ns,
                        const std::string& deployment) {
  json metrics = {{"source", o.source}, {"interval", o.interval}, {"staleAfter", o.stale_after}};
  if (o.source == "Prometheus") {
    metrics["prometheus"] = {{"url", o.prometheus_url}};
  } else if (o.metrics_port > 0) {
    metrics["port"] = o.metrics_port;
  }
  return {
      {"apiVersion", "twinscale.io/v1alpha1"},
      {"kind", "InferenceAutoscaler"},
      {"metadata", {{"name", o.name}, {"namespace", ns}}},
      {"spec",
       {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", deployment}}},
        {"mode", o.mode},
        {"minReplicas", o.min_replicas},
        {"maxReplicas", o.max_replicas},
        {"model", {{"profile", o.profile}}},
        {"scaleDown",
         {{"stabilizationWindowSeconds", o.scale_down_window_seconds},
          {"policies", json::array({{{"type", "Pods"},
                                     {"value", o.scale_down_pods},
                                     {"periodSeconds", o.scale_down_period_seconds}}})}}},
        {"warmup", {{"expected", o.warmup}}},
        {"metrics", metrics}}}};
}

// ---- ClusterHarness -------------------------------------------------------------------------

ClusterHarness::ClusterHarness(HarnessOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<ClusterHarness>> ClusterHarness::Start(HarnessOptions options) {
  std::unique_ptr<ClusterHarness> h(new ClusterHarness(std::move(options)));
  if (absl::Status s = h->Init(); !s.ok()) return s;
  return h;
}

absl::Status ClusterHarness::Init() {
  tmp_ = std::make_unique<testutil::TempDir>("twinscale-e2e");
  dir_ = tmp_->path();
  fake_apiserver::FakeApiServer::Options ao;
  ao.crd_files = {options_.crd_file};
  auto api = fake_apiserver::FakeApiServer::Start(ao);
  if (!api.ok()) return api.status();
  api_ = *std::move(api);

  kube::ClusterConfig config;
  config.server = api_->url();
  kube::HttpKubeClientOptions co;
  co.user_agent = "e2e-harness";
  co.request_timeout = absl::Seconds(10);
  auto client = kube::HttpKubeClient::FromConfig(config, &clock_, co);
  if (!client.ok()) return client.status();
  client_ = *std::move(client);

  LiveFleetOptions fo;
  fo.initial_replicas = options_.initial_replicas;
  fo.trace = options_.trace;
  fo.warmup = options_.warmup;
  fo.pod_prefix = options_.deployment;
  auto fleet = LiveFleet::Start(fo, &clock_);
  if (!fleet.ok()) return fleet.status();
  fleet_ = *std::move(fleet);
  started_ = fleet_->Now();
  for (const LivePod& p : fleet_->Pods()) started_ = std::min(started_, p.created);

  const std::string app = options_.deployment;
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", app}, {"namespace", ns()}, {"labels", {{"app", app}}}}},
      {"spec",
       {{"replicas", options_.initial_replicas},
        {"selector", {{"matchLabels", {{"app", app}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", app}}}}},
          {"spec",
           {{"containers",
             json::array({{{"name", "vllm"},
                           {"image", "vllm/vllm-openai:v0.8.5"},
                           {"ports", json::array({{{"containerPort", fleet_->port()}}})}}})}}}}}}}};
  if (auto put = api_->Put(DeploymentPath(), deployment); !put.ok()) return put.status();
  {
    absl::MutexLock lock(&mu_);
    history_.push_back({clock_.Now(), options_.initial_replicas});
  }
  Tick();  // the pods and the Deployment's status exist before anything else looks

  if (options_.prometheus) {
    if (absl::Status s = StartPrometheus(); !s.ok()) return s;
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

absl::Status ClusterHarness::StartPrometheus() {
  if (!testutil::Installed(testutil::kPrometheusBinary)) {
    return absl::FailedPreconditionError("prometheus is not installed");
  }
  {
    absl::MutexLock lock(&prometheus_mu_);
    if (prometheus_) prometheus_->Stop();
  }
  const std::string prom_dir = absl::StrCat(dir_, "/prometheus-", ++prometheus_starts_);
  std::filesystem::create_directories(prom_dir);
  // The targets file exists (the first Tick wrote it) before Prometheus reads its configuration.
  const std::string config_text = absl::StrCat(
      "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
      "scrape_configs:\n  - job_name: vllm\n    file_sd_configs:\n"
      "      - files: ['",
      dir_, "/targets.json']\n        refresh_interval: 1s\n");
  auto server = std::make_unique<testutil::PrometheusServer>(prom_dir, config_text);
  if (!server->WaitReady(absl::Seconds(60))) {
    return absl::UnavailableError(
        absl::StrCat("prometheus did not become ready:\n", server->Log()));
  }
  absl::MutexLock lock(&prometheus_mu_);
  retired_prometheus_.push_back(std::move(prometheus_));
  prometheus_ = std::move(server);
  return absl::OkStatus();
}

ClusterHarness::~ClusterHarness() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&prometheus_mu_);
    if (prometheus_) prometheus_->Stop();
  }
  if (fleet_) fleet_->Stop();
  client_.reset();
  if (api_) api_->Stop();
  // TWINSCALE_E2E_KEEP=1 keeps the logs (controllers', Prometheus') for a look after the run.
  const char* keep = std::getenv("TWINSCALE_E2E_KEEP");
  if (tmp_ != nullptr && keep != nullptr && std::string(keep) == "1") {
    tmp_->Keep();
    std::cerr << "[ info ] kept " << dir_ << "\n";
  }
}

std::string ClusterHarness::prometheus_url() const {
  absl::MutexLock lock(&prometheus_mu_);
  return prometheus_ ? prometheus_->url() : "";
}

testutil::PrometheusServer* ClusterHarness::prometheus() {
  absl::MutexLock lock(&prometheus_mu_);
  return prometheus_.get();
}

std::string ClusterHarness::DeploymentPath() const {
  return absl::StrCat("/apis/apps/v1/namespaces/", ns(), "/deployments/", options_.deployment);
}

std::string ClusterHarness::AutoscalerPath(const std::string& name) const {
  return absl::StrCat("/apis/twinscale.io/v1alpha1/namespaces/", ns(), "/inferenceautoscalers/",
                      name);
}

std::string ClusterHarness::PodPath(const std::string& name) const {
  return absl::StrCat("/api/v1/namespaces/", ns(), "/pods/", name);
}

void ClusterHarness::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.tick)) return;
    }
    Tick();
  }
}

void ClusterHarness::Tick() {
  // The Deployment controller: spec.replicas -> the fleet's size.
  absl::StatusOr<json> deployment = api_->Get(DeploymentPath());
  if (deployment.ok()) {
    const int32_t replicas = (*deployment)["spec"].value("replicas", 1);
    {
      absl::MutexLock lock(&mu_);
      if (history_.empty() || history_.back().replicas != replicas) {
        history_.push_back({clock_.Now(), replicas});
      }
    }
    if (replicas != fleet_->spec_replicas()) fleet_->Scale(replicas);
  }
  MirrorPods();
}

json ClusterHarness::PodStatus(const LivePod& pod, absl::Time now) {
  const bool initial = pod.created <= started_;
  const absl::Time created = initial ? pod.created - kInitialPodAge : pod.created;
  json status = {{"hostIP", "127.0.0.1"}, {"startTime", kube::FormatKubeTime(created)}};
  if (pod.stage == Stage::kPending) {
    // The fleet's Provisioning is a node being brought up for a pod already bound to it in
    // spirit (replay's rule): not scheduled yet, but not Unschedulable either.
    status["phase"] = "Pending";
    status["conditions"] =
        json::array({PodCondition("PodScheduled", false, created, "WaitingForNode")});
    return status;
  }
  status["phase"] = "Running";
  status["podIP"] = pod.ip;
  status["podIPs"] = json::array({{{"ip", pod.ip}}});
  const bool containers_ready = pod.stage == Stage::kWarmingUp || pod.stage == Stage::kReady;
  const bool ready = pod.stage == Stage::kReady;
  absl::Time ready_since = pod.ready_since;
  if (initial) ready_since = created + options_.warmup;
  absl::Time containers_since = created;
  if (pod.stage == Stage::kWarmingUp) {
    containers_since = containers_ready_at_.emplace(pod.name, now).first->second;
  } else if (ready) {
    auto it = containers_ready_at_.find(pod.name);
    containers_since = it != containers_ready_at_.end() ? it->second : ready_since;
  }
  absl::Time not_ready_since = created;
  if (pod.stage == Stage::kTerminating) {
    not_ready_since = draining_since_.emplace(pod.name, now).first->second;
  }
  status["conditions"] = json::array({
      PodCondition("PodScheduled", true, created),
      PodCondition("Initialized", true, created),
      containers_ready
          ? PodCondition("ContainersReady", true, containers_since)
          : PodCondition("ContainersReady", false, not_ready_since, "ContainersNotReady"),
      ready ? PodCondition("Ready", true, ready_since)
            : PodCondition("Ready", false, not_ready_since, "ContainersNotReady"),
  });
  status["containerStatuses"] =
      json::array({{{"name", "vllm"}, {"ready", ready}, {"started", true}, {"restartCount", 0}}});
  return status;
}

void ClusterHarness::MirrorPods() {
  const absl::Time now = clock_.Now();
  const std::vector<LivePod> pods = fleet_->Pods();
  std::map<std::string, const LivePod*> alive;
  int32_t replicas = 0, ready = 0;
  for (const LivePod& pod : pods) {
    alive[pod.name] = &pod;
    if (pod.stage != Stage::kTerminating) ++replicas;
    if (pod.stage == Stage::kReady) ++ready;

    json status = PodStatus(pod, now);
    const bool draining = pod.stage == Stage::kTerminating;
    json mirrored = {{"status", status}};
    if (draining) mirrored["deletionTimestamp"] = kube::FormatKubeTime(draining_since_[pod.name]);
    auto known = mirrored_.find(pod.name);
    if (known != mirrored_.end() && known->second == mirrored) continue;

    const std::string path = PodPath(pod.name);
    const bool newly_draining =
        draining && (known == mirrored_.end() || !known->second.contains("deletionTimestamp"));
    if (newly_draining) RecordVictim(pod.name, now);
    absl::StatusOr<json> written = absl::NotFoundError("not mirrored yet");
    if (known != mirrored_.end()) {
      // Keep what others wrote (the controller's pod-deletion-cost annotation): only the
      // kubelet's fields change.
      written = api_->Mutate(path, [&](json& o) {
        o["status"] = status;
        if (draining) o["metadata"]["deletionTimestamp"] = mirrored["deletionTimestamp"];
      });
    }
    if (absl::IsNotFound(written.status())) {
      const absl::Time created =
          pod.created <= started_ ? pod.created - kInitialPodAge : pod.created;
      json object = {{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", pod.name},
                       {"namespace", ns()},
                       {"labels", {{"app", options_.deployment}}},
                       {"creationTimestamp", kube::FormatKubeTime(created)}}},
                     {"spec",
                      {{"nodeName", "gpu-node-1"},
                       {"containers",
                        json::array({{{"name", "vllm"},
                                      {"image", "vllm/vllm-openai:v0.8.5"},
                                      {"ports", json::array({{{"containerPort", pod.port}}})}}})}}},
                     {"status", status}};
      if (draining) object["metadata"]["deletionTimestamp"] = mirrored["deletionTimestamp"];
      written = api_->Put(path, object);
    }
    if (written.ok()) mirrored_[pod.name] = std::move(mirrored);
  }
  // Pods the fleet no longer has are gone: deleted (no graceful deletion in the fake).
  for (auto it = mirrored_.begin(); it != mirrored_.end();) {
    if (alive.count(it->first) != 0) {
      ++it;
      continue;
    }
    // A pod with nothing in flight is gone before it was ever seen draining.
    if (!it->second.contains("deletionTimestamp")) RecordVictim(it->first, now);
    (void)api_->Delete(PodPath(it->first));
    containers_ready_at_.erase(it->first);
    draining_since_.erase(it->first);
    it = mirrored_.erase(it);
  }

  // The Deployment's status, as its controller keeps it.
  absl::StatusOr<json> deployment = api_->Get(DeploymentPath());
  if (deployment.ok()) {
    const json status = {{"observedGeneration", (*deployment)["metadata"].value("generation", 1)},
                         {"replicas", replicas},
                         {"updatedReplicas", replicas},
                         {"readyReplicas", ready},
                         {"availableReplicas", ready}};
    if (status != last_deployment_status_) {
      if (api_->Mutate(DeploymentPath(), [&](json& d) { d["status"] = status; }).ok()) {
        last_deployment_status_ = status;
      }
    }
  }
  if (options_.prometheus) WriteTargets(pods);
}

void ClusterHarness::RecordVictim(const std::string& pod, absl::Time now) {
  // The fleet chose this pod for scale-in: had the controller marked it?
  absl::StatusOr<json> stored = api_->Get(PodPath(pod));
  bool marked = false;
  if (stored.ok()) {
    marked = (*stored)["metadata"].value("annotations", json::object()).contains(kDeletionCost);
  }
  absl::MutexLock lock(&mu_);
  victims_.push_back({pod, now, marked});
}

void ClusterHarness::WriteTargets(const std::vector<LivePod>& pods) {
  // Kubernetes service discovery lists every pod with an address, with its name as a label.
  json groups = json::array();
  for (const LivePod& p : pods) {
    if (p.stage == Stage::kPending) continue;
    groups.push_back({{"targets", json::array({absl::StrCat(p.ip, ":", p.port)})},
                      {"labels", {{"pod", p.name}, {"namespace", ns()}}}});
  }
  const std::string text = groups.dump(2);
  if (text == last_targets_) return;
  // Written whole, then renamed: Prometheus never reads a half-written file.
  const std::string path = absl::StrCat(dir_, "/targets.json");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (!ec) last_targets_ = text;
}

absl::StatusOr<json> ClusterHarness::CreateAutoscaler(const AutoscalerOptions& options) {
  AutoscalerOptions o = options;
  if (o.source == "Pods" && o.metrics_port == 0) o.metrics_port = fleet_->port();
  return client_->Create(kube::kInferenceAutoscalers, ns(),
                         AutoscalerManifest(o, ns(), options_.deployment));
}

absl::StatusOr<json> ClusterHarness::PatchAutoscaler(const std::string& name, const json& patch) {
  return client_->MergePatch(kube::kInferenceAutoscalers, ns(), name, patch);
}

absl::StatusOr<json> ClusterHarness::Autoscaler(const std::string& name) const {
  return api_->Get(AutoscalerPath(name));
}

json ClusterHarness::Condition(const std::string& name, const std::string& type) const {
  absl::StatusOr<json> ias = Autoscaler(name);
  if (!ias.ok()) return nullptr;
  const json status = ias->value("status", json::object());
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return nullptr;
}

int32_t ClusterHarness::SpecReplicas() const {
  absl::StatusOr<json> d = api_->Get(DeploymentPath());
  return d.ok() ? (*d)["spec"].value("replicas", 1) : -1;
}

std::vector<ReplicaChange> ClusterHarness::ReplicaHistory() const {
  absl::MutexLock lock(&mu_);
  return history_;
}

std::vector<Victim> ClusterHarness::victims() const {
  absl::MutexLock lock(&mu_);
  return victims_;
}

std::vector<json> ClusterHarness::Events(const std::string& name, const std::string& reason) const {
  std::vector<json> out;
  absl::StatusOr<json> list = api_->List(absl::StrCat("/api/v1/namespaces/", ns(), "/events"));
  if (!list.ok()) return out;
  for (const json& e : (*list)["items"]) {
    const json involved = e.value("involvedObject", json::object());
    if (involved.value("kind", "") != "InferenceAutoscaler" || involved.value("name", "") != name) {
      continue;
    }
    if (!reason.empty() && e.value("reason", "") != reason) continue;
    out.push_back(e);
  }
  return out;
}

int32_t ClusterHarness::ScaleWrites(const std::string& user_agent) const {
  const std::string scale = DeploymentPath() + "/scale";
  int32_t n = 0;
  for (const auto& r : api_->Requests()) {
    if ((r.method == "PATCH" || r.method == "PUT") && r.path == scale &&
        (user_agent.empty() || HeaderOr(r, "user-agent") == user_agent)) {
      ++n;
    }
  }
  return n;
}

int32_t ClusterHarness::Writes(const std::string& user_agent,
                               const std::string& except_path_part) const {
  int32_t n = 0;
  for (const auto& r : api_->Requests()) {
    if (!IsWrite(r.method) || HeaderOr(r, "user-agent") != user_agent) continue;
    if (!except_path_part.empty() && r.path.find(except_path_part) != std::string::npos) continue;
    ++n;
  }
  return n;
}

std::string ClusterHarness::LeaseHolder(const std::string& lease_name) const {
  absl::StatusOr<json> lease = api_->Get(
      absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", ns(), "/leases/", lease_name));
  if (!lease.ok()) return "";
  return lease->value("spec", json::object()).value("holderIdentity", "");
}

// ---- ControllerInstance ---------------------------------------------------------------------

// Declared in the order they are built; destroyed in reverse (the Controller first).
struct ControllerInstance::Parts {
  RealClock clock;
  std::ofstream log_file;
  std::unique_ptr<JsonLogger> log;
  std::unique_ptr<kube::HttpKubeClient> client;
  MetricsRegistry registry;
  std::optional<reconcile::ControllerMetrics> metrics;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<twin::TwinDeciderFactory> deciders;
  std::unique_ptr<reconcile::PodInformers> pods;
  std::unique_ptr<reconcile::Reconciler> reconciler;
  std::unique_ptr<reconcile::Controller> controller;
};

ControllerInstance::ControllerInstance(ControllerInstanceOptions options, std::string log_path)
    : options_(std::move(options)), log_path_(std::move(log_path)) {}

absl::StatusOr<std::unique_ptr<ControllerInstance>> ControllerInstance::Start(
    ClusterHarness& harness, const sim::ProfileRegistry* profiles,
    ControllerInstanceOptions options) {
  const std::string log_path = absl::StrCat(harness.temp_dir(), "/", options.identity, ".log");
  std::unique_ptr<ControllerInstance> c(new ControllerInstance(std::move(options), log_path));
  const ControllerInstanceOptions& o = c->options_;
  c->parts_ = std::make_unique<Parts>();
  Parts& p = *c->parts_;
  p.log_file.open(log_path, std::ios::app);
  p.log = std::make_unique<JsonLogger>(p.clock, p.log_file, LogLevel::kDebug);

  // The wiring of controller/cli/controller_command.cc, with the harness's server for a cluster.
  kube::ClusterConfig config;
  config.server = harness.api().url();
  config.default_namespace = harness.ns();
  kube::HttpKubeClientOptions co;
  co.user_agent = c->user_agent();
  co.request_timeout = absl::Seconds(10);
  auto client = kube::HttpKubeClient::FromConfig(config, &p.clock, co);
  if (!client.ok()) return client.status();
  p.client = *std::move(client);
  auto metrics = reconcile::ControllerMetrics::Register(p.registry);
  if (!metrics.ok()) return metrics.status();
  p.metrics = *std::move(metrics);
  kube::EventRecorderOptions eo;
  eo.instance = o.identity;
  p.events = std::make_unique<kube::EventRecorder>(p.client.get(), &p.clock, eo);
  p.deciders = std::make_unique<twin::TwinDeciderFactory>(profiles);

  reconcile::PodInformersOptions po;
  JsonLogger* log = p.log.get();
  po.informer.on_error = [log](const absl::Status& s) {
    log->Warning("watch of pods failed", "", {{"error", s}});
  };
  p.pods = std::make_unique<reconcile::PodInformers>(p.client.get(), po);

  reconcile::ReconcilerDeps deps;
  deps.client = p.client.get();
  deps.clock = &p.clock;
  deps.pods = p.pods.get();
  deps.deciders = p.deciders.get();
  deps.events = p.events.get();
  deps.log = p.log.get();
  deps.metrics = &*p.metrics;
  const Clock* clock = &p.clock;
  deps.metrics_sources =
      [clock](const api::MetricsSpec& spec,
              const std::string& model) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
    if (spec.source == api::MetricsSourceKind::kPrometheus) {
      if (!spec.prometheus.has_value()) {
        return absl::InvalidArgumentError(
            "spec.metrics.prometheus is required with source Prometheus");
      }
      metrics::PromqlSourceOptions po;
      po.url = spec.prometheus->url;
      po.label_matchers = spec.prometheus->label_matchers;
      po.lookback = spec.stale_after;
      po.model_name_filter = model;
      return std::make_unique<metrics::PromqlSource>(*clock, po);
    }
    metrics::PodScraperOptions so;
    so.timeout = std::min(absl::Seconds(5), spec.interval / 2);
    so.model_name_filter = model;
    return std::make_unique<metrics::PodScraper>(*clock, so);
  };
  // As the binary: a target reading Prometheus starts its arrival history from Prometheus' record.
  deps.prometheus_arrivals = [](const api::MetricsSpec& spec, absl::Time start, absl::Duration step,
                                int64_t steps) -> absl::StatusOr<metrics::ArrivalSeries> {
    if (!spec.prometheus.has_value()) {
      return absl::InvalidArgumentError(
          "spec.metrics.prometheus is required with source Prometheus");
    }
    return metrics::QueryPrometheusArrivals(spec.prometheus->url, spec.prometheus->label_matchers,
                                            start, step, steps);
  };
  p.reconciler = std::make_unique<reconcile::Reconciler>(deps);

  reconcile::ControllerOptions ro;
  ro.workers = o.workers;
  ro.leader_election = o.leader_election;
  ro.lease.lease_name = o.lease_name;
  ro.lease.lease_namespace = harness.ns();
  ro.lease.identity = o.identity;
  ro.lease.lease_duration = o.lease_duration;
  ro.lease.renew_deadline = o.renew_deadline;
  ro.lease.retry_period = o.retry_period;
  ro.lease.release_on_cancel = o.release_on_stop;
  p.controller = std::make_unique<reconcile::Controller>(
      ro, p.client.get(), p.reconciler.get(), p.pods.get(), &p.clock, p.log.get(), &*p.metrics);
  if (absl::Status s = p.controller->Start(); !s.ok()) return s;
  p.log->Info("started", "", {{"identity", o.identity}, {"server", config.server}});
  return c;
}

ControllerInstance::~ControllerInstance() { Stop(); }

void ControllerInstance::Stop() {
  if (parts_ && parts_->controller) parts_->controller->Stop();
}

bool ControllerInstance::IsLeader() const {
  return parts_ && parts_->controller && parts_->controller->IsLeader();
}

std::string ControllerInstance::user_agent() const {
  return absl::StrCat("twinscale/", options_.identity);
}

std::string ControllerInstance::MetricsPage() const {
  return parts_ ? parts_->registry.Render() : "";
}

int64_t ControllerInstance::Decisions() const {
  int64_t total = 0;
  for (absl::string_view line : absl::StrSplit(MetricsPage(), '\n')) {
    if (!absl::StartsWith(line, "twinscale_decisions_total{")) continue;
    double v = 0;
    const size_t space = line.rfind(' ');
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) {
      total += static_cast<int64_t>(v);
    }
  }
  return total;
}

std::string ControllerInstance::LogTail(size_t max_lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  return absl::StrCat("---- last lines of ", log_path_, " ----\n", absl::StrJoin(lines, "\n"),
                      "\n");
}

}  // namespace twinscale::e2e
