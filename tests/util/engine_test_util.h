// Test helpers for the engine tests: a deployment whose step time is set by hand (linear model),
// a vector-backed request source, and a harness that runs a fleet and keeps every RequestRecord.
#ifndef TWINSCALE_TESTS_UTIL_ENGINE_TEST_UTIL_H_
#define TWINSCALE_TESTS_UTIL_ENGINE_TEST_UTIL_H_

#include <map>
#include <memory>
#include <vector>

#include "simulator/core/simulation.h"
#include "simulator/model/deployment.h"
#include "simulator/model/fleet.h"
#include "simulator/model/run_stats.h"
#include "simulator/workload/request.h"

namespace twinscale::sim::testing {

// A deployment whose steps take b0 + b1 x prefill + b2 x decode microseconds, with front-end
// delay a0 + a1 x prompt and emission delay a2; KV capacity set in tokens.
inline DeploymentSpec HandDeployment(int32_t max_num_seqs, int32_t max_num_batched_tokens,
                                     int64_t kv_tokens, double b0_us, double b1_us = 0,
                                     double b2_us = 0, double a0_us = 0, double a1_us = 0,
                                     double a2_us = 0) {
  DeploymentSpec d;
  d.name = "hand";
  d.latency_model = LatencyModelKind::kLinear;
  d.linear = LinearCoefficients{b0_us, b1_us, b2_us, a0_us, a1_us, a2_us};
  d.engine.max_num_seqs = max_num_seqs;
  d.engine.max_num_batched_tokens = max_num_batched_tokens;
  d.engine.kv_capacity_tokens_override = kv_tokens;
  d.engine.block_size = 16;
  d.lifecycle.slow_period = SimDuration::Zero();
  d.lifecycle.slow_factor = 1.0;
  return d;
}

class VectorSource : public RequestSource {
 public:
  explicit VectorSource(std::vector<RequestSpec> requests) : requests_(std::move(requests)) {}
  bool Next(RequestSpec& out) override {
    if (next_ >= requests_.size()) return false;
    out = requests_[next_++];
    return true;
  }

 private:
  std::vector<RequestSpec> requests_;
  size_t next_ = 0;
};

inline RequestSpec Req(uint64_t id, double at_ms, int32_t prompt, int32_t output) {
  RequestSpec r;
  r.id = id;
  r.arrival = SimTime::FromNanos(static_cast<int64_t>(at_ms * 1e6));
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

// Runs `requests` through a fleet of `replicas` ready replicas to completion.
struct Harness {
  explicit Harness(DeploymentSpec d, int32_t replicas = 1, TtftSlo slo = {},
                   RouterKind router = RouterKind::kRoundRobin)
      : stats(slo) {
    FleetOptions o;
    o.deployment = std::move(d);
    o.initial_replicas = replicas;
    o.router.kind = router;
    stats.set_record_sink([this](const RequestRecord& r) { records[r.id] = r; });
    fleet = std::make_unique<Fleet>(sim, o, &stats);
  }
  void Run(std::vector<RequestSpec> requests) {
    source = std::make_unique<VectorSource>(std::move(requests));
    fleet->AttachSource(source.get());
    sim.Run();
    fleet->FinalizeStats(sim.Now());
  }
  RunSummary Summary() const { return stats.Summarize(fleet->waiting(), fleet->running()); }

  Simulation sim;
  RunStats stats;
  std::unique_ptr<Fleet> fleet;
  std::unique_ptr<VectorSource> source;
  std::map<uint64_t, RequestRecord> records;
};

}  // namespace twinscale::sim::testing

#endif  // TWINSCALE_TESTS_UTIL_ENGINE_TEST_UTIL_H_
