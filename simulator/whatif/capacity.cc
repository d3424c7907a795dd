// Capacity search: see capacity.h.
#include "simulator/whatif/capacity.h"

#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace twinscale::sim {

bool MeetsTtftSlo(const RunSummary& s, const TtftSlo& slo) {
  return s.slo_attainment + 1e-12 >= slo.percentile / 100.0;
}

absl::StatusOr<CapacityAnswer> FindReplicas(const CapacityQuestion& q) {
  if (q.min_replicas < 1 || q.max_replicas < q.min_replicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica range [", q.min_replicas, ", ", q.max_replicas, "] is empty"));
  }
  CapacityAnswer answer;
  std::map<int32_t, size_t> by_n;
  auto run = [&](int32_t n) -> const CapacityCandidate& {
    auto it = by_n.find(n);
    if (it != by_n.end()) return answer.tried[it->second];
    SimulateOptions o = q.base;
    o.fleet.initial_replicas = n;
    std::unique_ptr<RequestSource> source = q.make_source();
    SimulateResult r = Simulate(o, *source);
    answer.tried.push_back(CapacityCandidate{n, r.summary, MeetsTtftSlo(r.summary, q.base.slo)});
    by_n[n] = answer.tried.size() - 1;
    if (q.on_candidate) q.on_candidate(n, r.summary);
    return answer.tried.back();
  };

  int32_t lo = q.min_replicas - 1;  // largest known to miss (or below range)
  int32_t hi = -1;                  // smallest known to meet
  for (int32_t n = q.min_replicas;; n = std::min(q.max_replicas, n * 2)) {
    if (run(n).meets_slo) {
      hi = n;
      break;
    }
    lo = n;
    if (n == q.max_replicas) break;
  }
  if (hi < 0) {
    return absl::NotFoundError(absl::StrCat("even ", q.max_replicas,
                                            " replicas miss the TTFT SLO (attainment ",
                                            answer.tried.back().summary.slo_attainment, ")"));
  }
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (run(mid).meets_slo) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  answer.replicas = hi;
  answer.summary = answer.tried[by_n[hi]].summary;
  return answer;
}

}  // namespace twinscale::sim
