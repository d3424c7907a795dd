// The zero-lag oracle: see oracle.h.
#include "controller/replay/oracle.h"

#include <algorithm>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/replay/minutes.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/simulate.h"

namespace twinscale::replay {
namespace {

using sim::SimTime;

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

// attainment(m, n), asked at most once per pair.
class AskedOnce {
 public:
  AskedOnce(size_t minutes, absl::FunctionRef<double(size_t, int32_t)> attainment)
      : seen_(minutes), attainment_(attainment) {}
  double operator()(size_t m, int32_t n) {
    auto it = seen_[m].find(n);
    if (it != seen_[m].end()) return it->second;
    const double a = attainment_(m, n);
    seen_[m].emplace(n, a);
    return a;
  }

 private:
  std::vector<std::map<int32_t, double>> seen_;
  absl::FunctionRef<double(size_t, int32_t)> attainment_;
};

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
  const int64_t n_minutes = MinuteOf(trace.requests.back().arrival) + 1;
  result.minutes.resize(static_cast<size_t>(n_minutes));

  // Each minute's arrivals (from 0) and its candidates' attainments, kept for the share.
  std::vector<std::shared_ptr<sim::Trace>> minute_requests(static_cast<size_t>(n_minutes));
  std::vector<std::map<int32_t, double>> attainments(static_cast<size_t>(n_minutes));
  auto run_minute = [&](size_t m, int32_t n) {
    auto it = attainments[m].find(n);
    if (it != attainments[m].end()) return it->second;
    sim::SimulateOptions o = base;
    o.fleet.initial_replicas = n;
    o.fleet.run = static_cast<uint64_t>(m);
    std::unique_ptr<sim::RequestSource> source = sim::MakeTraceSource(minute_requests[m]);
    const double a = sim::Simulate(o, *source).summary.slo_attainment;
    ++result.simulations;
    attainments[m].emplace(n, a);
    return a;
  };

