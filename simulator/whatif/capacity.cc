// Capacity search: see capacity.h.
#include "simulator/whatif/capacity.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace twinscale::sim {

bool MeetsTtftSlo(const RunSummary& s, const TtftSlo& slo) {
  return s.slo_attainment + 1e-12 >= slo.percentile / 100.0;
}

bool MeetsObjective(const RunSummary& s, const CapacityQuestion& q) {
  if (!MeetsTtftSlo(s, q.base.slo)) return false;
  if (q.itl_percentile <= 0 || s.judged_itl_tokens == 0) return true;
  const double within =
      1.0 - static_cast<double>(s.judged_itl_over) / static_cast<double>(s.judged_itl_tokens);
  return within + 1e-12 >= q.itl_percentile / 100.0;
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
    answer.tried.push_back(CapacityCandidate{n, r.summary, MeetsObjective(r.summary, q)});
    by_n[n] = answer.tried.size() - 1;
    if (q.on_candidate) q.on_candidate(n, r.summary);
    return answer.tried.back();
  };

  int32_t lo = q.min_replicas - 1;  // largest known to miss (or below range)
  int32_t hi = -1;                  // smallest known to meet
  const int32_t start = q.start_replicas > 0
                            ? std::clamp(q.start_replicas, q.min_replicas, q.max_replicas)
                            : q.min_replicas;
  if (start > q.min_replicas && run(start).meets_slo) {
    hi = start;
    for (int32_t n = std::max(q.min_replicas, start / 2);; n = std::max(q.min_replicas, n / 2)) {
      if (!run(n).meets_slo) {
        lo = n;
        break;
      }
      hi = n;
      if (n == q.min_replicas) break;
    }
  } else {
    for (int32_t n = start;; n = std::min(q.max_replicas, n * 2)) {
      if (run(n).meets_slo) {
        hi = n;
        break;
      }
      lo = n;
      if (n == q.max_replicas) break;
    }
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

absl::StatusOr<SeededCapacityAnswer> FindReplicasOverSeeds(
    const CapacityQuestion& question, const std::vector<uint64_t>& seeds,
    const std::function<std::unique_ptr<RequestSource>(uint64_t seed)>& make_source) {
  if (seeds.empty()) return absl::InvalidArgumentError("the capacity search needs a seed");
  SeededCapacityAnswer a;
  a.seeds = seeds;
  auto seeded = [&](uint64_t seed) {
    CapacityQuestion q = question;
    q.base.fleet.seed = seed;
    q.make_source = [&make_source, seed] { return make_source(seed); };
    return q;
  };
  for (uint64_t seed : seeds) {
    absl::StatusOr<CapacityAnswer> one = FindReplicas(seeded(seed));
    if (!one.ok()) return one.status();
    a.fewest = a.per_seed.empty() ? one->replicas : std::min(a.fewest, one->replicas);
    a.replicas = std::max(a.replicas, one->replicas);
    a.per_seed.push_back(*std::move(one));
  }
  // Each seed's run at n: from its own search where it ran n, else run now.
  auto run_at = [&](size_t i, int32_t n) {
    for (const CapacityCandidate& c : a.per_seed[i].tried) {
      if (c.replicas == n) return c.summary;
    }
    CapacityQuestion q = seeded(seeds[i]);
    SimulateOptions o = q.base;
    o.fleet.initial_replicas = n;
    std::unique_ptr<RequestSource> source = q.make_source();
    RunSummary s = Simulate(o, *source).summary;
    if (q.on_candidate) q.on_candidate(n, s);
    return s;
  };
  for (;;) {
    a.at_answer.clear();
    bool all_meet = true;
    for (size_t i = 0; i < seeds.size(); ++i) {
      a.at_answer.push_back(run_at(i, a.replicas));
      all_meet = all_meet && MeetsObjective(a.at_answer.back(), question);
    }
    if (all_meet) break;
    if (a.replicas >= question.max_replicas) {
      return absl::NotFoundError(absl::StrCat("no fleet up to ", question.max_replicas,
                                              " replicas meets the TTFT SLO under every seed"));
    }
    ++a.replicas;
  }
  if (a.replicas > question.min_replicas) {
    for (size_t i = 0; i < seeds.size(); ++i) a.one_fewer.push_back(run_at(i, a.replicas - 1));
  }
  return a;
}

}  // namespace twinscale::sim
