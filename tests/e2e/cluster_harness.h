// ClusterHarness: a small "cluster" for the operator's end-to-end tests (controller_e2e_test.cc).
//
// What is real and what is faked:
//   - the Kubernetes API server is tests/fake_apiserver: a FAKE of its wire behaviour (list/watch
//     with resourceVersions, bookmarks, 410 expiry, /scale and /status, CRD defaults, 409s,
//     Leases, events), spoken to over real HTTP;
//   - the serving fleet is a LiveFleet (tests/e2e/live_fleet.h): the simulator's vLLM replicas run
//     in wall-clock time, each serving real vLLM-format /metrics on its own 127.0.0.N address;
//   - this harness plays the parts no fake API server has: the Deployment controller and the
//     kubelet. A background thread mirrors the Deployment's spec.replicas into LiveFleet::Scale and
//     mirrors the fleet's pods as Pod objects (labels, podIP, creationTimestamp, the conditions
//     PodScheduled / ContainersReady / Ready with their lastTransitionTime, deletionTimestamp while
//     draining, deletion when gone), and keeps the Deployment's status;
//   - optionally a REAL Prometheus (/usr/bin/prometheus) scrapes the fleet every second through
//     file_sd_configs that the same thread rewrites as pods come and go (the role Kubernetes
//     service discovery plays in a cluster);
//   - the controller under test runs IN-PROCESS with its real parts (ControllerInstance): the
//     HttpKubeClient, informer, Lease election, event recorder, PodScraper / PromqlSource, the
//     twin-backed TwinDeciderFactory, the Reconciler and the Controller.
//
// Two choices of the harness worth knowing when reading results:
//   - The fleet's initial replicas are Ready from the fleet's first instant (LiveFleet: "without
//     the slow start"): they stand for a Deployment that has been serving for a while, so their Pod
//     objects are dated kInitialPodAge before the test (created then, Ready one warm-up later).
//   - Scale-in victims: the fleet (replay's SimulatedCluster) picks them itself with the
//     ReplicaSet's preference (unready first, then the Ready pod with the least work in flight)
//     and cannot be told which pod to remove, so controller.kubernetes.io/pod-deletion-cost is not
//     honoured literally. The harness records, for each pod the fleet removed, whether the
//     controller had marked it (victims()), so a test can report the agreement.
//
// Diagnostics: each controller's JSON log is <temp_dir()>/<identity>.log; TWINSCALE_E2E_KEEP=1
// keeps the temp directory (logs, Prometheus' data and log) after the test.
// Thread-safety: every public method but StartPrometheus may be called from any thread; the
// harness's thread runs between Start() and the destructor.
#ifndef TWINSCALE_TESTS_E2E_CLUSTER_HARNESS_H_
#define TWINSCALE_TESTS_E2E_CLUSTER_HARNESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "nlohmann/json.hpp"
#include "simulator/workload/trace.h"
#include "tests/e2e/live_fleet.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"

