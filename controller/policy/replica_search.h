// The searches over fleet sizes behind Recommend, as pure helpers, so that an offline check (the
// decision corpus, controller/replay/decision_corpus.h) asks exactly the questions a decision asks.
//
// Both searches assume the forecast is monotone in the fleet size (more replicas never forecast
// worse; the twin's common random numbers make it so up to noise) and return the smallest size
// that meets the SLO. Under monotonicity that answer does not depend on the order in which sizes
// are tried, so they gallop away from the size already known (the current one), where the answer
// usually is: a decision near the current size costs two or three what-ifs instead of a
// bisection over [minReplicas, maxReplicas], whose low end (an overloaded fleet) is also the most
// expensive to simulate.
//
// Pure: no I/O, no clock. Thread-safe as far as the forecaster and callback are.
#ifndef TWINSCALE_CONTROLLER_POLICY_REPLICA_SEARCH_H_
#define TWINSCALE_CONTROLLER_POLICY_REPLICA_SEARCH_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "controller/policy/forecaster.h"

namespace twinscale::policy {

// The question Recommend asks about fleet size `n` when the current (base) size is `base`:
// `not_counted` starting pods hold slots without capacity, so the twin simulates n - not_counted
// (at least 1); keeping or adding capacity is judged from the warm-up on (before it, the fleet
// already ordered is all there is), removing capacity from now; and the TTFT targets are scaled by
// `margin` (1 for the SLO itself, the safety margin for scale-in). `base_question` carries the
// configured targets and everything else (candidate_replicas and judge_from are overwritten).
ForecastQuestion CandidateQuestion(const ForecastQuestion& base_question, int32_t n, int32_t base,
                                   int32_t not_counted, double margin);

// The best any fleet could do: `max_replicas`, all Ready now (the observed ones plus idle ones),
// nothing pending, judged from now, at the TTFT targets scaled by `margin`. Requests that miss even
// then (a prompt too long to prefill within the threshold) can't be fixed by scaling. Its
// attainment becomes a target, so it is asked for within kCeilingTolerance: where a fleet's
// attainment is flat in its size (the target sits just under that plateau), an error of a point
// in the target moves the answer by several replicas. That precision matters only where the
// ceiling binds, so the question's percentile is where that starts (the base question's target +
// kCeilingBelowTarget points, at most 100): a ceiling clearly above it is settled by its first
// batch (ForecastQuestion::attainment_tolerance). On the Azure code trace at x20 the ceilings sat
// at 96.4-100% (median 98.6%) against a 96% binding level, and growing each one to the tolerance
// would be a sixth of the twin's work.
inline constexpr double kCeilingTolerance = 0.002;
ForecastQuestion CeilingQuestion(const ForecastQuestion& base_question, int32_t max_replicas,
                                 double margin);
// The attainment target (in percent) that ceiling allows: one point below what it reaches.
inline constexpr double kCeilingBelowTarget = 1.0;
inline double CeilingTarget(const Forecast& ceiling) {
  return 100 * ceiling.attainment - kCeilingBelowTarget;
}

struct ReplicaSearch {
  int32_t replicas = 0;  // the answer (see each search for the value when nothing meets)
  bool met = false;      // some size tried in the range met the SLO
  Forecast forecast;     // the forecast at `replicas` when met
  int32_t evaluations = 0;
};

// Guided by the attainments: `target` is the attainment (a share) a size must reach to meet the
// SLO, and the searches read where the line through the last two sizes asked crosses it. A size
// at the SLO's edge is a what-if's dearest (the twin grows its sample there, up to its request
// budget), and the answer's neighbours are always among them: a search that lands on the answer
// and its neighbour from a good reading of the curve saves the edge's what-ifs in between. The
// reading only ever moves a gallop further than its doubling (by at most one more doubling) or,
// a bounded number of times, picks a size inside the range a plain search would try next, so it
// keeps the plain search's logarithmic bound. target <= 0, or forecasts whose verdict does not
// follow from their attainment (an ITL miss): the plain search.

// Scale-up: `miss` is known to miss the SLO (with `at_miss`, its forecast, when known). The
// smallest n in (miss, hi] that meets it: tries miss + 1, miss + 2, miss + 4, ... (capped at hi,
// further where the misses put the crossing further) until one meets, then bisects between the
// last miss and that hit (its first probes where the line between them crosses the target).
// When even hi misses: replicas = hi, met = false.
ReplicaSearch SearchUp(int32_t miss, int32_t hi, absl::FunctionRef<Forecast(int32_t)> evaluate,
                       double target = 0, std::optional<Forecast> at_miss = std::nullopt);

// Scale-in: the smallest n in [lo, keep) that meets the SLO, `keep` being the size to stay at when
// none does (replicas = keep, met = false; `at_keep` its forecast when known). Tries keep - 1
// first (the usual answer is "no"), then keep - 2, keep - 4, ... (floored at lo; or the size the
// sizes that met predict to be the smallest that meets) until one misses, then bisects between
// that miss and the last hit. lo >= 1.
ReplicaSearch SearchDown(int32_t lo, int32_t keep, absl::FunctionRef<Forecast(int32_t)> evaluate,
                         double target = 0, std::optional<Forecast> at_keep = std::nullopt);

// The smallest N in [lo, hi] whose forecast for `question` (candidate_replicas = N, every other
// field as given) meets the SLO, starting at `start` (clamped to [lo, hi]): if it meets, search
// down, else up, guided by the question's percentile. When even hi misses: replicas = hi, met =
// false. lo >= 1.
ReplicaSearch SmallestMeetingReplicas(const ForecastQuestion& question,
                                      const Forecaster& forecaster, int32_t lo, int32_t hi,
                                      int32_t start);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_REPLICA_SEARCH_H_
