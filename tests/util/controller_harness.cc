// The controller as a child process, a stale fleet, a kubeconfig: see controller_harness.h.
#include "tests/util/controller_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/util/eventually.h"

namespace twinscale::testutil {

ControllerProcess::ControllerProcess(const std::string& binary, const std::string& dir,
                                     const std::string& identity,
                                     const std::vector<std::string>& args,
                                     const std::vector<std::pair<std::string, std::string>>& env)
    : log_(absl::StrCat(dir, "/", identity, ".log")) {
  // Everything the child needs is made before fork (only async-signal-safe calls after it).
  std::vector<std::string> all = {"twinscale", "controller", "--identity=" + identity};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    if (freopen(log_.c_str(), "w", stderr) == nullptr) _exit(126);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
}

ControllerProcess::~ControllerProcess() {
  if (pid_ > 0 && !exited_) Kill();
}

int ControllerProcess::Terminate(std::chrono::seconds timeout) {
  kill(pid_, SIGTERM);
  int code = -1;
  (void)Eventually(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
        exited_ = true;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      absl::FromChrono(timeout), absl::Milliseconds(50));
  return code;
}

void ControllerProcess::Kill() {
  if (pid_ <= 0 || exited_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  exited_ = true;
}

std::string ControllerProcess::Log() const {
  std::ifstream in(log_, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool ControllerProcess::WaitForLog(const std::string& text, std::chrono::seconds timeout) const {
  return Eventually([&] { return Log().find(text) != std::string::npos; },
                    absl::FromChrono(timeout), absl::Milliseconds(50));
}

absl::Status SeedStaleFleet(fake_apiserver::FakeApiServer& api, const std::string& mode,
                            int dead_port, bool admission) {
  const nlohmann::json dep = {{"apiVersion", "apps/v1"},
                              {"kind", "Deployment"},
                              {"metadata", {{"name", "vllm-llama-3-1-8b"}, {"namespace", "llm"}}},
                              {"spec",
                               {{"replicas", 3},
                                {"selector", {{"matchLabels", {{"app", "vllm"}}}}},
                                {"template", {{"metadata", {{"labels", {{"app", "vllm"}}}}}}}}}};
  if (auto r = api.Put("/apis/apps/v1/namespaces/llm/deployments/vllm-llama-3-1-8b", dep);
      !r.ok()) {
    return r.status();
  }
  nlohmann::json spec = {
      {"targetRef",
       {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm-llama-3-1-8b"}}},
      {"mode", mode},
      {"minReplicas", 1},
      {"maxReplicas", 8},
      {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}},
      {"metrics", {{"source", "Pods"}, {"port", dead_port}, {"interval", "2s"}}}};
  if (admission) spec["admission"] = {{"enabled", true}};
  const nlohmann::json ias = {{"apiVersion", "twinscale.io/v1alpha1"},
                              {"kind", "InferenceAutoscaler"},
                              {"metadata", {{"name", "llama-3-1-8b"}, {"namespace", "llm"}}},
                              {"spec", spec}};
  if (auto r = api.Put(
          "/apis/twinscale.io/v1alpha1/namespaces/llm/inferenceautoscalers/llama-3-1-8b", ias);
      !r.ok()) {
    return r.status();
  }
  for (int i = 0; i < 3; ++i) {
    const std::string pod = absl::StrCat("vllm-", i);
    const nlohmann::json p = {{"apiVersion", "v1"},
                              {"kind", "Pod"},
                              {"metadata",
                               {{"name", pod},
                                {"namespace", "llm"},
                                {"labels", {{"app", "vllm"}}},
                                {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
                              {"status",
                               {{"phase", "Running"},
                                {"podIP", "127.0.0.1"},
                                {"conditions",
                                 {{{"type", "PodScheduled"}, {"status", "True"}},
                                  {{"type", "ContainersReady"}, {"status", "True"}},
                                  {{"type", "Ready"},
                                   {"status", "True"},
                                   {"lastTransitionTime", "2026-01-01T00:01:00Z"}}}}}}};
    if (auto r = api.Put(absl::StrCat("/api/v1/namespaces/llm/pods/", pod), p); !r.ok()) {
      return r.status();
    }
  }
  return absl::OkStatus();
}

void WriteFakeKubeconfig(const std::string& path, const std::string& server_url) {
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                      << "clusters:\n- name: fake\n  cluster:\n    server: " << server_url
                      << "\ncontexts:\n- name: t\n  context:\n    cluster: fake\n"
                      << "    user: nobody\n    namespace: llm\n"
                      << "users:\n- name: nobody\n  user: {}\n";
}

}  // namespace twinscale::testutil