namespace twinscale {
namespace kube {
class HttpKubeClient;
}  // namespace kube
namespace sim {
class ProfileRegistry;
}  // namespace sim
namespace e2e {

// How long before the test the initial replicas' Pod objects say they were created.
inline constexpr absl::Duration kInitialPodAge = absl::Minutes(10);

// One stretch of traffic at a constant Poisson rate.
struct TrafficPhase {
  absl::Duration span;
  double rate_rps = 0;  // 0: no request in this phase
};

// The phases one after the other as one trace (fleet time 0 = the start of the first phase), with
// constant prompt and output lengths; deterministic for a seed.
std::shared_ptr<const sim::Trace> PhasedTrace(const std::vector<TrafficPhase>& phases,
                                              int32_t prompt_tokens, int32_t output_tokens,
                                              uint64_t seed = 1);

struct HarnessOptions {
  std::string namespace_name = "llm";
  std::string deployment = "vllm";  // its selector and pod label: app=<deployment>
  int32_t initial_replicas = 2;
  absl::Duration warmup = absl::Seconds(6);  // every new pod: creation -> Ready
  std::shared_ptr<const sim::Trace> trace;   // null: an idle fleet
  // The CRD the fake serves InferenceAutoscalers with (relative to the repo root, where tests run).
  std::string crd_file = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";
  bool prometheus = false;                        // start a real Prometheus scraping the fleet
  absl::Duration tick = absl::Milliseconds(100);  // how often the harness mirrors the fleet
};

// The InferenceAutoscaler a test creates (the fields the tests vary; the rest take the CRD's
// defaults, applied by the fake API server on create).
struct AutoscalerOptions {
  std::string name = "llama";
  std::string mode = "Direct";
  int32_t min_replicas = 2;
  int32_t max_replicas = 8;
  std::string profile = "llama-3.1-8b-h100-sxm-tp1";
  std::string interval = "2s";
  std::string stale_after = "8s";
  int32_t scale_down_window_seconds = 10;
  int32_t scale_down_pods = 1;            // one policy: at most this many pods ...
  int32_t scale_down_period_seconds = 5;  // ... per this many seconds
  std::string warmup = "6s";              // spec.warmup.expected (the fleet's override)
  std::string source = "Pods";            // or "Prometheus"
  std::string prometheus_url;             // with source Prometheus
  int32_t metrics_port = 0;               // source Pods: the fleet's port
};
nlohmann::json AutoscalerManifest(const AutoscalerOptions& options, const std::string& ns,
                                  const std::string& deployment);

// One change of the Deployment's spec.replicas, as the harness saw it (within one tick).
struct ReplicaChange {
  absl::Time at;
  int32_t replicas = 0;
};

// A pod the fleet removed on scale-in, and whether the controller had marked it with the lowest
// pod-deletion-cost.
struct Victim {
  std::string pod;
  absl::Time at;
  bool marked_by_controller = false;
};

class ControllerInstance;

class ClusterHarness {
 public:
  // Starts the fake API server (with the CRD), the live fleet, the Deployment and its Pods (one
  // mirroring pass), a ready Prometheus if asked (its first scrapes follow within a second or
  // two), then the mirroring thread.
  static absl::StatusOr<std::unique_ptr<ClusterHarness>> Start(HarnessOptions options);
  ~ClusterHarness();  // stops the thread, Prometheus, the fleet and the server, in that order
  ClusterHarness(const ClusterHarness&) = delete;
  ClusterHarness& operator=(const ClusterHarness&) = delete;

  fake_apiserver::FakeApiServer& api() { return *api_; }
  const fake_apiserver::FakeApiServer& api() const { return *api_; }
  LiveFleet& fleet() { return *fleet_; }
  const HarnessOptions& options() const { return options_; }
  const std::string& ns() const { return options_.namespace_name; }
  absl::Time started() const { return started_; }  // wall time of the fleet's time 0
  // The Prometheus URL ("" without one) and the server itself (null without one).
  std::string prometheus_url() const;
  testutil::PrometheusServer* prometheus();
  // Starts a new Prometheus with the same configuration (stopping the current one): it gets a new
  // port, so a new URL (as a Prometheus that moved). Waits until it is ready. Call from the test's
  // thread only.
  absl::Status StartPrometheus();
  const std::string& temp_dir() const { return dir_; }

  // Creates an InferenceAutoscaler through the API over HTTP (so the CRD's schema validates it
  // and fills its defaults, as in a cluster). The stored object, or the API's error.
  absl::StatusOr<nlohmann::json> CreateAutoscaler(const AutoscalerOptions& options);
  // A JSON merge patch of the InferenceAutoscaler through the API over HTTP (kubectl patch's
  // role: the schema validates it, a spec change bumps the generation).
  absl::StatusOr<nlohmann::json> PatchAutoscaler(const std::string& name,
                                                 const nlohmann::json& patch);
  // The stored InferenceAutoscaler (in-process read), or an error.
  absl::StatusOr<nlohmann::json> Autoscaler(const std::string& name) const;
  // Its status condition of `type`; null when absent.
  nlohmann::json Condition(const std::string& name, const std::string& type) const;
  // The Deployment's spec.replicas now.
  int32_t SpecReplicas() const;
  // Every change of spec.replicas seen so far, the initial value first.
  std::vector<ReplicaChange> ReplicaHistory() const;
  // The core/v1 Events about InferenceAutoscaler `name` with `reason` ("" = any reason).
  std::vector<nlohmann::json> Events(const std::string& name, const std::string& reason = "") const;
  // Requests that wrote the Deployment's /scale (PUT or PATCH) sent with `user_agent`; every
  // writer when `user_agent` is empty.
  int32_t ScaleWrites(const std::string& user_agent = "") const;
  // Requests other than reads (POST, PUT, PATCH, DELETE) sent with `user_agent`, except on
  // `except_path_part` (e.g. "/leases/": a follower renews nothing but may campaign).
  int32_t Writes(const std::string& user_agent, const std::string& except_path_part) const;
  // The Lease's spec.holderIdentity ("" when released or absent).
  std::string LeaseHolder(const std::string& lease_name) const;
  std::vector<Victim> victims() const;

