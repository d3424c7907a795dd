// A scenario of a capacity review applied to the baseline's trace: the changes a launch might
// bring, each a transform of the requests, applied in this order (so "rate x2 with prompts x2"
// means twice the requests, each prompt twice as long):
// - rate x k: sim::ScaleRate in its shape-keeping mode (copies jittered by up to 60 s; extra
//   copies carry prefix ids of their own, other users' prompts);
// - prompt length x k: every prompt x k (rounded, at least 1); its prefix ids kept for the blocks
//   it still has, new ids of its own for the blocks it gains (new text shares nothing);
// - output length x k: every output x k (rounded, at least 1);
// - a long-context cohort: each request, with probability `share`, gets a prompt of `promptTokens`
//   with no prefix ids (a document no one sent before);
// - a retry spike: each request arriving in [start, start + span), with probability `share`, is
//   sent again `timeout` after it arrived (the same prompt, its prefix ids kept: a retry is the
//   same text);
// - a prefix-cache miss: every block's prefix id made unique, so nothing is reused (the cache is
//   still asked, and misses);
// - a burst: the window [at, at + window) gets requests added until it holds peakToMean x the
//   trace's mean rate (taken before the burst) x the window's length, each a copy of a request of
//   the trace drawn at random (its lengths; no prefix ids), arriving uniformly in the window; a
//   window already that busy is left as it is.
// The result is normalised (sorted by arrival, ids renumbered; sim::NormalizeTrace).
// Deterministic for a seed (Stream::kPlanScenario, one index per change). Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_SCENARIO_H_
#define TWINSCALE_CONTROLLER_PLAN_SCENARIO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "controller/plan/review.h"
#include "simulator/workload/trace.h"

namespace twinscale::plan {

// The scenario's changes in words: "rate x2, prompts x1.5, 5% with 32000-token prompts, ...";
// "none" when it changes nothing.
std::string DescribeChanges(const Scenario& s);

// About how many requests ApplyScenario makes of a baseline of `requests` over `span_seconds`
// (an upper bound up to rounding), before making them.
double EstimatedRequests(const Scenario& s, double requests, double span_seconds);

// `baseline` (normalised: first arrival at 0) with the scenario's changes. InvalidArgument, naming
// the scenario, for a burst window that does not fit in the trace's span, a retry window that
// starts after the trace's last arrival, or an empty baseline.
absl::StatusOr<sim::Trace> ApplyScenario(const sim::Trace& baseline, const Scenario& s,
                                         uint64_t seed);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_SCENARIO_H_
