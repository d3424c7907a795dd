// Headroom on every scarce resource: what one replica of a deployment sustains of each, what a
// scenario's traffic demands of it at its 95th-percentile minute, and the headroom between them.
// A launch fails on the resource nobody forecast: the request rate matches the plan, yet the
// average prompt doubled and prefill, not decode, runs out. The arithmetic is the profile's own
// step-time model, so every figure can be worked by hand (resource_headroom_test.cc does).
//
// What one replica sustains (ReplicaCapacity), for a mix of mean prompt P and mean output O tokens:
// - prefill, prompt tokens/s: steps full of prefill at the engine's token budget B
//   (max_num_batched_tokens): B / StepTime(B prompt tokens), the prompts whole in the step when
//   P <= B (B / P of them), else one prompt in chunks of B, each attending to those before it
//   (its whole prefill time over P).
// - decode, output tokens/s: the largest batch the engine runs, b = min(max_num_seqs, KV tokens /
//   (P + O / 2)), each sequence holding its prompt and half its output on average:
//   b / StepTime(b decodes).
// - requests/s: the steady mixed step of continuous batching, where decodes ride in the same
//   steps as the prompt tokens that keep them fed: b' = min(b, B / (1 + P' / O)) decodes and
//   b' x P' / O prompt tokens per step (P' being the prompt tokens computed, less the prefix
//   cache's reuse), b' / O requests finishing per step: (b' / O) / StepTime(that step). It is not
//   a resource of its own but what prefill, decode and memory together allow, so it is never
//   the binding resource.
// - KV memory, active tokens: sim::KvCapacityTokens.
// - queue depth: the requests a replica can hold waiting and still prefill them within the TTFT
//   target of a mean prompt: (ttft + perPromptToken x P) x prefill / P'.
// Every capacity is an upper bound: continuous batching mixes prefill and decode in one step and
// never runs at the full budget all the time; the headroom read against it is the most a fleet
// has, which the risk words below allow for.
//
// Demand (ResourceDemand), from a trace in windows of 60 s aligned to its first arrival, each
// resource's 95th percentile over the windows (nearest rank; windows with no arrival count):
// requests/s, prompt tokens computed/s (the prompt tokens less the prefix cache's reuse: a
// request's leading blocks whose prefix ids an earlier request carried, an ideal cache), output
// tokens/s; active KV tokens by Little's law, each request holding its whole prompt through its
// prefill (the engine reserves the prompt's blocks when it admits it: prompt x computed tokens x
// the prefill time per token) and (prompt + output / 2) tokens for output x ITL seconds, summed
// over the window's arrivals over 60 s; queue depth by Little's law, the window's arrival rate x
// the mean queueing delay. The ITL, prefill time per token and queueing delay are the pace of a
// fleet serving within the SLO (inputs here; capacity_plan.h takes the baseline's at its answer):
// the demand is the traffic's, served as it should be, not the backlog of a fleet too small for
// it.
//
// Headroom = 1 - demand / capacity (negative: short). Risk: `shortfall` below 0, `tight` below
// kTightBelow, else `okay`; KV memory says `memory risk` below kTightBelow (the engine preempts
// when it runs out, and recomputation then costs prefill time). The binding resource is the one
// with the least headroom among prefill, decode, KV memory and queue depth.
//
// Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_RESOURCE_HEADROOM_H_
#define TWINSCALE_CONTROLLER_PLAN_RESOURCE_HEADROOM_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "simulator/model/deployment.h"
#include "simulator/workload/trace.h"

namespace twinscale::plan {

// A p95 minute within 20% of the limit: a minute-to-minute spread of that size (a Poisson count of
// 25 per second over a minute varies by 2.6%; real traffic's minutes by 10-20%) reaches it.
inline constexpr double kTightBelow = 0.20;
// The window demand is counted in.
inline constexpr absl::Duration kDemandWindow = absl::Seconds(60);

enum class Resource { kRequests, kPrefill, kDecode, kKvMemory, kQueue };
inline constexpr std::array<Resource, 5> kResources = {Resource::kRequests, Resource::kPrefill,
                                                       Resource::kDecode, Resource::kKvMemory,
                                                       Resource::kQueue};
// "requests", "prefill", "decode", "kv-memory", "queue".
std::string_view ResourceName(Resource r);
// "req/s", "prompt tokens/s", "output tokens/s", "KV tokens", "requests".
std::string_view ResourceUnit(Resource r);

enum class Risk { kOkay, kTight, kShortfall, kMemoryRisk };
std::string_view RiskName(Risk r);  // "okay", "tight", "shortfall", "memory risk"

// The windows demand is counted in: whole windows of `window` from the trace's first arrival (a
// last, partial one would read its few requests as a rate over a full window or, divided by its
// own length, as a spike); a trace shorter than one window is one window of its own length (at
// least a second, holding every arrival). Index(t) is the window of an arrival at t, `count` when
// it is past the last.
struct WindowGrid {
  double first_seconds = 0;
  double length_seconds = 60;
  size_t count = 0;
  bool whole_trace = false;  // the one window of a short trace, its last arrival included
  size_t Index(double arrival_seconds) const;
};
WindowGrid WindowsOf(const sim::Trace& trace, absl::Duration window);

// The 95th percentile of `values` by nearest rank (the ceil(0.95 n)-th smallest); 0 when empty.
double NearestRankP95(std::vector<double> values);

// A workload's mix, as the capacities need it.
struct WorkloadMix {
  double prompt_mean = 0;           // tokens per request
  double prompt_computed_mean = 0;  // less the prefix cache's reuse
  double output_mean = 0;
};
WorkloadMix MixOf(const sim::Trace& trace);

// Indexed by Resource.
using PerResource = std::array<double, 5>;

// What one replica of `d` sustains of each resource for `mix` (see the file comment). `ttft_target`
// is the SLO's TTFT for a mean prompt (threshold + per-prompt-token allowance x P).
PerResource ReplicaCapacity(const sim::DeploymentSpec& d, const WorkloadMix& mix,
                            absl::Duration ttft_target);

// The prompt tokens of each request the prefix cache could skip: its leading 512-token blocks whose
// prefix ids an earlier request (in arrival order) carried. Indexed like trace.requests.
std::vector<int64_t> ReusedPromptTokens(const sim::Trace& trace);

// The demand of `trace` (see the file comment) at its 95th-percentile window.
struct DemandInputs {
  double itl_seconds = 0;                // the twin's mean inter-token latency
  double prefill_seconds_per_token = 0;  // its prefill time over the prompt tokens computed
  double queue_delay_seconds = 0;        // its mean queueing delay
};
PerResource ResourceDemand(const sim::Trace& trace, const DemandInputs& in);

struct ResourceHeadroom {
  Resource resource = Resource::kRequests;
  double demand = 0;    // at the p95 window
  double capacity = 0;  // of the planned fleet
  double headroom = 0;  // 1 - demand / capacity
  Risk risk = Risk::kOkay;
};
struct HeadroomTable {
  int32_t planned_replicas = 0;
  std::vector<ResourceHeadroom> rows;  // in kResources order
  Resource binding = Resource::kPrefill;
};

// `replicas` x the per-replica capacity against the demand.
HeadroomTable Headroom(const PerResource& replica_capacity, const PerResource& demand,
                       int32_t replicas);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_RESOURCE_HEADROOM_H_
