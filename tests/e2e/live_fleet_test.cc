// The live simulated fleet itself: each pod serves its own page on its own loopback address, the
// clock runs (and stops when paused), scaling brings pods up after the warm-up and takes them
// away, and the faults do what they say. Pages are read with a plain HTTP client here; the
// controller's scraper is pod_scraper_e2e_test.cc's subject.
#include "tests/e2e/live_fleet.h"

#include <cpprest/http_client.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"
#include "gtest/gtest.h"
#include "tests/util/eventually.h"

namespace twinscale::e2e {
namespace {

struct Answer {
  int status = 0;
  std::string body;
  std::string error;
};

Answer Get(const std::string& ip, int port, const std::string& path = "/metrics") {
  Answer a;
  try {
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::seconds(3));
    web::http::client::http_client client(absl::StrCat("http://", ip, ":", port), config);
    web::http::http_response r = client.request(web::http::methods::GET, path).get();
    a.status = r.status_code();
    a.body = r.extract_string(true).get();
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  return a;
}

using testutil::Eventually;
constexpr absl::Duration kPoll = absl::Milliseconds(50);  // how often Eventually asks the fleet

std::unique_ptr<LiveFleet> MustStart(LiveFleetOptions o) {
  absl::StatusOr<std::unique_ptr<LiveFleet>> f = LiveFleet::Start(std::move(o));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : nullptr;
}

TEST(LiveFleetTest, EachPodServesItsOwnPageOnItsOwnAddress) {
  LiveFleetOptions o;
  o.initial_replicas = 3;
  o.trace = SyntheticTrace(20, absl::Minutes(5), 256, 64);
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  const std::vector<LivePod> pods = fleet->Pods();
  ASSERT_EQ(pods.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(pods[i].name, absl::StrCat("vllm-", i));
    EXPECT_EQ(pods[i].ip, absl::StrCat("127.0.0.", 10 + i));
    EXPECT_EQ(pods[i].port, fleet->port());
    EXPECT_EQ(pods[i].stage, state::PodView::Stage::kReady);
    EXPECT_TRUE(pods[i].serving);
  }
  // Traffic flows: within a few seconds the engines have produced tokens.
  ASSERT_TRUE(Eventually(
      [&] {
        std::optional<PodPage> p = fleet->Page("vllm-0");
        return p.has_value() && p->truth.generation_tokens > 0;
      },
      absl::Seconds(10), kPoll));
  // Paused, each address serves exactly its own pod's page, and the pages are not all alike.
  fleet->Pause();
  std::vector<std::string> texts;
  for (const LivePod& p : pods) {
    const Answer a = Get(p.ip, p.port);
    ASSERT_EQ(a.status, 200) << a.error;
    std::optional<PodPage> page = fleet->Page(p.name);
    ASSERT_TRUE(page.has_value());
    EXPECT_EQ(a.body, page->text);
    texts.push_back(a.body);
  }
  EXPECT_FALSE(texts[0] == texts[1] && texts[1] == texts[2]);
  // Another path on the pod is not its metrics; an address with no pod refuses the connection.
  EXPECT_EQ(Get(pods[0].ip, pods[0].port, "/other").status, 404);
  EXPECT_FALSE(Get("127.0.0.13", fleet->port()).error.empty());
}

TEST(LiveFleetTest, PausingStopsTheClockAndResumingRestartsIt) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  o.trace = SyntheticTrace(30, absl::Minutes(5), 256, 64);
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  fleet->Pause();
  const absl::Time frozen = fleet->Now();
  const std::optional<PodPage> before = fleet->Page("vllm-0");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(fleet->Now(), frozen);
  const std::optional<PodPage> after = fleet->Page("vllm-0");
  ASSERT_TRUE(before.has_value() && after.has_value());
  EXPECT_EQ(before->text, after->text);
  fleet->Resume();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  fleet->WaitForTick();
  // The clock picks up from where it stopped: about 0.5 s later, not the paused time too.
  const absl::Duration moved = fleet->Now() - frozen;
  EXPECT_GT(moved, absl::Milliseconds(400));
  EXPECT_LT(moved, absl::Seconds(5));
}

TEST(LiveFleetTest, TimeScaleRunsTheFleetFaster) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  o.time_scale = 10;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  const absl::Time start = fleet->Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  fleet->WaitForTick();
  EXPECT_GT(fleet->Now() - start, absl::Seconds(4));  // 10 x at least 0.5 s
}

