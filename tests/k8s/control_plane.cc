// A real, private Kubernetes control plane for tests: see control_plane.h.
#include "tests/k8s/control_plane.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "controller/common/free_port.h"

namespace twinscale::k8s_test {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool OnPath(const std::string& program) {
  return RunCommand(absl::StrCat("command -v ", program)).ok();
}

// The folder holding up.sh: $TWINSCALE_K8S_DIR, else ../shared/k8s from the repository root
// (tests run there).
std::string K8sDir() {
  if (const char* env = std::getenv("TWINSCALE_K8S_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return "../shared/k8s";
}

std::string Tail(const std::string& path, int lines) {
  return RunCommand(absl::StrCat("tail -n ", lines, " ", ShellQuote(path), " 2>/dev/null")).out;
}

// kubectl 1.32 against a 1.26 server warns about the skew on every call; it says nothing else.
std::string DropSkewWarning(const std::string& err) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(err, '\n')) {
    if (absl::StartsWith(line, "Warning: version difference")) continue;
    if (line.empty()) continue;
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Command RunCommand(const std::string& command) {
  char out_path[] = "/tmp/ts-k8s-out-XXXXXX";
  char err_path[] = "/tmp/ts-k8s-err-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  Command r;
  if (out_fd < 0 || err_fd < 0) {
    r.err = "mkstemp failed";
    return r;
  }
  close(out_fd);
  close(err_fd);
  const int status = std::system(
      absl::StrCat("( ", command, " ) </dev/null >", out_path, " 2>", err_path).c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.out = ReadAll(out_path);
  r.err = DropSkewWarning(ReadAll(err_path));
  unlink(out_path);
  unlink(err_path);
  return r;
}

absl::Status Prerequisites() {
  const std::string dir = K8sDir();
  if (!fs::exists(dir + "/up.sh") || !fs::exists(dir + "/kube-apiserver.xz")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no real control plane here: ", dir,
        "/up.sh and its binaries are absent (set TWINSCALE_K8S_DIR to a folder holding them)"));
  }
  for (const char* program : {"etcd", "kubectl", "openssl", "curl", "xz", "flock"}) {
    if (!OnPath(program)) {
      return absl::FailedPreconditionError(
          absl::StrCat("no real control plane here: `", program,
                       "` is not installed (hack/setup.sh installs it)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(ControlPlaneOptions options) {
  if (absl::Status s = Prerequisites(); !s.ok()) return s;
  std::unique_ptr<ControlPlane> cp(new ControlPlane());
  cp->k8s_dir_ = fs::absolute(K8sDir()).lexically_normal().string();
  cp->tmp_ = std::make_unique<testutil::TempDir>("ts-k8s");
  if (!cp->tmp_->ok()) return absl::InternalError("mkdtemp failed");
  cp->dir_ = cp->tmp_->path();
  cp->kubeconfig_ = cp->dir_ + "/admin.kubeconfig";

  const char* home = std::getenv("HOME");
  const std::string cache = absl::StrCat(home != nullptr ? home : "/tmp", "/.cache");
  fs::create_directories(cache);
  // The certificates and tokens (RSA keys: seconds of CPU) are made once and reused by every
  // start: up.sh keeps a pki/ it finds complete. The lock serialises the starts, so that two
  // tests starting at once do not both make the cache.
  const std::string lock = cache + "/twinscale-k8s-start.lock";
  const std::string pki_cache = cache + "/twinscale-k8s-pki";
  const std::string pki = cp->dir_ + "/pki";
  // A port found free can be taken before its component binds it (another test's server, or the
  // local end of an outgoing connection, which the kernel draws from the same ephemeral range):
  // a start whose component found its port in use is stopped and tried again on new ports.
  constexpr int kStartAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    const int etcd = FreeTcpPort(), peer = FreeTcpPort(), api = FreeTcpPort(), kcm = FreeTcpPort();
    if (etcd == 0 || peer == 0 || api == 0 || kcm == 0) {
      return absl::UnavailableError("no free loopback port for the control plane");
    }
    cp->api_port_ = api;
    std::string env;
    absl::StrAppend(&env, "K8S_RUN=", ShellQuote(cp->dir_),
                    " K8S_KUBECONFIG=", ShellQuote(cp->kubeconfig_), " ETCD_PORT=", etcd,
                    " ETCD_PEER_PORT=", peer, " API_PORT=", api, " KCM_PORT=", kcm,
                    " START_KCM=", options.controller_manager ? 1 : 0,
                    " HPA_SYNC=", absl::ToInt64Seconds(options.hpa_sync), "s FRESH=1");
    const Command up = RunCommand(absl::StrCat(
        "flock ", ShellQuote(lock), " sh -c ",
        ShellQuote(absl::StrCat(
            "if [ -f ", ShellQuote(pki_cache + "/.done"), " ]; then cp -r ", ShellQuote(pki_cache),
            " ", ShellQuote(pki), "; fi; env ", env, " bash ", ShellQuote(cp->k8s_dir_ + "/up.sh"),
            " && if [ ! -f ", ShellQuote(pki_cache + "/.done"), " ]; then rm -rf ",
            ShellQuote(pki_cache + ".tmp"), " && cp -r ", ShellQuote(pki), " ",
            ShellQuote(pki_cache + ".tmp"), " && mv ", ShellQuote(pki_cache + ".tmp"), " ",
            ShellQuote(pki_cache), "; fi"))));
    cp->started_ = true;  // down.sh stops whatever did start
    if (up.ok()) break;
    if (attempt < kStartAttempts && cp->APortWasTaken(up.all())) {
      RunCommand(absl::StrCat("K8S_RUN=", ShellQuote(cp->dir_), " bash ",
                              ShellQuote(cp->k8s_dir_ + "/down.sh")));
      continue;
    }
    return absl::UnavailableError(absl::StrCat("the control plane did not start (up.sh exit ",
                                               up.exit_code, ", attempt ", attempt, "): ", up.all(),
                                               "\n--- kube-apiserver log tail:\n",
                                               Tail(cp->LogFile("kube-apiserver"), 20)));
  }
  return cp;
}

ControlPlane::~ControlPlane() {
  if (started_) {
    RunCommand(
        absl::StrCat("K8S_RUN=", ShellQuote(dir_), " bash ", ShellQuote(k8s_dir_ + "/down.sh")));
  }
  const char* keep = std::getenv("TWINSCALE_K8S_KEEP");
  if (tmp_ != nullptr && keep != nullptr && std::string(keep) == "1") tmp_->Keep();
}

bool ControlPlane::APortWasTaken(const std::string& up_output) const {
  // up.sh checks its ports before it starts anything ("127.0.0.1:N is already in use"); a port
  // taken after that check shows in the component's own log ("bind: address already in use").
  if (up_output.find("already in use") != std::string::npos) return true;
  for (const char* component : {"etcd", "kube-apiserver", "kube-controller-manager"}) {
    std::ifstream in(LogFile(component));
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("already in use") != std::string::npos) return true;
    }
  }
  return false;
}

std::string ControlPlane::server() const { return absl::StrCat("https://127.0.0.1:", api_port_); }
std::string ControlPlane::ca_file() const { return dir_ + "/pki/ca.crt"; }
std::string ControlPlane::front_proxy_ca_file() const { return dir_ + "/pki/front-proxy-ca.crt"; }
std::string ControlPlane::LogFile(const std::string& component) const {
  return absl::StrCat(dir_, "/logs/", component, ".log");
}

Command ControlPlane::Kubectl(const std::string& args, const std::string& kubeconfig) const {
  return RunCommand(absl::StrCat("kubectl --kubeconfig ",
                                 ShellQuote(kubeconfig.empty() ? kubeconfig_ : kubeconfig), " ",
                                 args));
}

Command ControlPlane::WaitEstablished(const std::string& crds) const {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    Command r = Kubectl(absl::StrCat("wait --for condition=established --timeout=30s ", crds));
    if (r.ok() || r.all().find("accessor error") == std::string::npos || absl::Now() > deadline) {
      return r;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

Command ControlPlane::KubectlWithFile(const std::string& verb_and_flags,
                                      const std::string& yaml_or_json,
                                      const std::string& kubeconfig) const {
  static std::atomic<int> counter{0};
  const std::string file = absl::StrCat(dir_, "/input-", counter++, ".yaml");
  {
    std::ofstream out(file, std::ios::binary);
    out << yaml_or_json;
  }
  Command r = Kubectl(absl::StrCat(verb_and_flags, " -f ", ShellQuote(file)), kubeconfig);
  unlink(file.c_str());
  return r;
}

absl::StatusOr<nlohmann::json> ControlPlane::GetJson(const std::string& what,
                                                     const std::string& kubeconfig) const {
  const Command r = Kubectl(absl::StrCat("get ", what, " -o json"), kubeconfig);
  if (!r.ok()) return absl::NotFoundError(absl::StrCat("kubectl get ", what, ": ", r.err));
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded())
    return absl::InternalError(absl::StrCat("kubectl get ", what, ": not JSON"));
  return j;
}

absl::StatusOr<std::string> ControlPlane::ServiceAccountKubeconfig(const std::string& ns,
                                                                   const std::string& name) const {
  const Command token = Kubectl(
      absl::StrCat("-n ", ShellQuote(ns), " create token ", ShellQuote(name), " --duration=1h"));
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no token for ServiceAccount ", ns, "/", name, ": ", token.err));
  }
  const std::string path = absl::StrCat(dir_, "/sa-", ns, "-", name, ".kubeconfig");
  std::ofstream out(path, std::ios::binary);
  out << "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: "
      << server() << "\n    certificate-authority: " << ca_file() << "\nusers:\n- name: " << name
      << "\n  user:\n    token: " << absl::StripAsciiWhitespace(token.out)
      << "\ncontexts:\n- name: real\n  context:\n    cluster: real\n    user: " << name
      << "\n    namespace: " << ns << "\ncurrent-context: real\n";
  if (!out) return absl::InternalError(absl::StrCat("can't write ", path));
  return path;
}

}  // namespace twinscale::k8s_test