  std::string DeploymentPath() const;
  std::string AutoscalerPath(const std::string& name) const;

 private:
  explicit ClusterHarness(HarnessOptions options);
  absl::Status Init();
  void Run();
  void Tick();
  void MirrorPods();
  void WriteTargets(const std::vector<LivePod>& pods);
  void RecordVictim(const std::string& pod, absl::Time now);
  nlohmann::json PodStatus(const LivePod& pod, absl::Time now);
  std::string PodPath(const std::string& name) const;

  HarnessOptions options_;
  RealClock clock_;
  std::unique_ptr<testutil::TempDir> tmp_;  // the run's files: logs, targets, Prometheus' TSDBs
  std::string dir_;                         // tmp_'s path
  absl::Time started_;
  std::unique_ptr<fake_apiserver::FakeApiServer> api_;
  std::unique_ptr<LiveFleet> fleet_;
  mutable absl::Mutex prometheus_mu_;  // guards the pointer, for readers on other threads
  std::unique_ptr<testutil::PrometheusServer> prometheus_ ABSL_GUARDED_BY(prometheus_mu_);
  std::vector<std::unique_ptr<testutil::PrometheusServer>> retired_prometheus_;  // stopped ones
  int prometheus_starts_ = 0;
  std::unique_ptr<kube::HttpKubeClient> client_;  // the harness's own client (kubectl's role)

  // Touched by the mirroring thread only (and Init before it starts).
  std::map<std::string, nlohmann::json> mirrored_;         // pod name -> the status last written
  std::map<std::string, absl::Time> containers_ready_at_;  // first seen warming up
  std::map<std::string, absl::Time> draining_since_;
  std::string last_targets_;
  nlohmann::json last_deployment_status_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ReplicaChange> history_ ABSL_GUARDED_BY(mu_);
  std::vector<Victim> victims_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// One controller process, in-process: the same wiring as `twinscale controller`
// (controller/cli/controller_command.cc) against the harness's API server, with a short Lease so
// failovers fit in a test. Its JSON log goes to <harness temp dir>/<identity>.log.
struct ControllerInstanceOptions {
  std::string identity = "controller-a";
  bool leader_election = true;
  std::string lease_name = "twinscale-controller";
  absl::Duration lease_duration = absl::Seconds(6);
  absl::Duration renew_deadline = absl::Seconds(4);
  absl::Duration retry_period = absl::Seconds(1);
  // Stop() gives the Lease up (what SIGTERM does); false leaves it to expire, as a crash would.
  bool release_on_stop = true;
  int32_t workers = 2;
};

class ControllerInstance {
 public:
  // `profiles` must outlive the instance.
  static absl::StatusOr<std::unique_ptr<ControllerInstance>> Start(
      ClusterHarness& harness, const sim::ProfileRegistry* profiles,
      ControllerInstanceOptions options);
  ~ControllerInstance();  // Stop()
  ControllerInstance(const ControllerInstance&) = delete;
  ControllerInstance& operator=(const ControllerInstance&) = delete;

  // Controller::Stop(): stops acting, releases the Lease (if release_on_stop), stops the informer.
  void Stop();
  bool IsLeader() const;
  const std::string& identity() const { return options_.identity; }
  // The User-Agent of its requests ("twinscale/<identity>"): the fake's request log tells the
  // instances apart by it.
  std::string user_agent() const;
  // Its /metrics page (the MetricsRegistry as the ops server would serve it).
  std::string MetricsPage() const;
  // Decisions this instance made so far (twinscale_decisions_total, summed over its series).
  int64_t Decisions() const;
  // The last `max_lines` lines of its log, for failure messages.
  std::string LogTail(size_t max_lines = 40) const;

  struct Parts;  // defined in the .cc

 private:
  ControllerInstance(ControllerInstanceOptions options, std::string log_path);
  ControllerInstanceOptions options_;
  std::string log_path_;
  std::unique_ptr<Parts> parts_;
};

}  // namespace e2e
}  // namespace twinscale

#endif  // TWINSCALE_TESTS_E2E_CLUSTER_HARNESS_H_
