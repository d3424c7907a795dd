// The pod scraper against live simulated pods (live_fleet.h), each on its own 127.0.0.N address:
// the values it reads are the replica's own numbers; several engines per pod; the real vLLM text
// of tests/data/fixtures; and every failure a pod can cause (hang, garbage, 500, refused,
// oversized, not vLLM) with its status and message; and concurrency (20 hung pods cost about one
// timeout).
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/pod_scraper.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"
#include "gtest/gtest.h"
#include "tests/e2e/live_fleet.h"
#include "tests/util/observation_compare.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/vllm_fixture.h"

namespace twinscale::e2e {
namespace {

using metrics::PodObservation;
using metrics::PodReading;
using metrics::PodResult;
using metrics::PodScraper;
using metrics::PodScraperOptions;
using metrics::PodTarget;

constexpr char kFixturePath[] = "tests/data/fixtures/vllm_metrics_excerpts.txt";

// Two engines of one data-parallel pod, written by hand in vLLM's layout.
constexpr char kTwoEngines[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 5.0\n"
    "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0.0\n"
    "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 2.0\n"
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
    "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.5\n"
    "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 100.0\n"
    "vllm:generation_tokens_total{engine=\"1\",model_name=\"m\"} 250.0\n"
    "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.55\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 0.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"1\",model_name=\"m\"} 2.0\n"
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
    "# TYPE vllm:cache_config_info gauge\n"
    "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"1000\"} 1.0\n"
    "vllm:cache_config_info{block_size=\"16\",engine=\"1\",num_gpu_blocks=\"2000\"} 1.0\n";

std::unique_ptr<LiveFleet> MustStart(LiveFleetOptions o) {
  absl::StatusOr<std::unique_ptr<LiveFleet>> f = LiveFleet::Start(std::move(o));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

PodObservation Direct(const std::string& text, std::string_view filter = "") {
  absl::StatusOr<metrics::Exposition> e = metrics::ParsePrometheusText(text);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return {};
  absl::StatusOr<PodObservation> o = metrics::ExtractVllmObservation(*e, filter);
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *std::move(o) : PodObservation{};
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The fixture's verbatim blocks (tests/util/vllm_fixture.h).
std::vector<std::string> FixtureBlocks() {
  std::ifstream in(kFixturePath);
  EXPECT_TRUE(in.good()) << "can't open " << kFixturePath << " (run from the repo root)";
  std::stringstream text;
  text << in.rdbuf();
  return testutil::VllmFixtureBlocks(text.str());
}

class PodScraperE2eTest : public ::testing::Test {
 protected:
  RealClock clock_;
};

TEST_F(PodScraperE2eTest, ReadsWhatEachReplicaRendered) {
  LiveFleetOptions o;
  o.initial_replicas = 3;
  o.trace = SyntheticTrace(40, absl::Minutes(5), 512, 128);
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  // Let traffic build up, then stop the fleet's clock so each page holds still while it is read
  // twice: by the scraper over HTTP, and here from the replica itself.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  fleet->Pause();
  const std::vector<PodTarget> targets = fleet->Targets();
  ASSERT_EQ(targets.size(), 3u);
  PodScraper scraper(clock_);
  const absl::Time before = clock_.Now();
  absl::StatusOr<std::vector<PodResult>> results = scraper.Read(targets);
  const absl::Time after = clock_.Now();
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 3u);
  for (size_t i = 0; i < targets.size(); ++i) {
    SCOPED_TRACE(targets[i].pod);
    const PodResult& r = (*results)[i];
    EXPECT_EQ(r.pod, targets[i].pod);
    ASSERT_TRUE(r.reading.ok()) << r.reading.status();
    EXPECT_GE(r.reading->scraped_at, before);
    EXPECT_LE(r.reading->scraped_at, after);
    const std::optional<PodPage> page = fleet->Page(targets[i].pod);
    ASSERT_TRUE(page.has_value());
    // The whole observation equals an independent read of the same page...
    testutil::ExpectSameObservation(r.reading->observation, Direct(page->text));
    // ...and its numbers are the replica's own (its VllmMetrics, not its text).
    ASSERT_EQ(r.reading->observation.engines.size(), 1u);
    const metrics::EngineObservation& e = r.reading->observation.engines[0];
    const EngineTruth& t = page->truth;
    EXPECT_EQ(e.engine, "0");
    EXPECT_EQ(e.model_name, o.model_name);
    EXPECT_EQ(e.running, t.running);
    EXPECT_EQ(e.waiting, t.waiting);
    EXPECT_EQ(e.kv_cache_usage, t.kv_cache_usage);
    EXPECT_EQ(e.prompt_tokens_total, t.prompt_tokens);
    EXPECT_EQ(e.generation_tokens_total, t.generation_tokens);
    EXPECT_EQ(e.preemptions_total, t.preemptions);
    EXPECT_EQ(e.requests_finished_total, t.requests_finished);
    ASSERT_TRUE(e.ttft.has_value());
    EXPECT_EQ(e.ttft->count, t.ttft_count);
    EXPECT_EQ(e.ttft->sum, t.ttft_sum);
    EXPECT_GT(t.generation_tokens, 0);  // the comparison is of a busy engine, not of zeros
  }
}

TEST_F(PodScraperE2eTest, SeveralEnginesInOnePod) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  fleet->SetFault("vllm-0", PodFault::kFixedBody, kTwoEngines);
  PodScraper scraper(clock_);
  absl::StatusOr<PodReading> r = scraper.ScrapeOne(fleet->Targets()[0]);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<metrics::EngineObservation>& engines = r->observation.engines;
  ASSERT_EQ(engines.size(), 2u);
  // The hand-written values, engine by engine.
  EXPECT_EQ(engines[0].engine, "0");
  EXPECT_EQ(engines[0].running, 3);
  EXPECT_EQ(engines[0].waiting, 0);
  EXPECT_EQ(engines[0].kv_cache_usage, 0.25);
  EXPECT_EQ(engines[0].generation_tokens_total, 100);
  EXPECT_EQ(engines[0].ttft->count, 2);
  EXPECT_EQ(engines[0].ttft->cumulative, (std::vector<double>{1, 2}));
  EXPECT_EQ(engines[0].num_gpu_blocks, 1000);
  EXPECT_EQ(engines[1].engine, "1");
  EXPECT_EQ(engines[1].running, 5);
  EXPECT_EQ(engines[1].waiting, 2);
  EXPECT_EQ(engines[1].kv_cache_usage, 0.5);
  EXPECT_EQ(engines[1].generation_tokens_total, 250);
  EXPECT_EQ(engines[1].ttft->sum, 2.0);
  EXPECT_EQ(engines[1].num_gpu_blocks, 2000);
  EXPECT_EQ(engines[1].block_size, 16);
}

TEST_F(PodScraperE2eTest, TheRealVllmTextOfTheFixtures) {
  const std::vector<std::string> blocks = FixtureBlocks();
  ASSERT_EQ(blocks.size(), 5u);
  LiveFleetOptions o;
  o.initial_replicas = static_cast<int32_t>(blocks.size());
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  for (size_t i = 0; i < blocks.size(); ++i) {
    fleet->SetFault(absl::StrCat("vllm-", i), PodFault::kFixedBody, blocks[i]);
  }
  PodScraper scraper(clock_);
  absl::StatusOr<std::vector<PodResult>> results = scraper.Read(fleet->Targets());
  ASSERT_TRUE(results.ok());
  // Each block reads as an independent parse and extraction of the same text reads it...
  for (size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("verbatim block ", i + 1));
    if (i == 1) continue;  // below
    ASSERT_TRUE((*results)[i].reading.ok()) << (*results)[i].reading.status();
    testutil::ExpectSameObservation((*results)[i].reading->observation, Direct(blocks[i]));
  }
  // ...including block 2, an excerpt that cuts a histogram before its +Inf bucket and _count:
  // refused, naming the pod and the family.
  const absl::Status cut = (*results)[1].reading.status();
  EXPECT_EQ(cut.code(), absl::StatusCode::kInvalidArgument) << cut;
  EXPECT_TRUE(absl::StrContains(cut.message(), "pod vllm-1 (http://127.0.0.11:")) << cut;
  EXPECT_TRUE(absl::StrContains(cut.message(), "vllm:request_generation_tokens")) << cut;
  // Block 4: a data-parallel server's engine "1" (vLLM PR 22227): one request decoded.
  const PodObservation& dp = (*results)[3].reading->observation;
  ASSERT_EQ(dp.engines.size(), 1u);
  EXPECT_EQ(dp.engines[0].engine, "1");
  EXPECT_EQ(dp.engines[0].model_name, "/home/jovyan/qwen3-8b");
  ASSERT_TRUE(dp.engines[0].decode_time.has_value());
  EXPECT_EQ(dp.engines[0].decode_time->count, 1);
  // Block 5: vLLM's design doc example (no engine label): 8 running, 27453 generated tokens,
  // 1 + 131 + 0 finished requests, 140 first tokens.
  const PodObservation& doc = (*results)[4].reading->observation;
  ASSERT_EQ(doc.engines.size(), 1u);
  EXPECT_EQ(doc.engines[0].engine, "");
  EXPECT_EQ(doc.engines[0].running, 8);
  EXPECT_EQ(doc.engines[0].generation_tokens_total, 27453);
  EXPECT_EQ(doc.engines[0].requests_finished_total, 132);
  EXPECT_EQ(doc.engines[0].ttft->count, 140);
}

TEST_F(PodScraperE2eTest, AModelFilterKeepsOneServedModel) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  fleet->SetFault("vllm-0", PodFault::kFixedBody,
                  "vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 1\n"
                  "vllm:num_requests_running{engine=\"0\",model_name=\"b\"} 2\n");
  PodScraperOptions so;
  so.model_name_filter = "b";
  absl::StatusOr<PodReading> r = PodScraper(clock_, so).ScrapeOne(fleet->Targets()[0]);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->observation.engines.size(), 1u);
  EXPECT_EQ(r->observation.engines[0].model_name, "b");
  EXPECT_EQ(r->observation.engines[0].running, 2);
}

