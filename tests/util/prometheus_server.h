// Test helpers for tests that start real servers on loopback: a free TCP port and a real
// Prometheus (Debian's /usr/bin/prometheus) run as a child process (in a directory from
// temp_dir.h).
// Tests that use PrometheusServer skip themselves (GTEST_SKIP) when Installed() says it is missing.
#ifndef TWINSCALE_TESTS_UTIL_PROMETHEUS_SERVER_H_
#define TWINSCALE_TESTS_UTIL_PROMETHEUS_SERVER_H_

#include <sys/types.h>

#include <string>

#include "absl/time/time.h"

namespace twinscale::testutil {

inline constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";
inline constexpr char kPromtoolBinary[] = "/usr/bin/promtool";

// Whether `path` exists and is executable.
bool Installed(const char* path);

// A TCP port nothing listens on at 127.0.0.1 right now (bound once, then released). Other
// 127.0.0.N addresses share the port space per address, so it is almost always free there too.
int FreePort();

// A Prometheus server on 127.0.0.1:<free port>, storing its TSDB in <dir>/data and logging to
// <dir>/prometheus.log, with `config` (prometheus.yml text) written to <dir>/prometheus.yml.
// Started by the constructor; stopped (SIGTERM, then waited for) by Stop() or the destructor.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, const std::string& config);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  std::string url() const;  // "http://127.0.0.1:<port>"
  int port() const { return port_; }
  // Polls /-/ready until it answers 200 (true) or `limit` passes (false).
  bool WaitReady(absl::Duration limit) const;
  // Stops the server now (idempotent).
  void Stop();
  // The log file's content, for failure messages.
  std::string Log() const;

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_PROMETHEUS_SERVER_H_
