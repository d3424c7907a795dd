// A scenario's changes on small traces whose outcome can be counted by hand.
#include "controller/plan/scenario.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace twinscale::plan {
namespace {

// `n` requests, one a second, prompts 1000 (two prefix ids each: the first shared by all) and
// outputs 100.
sim::Trace Base(int n) {
  sim::Trace t;
  for (int i = 0; i < n; ++i) {
    sim::RequestSpec r;
    r.arrival = sim::SimTime::FromSecondsF(i);
    r.prompt_tokens = 1000;
    r.output_tokens = 100;
    r.prefix_hashes = {7, static_cast<uint64_t>(100 + i)};
    t.requests.push_back(r);
  }
  sim::NormalizeTrace(t);
  return t;
}

Scenario Named(const char* name) {
  Scenario s;
  s.name = name;
  return s;
}

int64_t InWindow(const sim::Trace& t, double from, double to) {
  return std::count_if(t.requests.begin(), t.requests.end(), [&](const sim::RequestSpec& r) {
    return r.arrival.seconds() >= from && r.arrival.seconds() < to;
  });
}

TEST(ApplyScenario, NoChangeIsTheBaseline) {
  const sim::Trace base = Base(10);
  absl::StatusOr<sim::Trace> t = ApplyScenario(base, Named("same"), 1);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->requests.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(t->requests[i].arrival, base.requests[i].arrival);
    EXPECT_EQ(t->requests[i].prefix_hashes, base.requests[i].prefix_hashes);
  }
  EXPECT_EQ(DescribeChanges(Named("same")), "none");
}

TEST(ApplyScenario, PromptAndOutputLengthsScaleAndPromptsGainFreshBlocks) {
  Scenario s = Named("longer");
  s.prompt_length = 1.5;    // 1000 -> 1500 tokens: 3 blocks of 512
  s.output_length = 0.333;  // 100 -> 33
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(3), s, 1);
  ASSERT_TRUE(t.ok());
  for (const sim::RequestSpec& r : t->requests) {
    EXPECT_EQ(r.prompt_tokens, 1500);
    EXPECT_EQ(r.output_tokens, 33);
    ASSERT_EQ(r.prefix_hashes.size(), 3u);
    EXPECT_EQ(r.prefix_hashes[0], 7u);  // the shared block stays shared
  }
  // The added blocks are new text: no two requests share one.
  EXPECT_NE(t->requests[0].prefix_hashes[2], t->requests[1].prefix_hashes[2]);
  // Shorter prompts drop the blocks they no longer have.
  s.prompt_length = 0.5;
  s.output_length = 0.001;  // never below one token
  t = ApplyScenario(Base(1), s, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests[0].prompt_tokens, 500);
  EXPECT_EQ(t->requests[0].prefix_hashes, (std::vector<uint64_t>{7}));
  EXPECT_EQ(t->requests[0].output_tokens, 1);
  EXPECT_EQ(DescribeChanges(s), "prompts x0.5, outputs x0.001");
}

TEST(ApplyScenario, RateKeepsTheSpanAndMultipliesTheRequests) {
  Scenario s = Named("twice");
  s.rate = 2;
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(100), s, 3);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests.size(), 200u);
  EXPECT_LE(t->requests.back().arrival.seconds(), 99.0 + 1e-9);
  EXPECT_EQ(DescribeChanges(s), "rate x2");
}

TEST(ApplyScenario, ALongContextCohortTakesItsShare) {
  Scenario s = Named("docs");
  s.long_context = Scenario::LongContext{.share = 1.0, .prompt_tokens = 32000};
  absl::StatusOr<sim::Trace> all = ApplyScenario(Base(50), s, 1);
  ASSERT_TRUE(all.ok());
  for (const sim::RequestSpec& r : all->requests) {
    EXPECT_EQ(r.prompt_tokens, 32000);
    EXPECT_TRUE(r.prefix_hashes.empty());  // a document no one sent before
  }
  // A share of 0.1 of 2000 requests: binomial, mean 200, sd 13.4; within 5 sd.
  s.long_context->share = 0.1;
  absl::StatusOr<sim::Trace> some = ApplyScenario(Base(2000), s, 1);
  ASSERT_TRUE(some.ok());
  const int64_t long_ones =
      std::count_if(some->requests.begin(), some->requests.end(),
                    [](const sim::RequestSpec& r) { return r.prompt_tokens == 32000; });
  EXPECT_GT(long_ones, 133);
  EXPECT_LT(long_ones, 267);
  EXPECT_EQ(DescribeChanges(s), "10% with 32000-token prompts");
}