TEST_F(PodScraperE2eTest, AHungPodIsDeadlineExceededWithinTheTimeout) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  fleet->SetFault("vllm-0", PodFault::kHang);
  PodScraperOptions so;
  so.timeout = absl::Seconds(1);
  PodScraper scraper(clock_, so);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PodReading> r = scraper.ScrapeOne(fleet->Targets()[0]);
  const double took = Seconds(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "pod vllm-0 (http://127.0.0.10:"))
      << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "within 1s")) << r.status();
  // The deadline, not cpprestsdk's inactivity timer (timeout + 1 s) nor anything longer.
  EXPECT_GE(took, 0.95);
  EXPECT_LT(took, 1.9);
}

TEST_F(PodScraperE2eTest, TwentyHungPodsCostAboutOneTimeoutNotTwenty) {
  LiveFleetOptions o;
  o.initial_replicas = 20;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  for (int i = 0; i < 20; ++i) fleet->SetFault(absl::StrCat("vllm-", i), PodFault::kHang);
  PodScraperOptions so;
  so.timeout = absl::Seconds(1);
  PodScraper scraper(clock_, so);
  const std::vector<PodTarget> targets = fleet->Targets();
  ASSERT_EQ(targets.size(), 20u);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<PodResult>> results = scraper.Read(targets);
  const double took = Seconds(std::chrono::steady_clock::now() - start);
  ASSERT_TRUE(results.ok());
  for (const PodResult& r : *results) {
    EXPECT_EQ(r.reading.status().code(), absl::StatusCode::kDeadlineExceeded) << r.pod;
  }
  // In sequence this would take 20 s; concurrently about 1 s. The bound leaves room for a loaded
  // machine while still failing any scraper that serialises more than a few scrapes.
  EXPECT_LT(took, 5.0);
  std::printf("[measured] 20 hung pods scraped in %.2f s (timeout 1 s)\n", took);
  // With at most 5 in flight, the same pods take 4 rounds of one timeout.
  so.max_concurrency = 5;
  const auto start5 = std::chrono::steady_clock::now();
  ASSERT_TRUE(PodScraper(clock_, so).Read(targets).ok());
  const double took5 = Seconds(std::chrono::steady_clock::now() - start5);
  EXPECT_GE(took5, 3.9);
  std::printf("[measured] ... and in %.2f s with max_concurrency 5\n", took5);
}

