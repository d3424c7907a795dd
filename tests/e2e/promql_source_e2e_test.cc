// The PromQL source against a REAL Prometheus (Debian's 2.42 at /usr/bin/prometheus) scraping a
// live simulated fleet every second, each pod on its own 127.0.0.N address. The source must give
// the policy the same inputs as scraping the pods directly: the check is exact, not approximate,
// because the fleet's clock is stopped first and both readers are then compared on a page that no
// longer changes, once Prometheus has provably scraped it (a sample stamped after the pause).
//
// Also: counters read through Prometheus never go down between two reads; label matchers restrict
// the pods found; a pod without the pod label is found by its instance; Prometheus down is an
// Unavailable error naming the URL. About 15 s of wall time. Skipped (GTEST_SKIP) when prometheus
// is not installed.
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/pod_scraper.h"
#include "controller/metrics/promql_source.h"
#include "gtest/gtest.h"
#include "tests/e2e/live_fleet.h"
#include "tests/util/eventually.h"
#include "tests/util/observation_compare.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"

namespace twinscale::e2e {
namespace {

using metrics::PodResult;
using metrics::PodTarget;
using metrics::PromqlSource;
using metrics::PromqlSourceOptions;

// The same two-engine page as pod_scraper_e2e_test's, shortened: one pod of the fleet serves it.
constexpr char kTwoEngines[] =
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 5.0\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.55\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 0.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"1\",model_name=\"m\"} 2.0\n";

// Every pod read OK, or the first error.
absl::Status AllOk(const absl::StatusOr<std::vector<PodResult>>& results) {
  if (!results.ok()) return results.status();
  for (const PodResult& r : *results) {
    if (!r.reading.ok()) return r.reading.status();
  }
  return absl::OkStatus();
}

// Counters and histogram counts of `later` are >= those of `earlier`, engine by engine.
void ExpectNotDecreasing(const metrics::PodObservation& earlier,
                         const metrics::PodObservation& later) {
  ASSERT_EQ(earlier.engines.size(), later.engines.size());
  for (size_t i = 0; i < later.engines.size(); ++i) {
    const metrics::EngineObservation& a = earlier.engines[i];
    const metrics::EngineObservation& b = later.engines[i];
    const auto ge = [](const std::optional<double>& x, const std::optional<double>& y) {
      return !x.has_value() || (y.has_value() && *y >= *x);
    };
    EXPECT_TRUE(ge(a.prompt_tokens_total, b.prompt_tokens_total));
    EXPECT_TRUE(ge(a.generation_tokens_total, b.generation_tokens_total));
    EXPECT_TRUE(ge(a.requests_finished_total, b.requests_finished_total));
    EXPECT_TRUE(ge(a.preemptions_total, b.preemptions_total));
    if (a.ttft.has_value() && b.ttft.has_value()) {
      EXPECT_GE(b.ttft->count, a.ttft->count);
      for (size_t k = 0; k < a.ttft->cumulative.size(); ++k) {
        EXPECT_GE(b.ttft->cumulative[k], a.ttft->cumulative[k]);
      }
    }
  }
}

class PromqlSourceE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::Installed(testutil::kPrometheusBinary)) {
      GTEST_SKIP() << "prometheus not installed";
    }
    dir_ = tmp_.path();
  }

  // Four pods: vllm-0..2 carry a `pod` label (as Kubernetes service discovery gives), vllm-3
  // only its instance; shards a, b, a, a.
  std::string Config(const LiveFleet& fleet) const {
    std::string c =
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: vllm\n    static_configs:\n";
    const std::vector<std::string> shards = {"a", "b", "a", "a"};
    for (int i = 0; i < 4; ++i) {
      absl::StrAppend(&c, "      - targets: ['127.0.0.", 10 + i, ":", fleet.port(), "']\n",
                      "        labels: {shard: ", shards[i]);
      if (i < 3) absl::StrAppend(&c, ", pod: vllm-", i);
      c += "}\n";
    }
    return c;
  }

  RealClock clock_;
  testutil::TempDir tmp_{"twinscale-prom"};
  std::string dir_;  // tmp_'s
};

