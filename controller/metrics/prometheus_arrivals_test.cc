// Arrivals per step from Prometheus' series, worked by hand: counter increases (resets, pods that
// start within the range, gaps), which steps were observed (by when their samples were taken), and
// FetchArrivals' queries and errors through a fake query function.
#include "controller/metrics/prometheus_arrivals.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace twinscale::metrics {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kStep = absl::Seconds(15);

PromSeries Series(std::map<std::string, std::string> labels,
                  std::vector<std::pair<int, double>> points) {
  PromSeries s;
  s.labels = std::move(labels);
  for (auto [k, v] : points) s.points.push_back({kStart + kStep * k, v});
  return s;
}

// timestamp() of `m` where every point is a fresh sample, taken at its grid point.
PromMatrix Fresh(const PromMatrix& m) {
  PromMatrix out = m;
  for (PromSeries& s : out) {
    for (PromPoint& p : s.points) p.value = absl::ToDoubleSeconds(p.at - absl::UnixEpoch());
  }
  return out;
}

TEST(CounterIncreasesTest, ResetsNewSeriesAndGaps) {
  struct Case {
    std::string name;
    PromMatrix m;
    std::vector<double> want;         // 4 steps
    std::vector<bool> want_observed;  // the same steps, every sample fresh
  };
  const std::vector<Case> cases = {
      {"steady counter: differences",
       {Series({}, {{0, 10}, {1, 12}, {2, 15}, {3, 15}, {4, 20}})},
       {2, 3, 0, 5},
       {true, true, true, true}},
      {"reset: the new value is the increase",
       {Series({}, {{0, 10}, {1, 12}, {2, 3}, {3, 5}, {4, 6}})},
       {2, 3, 2, 1},
       {true, true, true, true}},
      {"pod started within the range: its first value counts, the step before it is unobserved",
       {Series({}, {{2, 4}, {3, 9}, {4, 9}})},
       {0, 4, 5, 0},
       {false, false, true, true}},
      {"gap: the increase spans it, the steps of the gap are unobserved",
       {Series({}, {{0, 1}, {1, 2}, {3, 6}, {4, 7}})},
       {1, 0, 4, 1},
       {true, false, false, true}},
      {"two pods add up; one pod's gap is covered by the other",
       {Series({{"pod", "a"}}, {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}),
        Series({{"pod", "b"}}, {{0, 5}, {1, 5}, {3, 7}, {4, 7}})},
       {1, 1, 3, 1},
       {true, true, true, true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(CounterIncreasesPerStep(c.m, kStart, kStep, 4), c.want);
    EXPECT_EQ(StepsObserved(Fresh(c.m), kStart, kStep, 4), c.want_observed);
  }
}

TEST(CounterIncreasesTest, IgnoresPointsOffTheGrid) {
  PromSeries s = Series({}, {{0, 1}, {1, 2}});
  s.points.push_back({kStart + kStep + absl::Seconds(7), 100});  // between grid points
  s.points.push_back({kStart + kStep * 9, 200});                 // past the end
  EXPECT_EQ(CounterIncreasesPerStep({s}, kStart, kStep, 2), (std::vector<double>{1, 0}));
  EXPECT_EQ(StepsObserved(Fresh({s}), kStart, kStep, 2), (std::vector<bool>{true, false}));
}

// Prometheus shows a series' newest sample at every grid point within its lookback, however old:
// a step whose end shows a sample from before the step, or whose start shows one older than a
// step, was not observed, though the counter has a value at both ends.
TEST(StepsObservedTest, OnlySamplesTakenWithinTheStepCount) {
  const double t0 = absl::ToDoubleSeconds(kStart - absl::UnixEpoch());
  struct Case {
    std::string name;
    std::vector<std::pair<int, double>> taken;  // grid point -> seconds after kStart it was taken
    std::vector<bool> want;                     // 3 steps
  };
  const std::vector<Case> cases = {
      {"scraped just before each grid point",
       {{0, -2}, {1, 13}, {2, 28}, {3, 43}},
       {true, true, true}},
      {"the series ended after point 1: the lookback shows its last sample at 2 and 3",
       {{0, 0}, {1, 15}, {2, 15}, {3, 15}},
       {true, false, false}},
      {"a sample taken at exactly a step's start is neither within it nor fresh for the next",
       {{0, 0}, {1, 0}, {2, 29}, {3, 44}},
       {false, false, true}},
      {"a stale start: the increase would reach back before the step",
       {{0, -20}, {1, -20}, {2, 30}, {3, 45}},
       {false, false, true}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PromSeries s;
    for (auto [k, after] : c.taken) s.points.push_back({kStart + kStep * k, t0 + after});
    EXPECT_EQ(StepsObserved({s}, kStart, kStep, 3), c.want);
  }
}

TEST(FetchArrivalsTest, AsksTheCounterAndTheInFlightGaugesOnTheGrid) {
  std::vector<std::string> asked;
  const RangeQueryFn fake = [&](const RangeQuery& q) -> absl::StatusOr<PromMatrix> {
    asked.push_back(q.promql);
    EXPECT_EQ(q.start, kStart);
    EXPECT_EQ(q.end, kStart + kStep * 3);
    EXPECT_EQ(q.step, kStep);
    const PromMatrix counter{Series({{"pod", "a"}}, {{1, 10}, {2, 20}, {3, 30}})};
    if (q.promql == "vllm:request_prompt_tokens_count{namespace=\"llm\"}") return counter;
    if (q.promql == "timestamp(vllm:request_prompt_tokens_count{namespace=\"llm\"})") {
      return Fresh(counter);
    }
    if (absl::StrContains(q.promql, "num_requests_waiting")) {
      return PromMatrix{Series({}, {{0, 0}, {1, 5}, {2, 5}, {3, 0}})};
    }
    return PromMatrix{};
  };
  absl::StatusOr<ArrivalSeries> a = FetchArrivals(fake, "{namespace=\"llm\"}", kStart, kStep, 3);
  ASSERT_TRUE(a.ok()) << a.status();
  // Step 0: the pod's first point (unobserved); then 10 finished each, in flight 0, -5.
  EXPECT_EQ(a->arrivals, (std::vector<double>{15, 10, 5}));
  EXPECT_EQ(a->observed, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(asked, (std::vector<std::string>{
                       "vllm:request_prompt_tokens_count{namespace=\"llm\"}",
                       "timestamp(vllm:request_prompt_tokens_count{namespace=\"llm\"})",
                       "sum(vllm:num_requests_waiting{namespace=\"llm\"})",
                       "sum(vllm:num_requests_running{namespace=\"llm\"})"}));
}

TEST(FetchArrivalsTest, FailuresArePassedOnAndNothingIsNotFound) {
  struct Case {
    std::string name;
    absl::Status answer;  // every query's, when not OK
    int64_t steps;
    absl::StatusCode want;
  };
  const std::vector<Case> cases = {
      {"Prometheus down", absl::UnavailableError("prometheus http://p:9090: connection refused"), 4,
       absl::StatusCode::kUnavailable},
      {"a slow Prometheus", absl::DeadlineExceededError("no answer in 10s"), 4,
       absl::StatusCode::kDeadlineExceeded},
      {"a selector Prometheus rejects", absl::InvalidArgumentError("bad_data"), 4,
       absl::StatusCode::kInvalidArgument},
      {"no series: nothing recorded", absl::OkStatus(), 4, absl::StatusCode::kNotFound},
      {"no steps asked", absl::OkStatus(), 0, absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const RangeQueryFn fake = [&](const RangeQuery&) -> absl::StatusOr<PromMatrix> {
      if (!c.answer.ok()) return c.answer;
      return PromMatrix{};
    };
    EXPECT_EQ(FetchArrivals(fake, "", kStart, kStep, c.steps).status().code(), c.want);
  }
}

}  // namespace
}  // namespace twinscale::metrics