TEST_F(PodScraperE2eTest, EachKindOfBadPodGivesItsOwnError) {
  LiveFleetOptions o;
  o.initial_replicas = 4;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  fleet->SetFault("vllm-0", PodFault::kGarbage);
  fleet->SetFault("vllm-1", PodFault::kHttp500);
  fleet->SetFault("vllm-2", PodFault::kFixedBody, "# TYPE up gauge\nup 1\n");  // not vLLM
  // vllm-3 is healthy; a fifth target has no server behind it (a pod whose vLLM isn't up).
  std::vector<PodTarget> targets = fleet->Targets();
  ASSERT_EQ(targets.size(), 4u);
  targets.push_back({"vllm-9", "127.0.0.19", fleet->port(), "/metrics"});
  targets.push_back({"no-ip", "", 8000, "/metrics"});
  PodScraper scraper(clock_);
  absl::StatusOr<std::vector<PodResult>> results = scraper.Read(targets);
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 6u);
  struct Want {
    absl::StatusCode code;
    std::string mentions;
  };
  const std::vector<Want> want = {
      {absl::StatusCode::kInvalidArgument, "line 3:"},
      {absl::StatusCode::kUnavailable, "HTTP 500"},
      {absl::StatusCode::kFailedPrecondition, "not a vLLM server"},
      {absl::StatusCode::kOk, ""},
      {absl::StatusCode::kUnavailable, "http://127.0.0.19:"},
      {absl::StatusCode::kUnavailable, "no IP yet"},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(targets[i].pod);
    EXPECT_EQ((*results)[i].pod, targets[i].pod);
    const absl::Status s = (*results)[i].reading.status();
    EXPECT_EQ(s.code(), want[i].code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), want[i].mentions)) << s;
    if (!s.ok()) {
      EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("pod ", targets[i].pod))) << s;
    }
  }
}

