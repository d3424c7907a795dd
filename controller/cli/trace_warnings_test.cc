// Trace warnings counted by hand: rows put back in order, and requests too long for a replica.
#include "controller/cli/trace_warnings.h"

#include <gtest/gtest.h>

#include <string>

#include "simulator/model/deployment.h"

namespace twinscale::cli {
namespace {

sim::RequestSpec Request(int32_t prompt, int32_t output) {
  sim::RequestSpec r;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

TEST(TraceWarningsTest, NothingToSayIsNoLine) {
  sim::Trace t;
  t.source = "t.csv";
  t.requests = {Request(1000, 100)};
  EXPECT_TRUE(TraceWarnings(t, sim::DeploymentSpec{}).empty());
}

TEST(TraceWarningsTest, RowsOutOfOrderAndRequestsNoReplicaServes) {
  sim::DeploymentSpec d;
  d.engine.max_model_len = 8192;  // below the 452,400-token cache: the binding limit
  sim::Trace t;
  t.source = "t.csv";
  // 8,192 tokens fit exactly; 8,193 and the 10M-token prompt do not.
  t.requests = {Request(8000, 192), Request(8000, 193), Request(10'000'000, 1), Request(10, 10)};
  t.rows_out_of_order = 3;
  t.first_out_of_order_line = 17;
  const std::vector<std::string> w = TraceWarnings(t, d);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("t.csv: 3 rows are timestamped earlier than the row before (the first at "
                      "line 17)"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[1].find("t.csv: 2 requests are longer than the 8192 tokens"), std::string::npos)
      << w[1];
  EXPECT_NE(w[1].find("the first: 8193 tokens"), std::string::npos) << w[1];
  EXPECT_NE(w[1].find("counts as a miss"), std::string::npos) << w[1];
}

TEST(TraceWarningsTest, TheKvCacheBindsWhenSmallerThanTheContext) {
  sim::DeploymentSpec d;
  d.engine.kv_capacity_tokens_override = 4096;  // max_model_len is the model's 131,072
  ASSERT_EQ(sim::MaxRequestTokens(d), 4096);
  sim::Trace t;
  t.source = "t";
  t.requests = {Request(4000, 97)};
  const std::vector<std::string> w = TraceWarnings(t, d);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1 request is longer than the 4096 tokens"), std::string::npos) << w[0];
}

}  // namespace
}  // namespace twinscale::cli
