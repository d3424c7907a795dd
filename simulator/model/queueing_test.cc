// The engine against queueing theory. With max_num_seqs = 1 and constant lengths a replica is an
// M/D/1 queue, whose mean wait is Pollaczek-Khinchine's W_q = rho x D / (2 (1 - rho)); Little's
// law L = lambda x W holds for any stable replica. Arrivals here are drawn with the project's own
// exponential sampler, independent of the workload library.
#include <gtest/gtest.h>

#include "simulator/core/rng.h"
#include "simulator/core/samplers.h"
#include "tests/util/engine_test_util.h"

namespace twinscale::sim {
namespace {

using testing::HandDeployment;
using testing::Harness;

std::vector<RequestSpec> PoissonRequests(double rate, int n, int32_t prompt, int32_t output,
                                         uint64_t seed) {
  Rng rng(seed, 0, Stream::kArrivals);
  std::vector<RequestSpec> out;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += SampleExponential(rng, 1.0 / rate);
    out.push_back(testing::Req(static_cast<uint64_t>(i), t * 1e3, prompt, output));
  }
  return out;
}

struct MD1Case {
  const char* name;
  double step_ms;
  int32_t output;  // service = output steps
  double rate;
};

TEST(QueueingTest, MaxNumSeqsOneIsAnMD1Queue) {
  const MD1Case cases[] = {
      // D = 10 ms, lambda = 60/s: rho = 0.6, W_q = 0.6 x 10 / (2 x 0.4) = 7.5 ms.
      {"one-step service, rho 0.6", 10.0, 1, 60.0},
      // D = 4 x 10 ms = 40 ms, lambda = 15/s: rho = 0.6, W_q = 0.6 x 40 / 0.8 = 30 ms.
      {"four-step service, rho 0.6", 10.0, 4, 15.0},
      // D = 10 ms, lambda = 85/s: rho = 0.85, W_q = 0.85 x 10 / 0.3 = 28.33 ms.
      {"one-step service, rho 0.85", 10.0, 1, 85.0},
  };
  for (const MD1Case& c : cases) {
    SCOPED_TRACE(c.name);
    const double d_ms = c.step_ms * c.output;
    const double rho = c.rate * d_ms / 1000.0;
    const double wq_ms = rho * d_ms / (2.0 * (1.0 - rho));
    Harness h(HandDeployment(1, 2048, 1'000'000, c.step_ms * 1000.0));
    h.Run(PoissonRequests(c.rate, 200'000, 1, c.output, 7));
    const RunSummary s = h.Summary();
    ASSERT_EQ(s.completed, 200'000);
    // Scheduling delay is the wait in queue; TTFT adds the first step.
    EXPECT_NEAR(s.scheduling_delay_ms.mean, wq_ms, 0.04 * wq_ms);
    EXPECT_NEAR(s.ttft_ms.mean, wq_ms + c.step_ms, 0.04 * wq_ms);
    EXPECT_NEAR(s.e2e_ms.mean, wq_ms + d_ms, 0.04 * wq_ms);
  }
}

TEST(QueueingTest, LittlesLawHoldsForABatchingReplica) {
  // lambda = 40/s into a replica batching up to 64 sequences; steps cost 5 ms + 20 us per prefill
  // token + 50 us per decode token. L (time-averaged requests in the replica, sampled every 1 ms)
  // must equal lambda_effective x mean E2E.
  Harness h(HandDeployment(64, 2048, 1'000'000, 5000, 20, 50));
  auto reqs = PoissonRequests(40.0, 40'000, 200, 100, 11);
  h.source = std::make_unique<testing::VectorSource>(reqs);
  h.fleet->AttachSource(h.source.get());
  double area = 0;
  int64_t samples = 0;
  const SimTime end = reqs.back().arrival;
  for (SimTime t = SimTime::Zero(); t < end; t += SimDuration::Millis(1)) {
    h.sim.RunUntil(t);
    area += static_cast<double>(h.fleet->in_flight());
    ++samples;
  }
  h.sim.Run();
  const RunSummary s = h.Summary();
  const double mean_l = area / samples;
  const double lambda = static_cast<double>(s.completed) / end.seconds();
  EXPECT_NEAR(mean_l, lambda * s.e2e_ms.mean / 1000.0, 0.03 * mean_l);
  EXPECT_GT(mean_l, 1.0);  // the check is not vacuous: requests overlap
}

}  // namespace
}  // namespace twinscale::sim
