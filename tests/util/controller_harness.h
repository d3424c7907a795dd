// Helpers for end-to-end tests of the real `twinscale controller` binary against the fake API
// server (tests/fake_apiserver): the controller as a child process, a fleet whose inputs stay
// stale (so every decision is "hold at the Deployment's replicas"), and a kubeconfig for the
// fake server. Used by tests/integration/keda_controller_test.cc and hpa_failover_test.cc.
#ifndef TWINSCALE_TESTS_UTIL_CONTROLLER_HARNESS_H_
#define TWINSCALE_TESTS_UTIL_CONTROLLER_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tests/fake_apiserver/fake_apiserver.h"

namespace twinscale::testutil {

// `twinscale controller --identity=<identity> <args>` as a child process, its stderr (the JSON
// log) in <dir>/<identity>.log. The destructor kills it (SIGKILL) if it still runs.
class ControllerProcess {
 public:
  // `env`: variables added to the child's environment (e.g. POD_NAME, POD_NAMESPACE).
  ControllerProcess(const std::string& binary, const std::string& dir, const std::string& identity,
                    const std::vector<std::string>& args,
                    const std::vector<std::pair<std::string, std::string>>& env = {});
  ~ControllerProcess();
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;

  // SIGTERM, then the exit code if it exits within `timeout` (-1: it didn't).
  int Terminate(std::chrono::seconds timeout);
  // SIGKILL (a crash: nothing is released or cleaned up), and waits for it.
  void Kill();
  std::string Log() const;
  // Whether the log shows `text` within `timeout`.
  bool WaitForLog(const std::string& text, std::chrono::seconds timeout) const;

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

// Seeds `api` with a Deployment llm/vllm-llama-3-1-8b at 3 replicas, three Ready pods of it, and
// an InferenceAutoscaler llm/llama-3-1-8b in `mode` (interval 2s) whose pods' metrics port is
// `dead_port`, where nothing listens: every scrape fails, the inputs are stale, and the leader
// publishes "hold at 3". With `admission`, spec.admission.enabled.
absl::Status SeedStaleFleet(fake_apiserver::FakeApiServer& api, const std::string& mode,
                            int dead_port, bool admission = false);

// Writes a kubeconfig for `server_url` (plain HTTP, no credentials, namespace llm) to `path`.
void WriteFakeKubeconfig(const std::string& path, const std::string& server_url);

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_CONTROLLER_HARNESS_H_
