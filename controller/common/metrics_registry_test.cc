// The controller's metrics registry: pages written out by hand from the text format's rules
// (Prometheus exposition format 0.0.4), registration rules, and concurrent updates.
#include "controller/common/metrics_registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace twinscale {
namespace {

TEST(MetricsRegistryTest, RendersEachTypeInRegistrationOrderWithHelpAndType) {
  MetricsRegistry r;
  absl::StatusOr<CounterFamily*> decisions =
      r.AddCounter("twinscale_decisions_total", "Decisions taken.", {"target", "outcome"});
  ASSERT_TRUE(decisions.ok()) << decisions.status();
  absl::StatusOr<GaugeFamily*> up = r.AddGauge("twinscale_leader", "1 while leading.", {});
  ASSERT_TRUE(up.ok());
  absl::StatusOr<HistogramFamily*> latency =
      r.AddHistogram("twinscale_decision_seconds", "Decision time.", {0.005, 0.1, 1}, {"target"});
  ASSERT_TRUE(latency.ok());

  // Series sorted by label values, whatever order they were created in.
  (*decisions)->WithLabels({"llm/b", "hold"}).Increment();
  (*decisions)->WithLabels({"llm/a", "scale_up"}).Increment(2);
  (*decisions)->WithLabels({"llm/a", "scale_up"}).Increment(0.5);
  (*up)->WithLabels({}).Set(1);
  HistogramFamily& h = **latency;
  h.WithLabels({"llm/a"}).Observe(0.005);  // on an edge: le is inclusive
  h.WithLabels({"llm/a"}).Observe(0.05);
  h.WithLabels({"llm/a"}).Observe(3);  // above every edge: +Inf only
  const std::string want =
      "# HELP twinscale_decisions_total Decisions taken.\n"
      "# TYPE twinscale_decisions_total counter\n"
      "twinscale_decisions_total{target=\"llm/a\",outcome=\"scale_up\"} 2.5\n"
      "twinscale_decisions_total{target=\"llm/b\",outcome=\"hold\"} 1\n"
      "# HELP twinscale_leader 1 while leading.\n"
      "# TYPE twinscale_leader gauge\n"
      "twinscale_leader 1\n"
      "# HELP twinscale_decision_seconds Decision time.\n"
      "# TYPE twinscale_decision_seconds histogram\n"
      "twinscale_decision_seconds_bucket{target=\"llm/a\",le=\"0.005\"} 1\n"
      "twinscale_decision_seconds_bucket{target=\"llm/a\",le=\"0.1\"} 2\n"
      "twinscale_decision_seconds_bucket{target=\"llm/a\",le=\"1\"} 2\n"
      "twinscale_decision_seconds_bucket{target=\"llm/a\",le=\"+Inf\"} 3\n"
      "twinscale_decision_seconds_sum{target=\"llm/a\"} 3.055\n"
      "twinscale_decision_seconds_count{target=\"llm/a\"} 3\n";
  EXPECT_EQ(r.Render(), want);
}

TEST(MetricsRegistryTest, EscapesHelpAndLabelValues) {
  MetricsRegistry r;
  CounterFamily& c = **r.AddCounter("x_total", "a \\ backslash\nand a newline", {"path"});
  c.WithLabels({"say \"hi\"\\\n"}).Increment();
  // HELP escapes only \ and newline; label values also escape the double quote.
  EXPECT_EQ(r.Render(),
            "# HELP x_total a \\\\ backslash\\nand a newline\n"
            "# TYPE x_total counter\n"
            "x_total{path=\"say \\\"hi\\\"\\\\\\n\"} 1\n");
}

TEST(MetricsRegistryTest, NumbersAreShortestRoundTripAndSpecialValuesAsPrometheusWritesThem) {
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(-2.5), "-2.5");
  EXPECT_EQ(FormatMetricValue(1e21), "1e+21");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
  MetricsRegistry r;
  GaugeFamily& g = **r.AddGauge("g", "", {});
  g.WithLabels({}).Set(0.1);
  g.WithLabels({}).Add(0.2);  // 0.30000000000000004: every digit kept
  EXPECT_EQ(r.Render(), "# HELP g \n# TYPE g gauge\ng 0.30000000000000004\n");
}

TEST(MetricsRegistryTest, AFamilyWithoutSeriesRendersOnlyItsHeader) {
  MetricsRegistry r;
  ASSERT_TRUE(r.AddCounter("none_total", "Nothing yet.", {"a"}).ok());
  EXPECT_EQ(r.Render(), "# HELP none_total Nothing yet.\n# TYPE none_total counter\n");
}

TEST(MetricsRegistryTest, CountersNeverGoDown) {
  MetricsRegistry r;
  Counter& c = (*r.AddCounter("c_total", "", {}))->WithLabels({});
  c.Increment(2);
  c.Increment(-1);
  c.Increment(std::nan(""));
  EXPECT_EQ(c.Value(), 2);
}

TEST(MetricsRegistryTest, RegistrationRules) {
  MetricsRegistry r;
  absl::StatusOr<CounterFamily*> first = r.AddCounter("a_total", "h", {"x"});
  ASSERT_TRUE(first.ok());
  // The same family again: the same object (modules may register what they use independently).
  absl::StatusOr<CounterFamily*> again = r.AddCounter("a_total", "h", {"x"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);
  struct Case {
    std::string name;  // why it is refused
    absl::Status status;
  };
  const std::vector<Case> cases = {
      {"same name, other type", r.AddGauge("a_total", "h", {"x"}).status()},
      {"same name, other labels", r.AddCounter("a_total", "h", {"y"}).status()},
      {"same name, other help", r.AddCounter("a_total", "other", {"x"}).status()},
      {"metric name starting with a digit", r.AddCounter("1a", "h", {}).status()},
      {"metric name with a dash", r.AddGauge("a-b", "h", {}).status()},
      {"empty metric name", r.AddGauge("", "h", {}).status()},
      {"label name with a colon", r.AddGauge("g", "h", {"a:b"}).status()},
      {"reserved label name", r.AddGauge("g", "h", {"__x"}).status()},
      {"label twice", r.AddGauge("g", "h", {"a", "a"}).status()},
      {"le in a histogram", r.AddHistogram("h", "h", {1}, {"le"}).status()},
      {"edges not increasing", r.AddHistogram("h", "h", {1, 1}, {}).status()},
      {"an infinite edge",
       r.AddHistogram("h", "h", {1, std::numeric_limits<double>::infinity()}, {}).status()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.status.code(), absl::StatusCode::kInvalidArgument) << c.status;
  }
  // The colon is allowed in metric names (recording rules use it), "le" in non-histograms.
  EXPECT_TRUE(r.AddGauge("job:x:rate", "h", {"le"}).ok());
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry r;
  CounterFamily& c = **r.AddCounter("n_total", "", {"t"});
  HistogramFamily& h = **r.AddHistogram("d", "", {1}, {});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.WithLabels({t % 2 == 0 ? "even" : "odd"}).Increment();
        h.WithLabels({}).Observe(0.5);
        if (i % 1000 == 0) (void)r.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.WithLabels({"even"}).Value(), 20000);
  EXPECT_EQ(c.WithLabels({"odd"}).Value(), 20000);
  const Histogram::Snapshot s = h.WithLabels({}).Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.cumulative[0], 40000u);
  EXPECT_EQ(s.sum, 20000);
}

}  // namespace
}  // namespace twinscale
