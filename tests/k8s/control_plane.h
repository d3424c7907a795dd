// ControlPlane: a real, private Kubernetes control plane for tests. etcd (Debian's etcd-server),
// kube-apiserver and kube-controller-manager v1.26.0 from ../shared/k8s (up.sh / down.sh), started
// in a temporary directory on free loopback ports, stopped and wiped by the destructor.
//
// What a test gets is Kubernetes itself: CRD validation, server-side dry-run, RBAC with
// ServiceAccount tokens, Leases, Events, Deployments making ReplicaSets making Pods, the HPA
// controller and the aggregation layer. What it does not get is nodes: Pods stay Pending until a
// test makes them Running and Ready through their status subresource (LoopbackKubelet does, with
// 127.0.0.N addresses where a process of the test serves the pod's ports).
//
// Availability: ../shared/k8s is outside the repository (a user's fresh clone has none), so a test
// asks Prerequisites() first and reports itself SKIPPED (GTEST_SKIP) with the reason when it
// says no; once the prerequisites are there, a control plane that fails to start FAILS the test.
// $TWINSCALE_K8S_DIR names another folder holding up.sh, down.sh and the binaries.
//
// The first start unpacks the binaries into ~/.cache/k8s-v1.26.0 (up.sh, checked against
// SHA256SUMS); starts are serialized by a lock file there, so tests running in parallel (ctest -j)
// neither race on the unpacking nor fight over a port between choosing and binding it.
// A start takes about 6 s and 450 MB while it runs.
#ifndef TWINSCALE_TESTS_K8S_CONTROL_PLANE_H_
#define TWINSCALE_TESTS_K8S_CONTROL_PLANE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/util/temp_dir.h"

namespace twinscale::k8s_test {

// OK when a control plane can be started here; otherwise FailedPrecondition saying what is
// missing (../shared/k8s, etcd, kubectl, openssl, curl), for GTEST_SKIP.
absl::Status Prerequisites();

// Skips the current test (from a TEST body or SetUp) when Prerequisites() says no.
#define TS_SKIP_WITHOUT_CONTROL_PLANE()                                    \
  do {                                                                     \
    const absl::Status ts_prereq = ::twinscale::k8s_test::Prerequisites(); \
    if (!ts_prereq.ok()) GTEST_SKIP() << ts_prereq.message();              \
  } while (0)

struct ControlPlaneOptions {
  bool controller_manager = true;              // START_KCM
  absl::Duration hpa_sync = absl::Seconds(5);  // the HPA controller's period
};

// One command's outcome.
struct Command {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr, without kubectl's version-skew warning
  bool ok() const { return exit_code == 0; }
  std::string all() const { return out + err; }
};

// Runs `command` through /bin/sh with stdout and stderr captured apart.
Command RunCommand(const std::string& command);

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);

class ControlPlane {
 public:
  // Starts etcd, kube-apiserver and (unless told not to) kube-controller-manager. Call
  // Prerequisites() first; an error here is a failure to start (the logs' tails in the message).
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Start(ControlPlaneOptions options = {});
  ~ControlPlane();  // down.sh, then the directory is removed (TWINSCALE_K8S_KEEP=1 keeps it)
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  const std::string& dir() const { return dir_; }                // state, pki/, logs/
  const std::string& kubeconfig() const { return kubeconfig_; }  // the admin's (system:masters)
  std::string server() const;                                    // "https://127.0.0.1:<port>"
  std::string ca_file() const;                                   // the API server's CA (PEM)
  std::string front_proxy_ca_file() const;                       // the aggregator's client CA

  // `kubectl --kubeconfig <admin> <args>`, or with `kubeconfig` when given.
  Command Kubectl(const std::string& args, const std::string& kubeconfig = "") const;
  // kubectl with `yaml_or_json` written to a file passed as -f (e.g. "apply", "create").
  Command KubectlWithFile(const std::string& verb_and_flags, const std::string& yaml_or_json,
                          const std::string& kubeconfig = "") const;
  // `kubectl wait --for condition=established` on `crds` (space-separated "crd/<name>" or names),
  // for up to 30 s. kubectl 1.26 gives up at once, with ".status.conditions accessor error: <nil>",
  // on a CRD the API server has not yet given any status; that answer is retried, not returned.
  Command WaitEstablished(const std::string& crds) const;
  // `kubectl get <what> -o json`, parsed; an error with kubectl's message otherwise.
  absl::StatusOr<nlohmann::json> GetJson(const std::string& what,
                                         const std::string& kubeconfig = "") const;

  // A token of ServiceAccount `ns`/`name` (TokenRequest, one hour) and a kubeconfig file that
  // authenticates with it: what a pod of that ServiceAccount would use, so RBAC applies.
  absl::StatusOr<std::string> ServiceAccountKubeconfig(const std::string& ns,
                                                       const std::string& name) const;

  // Where a log of the control plane is, e.g. "kube-apiserver".
  std::string LogFile(const std::string& component) const;

  // Whether up.sh's output (`up_output`) or a component's log says a port it was given is taken
  // (Start then tries new ports).
  bool APortWasTaken(const std::string& up_output) const;

 private:
  ControlPlane() = default;

  std::unique_ptr<testutil::TempDir> tmp_;  // dir_, removed unless TWINSCALE_K8S_KEEP=1
  std::string dir_;
  std::string k8s_dir_;
  std::string kubeconfig_;
  int api_port_ = 0;
  bool started_ = false;
};

}  // namespace twinscale::k8s_test

#endif  // TWINSCALE_TESTS_K8S_CONTROL_PLANE_H_
