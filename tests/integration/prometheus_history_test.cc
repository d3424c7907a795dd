// replay --from-prometheus against a REAL Prometheus (Debian's 2.42 at /usr/bin/prometheus).
//
// Backfill: a simulated fleet of 8 replicas serves the Azure conversation trace at rate-scale 10
// (about 55 requests/s for an hour of trace time); every replica's vLLM /metrics text is rendered
// every 15 s of simulated time, as a Prometheus scraping each pod every 15 s would see it, and
// written as OpenMetrics with timestamps placed two hours in the past. `promtool tsdb
// create-blocks-from openmetrics` (Prometheus' own backfill) turns it into TSDB blocks, a
// Prometheus is started on them on loopback, and the history is fetched and synthesised through
// the real HTTP API and PromQL engine. The synthesised trace is compared with the trace that
// drove the fleet: the per-5-minute rate, the mean lengths, the length-bucket shares and the
// burstiness.
//
// The same history is then a `twinscale plan` baseline (controller/plan/capacity_plan.h).
//
// Live scrape: Prometheus scrapes two cpprestsdk http_listeners serving a simulated fleet's
// /metrics in real time for about 20 s, and the arrivals it recorded are read back the same way.
//
// Skipped (GTEST_SKIP) when prometheus or promtool are not installed.

#include <cpprest/http_listener.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "controller/metrics/prometheus_client.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/plan/capacity_plan.h"
#include "controller/replay/history_trace.h"
#include "controller/replay/simulated_cluster.h"
#include "controller/state/fleet_snapshot.h"
#include "gtest/gtest.h"
#include "simulator/model/vllm_metrics.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/trace.h"
#include "simulator/workload/trace_reader.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"

namespace twinscale {
namespace {

constexpr char kModel[] = "meta-llama/Llama-3.1-8B-Instruct";
constexpr char kTrace[] = "tests/data/traces/AzureLLMInferenceTrace_conv.csv";

using testutil::FreePort;
using testutil::Installed;
using testutil::PrometheusServer;

// The families the history reads (and the success counter, for the record).
bool Wanted(const std::string& name) {
  if (absl::EndsWith(name, "_created")) return false;
  return absl::StartsWith(name, "vllm:request_prompt_tokens_") ||
         absl::StartsWith(name, "vllm:request_generation_tokens_") ||
         name == "vllm:num_requests_waiting" || name == "vllm:num_requests_running" ||
         name == "vllm:request_success_total";
}

// Series key -> points, written out grouped by series in time order (what the backfill needs).
struct Recorder {
  std::map<std::string, std::vector<std::pair<absl::Time, double>>> series;
  void Add(const std::string& pod, const std::string& text, absl::Time at) {
    absl::StatusOr<metrics::Exposition> e = metrics::ParsePrometheusText(text);
    ASSERT_TRUE(e.ok()) << e.status();
    for (const metrics::MetricFamily& f : e->families) {
      for (const metrics::Sample& s : f.samples) {
        if (!Wanted(s.name)) continue;
        std::string key = absl::StrCat(s.name, "{pod=\"", pod, "\"");
        for (const auto& [k, v] : s.labels) absl::StrAppend(&key, ",", k, "=\"", v, "\"");
        key += "}";
        series[key].push_back({at, s.value});
      }
    }
  }
  void WriteOpenMetrics(const std::string& path) const {
    std::ofstream out(path);
    for (const auto& [key, points] : series) {
      for (const auto& [at, v] : points) {
        out << key << ' ' << absl::StrFormat("%.17g", v) << ' ' << metrics::PromTimestamp(at)
            << '\n';
      }
    }
    out << "# EOF\n";
  }
};

std::vector<double> CountsPerBin(const std::vector<double>& arrivals_s, double bin_s, int bins) {
  std::vector<double> c(static_cast<size_t>(bins), 0.0);
  for (double t : arrivals_s) {
    const int b = static_cast<int>(std::floor(t / bin_s));
    if (b >= 0 && b < bins) c[static_cast<size_t>(b)] += 1;
  }
  return c;
}

std::vector<double> BucketShares(const std::vector<int32_t>& lengths,
                                 const std::vector<double>& edges) {
  std::vector<double> shares(edges.size() + 1, 0.0);
  for (int32_t x : lengths) {
    size_t b = 0;
    while (b < edges.size() && x > edges[b]) ++b;
    shares[b] += 1.0 / static_cast<double>(lengths.size());
  }
  return shares;
}

double Mean(const std::vector<int32_t>& v) {
  double s = 0;
  for (int32_t x : v) s += x;
  return s / static_cast<double>(v.size());
}

class PrometheusHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Installed(testutil::kPrometheusBinary) || !Installed(testutil::kPromtoolBinary)) {
      GTEST_SKIP() << "prometheus/promtool not installed";
    }
    dir_ = tmp_.path();
  }
  replay::ClusterOptions Cluster(int32_t replicas) {
    absl::StatusOr<sim::ProfileRegistry> profiles = sim::ProfileRegistry::LoadEmbedded();
    EXPECT_TRUE(profiles.ok());
    absl::StatusOr<sim::DeploymentSpec> d = profiles->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
    EXPECT_TRUE(d.ok());
    replay::ClusterOptions o;
    o.fleet.deployment = *d;
    o.fleet.initial_replicas = replicas;
    o.fleet.model_name = kModel;
    o.scrape_interval = absl::Hours(1000);  // this test renders the texts itself
    return o;
  }
  std::shared_ptr<const sim::Trace> ScaledTrace(double k) {
    sim::TraceReadOptions ro;
    absl::StatusOr<sim::Trace> t = sim::ReadTraceFile(kTrace, ro);
    EXPECT_TRUE(t.ok()) << t.status();
    absl::StatusOr<sim::Trace> s = sim::ScaleRate(*t, k, 1);
    EXPECT_TRUE(s.ok()) << s.status();
    sim::NormalizeTrace(*s);
    return std::make_shared<const sim::Trace>(std::move(*s));
  }
  testutil::TempDir tmp_{"twinscale-prom"};
  std::string dir_;  // tmp_'s
};