  int32_t guess = options.min_replicas;
  size_t next = 0;  // first request of the current minute
  for (int64_t m = 0; m < n_minutes; ++m) {
    OracleMinute& minute = result.minutes[static_cast<size_t>(m)];
    const SimTime from = SimTime::Zero() + kReplayMinute * m;
    const SimTime to = from + kReplayMinute;
    auto requests = std::make_shared<sim::Trace>();
    for (; next < trace.requests.size() && trace.requests[next].arrival < to; ++next) {
      sim::RequestSpec r = trace.requests[next];
      r.arrival = SimTime::Zero() + (r.arrival - from);
      requests->requests.push_back(std::move(r));
    }
    minute.requests = static_cast<int64_t>(requests->requests.size());
    if (m == n_minutes - 1) {  // ends at the trace's last arrival
      minute.weight = LastMinuteWeight(trace.requests.back().arrival);
    }
    minute_requests[static_cast<size_t>(m)] = std::move(requests);
    if (minute.requests == 0) {
      minute.replicas = options.min_replicas;
      minute.attainment = 1;
      continue;
    }
    auto run = [&](int32_t n) { return run_minute(static_cast<size_t>(m), n); };
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
  std::vector<double> weights;
  for (const OracleMinute& minute : result.minutes) {
    weights.push_back(minute.weight);
    replica_minutes += minute.replicas * minute.weight;
    result.max_replicas = std::max(result.max_replicas, minute.replicas);
  }
  result.gpu_hours = replica_minutes * deployment.tensor_parallel / 60.0;

  if (options.request_share > 0) {
    const int32_t cap =
        options.share_max_replicas > 0
            ? std::clamp(options.share_max_replicas, options.min_replicas, options.max_replicas)
            : options.max_replicas;
    std::vector<int64_t> requests;
    std::vector<int32_t> start;
    for (const OracleMinute& minute : result.minutes) {
      requests.push_back(minute.requests);
      start.push_back(minute.replicas);
    }
    const ShareAllocation a = AllocateForShare(
        requests, start, cap, options.request_share,
        [&](size_t m, int32_t n) { return requests[m] == 0 ? 1.0 : run_minute(m, n); });
    ShareOracle share;
    share.share = options.request_share;
    share.reached = a.reached;
    share.attainment = a.attainment;
    double share_minutes = 0;
    for (size_t m = 0; m < result.minutes.size(); ++m) {
      OracleMinute& minute = result.minutes[m];
      minute.share_replicas = a.replicas[m];
      minute.share_attainment = minute.requests == 0 ? 1.0 : run_minute(m, a.replicas[m]);
      share_minutes += a.replicas[m] * minute.weight;
      share.max_replicas = std::max(share.max_replicas, a.replicas[m]);
    }
    share.gpu_hours = a.reached ? share_minutes * deployment.tensor_parallel / 60.0 : 0;
    if (!a.reached) share.max_replicas = cap;
    if (a.reached && options.follower_lag_minutes > 0) {
      share.late = FollowLate(
          requests, a.replicas, options.follower_lag_minutes, options.follower_max_margin, cap,
          options.request_share, options.minute_share, slo.percentile / 100.0,
          deployment.tensor_parallel, [&](size_t m, int32_t n) { return run_minute(m, n); },
          weights);
    }
    result.for_share = share;
  }
  return result;
}

LateFollower FollowLate(const std::vector<int64_t>& requests,
                        const std::vector<int32_t>& allocation, int32_t lag, int32_t max_margin,
                        int32_t max_replicas, double share, double minute_share, double percentile,
                        int32_t tensor_parallel,
                        absl::FunctionRef<double(size_t, int32_t)> attainment,
                        const std::vector<double>& weights) {
  const size_t n = requests.size();
  auto weight = [&](size_t m) { return m < weights.size() ? weights[m] : 1.0; };
  AskedOnce at(n, attainment);
  LateFollower out;
  out.lag_minutes = lag;
  for (int32_t margin = 0; margin <= std::max(0, max_margin); ++margin) {
    double total = 0, met = 0, replica_minutes = 0;
    double minutes = 0, minutes_met = 0;  // weighted
    for (size_t m = 0; m < n; ++m) {
      const size_t from = m >= static_cast<size_t>(lag) ? m - static_cast<size_t>(lag) : 0;
      const int32_t fleet = std::min(allocation[from] + margin, max_replicas);
      replica_minutes += fleet * weight(m);
      if (requests[m] == 0) continue;
      const double a = at(m, fleet);
      total += static_cast<double>(requests[m]);
      met += static_cast<double>(requests[m]) * a;
      minutes += weight(m);
      if (a + 1e-12 >= percentile) minutes_met += weight(m);
    }
    out.margin = margin;
    out.gpu_hours = replica_minutes * tensor_parallel / 60.0;
    out.attainment = total > 0 ? met / total : 1;
    out.minute_share = minutes > 0 ? minutes_met / minutes : 1;
    out.reached = out.attainment + 1e-9 >= share && out.minute_share + 1e-9 >= minute_share;
    if (out.reached) break;
  }
  return out;
}

ShareAllocation AllocateForShare(const std::vector<int64_t>& requests,
                                 const std::vector<int32_t>& start, int32_t max_replicas,
                                 double share,
                                 absl::FunctionRef<double(size_t, int32_t)> attainment) {
  const size_t n = requests.size();
  AskedOnce at(n, attainment);
  ShareAllocation out;
  out.replicas.resize(n);
  double total = 0;
  for (size_t m = 0; m < n; ++m) {
    out.replicas[m] = std::min(start[m], max_replicas);
    total += static_cast<double>(requests[m]);
  }
  if (total <= 0) {
    out.attainment = 1;
    out.reached = true;
    return out;
  }
  // Within the SLO, counted in requests. When some minute needs more than max_replicas for its
  // own p90, whether the share can be reached at all is asked first, at max_replicas everywhere:
  // climbing there one replica at a time would be the slowest way to find out. (Otherwise the
  // climb below finds out on its way, usually by reaching the share long before.)
  const double need = share * total;
  bool capped = false;
  for (size_t m = 0; m < n; ++m) capped = capped || start[m] > max_replicas;
  if (capped) {
    double best = 0;
    for (size_t m = 0; m < n; ++m) {
      if (requests[m] > 0) best += static_cast<double>(requests[m]) * at(m, max_replicas);
    }
    if (best + 1e-9 < need) {
      out.attainment = best / total;
      return out;
    }
  }
  double met = 0;
  for (size_t m = 0; m < n; ++m) {
    if (requests[m] > 0) met += static_cast<double>(requests[m]) * at(m, out.replicas[m]);
  }
  // (requests brought in per replica by the minute's next step, -minute): the largest first, then
  // the earliest minute. A step is one replica, or two when the second brings in more than the
  // first (a sampled truth's gains are only roughly diminishing: one replica can bring in
  // little where two bring in much).
  struct Step {
    double per_replica;
    int64_t neg_minute;
    int32_t replicas;
    bool operator<(const Step& o) const {
      return std::tie(per_replica, neg_minute) < std::tie(o.per_replica, o.neg_minute);
    }
  };
  std::priority_queue<Step> steps;
  auto push = [&](size_t m) {
    const int32_t r = out.replicas[m];
    if (requests[m] == 0 || r >= max_replicas) return;
    const double q = static_cast<double>(requests[m]);
    Step step{q * (at(m, r + 1) - at(m, r)), -static_cast<int64_t>(m), 1};
    if (r + 2 <= max_replicas && at(m, r + 2) - at(m, r + 1) > at(m, r + 1) - at(m, r)) {
      step = {q * (at(m, r + 2) - at(m, r)) / 2, -static_cast<int64_t>(m), 2};
    }
    if (step.per_replica > 0) steps.push(step);
  };
  if (met + 1e-9 < need) {
    for (size_t m = 0; m < n; ++m) push(m);
  }
  while (met + 1e-9 < need && !steps.empty()) {
    const Step step = steps.top();
    steps.pop();
    const size_t m = static_cast<size_t>(-step.neg_minute);
    out.replicas[m] += step.replicas;
    met += step.per_replica * step.replicas;
    push(m);
  }
  // Every minute full and still short (gains that rise again further up: noise): the rest of the
  // way at max_replicas, the minutes bringing most in first.
  if (met + 1e-9 < need) {
    std::vector<std::pair<double, size_t>> jumps;
    for (size_t m = 0; m < n; ++m) {
      if (requests[m] == 0 || out.replicas[m] >= max_replicas) continue;
      jumps.emplace_back(
          -static_cast<double>(requests[m]) * (at(m, max_replicas) - at(m, out.replicas[m])), m);
    }
    std::sort(jumps.begin(), jumps.end());
    for (const auto& [neg_gain, m] : jumps) {
      if (met + 1e-9 >= need) break;
      met -= neg_gain;
      out.replicas[m] = max_replicas;
    }
  }
  out.reached = met + 1e-9 >= need;
  if (!out.reached) {
    for (size_t m = 0; m < n; ++m) out.replicas[m] = std::min(start[m], max_replicas);
  }
  out.attainment = met / total;
  return out;
}

}  // namespace twinscale::replay