TEST(LiveFleetTest, ScaledUpPodsWarmUpThenServeAndScaledDownPodsGo) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  o.warmup = absl::Seconds(2);
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  fleet->Scale(2);
  EXPECT_EQ(fleet->spec_replicas(), 2);
  fleet->WaitForTick();
  std::vector<LivePod> pods = fleet->Pods();
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[1].name, "vllm-1");
  EXPECT_NE(pods[1].stage, state::PodView::Stage::kReady);
  EXPECT_FALSE(pods[1].serving);
  EXPECT_EQ(pods[1].ready_since, absl::InfinitePast());
  // Not serving yet: the pod's address refuses scrapes.
  EXPECT_FALSE(Get("127.0.0.11", fleet->port()).error.empty());
  ASSERT_TRUE(Eventually([&] { return fleet->Pods()[1].serving; }, absl::Seconds(10), kPoll));
  pods = fleet->Pods();
  EXPECT_EQ(pods[1].stage, state::PodView::Stage::kReady);
  // Ready exactly the warm-up after creation (fleet time; constant delays).
  EXPECT_EQ(pods[1].ready_since - pods[1].created, absl::Seconds(2));
  const Answer a = Get("127.0.0.11", fleet->port());
  EXPECT_EQ(a.status, 200) << a.error;
  EXPECT_TRUE(absl::StrContains(a.body, "vllm:num_requests_running")) << a.body.substr(0, 200);
  // Scale in: the idle victim drains at once and its address stops answering.
  fleet->Scale(1);
  ASSERT_TRUE(Eventually([&] { return fleet->Pods().size() == 1; }, absl::Seconds(10), kPoll));
  fleet->WaitForTick();
  EXPECT_EQ(fleet->Targets().size(), 1u);
}

TEST(LiveFleetTest, FaultsChangeWhatAPodAnswers) {
  LiveFleetOptions o;
  o.initial_replicas = 1;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  const int port = fleet->port();
  ASSERT_TRUE(fleet->SetFault("vllm-0", PodFault::kHttp500));
  EXPECT_EQ(Get("127.0.0.10", port).status, 500);
  ASSERT_TRUE(fleet->SetFault("vllm-0", PodFault::kGarbage));
  const Answer garbage = Get("127.0.0.10", port);
  EXPECT_EQ(garbage.status, 200);
  const absl::Status parse = metrics::ParsePrometheusText(garbage.body).status();
  EXPECT_EQ(parse.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(parse.message(), "line 3:")) << parse;
  ASSERT_TRUE(fleet->SetFault("vllm-0", PodFault::kFixedBody, "vllm:num_requests_waiting 7\n"));
  EXPECT_EQ(Get("127.0.0.10", port).body, "vllm:num_requests_waiting 7\n");
  // A hang holds the request until the fault is cleared; the client's own timeout (3 s) ends it.
  ASSERT_TRUE(fleet->SetFault("vllm-0", PodFault::kHang));
  std::thread clear([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    fleet->SetFault("vllm-0", PodFault::kNone);
  });
  const Answer released = Get("127.0.0.10", port);
  clear.join();
  EXPECT_EQ(released.status, 503) << released.error;
  const Answer healthy = Get("127.0.0.10", port);
  EXPECT_EQ(healthy.status, 200);
  EXPECT_TRUE(metrics::ParsePrometheusText(healthy.body).ok());
  EXPECT_FALSE(fleet->SetFault("not-a-pod", PodFault::kHang));
}

TEST(LiveFleetTest, StopAnswersHungRequestsAndClosesEveryAddress) {
  LiveFleetOptions o;
  o.initial_replicas = 2;
  std::unique_ptr<LiveFleet> fleet = MustStart(o);
  ASSERT_NE(fleet, nullptr);
  const int port = fleet->port();
  fleet->SetFault("vllm-1", PodFault::kHang);
  Answer hung;
  std::thread client([&] { hung = Get("127.0.0.11", port); });
  // Stop once the request is held (a fixed sleep lost the race on a loaded machine: the request
  // then reached a closed listener and failed to connect instead of being answered).
  for (int i = 0; i < 500 && fleet->HeldRequests("vllm-1") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(fleet->HeldRequests("vllm-1"), 1);
  fleet->Stop();
  client.join();
  EXPECT_EQ(hung.status, 503) << hung.error;
  EXPECT_FALSE(Get("127.0.0.10", port).error.empty());
}

TEST(LiveFleetTest, RefusesBadOptions) {
  LiveFleetOptions o;
  o.profile = "no-such-profile";
  EXPECT_EQ(LiveFleet::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = LiveFleetOptions();
  o.time_scale = 0;
  EXPECT_EQ(LiveFleet::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = LiveFleetOptions();
  o.first_address = 250;
  o.initial_replicas = 10;
  EXPECT_EQ(LiveFleet::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LiveFleetTest, ShippedAndSyntheticTraces) {
  absl::StatusOr<std::shared_ptr<const sim::Trace>> conv =
      ShippedTrace("tests/data/traces/AzureLLMInferenceTrace_conv.csv", 2);
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_GT((*conv)->requests.size(), 1000u);
  EXPECT_EQ((*conv)->requests.front().arrival, sim::SimTime::Zero());
  // 10 req/s over 60 s: about 600 (Poisson: sd 24.5); first arrival normalised to 0.
  std::shared_ptr<const sim::Trace> syn = SyntheticTrace(10, absl::Seconds(60), 100, 20);
  EXPECT_NEAR(static_cast<double>(syn->requests.size()), 600, 100);
  EXPECT_EQ(syn->requests.front().arrival, sim::SimTime::Zero());
  EXPECT_EQ(syn->requests.front().prompt_tokens, 100);
  EXPECT_EQ(syn->requests.front().output_tokens, 20);
  EXPECT_FALSE(ShippedTrace("tests/data/traces/missing.csv").ok());
}

}  // namespace
}  // namespace twinscale::e2e
