// The controller's seed of the seasonal forecast's history from a REAL Prometheus (Debian's 2.42 at
// /usr/bin/prometheus): what the Reconciler asks when a target's status holds no arrival history
// (reconcile::ArrivalQueryFor's grid, metrics::QueryPrometheusArrivals,
// reconcile::ArrivalBucketsOf) against six hours of backfilled vLLM counters, read back into a
// state::ArrivalHistory.
//
// The backfill (promtool tsdb create-blocks-from openmetrics), every 15 s from `base` (a 5-minute
// boundary eight hours ago) for six hours, in namespace llm:
//   vllm-0: 2 requests/s finished; 3 waiting, 5 running throughout;
//   vllm-1: 1 request/s for three hours, then 3/s; restarted (its counter from 0) just after
//           base + 2h30m; 0 waiting until base + 4h, then 6;
// and, in namespace other, a pod at 1,000 requests/s that the label matcher must leave out.
// So each 5-minute bucket from base holds 600 + 300 (first three hours) or 600 + 900 requests,
// the bucket ending at base + 4h six more (the requests newly waiting), and every bucket before
// base or after base + 6h is unobserved (no series was sampled within it), not quiet.
//
// Also the failures the Reconciler must survive (it only logs them): Prometheus unreachable,
// nothing recorded under the matchers, an invalid label name.
//
// Skipped (GTEST_SKIP) when prometheus or promtool are not installed.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "controller/metrics/prometheus_client.h"
#include "controller/metrics/promql_source.h"
#include "controller/reconcile/reconcile_steps.h"
#include "controller/state/arrival_history.h"
#include "gtest/gtest.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"

namespace twinscale {
namespace {

using testutil::Installed;
using testutil::PrometheusServer;

const absl::Duration kBucket = absl::Minutes(5);
// What the controller's history keeps (state::SeasonOptions: a week, the lead and the smoothing).
const absl::Duration kRetention = absl::Hours(24 * 7) + absl::Minutes(25);

class PrometheusArrivalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Installed(testutil::kPrometheusBinary) || !Installed(testutil::kPromtoolBinary)) {
      GTEST_SKIP() << "prometheus/promtool not installed";
    }
  }
  testutil::TempDir tmp_{"twinscale-prom-arrivals"};
};