TEST(ApplyScenario, ARetrySpikeSendsTheWindowsRequestsAgainAfterTheTimeout) {
  // Every request arriving in [10 s, 20 s) (ten of them) is sent again 30 s later: 110 in all,
  // the copies at 40..49 s with the same prompt and prefix ids.
  Scenario s = Named("retry");
  s.retry_spike = Scenario::RetrySpike{.share = 1.0,
                                       .timeout = absl::Seconds(30),
                                       .start = absl::Seconds(10),
                                       .span = absl::Seconds(10)};
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(100), s, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests.size(), 110u);
  EXPECT_EQ(InWindow(*t, 40, 50), 20);  // ten originals and ten retries
  EXPECT_EQ(InWindow(*t, 10, 20), 10);
  EXPECT_EQ(DescribeChanges(s), "100% retried after 30s from 10s for 10s");
  // A window past the trace's end is refused, naming the scenario.
  s.retry_spike->start = absl::Seconds(500);
  absl::StatusOr<sim::Trace> late = ApplyScenario(Base(100), s, 1);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(late.status().message().find("scenario retry"), std::string::npos);
}

TEST(ApplyScenario, APrefixCacheMissMakesEveryBlockUnique) {
  Scenario s = Named("miss");
  s.prefix_cache_miss = true;
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(20), s, 1);
  ASSERT_TRUE(t.ok());
  std::vector<uint64_t> ids;
  for (const sim::RequestSpec& r : t->requests) {
    EXPECT_EQ(r.prefix_hashes.size(), 2u);  // still asked of the cache
    ids.insert(ids.end(), r.prefix_hashes.begin(), r.prefix_hashes.end());
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(ApplyScenario, ABurstFillsItsWindowToPeakToMeanTimesTheMeanRate) {
  // 101 requests over 100 s: 1.01 req/s on average. A burst of 3x over [40 s, 60 s) wants
  // round(3 x 1.01 x 20) = 61 requests there; the window holds 20, so 41 are added, all inside.
  Scenario s = Named("burst");
  s.burst =
      Scenario::Burst{.peak_to_mean = 3, .window = absl::Seconds(20), .at = absl::Seconds(40)};
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(101), s, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->requests.size(), 142u);
  EXPECT_EQ(InWindow(*t, 40, 60), 61);
  EXPECT_EQ(InWindow(*t, 0, 40), 40);
  EXPECT_EQ(DescribeChanges(s), "3x the mean rate over 20s from 40s");
  // A window that does not fit the trace is refused.
  s.burst->at = absl::Seconds(90);
  EXPECT_EQ(ApplyScenario(Base(101), s, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ApplyScenario, TheSameSeedGivesTheSameTrace) {
  Scenario s = Named("all");
  s.rate = 1.5;
  s.long_context = Scenario::LongContext{.share = 0.2, .prompt_tokens = 9000};
  s.burst = Scenario::Burst{.peak_to_mean = 2, .window = absl::Seconds(10), .at = absl::Seconds(5)};
  absl::StatusOr<sim::Trace> a = ApplyScenario(Base(60), s, 9);
  absl::StatusOr<sim::Trace> b = ApplyScenario(Base(60), s, 9);
  absl::StatusOr<sim::Trace> c = ApplyScenario(Base(60), s, 10);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].arrival, b->requests[i].arrival);
    EXPECT_EQ(a->requests[i].prompt_tokens, b->requests[i].prompt_tokens);
  }
  bool differs = a->requests.size() != c->requests.size();
  for (size_t i = 0; !differs && i < a->requests.size(); ++i) {
    differs = a->requests[i].arrival != c->requests[i].arrival ||
              a->requests[i].prompt_tokens != c->requests[i].prompt_tokens;
  }
  EXPECT_TRUE(differs);
}

TEST(EstimatedRequests, BoundsWhatTheScenarioMakes) {
  Scenario s = Named("big");
  s.rate = 2.5;
  s.retry_spike = Scenario::RetrySpike{.share = 0.5,
                                       .timeout = absl::Seconds(5),
                                       .start = absl::ZeroDuration(),
                                       .span = absl::ZeroDuration()};
  // ceil(2.5) x 100 x 1.5 = 450.
  EXPECT_DOUBLE_EQ(EstimatedRequests(s, 100, 99), 450);
  absl::StatusOr<sim::Trace> t = ApplyScenario(Base(100), s, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_LE(static_cast<double>(t->requests.size()), 450);
}

TEST(ApplyScenario, AnEmptyBaselineIsRefused) {
  EXPECT_EQ(ApplyScenario(sim::Trace{}, Named("x"), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinscale::plan