TEST_F(PodScraperE2eTest, APageOverTheCapIsRefused) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  PodScraperOptions so;
  so.max_body_bytes = 1000;
  PodScraper scraper(clock_, so);
  // The simulated page is about 20 KB, announced with Content-Length.
  absl::StatusOr<PodReading> r = scraper.ScrapeOne(fleet->Targets()[0]);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "larger than 1000 bytes")) << r.status();
  // Exactly at the cap is fine.
  std::string exact = "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n";
  exact.resize(1000, '\n');  // blank lines are skipped
  fleet->SetFault("vllm-0", PodFault::kFixedBody, exact);
  EXPECT_TRUE(scraper.ScrapeOne(fleet->Targets()[0]).ok());
}

TEST_F(PodScraperE2eTest, AChunkedPageOverTheCapIsRefusedWithoutReadingItAll) {
  // A server that streams an endless chunked page (no Content-Length), as a runaway exporter
  // would: the scraper stops at the cap instead of buffering it all.
  const int port = testutil::FreePort();
  web::http::experimental::listener::http_listener listener(
      absl::StrCat("http://127.0.0.1:", port, "/metrics"));
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  std::mutex writers_mu;
  listener.support(web::http::methods::GET, [&](web::http::http_request req) {
    concurrency::streams::producer_consumer_buffer<uint8_t> buf;
    web::http::http_response resp(web::http::status_codes::OK);
    resp.set_body(concurrency::streams::istream(buf), "text/plain; version=0.0.4");
    req.reply(resp).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
    std::lock_guard<std::mutex> lock(writers_mu);
    writers.emplace_back([buf, &stop]() mutable {
      const std::string line = "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n";
      for (int i = 0; i < 100000 && !stop; ++i) {
        try {
          buf.putn_nocopy(reinterpret_cast<const uint8_t*>(line.data()), line.size()).wait();
        } catch (...) {
          break;
        }
        if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      try {
        buf.close(std::ios_base::out).wait();
      } catch (...) {
      }
    });
  });
  listener.open().wait();
  PodScraperOptions so;
  so.max_body_bytes = 64 * 1024;
  so.timeout = absl::Seconds(10);
  absl::StatusOr<PodReading> r =
      PodScraper(clock_, so).ScrapeOne({"runaway", "127.0.0.1", port, "/metrics"});
  stop = true;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "larger than 65536 bytes")) << r.status();
  {
    std::lock_guard<std::mutex> lock(writers_mu);
    for (std::thread& t : writers) t.join();
  }
  listener.close().wait();
}

}  // namespace
}  // namespace twinscale::e2e