TEST_F(PromqlSourceE2eTest, ReadsThroughPrometheusWhatTheScraperReadsFromThePods) {
  LiveFleetOptions o;
  o.initial_replicas = 4;
  o.trace = SyntheticTrace(40, absl::Minutes(5), 512, 128);
  absl::StatusOr<std::unique_ptr<LiveFleet>> started = LiveFleet::Start(o);
  ASSERT_TRUE(started.ok()) << started.status();
  LiveFleet& fleet = **started;
  fleet.SetFault("vllm-3", PodFault::kFixedBody, kTwoEngines);
  const std::vector<PodTarget> targets = fleet.Targets();
  ASSERT_EQ(targets.size(), 4u);

  testutil::PrometheusServer prom(dir_, Config(fleet));
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60))) << prom.Log();
  PromqlSourceOptions po;
  po.url = prom.url();
  po.lookback = absl::Seconds(5);
  PromqlSource source(clock_, po);

  // Wait until Prometheus has every pod (its first scrapes), then once more for a second read.
  absl::StatusOr<std::vector<PodResult>> first;
  (void)testutil::Eventually(
      [&] {
        first = source.Read(targets);
        return AllOk(first).ok();
      },
      absl::Seconds(30), absl::Milliseconds(500));
  ASSERT_TRUE(AllOk(first).ok()) << AllOk(first) << "\n" << prom.Log();
  std::this_thread::sleep_for(std::chrono::seconds(2));

  // Stop the fleet's clock, and wait for a scrape of every pod that began after it stopped
  // (Prometheus may shift a scrape's timestamp by up to 2 ms: the margin covers it).
  fleet.Pause();
  const absl::Time paused_at = clock_.Now() + absl::Milliseconds(10);
  absl::StatusOr<std::vector<PodResult>> through_prometheus;
  (void)testutil::Eventually(
      [&] {
        through_prometheus = source.Read(targets);
        bool all_after = AllOk(through_prometheus).ok();
        for (size_t k = 0; all_after && k < through_prometheus->size(); ++k) {
          all_after = (*through_prometheus)[k].reading->scraped_at >= paused_at;
        }
        if (!all_after) {
          through_prometheus = absl::DeadlineExceededError("no scrape after the pause yet");
        }
        return all_after;
      },
      absl::Seconds(10), absl::Milliseconds(250));
  ASSERT_TRUE(AllOk(through_prometheus).ok()) << AllOk(through_prometheus);
  metrics::PodScraper scraper(clock_);
  absl::StatusOr<std::vector<PodResult>> direct = scraper.Read(targets);
  ASSERT_TRUE(AllOk(direct).ok()) << AllOk(direct);

  for (size_t k = 0; k < targets.size(); ++k) {
    SCOPED_TRACE(targets[k].pod);
    const metrics::PodReading& p = *(*through_prometheus)[k].reading;
    const metrics::PodReading& d = *(*direct)[k].reading;
    testutil::ExpectSameObservation(p.observation, d.observation);
    // Prometheus' stamp is its own scrape's: after the pause, and at most a few scrape
    // intervals before this read.
    EXPECT_GE(p.scraped_at, paused_at);
    EXPECT_LE(p.scraped_at, d.scraped_at);
    ExpectNotDecreasing((*first)[k].reading->observation, p.observation);
  }
  // The simulated pods were busy (the comparison is not of zeros), and the two-engine pod (found
  // by its instance) reads as two engines.
  EXPECT_GT((*direct)[0].reading->observation.engines[0].generation_tokens_total.value_or(0), 0);
  ASSERT_EQ((*through_prometheus)[3].reading->observation.engines.size(), 2u);
  EXPECT_EQ((*through_prometheus)[3].reading->observation.engines[1].running, 5);

  // Label matchers restrict the pods: shard b is vllm-1 alone.
  PromqlSourceOptions shard_b = po;
  shard_b.label_matchers = {{"shard", "b"}};
  absl::StatusOr<std::vector<PodResult>> only_b = PromqlSource(clock_, shard_b).Read(targets);
  ASSERT_TRUE(only_b.ok()) << only_b.status();
  for (size_t k = 0; k < targets.size(); ++k) {
    SCOPED_TRACE(targets[k].pod);
    const absl::Status s = (*only_b)[k].reading.status();
    if (targets[k].pod == "vllm-1") {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), "no fresh samples")) << s;
    }
  }
  // A matcher nothing has: every pod is reported, none read.
  PromqlSourceOptions nobody = po;
  nobody.label_matchers = {{"shard", "z"}};
  absl::StatusOr<std::vector<PodResult>> none = PromqlSource(clock_, nobody).Read(targets);
  ASSERT_TRUE(none.ok());
  for (const PodResult& r : *none) EXPECT_FALSE(r.reading.ok()) << r.pod;

  // Prometheus down: the whole read fails, naming the URL.
  prom.Stop();
  const absl::Status down = source.Read(targets).status();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable) << down;
  EXPECT_TRUE(absl::StrContains(down.message(), prom.url())) << down;
  fleet.Resume();
}

}  // namespace
}  // namespace twinscale::e2e
