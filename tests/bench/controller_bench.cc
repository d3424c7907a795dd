// The controller's footprint (docs/architecture.md "Performance targets": 100 InferenceAutoscalers
// x 10 replicas at a 15 s interval within 0.5 core and 200 MB). Prints figures; asserts nothing
// about speed.
//
// Set-up, all in this process except the controller itself:
//  - the fake API server (tests/fake_apiserver) holding 100 Deployments, 100 InferenceAutoscalers
//    (Recommend mode, 15 s interval, the llama-3.1-8b sample profile) and 1000 Ready Pods;
//  - one live simulated fleet of 10 replicas under steady traffic (tests/e2e/live_fleet), serving
//    vLLM /metrics on 127.0.0.10..19. Every Deployment's 10 pods carry those 10 addresses, so the
//    controller scrapes real, moving vLLM pages 1000 times per interval and decides 100 times.
// The controller is the real binary (`twinscale controller`, a child process, kubeconfig to the
// fake, no leader election). After a warm-up, its CPU time (utime + stime from /proc/PID/stat) and
// resident memory (VmRSS, VmHWM) are read over the measuring window, and its own /metrics tells
// how many passes it made.
//
//   build/tests/bench/controller_bench [--targets 100] [--replicas 10] [--warmup 40s] [--measure
//   120s]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/live_fleet.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/util/temp_dir.h"

ABSL_FLAG(int, targets, 100, "InferenceAutoscalers (each with its own Deployment).");
ABSL_FLAG(int, replicas, 10, "Pods per Deployment (and replicas of the live fleet).");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(40), "Time before measuring.");
ABSL_FLAG(absl::Duration, measure, absl::Seconds(120), "The measuring window.");
ABSL_FLAG(double, rate, 60, "Requests per second offered to the live fleet.");

namespace {

using twinscale::fake_apiserver::FakeApiServer;

double CpuSeconds(pid_t pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/stat"));
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Fields after the ")" of the command name: state is field 3; utime 14, stime 15.
  std::vector<std::string> fields = absl::StrSplit(all.substr(all.rfind(')') + 2), ' ');
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

// VmRSS or VmHWM in MiB.
double StatusMiB(pid_t pid, const std::string& key) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream in(line.substr(key.size() + 1));
      double kb = 0;
      in >> kb;
      return kb / 1024;
    }
  }
  return -1;
}