TEST_F(PrometheusHistoryTest, BackfilledHourSynthesisesTheTraceThatDroveTheFleet) {
  const auto wall_start = std::chrono::steady_clock::now();
  std::shared_ptr<const sim::Trace> trace = ScaledTrace(10);
  const double span_s = trace->requests.back().arrival.seconds();
  // The history sits two hours in the past, on a 15 s grid (inside the default lookback and well
  // within retention).
  const absl::Duration step = absl::Seconds(15);
  const absl::Time base =
      absl::FromUnixSeconds((absl::ToUnixSeconds(absl::Now()) / 60) * 60) - absl::Hours(2);
  const int64_t n = static_cast<int64_t>(std::ceil(span_s / 15.0)) + 8;  // 2 min to drain
  replay::ClusterOptions co = Cluster(8);
  co.start = base;
  replay::SimulatedCluster cluster(co, trace);
  Recorder rec;
  for (int64_t k = 0; k <= n; ++k) {
    const absl::Time at = base + step * k;
    cluster.AdvanceTo(at);
    for (int32_t i = 0; i < cluster.fleet().replica_count_ever(); ++i) {
      const sim::Replica& r = cluster.fleet().replica(i);
      if (r.phase() != sim::ReplicaPhase::kReady) continue;
      rec.Add(absl::StrCat("vllm-", i), r.metrics().Render(), at);
    }
  }
  const std::string om = dir_ + "/history.om.txt";
  rec.WriteOpenMetrics(om);
  const std::string cmd =
      absl::StrCat(testutil::kPromtoolBinary, " tsdb create-blocks-from openmetrics ", om, " ",
                   dir_, "/data > ", dir_, "/promtool.log 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "promtool failed; see " << dir_ << "/promtool.log";
  const double backfill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  PrometheusServer prom(dir_, "global:\n  scrape_interval: 15s\n");
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60))) << "Prometheus did not become ready";

  metrics::PrometheusClient client(prom.url());
  replay::HistoryQueryOptions q;
  q.selector = absl::StrCat("{model_name=\"", kModel, "\"}");
  // The range ends at the last whole step of traffic: the trace stops mid-step at 3501.7 s, and a
  // step that is part empty would read as a burst.
  const int64_t full = static_cast<int64_t>(std::floor(span_s / 15.0));
  q.end = base + step * full;
  q.range = step * full;
  q.step = step;
  absl::StatusOr<replay::FleetHistory> h = replay::FetchFleetHistory(
      [&client](const metrics::RangeQuery& rq) { return client.QueryRange(rq); }, q);
  ASSERT_TRUE(h.ok()) << h.status();
  replay::SynthesisOptions so;
  so.seed = 1;
  absl::StatusOr<replay::HistoryTrace> synth = replay::SynthesizeTrace(*h, so);
  ASSERT_TRUE(synth.ok()) << synth.status();
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  // Arrivals in history seconds (from base) for both traces.
  std::vector<double> orig_t, synth_t;
  std::vector<int32_t> orig_p, orig_o, synth_p, synth_o;
  for (const sim::RequestSpec& r : trace->requests) {
    orig_t.push_back(r.arrival.seconds());
    orig_p.push_back(r.prompt_tokens);
    orig_o.push_back(r.output_tokens);
  }
  for (const sim::RequestSpec& r : synth->trace.requests) {
    synth_t.push_back(r.arrival.seconds() + synth->shift.seconds());
    synth_p.push_back(r.prompt_tokens);
    synth_o.push_back(r.output_tokens);
  }
  // The history's own count against the trace's (the fleet served every request).
  double in_range = 0;
  for (double t : orig_t) in_range += t <= 15.0 * full;
  const double count_err = std::fabs(synth->observed_requests - in_range) / in_range;
  EXPECT_LT(count_err, 0.01) << synth->observed_requests << " vs " << in_range;

  // Per-5-minute rate within 10% (the whole hour: 12 bins).
  const int bins = static_cast<int>(std::floor(15.0 * full / 300.0));
  const std::vector<double> oc = CountsPerBin(orig_t, 300, bins),
                            sc = CountsPerBin(synth_t, 300, bins);
  double worst_rate = 0;
  for (int b = 0; b < bins; ++b) {
    SCOPED_TRACE(absl::StrCat("5-minute bin ", b));
    const double e = std::fabs(sc[b] - oc[b]) / oc[b];
    worst_rate = std::max(worst_rate, e);
    EXPECT_LT(e, 0.10) << sc[b] << " vs " << oc[b];
  }
  // Mean lengths within 5%.
  const double prompt_err = std::fabs(Mean(synth_p) - Mean(orig_p)) / Mean(orig_p);
  const double output_err = std::fabs(Mean(synth_o) - Mean(orig_o)) / Mean(orig_o);
  EXPECT_LT(prompt_err, 0.05) << Mean(synth_p) << " vs " << Mean(orig_p);
  EXPECT_LT(output_err, 0.05) << Mean(synth_o) << " vs " << Mean(orig_o);
  // Bucket shares on vLLM's 1-2-5 ladder within 4 points. The shapes are rescaled to the observed
  // means (which then match to well under 1%); the rescale moves some mass across bucket edges
  // (about 3 points at most here; 0.1 points without it, but the means are then 5-8% off, since
  // log-uniform is not the true shape inside a bucket).
  const std::vector<double> edges = sim::VllmOneTwoFiveBuckets(131072);
  const std::vector<double> op = BucketShares(orig_p, edges), sp = BucketShares(synth_p, edges);
  const std::vector<double> oo = BucketShares(orig_o, edges), so2 = BucketShares(synth_o, edges);
  double worst_share = 0;
  for (size_t b = 0; b < op.size(); ++b) {
    SCOPED_TRACE(absl::StrCat("bucket ", b));
    worst_share = std::max({worst_share, std::fabs(sp[b] - op[b]), std::fabs(so2[b] - oo[b])});
    EXPECT_NEAR(sp[b], op[b], 0.04);
    EXPECT_NEAR(so2[b], oo[b], 0.04);
  }
  // Burstiness: the estimate against the trace's own per-15 s counts (same estimator), within 15%;
  // the synthesised trace's own index within 25% of it (gamma gaps plus the smoothed curve's
  // noise).
  const std::vector<double> o15 = CountsPerBin(orig_t, 15, static_cast<int>(full));
  const std::vector<double> s15 = CountsPerBin(synth_t, 15, static_cast<int>(full));
  const double d_orig = state::AllanDispersion(o15), d_synth = state::AllanDispersion(s15);
  EXPECT_NEAR(synth->dispersion, d_orig, 0.15 * d_orig);
  EXPECT_NEAR(d_synth, d_orig, 0.25 * d_orig);
  EXPECT_GT(synth->cv, 0.9);
  EXPECT_LT(synth->cv, 3.0);
  std::printf(
      "[measured] requests %zu (history %.0f, %.2f%%), worst 5-min rate error %.2f%%, prompt mean "
      "%.1f vs %.1f (%.2f%%), output mean %.1f vs %.1f (%.2f%%), worst bucket share %.2f points, "
      "dispersion trace %.2f / estimated %.2f / synthesised %.2f, CV %.2f; backfill %.1f s, total "
      "%.1f s\n",
      orig_t.size(), synth->observed_requests, 100 * count_err, 100 * worst_rate, Mean(synth_p),
      Mean(orig_p), 100 * prompt_err, Mean(synth_o), Mean(orig_o), 100 * output_err,
      100 * worst_share, d_orig, synth->dispersion, d_synth, synth->cv, backfill_s, total_s);

  // `twinscale plan` with this history as its baseline (its last 15 minutes), read through the
  // same queries: the baseline holds the requests the fleet served in that span (within 5%), and
  // a review of it sizes a fleet and twice it.
  plan::Review review;
  review.source = "prometheus-review.yaml";
  review.baseline.kind = plan::Baseline::Kind::kPrometheus;
  review.baseline.prometheus.url = prom.url();
  review.baseline.prometheus.selector = q.selector;
  review.baseline.prometheus.range = absl::Minutes(15);
  review.baseline.prometheus.step = step;
  review.baseline.prometheus.end = absl::FormatTime(absl::RFC3339_full, q.end, absl::UTCTimeZone());
  plan::ProfileChoice profile;
  profile.name = "h100";
  profile.profile = "llama-3.1-8b-h100-sxm-tp1";
  profile.gpu_hour_price = 2.5;
  review.profiles = {profile};
  plan::Scenario twice;
  twice.name = "twice";
  twice.rate = 2;
  review.scenarios = {twice};
  review.seeds = 1;
  review.max_replicas = 32;
  absl::StatusOr<plan::PlanResult> result = plan::RunPlan(review, {});
  ASSERT_TRUE(result.ok()) << result.status();
  double served = 0;
  for (double t : orig_t) served += t > 15.0 * full - 900 && t <= 15.0 * full;
  EXPECT_NEAR(static_cast<double>(result->scenarios[0].requests), served, 0.05 * served);
  EXPECT_NEAR(static_cast<double>(result->scenarios[1].requests), 2 * served, 0.1 * served);
  ASSERT_TRUE(result->at(0, 0).found);
  ASSERT_TRUE(result->at(1, 0).found);
  EXPECT_GT(result->at(1, 0).replicas, result->at(0, 0).replicas);
}

