// `twinscale plan` on the documented example (deploy/samples/plan/capacity-review.yaml: seven
// scenarios and the baseline, two profiles, three seeds): the wall time of the whole review on one
// and on two threads. The target (docs/architecture.md "Performance targets"): under 30 s on two
// cores.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "controller/plan/capacity_plan.h"
#include "controller/plan/review.h"

namespace {

twinscale::plan::Review SampleReview() {
  const std::string dir = TWINSCALE_SOURCE_DIR;
  absl::StatusOr<twinscale::plan::Review> review =
      twinscale::plan::LoadReviewFile(dir + "/deploy/samples/plan/capacity-review.yaml");
  if (!review.ok()) {
    std::fprintf(stderr, "plan_bench: %s\n", std::string(review.status().message()).c_str());
    std::exit(1);
  }
  // The trace path is relative to the repository root.
  review->baseline.trace.path = dir + "/" + review->baseline.trace.path;
  return *review;
}

void BM_PlanSampleReview(benchmark::State& state) {
  const twinscale::plan::Review review = SampleReview();
  twinscale::plan::PlanOptions options;
  options.threads = static_cast<int>(state.range(0));
  size_t cells = 0;
  for (auto _ : state) {
    absl::StatusOr<twinscale::plan::PlanResult> plan = twinscale::plan::RunPlan(review, options);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      return;
    }
    cells = plan->cells.size();
    benchmark::DoNotOptimize(plan->cells.data());
  }
  state.counters["cells"] = static_cast<double>(cells);
  state.counters["threads"] = static_cast<double>(options.threads);
}
BENCHMARK(BM_PlanSampleReview)
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
