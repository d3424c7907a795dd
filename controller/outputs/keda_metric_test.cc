// KedaMetricFor's values, worked by hand from keda_metric.h's rules. That the HPA then lands on
// the decision is checked end to end, through gRPC, in keda_scaler_test.cc.
#include "controller/outputs/keda_metric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace twinscale::outputs {
namespace {

TEST(KedaMetricTest, ValuesByDirection) {
  struct Case {
    std::string name;
    int32_t published, current;
    double want_float;
    int64_t want_int;
  };
  const Case cases[] = {
      {"hold publishes the count itself (ratio exactly 1)", 10, 10, 10.0, 10},
      {"scale-up publishes the new count", 21, 20, 21.0, 21},
      {"scale-up from one", 48, 1, 48.0, 48},
      {"scale-down publishes just above one less: 10 -> 9 is 8.002", 9, 10, 8.002, 9},
      {"scale-down to one publishes 0.002 (> 0, so KEDA reads the float)", 1, 5, 0.002, 1},
      {"a target at zero (the HPA doesn't scale it) gets the count", 3, 0, 3.0, 3},
      {"nothing to publish", 0, 4, 0.0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const KedaMetric m = KedaMetricFor(c.published, c.current);
    EXPECT_DOUBLE_EQ(m.metric_value_float, c.want_float);
    EXPECT_EQ(m.metric_value, c.want_int);
    EXPECT_EQ(m.target_size, 1);
    EXPECT_DOUBLE_EQ(m.target_size_float, 1.0);
  }
}

// KEDA truncates v * 1000 to whole milli-units; the margin must keep ceil at n for every count.
TEST(KedaMetricTest, ScaleDownValueSurvivesMilliTruncationForEveryCount) {
  for (int32_t n = 1; n <= 5000; ++n) {
    const KedaMetric m = KedaMetricFor(n, n + 1);
    const auto milli = static_cast<int64_t>(m.metric_value_float * 1000);
    ASSERT_GT(milli, int64_t{1000} * (n - 1)) << n;
    ASSERT_LE(milli, int64_t{1000} * n) << n;
    ASSERT_EQ(static_cast<int32_t>(std::ceil(milli / 1000.0)), n) << n;
  }
}

}  // namespace
}  // namespace twinscale::outputs