TEST_F(PrometheusHistoryTest, ErrorsNameThePrometheusUrlAndItsMessage) {
  PrometheusServer prom(dir_, "global:\n  scrape_interval: 15s\n");
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60)));
  metrics::PrometheusClient client(prom.url());
  const absl::Time end = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  const absl::Status bad =
      client.QueryRange({"sum(rate(vllm:x[", end - absl::Minutes(5), end, absl::Seconds(15)})
          .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_TRUE(absl::StrContains(bad.message(), prom.url())) << bad;
  EXPECT_TRUE(absl::StrContains(bad.message(), "bad_data")) << bad;
  // Nothing recorded under this selector: NotFound naming --selector.
  replay::HistoryQueryOptions q;
  q.selector = "{model_name=\"nobody\"}";
  q.end = end;
  q.range = absl::Minutes(5);
  const absl::Status none =
      replay::FetchFleetHistory(
          [&client](const metrics::RangeQuery& rq) { return client.QueryRange(rq); }, q)
          .status();
  EXPECT_EQ(none.code(), absl::StatusCode::kNotFound) << none;
  EXPECT_TRUE(absl::StrContains(none.message(), "--selector")) << none;
}

TEST_F(PrometheusHistoryTest, LiveScrapeOfASimulatedFleet) {
  // Two replicas at about 22 requests/s (the conversation trace x4), simulated in step with the
  // wall clock, each behind its own http_listener; Prometheus scrapes both every second.
  std::shared_ptr<const sim::Trace> trace = ScaledTrace(4);
  replay::ClusterOptions co = Cluster(2);
  const absl::Time wall0 = absl::Now();
  co.start = wall0;
  replay::SimulatedCluster cluster(co, trace);
  std::mutex mu;
  const int p0 = FreePort(), p1 = FreePort();
  std::vector<std::unique_ptr<web::http::experimental::listener::http_listener>> listeners;
  for (int i = 0; i < 2; ++i) {
    auto l = std::make_unique<web::http::experimental::listener::http_listener>(
        absl::StrCat("http://127.0.0.1:", i == 0 ? p0 : p1, "/metrics"));
    l->support(web::http::methods::GET, [&, i](web::http::http_request req) {
      std::string text;
      {
        std::lock_guard<std::mutex> lock(mu);
        cluster.AdvanceTo(std::max(cluster.Now(), absl::Now()));
        text = cluster.fleet().replica(i).metrics().Render();
      }
      req.reply(web::http::status_codes::OK, text, "text/plain; version=0.0.4; charset=utf-8");
    });
    l->open().wait();
    listeners.push_back(std::move(l));
  }
  PrometheusServer prom(dir_,
                        absl::StrCat("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                     "scrape_configs:\n  - job_name: vllm\n    static_configs:\n"
                                     "      - targets: ['127.0.0.1:",
                                     p0, "', '127.0.0.1:", p1, "']\n"));
  ASSERT_TRUE(prom.WaitReady(absl::Seconds(60)));
  // Measure in steady state: while the fleet is still filling up (the first ~30 s), the estimate
  // (finished + change in waiting + running) runs about 24% over the trace (measured 266 vs 214
  // at 20 s; 217 vs 212 at 45 s). That transient bias is a known open issue of the estimator,
  // not something this test should straddle.
  std::this_thread::sleep_for(std::chrono::seconds(45));
  const absl::Time end = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) - 2);
  metrics::PrometheusClient client(prom.url());
  replay::HistoryQueryOptions q;
  q.selector = absl::StrCat("{model_name=\"", kModel, "\"}");
  q.end = end;
  q.range = absl::Seconds(12);
  q.step = absl::Seconds(1);
  absl::StatusOr<replay::FleetHistory> h = replay::FetchFleetHistory(
      [&client](const metrics::RangeQuery& rq) { return client.QueryRange(rq); }, q);
  for (auto& l : listeners) l->close().wait();
  ASSERT_TRUE(h.ok()) << h.status();
  double got = 0;
  for (double a : h->arrivals) got += a;
  // The trace's arrivals in the same 12 s window of simulated (= wall) time. Scrapes land up to
  // 1 s off the grid at each end: about 2 x 22 requests of 260; allow 15%.
  const double from = absl::ToDoubleSeconds(h->start - wall0),
               to = absl::ToDoubleSeconds(end - wall0);
  double want = 0;
  for (const sim::RequestSpec& r : trace->requests) {
    want += r.arrival.seconds() > from && r.arrival.seconds() <= to;
  }
  std::printf("[measured] live scrape: %.0f arrivals recorded vs %.0f in the trace window\n", got,
              want);
  EXPECT_GT(want, 100);
  EXPECT_NEAR(got, want, 0.15 * want);
  EXPECT_GT(h->prompt.total(), 0);
}

}  // namespace
}  // namespace twinscale
