// LoopbackKubelet: the kubelet's part of a real control plane that has no nodes.
//
// kube-controller-manager turns a Deployment into a ReplicaSet and Pods, which then stay Pending
// for want of a node. This stand-in watches (by listing every tick) the Pods of one namespace
// that match a label selector and backs each with a replica of a LiveFleet (tests/e2e/live_fleet.h:
// the simulator's vLLM replicas in wall-clock time, each serving real vLLM-format /metrics on its
// own 127.0.0.N address). When the replica serves, the Pod's status subresource is patched as a
// kubelet would: phase Running, podIP/podIPs 127.0.0.N, the conditions PodScheduled, Initialized,
// ContainersReady and Ready with their transition times. The twinscale controller under test
// then finds the pods through the API and scrapes them on their addresses.
//
// Pods and replicas: a new Pod gets the fleet's next new replica (the fleet grows with the number
// of live Pods), so on scale-up each Pod has its own replica from its creation on and is Ready one
// warm-up later. On scale-in the ReplicaSet and the fleet each pick their own victim; a Pod whose
// replica the fleet removed is re-backed by the replica the fleet kept (its podIP changes). Tests
// here do not depend on which pod goes.
//
// Faults: SetServing(false) closes every pod's /metrics (scrapes refused, as when the pods' ports
// stop answering) without changing the Pods, for "stale metrics" cases.
#ifndef TWINSCALE_TESTS_K8S_LOOPBACK_KUBELET_H_
#define TWINSCALE_TESTS_K8S_LOOPBACK_KUBELET_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/rest_client.h"
#include "tests/e2e/live_fleet.h"

namespace twinscale::k8s_test {

struct LoopbackKubeletOptions {
  std::string kubeconfig;  // an identity that may list pods and patch pods/status (the admin)
  std::string namespace_name = "llm";
  std::string app = "vllm";      // Pods labelled app=<app>; the LiveFleet's pods are "<app>-<i>"
  int32_t initial_replicas = 2;  // the fleet's replicas Ready from the start (the first Pods')
  std::shared_ptr<const sim::Trace> trace;   // the fleet's traffic (null: idle)
  absl::Duration warmup = absl::Seconds(3);  // a new replica: creation -> serving
  int32_t first_address = 20;                // replica i serves on 127.0.0.(first_address + i)
  absl::Duration tick = absl::Milliseconds(250);
};

class LoopbackKubelet {
 public:
  static absl::StatusOr<std::unique_ptr<LoopbackKubelet>> Start(LoopbackKubeletOptions options);
  ~LoopbackKubelet();  // stops the thread, then the fleet
  LoopbackKubelet(const LoopbackKubelet&) = delete;
  LoopbackKubelet& operator=(const LoopbackKubelet&) = delete;

  int32_t metrics_port() const { return fleet_->port(); }  // every pod's /metrics port
  e2e::LiveFleet& fleet() { return *fleet_; }
  // Pods made Ready so far (counting each once).
  int32_t pods_made_ready() const;
  // Pods Ready (by this stand-in) right now.
  int32_t ready_pods() const;
  // false: every pod's /metrics answers 500 from now on (the Pods stay Ready); true: serve again.
  void SetServing(bool serving);
  // The last error of the thread's work (listing or patching), "" when none.
  std::string last_error() const;

 private:
  explicit LoopbackKubelet(LoopbackKubeletOptions options) : options_(std::move(options)) {}
  void Run();
  void Tick();

  LoopbackKubeletOptions options_;
  RealClock clock_;
  std::unique_ptr<kube::HttpKubeClient> client_;
  std::unique_ptr<e2e::LiveFleet> fleet_;
  std::map<std::string, std::string> backing_;   // pod -> replica name (thread only)
  std::map<std::string, std::string> ready_ip_;  // pod -> the address its status says (thread only)

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool serving_ ABSL_GUARDED_BY(mu_) = true;
  std::set<std::string> faulted_ ABSL_GUARDED_BY(mu_);  // replicas answering 500
  int32_t made_ready_ ABSL_GUARDED_BY(mu_) = 0;
  int32_t ready_now_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace twinscale::k8s_test

#endif  // TWINSCALE_TESTS_K8S_LOOPBACK_KUBELET_H_
