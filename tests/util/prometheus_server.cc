// Test helpers: see prometheus_server.h.
#include "tests/util/prometheus_server.h"

#include <cpprest/http_client.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "controller/common/free_port.h"
#include "tests/util/eventually.h"

namespace twinscale::testutil {

bool Installed(const char* path) { return access(path, X_OK) == 0; }

int FreePort() { return FreeTcpPort("127.0.0.1"); }

PrometheusServer::PrometheusServer(const std::string& dir, const std::string& config)
    : dir_(dir), port_(FreePort()) {
  const std::string config_path = dir + "/prometheus.yml";
  std::ofstream(config_path) << config;
  const std::string data = dir + "/data";
  const std::string log = dir + "/prometheus.log";
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  const std::string a1 = "--storage.tsdb.path=" + data, a2 = "--config.file=" + config_path,
                    a3 = absl::StrCat("--web.listen-address=127.0.0.1:", port_);
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(kPrometheusBinary, "prometheus", a1.c_str(), a2.c_str(), a3.c_str(),
          "--storage.tsdb.retention.time=3650d", "--web.enable-lifecycle", nullptr);
    _exit(127);
  }
}

PrometheusServer::~PrometheusServer() { Stop(); }

void PrometheusServer::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

std::string PrometheusServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

bool PrometheusServer::WaitReady(absl::Duration limit) const {
  return Eventually(
      [&] {
        try {
          web::http::client::http_client c(url());
          return c.request(web::http::methods::GET, "/-/ready").get().status_code() == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      limit, absl::Milliseconds(200));
}

std::string PrometheusServer::Log() const {
  std::ifstream in(dir_ + "/prometheus.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace twinscale::testutil
