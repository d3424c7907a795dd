// The ops server over real HTTP on loopback: probes, readiness flipping, the metrics page and its
// content type, unknown paths and methods, and the errors of Start.
#include "controller/outputs/ops_server.h"

#include <cpprest/http_client.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"

namespace twinscale::outputs {
namespace {

struct Answer {
  int status = 0;
  std::string content_type;
  std::string body;
};

Answer Get(const std::string& url, const std::string& path,
           const web::http::method& method = web::http::methods::GET) {
  web::http::client::http_client client(url);
  web::http::http_response r = client.request(method, path).get();
  return {r.status_code(), r.headers().content_type(), r.extract_string(true).get()};
}

class OpsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.address = "127.0.0.1";
    options_.port = testutil::FreePort();
    CounterFamily& decisions =
        **registry_.AddCounter("twinscale_decisions_total", "Decisions taken.", {"target"});
    decisions.WithLabels({"llm/a"}).Increment(3);
  }
  absl::Status Readiness() {
    absl::MutexLock lock(&mu_);
    return ready_;
  }
  void SetReady(absl::Status s) {
    absl::MutexLock lock(&mu_);
    ready_ = std::move(s);
  }
  MetricsRegistry registry_;
  OpsServerOptions options_;
  absl::Mutex mu_;
  absl::Status ready_ ABSL_GUARDED_BY(mu_) = absl::UnavailableError("not the leader");
};

TEST_F(OpsServerTest, ServesProbesAndMetrics) {
  OpsServer server(
      registry_, [this] { return Readiness(); }, options_);
  ASSERT_TRUE(server.Start().ok());
  const std::string url = server.url();
  EXPECT_EQ(url, "http://127.0.0.1:" + std::to_string(options_.port));

  const Answer health = Get(url, "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");

  // Not ready (a follower): 503 with the reason; then ready: 200.
  const Answer follower = Get(url, "/readyz");
  EXPECT_EQ(follower.status, 503);
  EXPECT_EQ(follower.body, "not ready: not the leader\n");
  SetReady(absl::OkStatus());
  const Answer leader = Get(url, "/readyz");
  EXPECT_EQ(leader.status, 200);
  EXPECT_EQ(leader.body, "ok\n");
  SetReady(absl::UnavailableError("lost the lease"));
  EXPECT_EQ(Get(url, "/readyz").status, 503);

  const Answer metrics = Get(url, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics.body,
            "# HELP twinscale_decisions_total Decisions taken.\n"
            "# TYPE twinscale_decisions_total counter\n"
            "twinscale_decisions_total{target=\"llm/a\"} 3\n");
  // The page is rendered per request: a later increment shows.
  (*registry_.AddCounter("twinscale_decisions_total", "Decisions taken.", {"target"}))
      ->WithLabels({"llm/a"})
      .Increment();
  EXPECT_TRUE(absl::StrContains(Get(url, "/metrics").body, "{target=\"llm/a\"} 4\n"));

  EXPECT_EQ(Get(url, "/nope").status, 404);
  EXPECT_EQ(Get(url, "/metrics", web::http::methods::POST).status, 405);
  const Answer head = Get(url, "/healthz", web::http::methods::HEAD);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
}

// Prometheus' own linter reads the served page (every metric type, escaped labels) without
// complaint. Skipped without promtool.
TEST_F(OpsServerTest, PromtoolAcceptsTheMetricsPage) {
  if (!testutil::Installed(testutil::kPromtoolBinary)) GTEST_SKIP() << "promtool not installed";
  (*registry_.AddGauge("twinscale_leader", "1 while this replica leads.", {}))
      ->WithLabels({})
      .Set(1);
  HistogramFamily& h = **registry_.AddHistogram(
      "twinscale_decision_seconds", "Time to take one decision.", {0.005, 0.1, 1}, {"target"});
  h.WithLabels({"llm/\"quoted\"\nname"}).Observe(0.05);
  h.WithLabels({"llm/b"}).Observe(2);
  OpsServer server(registry_, nullptr, options_);
  ASSERT_TRUE(server.Start().ok());
  const Answer metrics = Get(server.url(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const testutil::TempDir tmp("twinscale-ops");
  const std::string dir = tmp.path();
  const std::string page = dir + "/page.txt";
  std::ofstream(page) << metrics.body;
  const std::string cmd = std::string(testutil::kPromtoolBinary) + " check metrics < " + page +
                          " > " + dir + "/promtool.log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir + "/promtool.log");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << said << "\n" << metrics.body;
}

TEST_F(OpsServerTest, AReadinessCheckThatThrowsIsNotReady) {
  OpsServer server(
      registry_, []() -> absl::Status { throw std::runtime_error("boom"); }, options_);
  ASSERT_TRUE(server.Start().ok());
  const Answer a = Get(server.url(), "/readyz");
  EXPECT_EQ(a.status, 503);
  EXPECT_TRUE(absl::StrContains(a.body, "boom")) << a.body;
}

TEST_F(OpsServerTest, NullReadinessMeansReady) {
  OpsServer server(registry_, nullptr, options_);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Get(server.url(), "/readyz").status, 200);
}

TEST_F(OpsServerTest, StartErrors) {
  OpsServer server(registry_, nullptr, options_);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
  // The same port again: it can't bind.
  OpsServer second(registry_, nullptr, options_);
  const absl::Status taken = second.Start();
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable) << taken;
  EXPECT_TRUE(absl::StrContains(taken.message(), server.url())) << taken;
  OpsServerOptions zero = options_;
  zero.port = 0;
  EXPECT_EQ(OpsServer(registry_, nullptr, zero).Start().code(), absl::StatusCode::kInvalidArgument);
  // Stopped: the port is free again, and Stop is idempotent.
  server.Stop();
  server.Stop();
  OpsServer third(registry_, nullptr, options_);
  EXPECT_TRUE(third.Start().ok());
}

}  // namespace
}  // namespace twinscale::outputs
