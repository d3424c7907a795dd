// The zero-lag oracle: see oracle.h.
#include "controller/replay/oracle.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/simulate.h"

namespace twinscale::replay {
namespace {

using sim::SimDuration;
using sim::SimTime;

constexpr SimDuration kMinute = SimDuration::Seconds(60);

// The smallest n in [min, max] with ok(n), probing `start` first; -1 when none. `ok` must be
// monotone: false below the answer, true from it on.
template <typename Ok>
int32_t SmallestFrom(int32_t start, int32_t min, int32_t max, Ok ok) {
  int32_t lo = min - 1;  // largest known to fail
  int32_t hi = -1;       // smallest known to pass
  if (ok(start)) {
    hi = start;
    for (int32_t step = 1; hi - 1 > lo; step *= 2) {
      const int32_t c = std::max(lo + 1, hi - step);
      if (ok(c)) {
        hi = c;
      } else {
        lo = c;
        break;
      }
    }
  } else {
    lo = start;
    for (int32_t step = 1; lo < max; step *= 2) {
      const int32_t c = std::min(max, lo + step);
      if (ok(c)) {
        hi = c;
        break;
      }
      lo = c;
    }
    if (hi < 0) return -1;
  }
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (ok(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

}  // namespace

absl::StatusOr<OracleResult> Oracle(const sim::Trace& trace, const sim::DeploymentSpec& deployment,
                                    const Truth& truth, const sim::TtftSlo& slo, uint64_t seed,
                                    const OracleOptions& options) {
  if (options.min_replicas < 1 || options.max_replicas < options.min_replicas) {
    return absl::InvalidArgumentError(absl::StrCat("oracle: replica range [", options.min_replicas,
                                                   ", ", options.max_replicas, "] is invalid"));
  }
  if (absl::Status s = sim::ValidateDeployment(deployment); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("oracle: ", s.message()));
  }
  sim::SimulateOptions base;
  base.fleet.deployment = deployment;
  base.fleet.router.kind = options.router;
  base.fleet.model_name = options.model_name;
  base.fleet.seed = seed;
  ApplyTruth(truth, base.fleet);
  base.slo = slo;

  OracleResult result;
  if (trace.requests.empty()) return result;
  const int64_t n_minutes = trace.requests.back().arrival.nanos() / kMinute.nanos() + 1;
  result.minutes.resize(static_cast<size_t>(n_minutes));

  int32_t guess = options.min_replicas;
  size_t next = 0;  // first request of the current minute
  for (int64_t m = 0; m < n_minutes; ++m) {
    OracleMinute& minute = result.minutes[static_cast<size_t>(m)];
    const SimTime from = SimTime::Zero() + kMinute * m;
    const SimTime to = from + kMinute;
    auto requests = std::make_shared<sim::Trace>();
    for (; next < trace.requests.size() && trace.requests[next].arrival < to; ++next) {
      sim::RequestSpec r = trace.requests[next];
      r.arrival = SimTime::Zero() + (r.arrival - from);
      requests->requests.push_back(std::move(r));
    }
    minute.requests = static_cast<int64_t>(requests->requests.size());
    if (requests->requests.empty()) {
      minute.replicas = options.min_replicas;
      minute.attainment = 1;
      continue;
    }
    std::map<int32_t, double> attainment;  // candidate -> its attainment on this minute
    auto run = [&](int32_t n) {
      auto it = attainment.find(n);
      if (it != attainment.end()) return it->second;
      sim::SimulateOptions o = base;
      o.fleet.initial_replicas = n;
      o.fleet.run = static_cast<uint64_t>(m);
      std::unique_ptr<sim::RequestSource> source = sim::MakeTraceSource(requests);
      const double a = sim::Simulate(o, *source).summary.slo_attainment;
      ++result.simulations;
      attainment.emplace(n, a);
      return a;
    };
    double need = slo.percentile / 100.0;
    auto ok = [&](int32_t n) { return run(n) + 1e-12 >= need; };
    int32_t n = SmallestFrom(guess, options.min_replicas, options.max_replicas, ok);
    if (n < 0) {
      // Unmeetable: the smallest fleet doing as well as the largest allowed.
      minute.meets_slo = false;
      ++result.unmeetable_minutes;
      need = run(options.max_replicas);
      n = SmallestFrom(options.max_replicas, options.min_replicas, options.max_replicas, ok);
    }
    minute.replicas = n;
    minute.attainment = run(n);
    guess = n;
  }
  double replica_minutes = 0;
  for (const OracleMinute& minute : result.minutes) {
    replica_minutes += minute.replicas;
    result.max_replicas = std::max(result.max_replicas, minute.replicas);
  }
  result.gpu_hours = replica_minutes * deployment.tensor_parallel / 60.0;
  return result;
}

}  // namespace twinscale::replay