TEST_F(PrometheusArrivalsTest, ANewDeciderIsSeededWithWhatPrometheusRecorded) {
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  const absl::Time base =
      absl::UnixEpoch() + absl::Floor(now - absl::UnixEpoch(), kBucket) - absl::Hours(8);
  const int samples = 6 * 240;  // six hours of 15 s
  std::map<std::string, std::vector<std::pair<absl::Time, double>>> series;
  double c0 = 0, c1 = 0, other = 0;
  for (int k = 0; k <= samples; ++k) {
    const absl::Time at = base + absl::Seconds(15) * k;
    if (k > 0) {
      c0 += 30;
      other += 15000;
      const double inc1 = k <= 720 ? 15 : 45;
      c1 = k == 601 ? inc1 : c1 + inc1;  // the restart: a new process counts from 0
    }
    const bool waiting = at >= base + absl::Hours(4);
    series["vllm:request_prompt_tokens_count{namespace=\"llm\",pod=\"vllm-0\"}"].push_back(
        {at, c0});
    series["vllm:request_prompt_tokens_count{namespace=\"llm\",pod=\"vllm-1\"}"].push_back(
        {at, c1});
    series["vllm:request_prompt_tokens_count{namespace=\"other\",pod=\"big-0\"}"].push_back(
        {at, other});
    series["vllm:num_requests_waiting{namespace=\"llm\",pod=\"vllm-0\"}"].push_back({at, 3});
    series["vllm:num_requests_running{namespace=\"llm\",pod=\"vllm-0\"}"].push_back({at, 5});
    series["vllm:num_requests_waiting{namespace=\"llm\",pod=\"vllm-1\"}"].push_back(
        {at, waiting ? 6.0 : 0.0});
    series["vllm:num_requests_running{namespace=\"llm\",pod=\"vllm-1\"}"].push_back({at, 0});
  }
  const std::string dir = tmp_.path();
  const std::string om = dir + "/history.om.txt";
  {
    std::ofstream out(om);
    for (const auto& [key, points] : series) {
      for (const auto& [at, v] : points) {
        out << key << ' ' << absl::StrFormat("%.17g", v) << ' ' << metrics::PromTimestamp(at)
            << '\n';
      }
    }
    out << "# EOF\n";
  }
  const std::string cmd =
      absl::StrCat(testutil::kPromtoolBinary, " tsdb create-blocks-from openmetrics ", om, " ", dir,
                   "/data > ", dir, "/promtool.log 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "promtool failed; see " << dir << "/promtool.log";
  PrometheusServer prom(dir, "global:\n  scrape_interval: 15s\n");
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60))) << prom.Log();

  // The Reconciler's question for a new decider, and its answer as buckets.
  const reconcile::ArrivalQuery q = reconcile::ArrivalQueryFor(kBucket, kRetention, now);
  absl::StatusOr<metrics::ArrivalSeries> got = metrics::QueryPrometheusArrivals(
      prom.url(), {{"namespace", "llm"}}, q.start, q.step, q.steps);
  ASSERT_TRUE(got.ok()) << got.status();
  const state::ArrivalBuckets b = reconcile::ArrivalBucketsOf(*got);
  ASSERT_EQ(b.size(), static_cast<size_t>(q.steps));
  absl::Duration rest;
  const int64_t off = absl::IDivDuration(base - q.start, kBucket, &rest);
  for (int j = 0; j < 72; ++j) {
    SCOPED_TRACE(absl::StrCat("the bucket from base + ", 5 * j, " min"));
    const size_t i = static_cast<size_t>(off + j);
    const double want = 600 + (j < 36 ? 300 : 900) + (j == 47 ? 6 : 0);
    EXPECT_DOUBLE_EQ(b.arrivals[i], want);
    EXPECT_DOUBLE_EQ(b.observed_s[i], 300);
  }
  int observed_outside = 0;
  for (int64_t i = 0; i < off; ++i) observed_outside += b.observed_s[static_cast<size_t>(i)] > 0;
  // After the data ends Prometheus' lookback shows the last samples for 5 more minutes: the
  // bucket they fall in is no more observed than the rest.
  for (size_t i = static_cast<size_t>(off + 72); i < b.size(); ++i) {
    observed_outside += b.observed_s[i] > 0;
  }
  EXPECT_EQ(observed_outside, 0) << "buckets outside Prometheus' data must read as unobserved";

  // As the decider's history holds it: rates where it was observed, nothing before.
  state::ArrivalHistory h(kBucket, kRetention);
  for (size_t i = 0; i < b.size(); ++i) {
    const absl::Time from = b.start + kBucket * static_cast<int64_t>(i);
    h.Add(from, from + absl::Seconds(b.observed_s[i]), b.arrivals[i]);
  }
  EXPECT_DOUBLE_EQ(*h.MeanRate(base + absl::Hours(1), base + absl::Hours(2)), 3.0);
  EXPECT_DOUBLE_EQ(*h.MeanRate(base + absl::Hours(5), base + absl::Hours(6)), 5.0);
  EXPECT_FALSE(h.MeanRate(base - absl::Hours(2), base).has_value());
}

TEST_F(PrometheusArrivalsTest, FailuresSayWhatWentWrong) {
  PrometheusServer prom(tmp_.path(), "global:\n  scrape_interval: 15s\n");
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60))) << prom.Log();
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  const reconcile::ArrivalQuery q = reconcile::ArrivalQueryFor(kBucket, kRetention, now);
  struct Case {
    std::string name;
    std::string url;
    std::map<std::string, std::string> matchers;
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"nothing recorded under the matchers",
       prom.url(),
       {{"namespace", "nobody"}},
       absl::StatusCode::kNotFound},
      {"an invalid label name",
       prom.url(),
       {{"name-space", "llm"}},
       absl::StatusCode::kInvalidArgument},
      {"no Prometheus there",
       absl::StrCat("http://127.0.0.1:", testutil::FreePort()),
       {},
       absl::StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s =
        metrics::QueryPrometheusArrivals(c.url, c.matchers, q.start, q.step, q.steps).status();
    EXPECT_EQ(s.code(), c.want) << s;
    EXPECT_FALSE(s.message().empty());
  }
}

}  // namespace
}  // namespace twinscale