std::string Fetch(const std::string& host_port, const std::string& path) {
  // The ops port is plain HTTP; curl keeps this bench free of another HTTP client.
  FILE* p = popen(absl::StrCat("curl -s http://", host_port, path).c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

double MetricSum(const std::string& page, const std::string& name) {
  double sum = 0;
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : ' ';
    if (next != '{' && next != ' ') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "controller_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int targets = absl::GetFlag(FLAGS_targets), replicas = absl::GetFlag(FLAGS_replicas);

  FakeApiServer::Options ao;
  ao.crd_files = {"deploy/crds/twinscale.io_inferenceautoscalers.yaml"};
  auto api = FakeApiServer::Start(ao);
  if (!api.ok()) return Fail(std::string(api.status().message()));

  twinscale::e2e::LiveFleetOptions fo;
  fo.initial_replicas = replicas;
  fo.trace = twinscale::e2e::SyntheticTrace(absl::GetFlag(FLAGS_rate), absl::Hours(2), 512, 256);
  auto fleet = twinscale::e2e::LiveFleet::Start(fo);
  if (!fleet.ok()) return Fail(std::string(fleet.status().message()));
  const std::vector<twinscale::e2e::LivePod> live = (*fleet)->Pods();

  const std::string created = "2026-01-01T00:00:00Z";
  for (int t = 0; t < targets; ++t) {
    const std::string name = absl::StrCat("llm-", t), app = absl::StrCat("vllm-", t);
    nlohmann::json dep = {{"apiVersion", "apps/v1"},
                          {"kind", "Deployment"},
                          {"metadata", {{"name", app}, {"namespace", "bench"}}},
                          {"spec",
                           {{"replicas", replicas},
                            {"selector", {{"matchLabels", {{"app", app}}}}},
                            {"template", {{"metadata", {{"labels", {{"app", app}}}}}}}}}};
    auto s = (*api)->Put(absl::StrCat("/apis/apps/v1/namespaces/bench/deployments/", app), dep);
    if (!s.ok()) return Fail(std::string(s.status().message()));
    nlohmann::json ias = {
        {"apiVersion", "twinscale.io/v1alpha1"},
        {"kind", "InferenceAutoscaler"},
        {"metadata", {{"name", name}, {"namespace", "bench"}}},
        {"spec",
         {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", app}}},
          {"mode", "Recommend"},
          {"minReplicas", 1},
          {"maxReplicas", 32},
          {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}},
          {"metrics", {{"source", "Pods"}, {"port", (*fleet)->port()}, {"interval", "15s"}}}}}};
    s = (*api)->Put(
        absl::StrCat("/apis/twinscale.io/v1alpha1/namespaces/bench/inferenceautoscalers/", name),
        ias);
    if (!s.ok()) return Fail(std::string(s.status().message()));
    for (int r = 0; r < replicas; ++r) {
      const std::string pod = absl::StrCat(app, "-", r);
      nlohmann::json p = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata",
                           {{"name", pod},
                            {"namespace", "bench"},
                            {"labels", {{"app", app}}},
                            {"creationTimestamp", created}}},
                          {"status",
                           {{"phase", "Running"},
                            {"podIP", live[r % live.size()].ip},
                            {"conditions",
                             {{{"type", "PodScheduled"}, {"status", "True"}},
                              {{"type", "ContainersReady"}, {"status", "True"}},
                              {{"type", "Ready"},
                               {"status", "True"},
                               {"lastTransitionTime", "2026-01-01T00:01:00Z"}}}}}}};
      s = (*api)->Put(absl::StrCat("/api/v1/namespaces/bench/pods/", pod), p);
      if (!s.ok()) return Fail(std::string(s.status().message()));
    }
  }

  twinscale::testutil::TempDir tmp("controller_bench");
  if (!tmp.ok()) return Fail("mkdtemp");
  tmp.Keep();  // the controller's log stays for a look after the run
  const std::string dir = tmp.path();
  const std::string kubeconfig = absl::StrCat(dir, "/kubeconfig");
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
                            << "clusters:\n- name: fake\n  cluster:\n    server: " << (*api)->url()
                            << "\ncontexts:\n- name: bench\n  context:\n    cluster: fake\n"
                            << "    user: nobody\n    namespace: bench\n"
                            << "users:\n- name: nobody\n  user: {}\n";
  const int ops_port = 18000 + getpid() % 1000;
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string ops = absl::StrCat("--ops-port=", ops_port);
    const std::string kc = absl::StrCat("--kubeconfig=", kubeconfig);
    freopen(absl::StrCat(dir, "/controller.log").c_str(), "w", stderr);
    execl(TWINSCALE_BINARY, "twinscale", "controller", kc.c_str(), "--leader-elect=false",
          "--ops-address=127.0.0.1", ops.c_str(), "--log-level=warning", nullptr);
    _exit(127);
  }
  std::printf(
      "controller pid %d, %d InferenceAutoscalers x %d pods, 15 s interval; log "
      "%s/controller.log\n",
      pid, targets, replicas, dir.c_str());
  std::this_thread::sleep_for(absl::ToChronoSeconds(absl::GetFlag(FLAGS_warmup)));
  const std::string ops_host = absl::StrCat("127.0.0.1:", ops_port);
  const double cpu0 = CpuSeconds(pid);
  const double passes0 = MetricSum(Fetch(ops_host, "/metrics"), "twinscale_reconciles_total");
  const absl::Duration window = absl::GetFlag(FLAGS_measure);
  double rss_max = 0;
  for (absl::Duration waited; waited < window; waited += absl::Seconds(1)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_max = std::max(rss_max, StatusMiB(pid, "VmRSS"));
  }
  const double cpu1 = CpuSeconds(pid);
  const std::string page = Fetch(ops_host, "/metrics");
  const double passes1 = MetricSum(page, "twinscale_reconciles_total");
  const double hwm = StatusMiB(pid, "VmHWM");
  const double seconds = absl::ToDoubleSeconds(window);
  const double dur_sum = MetricSum(page, "twinscale_reconcile_duration_seconds_sum");
  const double dur_count = MetricSum(page, "twinscale_reconcile_duration_seconds_count");
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  (*fleet)->Stop();
  std::printf("controller CPU: %.3f cores (target 0.5)\n", (cpu1 - cpu0) / seconds);
  std::printf("controller memory: RSS max %.1f MiB, high-water %.1f MiB (target 200 MB)\n", rss_max,
              hwm);
  std::printf("reconcile passes in the window: %.0f (%.1f per target per 15 s; expected 1)\n",
              passes1 - passes0, (passes1 - passes0) / targets / (seconds / 15));
  std::printf("mean pass wall time since start: %.1f ms\n",
              dur_count > 0 ? 1000 * dur_sum / dur_count : 0.0);
  std::printf("controller exit after SIGTERM: %s\n",
              WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "clean (0)" : "NOT CLEAN");
  return 0;
}
