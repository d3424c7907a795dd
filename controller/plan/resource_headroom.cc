// Headroom on every scarce resource: see resource_headroom.h.
#include "controller/plan/resource_headroom.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_set>

#include "simulator/model/latency_model.h"

namespace twinscale::plan {
namespace {

constexpr int32_t kPrefixBlockTokens = 512;

size_t Index(Resource r) { return static_cast<size_t>(r); }

// Seconds of GPU time to prefill `tokens` prompt tokens after `cached` tokens already in KV, in
// chunks of at most `budget`, each attending to everything before it.
double PrefillSeconds(const sim::LatencyModel& model, int64_t tokens, int64_t cached,
                      int64_t budget) {
  double seconds = 0;
  for (int64_t done = 0; done < tokens; done += budget) {
    const int64_t c = std::min(budget, tokens - done);
    sim::BatchShape shape;
    shape.prefill_seqs = 1;
    shape.prefill_tokens = c;
    shape.prefill_context_tokens = cached + done;
    shape.prefill_attention_pairs =
        static_cast<double>(c) * (static_cast<double>(cached + done) + (c + 1) / 2.0);
    seconds += model.StepTime(shape).seconds();
  }
  return seconds;
}

}  // namespace

double NearestRankP95(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::string_view ResourceName(Resource r) {
  switch (r) {
    case Resource::kRequests:
      return "requests";
    case Resource::kPrefill:
      return "prefill";
    case Resource::kDecode:
      return "decode";
    case Resource::kKvMemory:
      return "kv-memory";
    case Resource::kQueue:
      return "queue";
  }
  return "?";
}

std::string_view ResourceUnit(Resource r) {
  switch (r) {
    case Resource::kRequests:
      return "req/s";
    case Resource::kPrefill:
      return "prompt tokens/s";
    case Resource::kDecode:
      return "output tokens/s";
    case Resource::kKvMemory:
      return "KV tokens";
    case Resource::kQueue:
      return "requests";
  }
  return "?";
}

std::string_view RiskName(Risk r) {
  switch (r) {
    case Risk::kOkay:
      return "okay";
    case Risk::kTight:
      return "tight";
    case Risk::kShortfall:
      return "shortfall";
    case Risk::kMemoryRisk:
      return "memory risk";
  }
  return "?";
}

size_t WindowGrid::Index(double arrival_seconds) const {
  const double x = (arrival_seconds - first_seconds) / length_seconds;
  if (x < 0) return count;
  if (whole_trace) return x <= 1 ? 0 : count;
  return std::min(count, static_cast<size_t>(x));
}

WindowGrid WindowsOf(const sim::Trace& trace, absl::Duration window) {
  WindowGrid g;
  if (trace.requests.empty()) return g;
  g.length_seconds = absl::ToDoubleSeconds(window);
  g.first_seconds = trace.requests.front().arrival.seconds();
  const double span = trace.requests.back().arrival.seconds() - g.first_seconds;
  g.count = static_cast<size_t>(std::floor(span / g.length_seconds));
  if (g.count == 0) {
    g.count = 1;
    g.length_seconds = std::max(1.0, span);
    g.whole_trace = true;
  }
  return g;
}

std::vector<int64_t> ReusedPromptTokens(const sim::Trace& trace) {
  std::vector<int64_t> reused(trace.requests.size(), 0);
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const sim::RequestSpec& r = trace.requests[i];
    size_t lead = 0;  // leading blocks seen before
    while (lead < r.prefix_hashes.size() && seen.contains(r.prefix_hashes[lead])) ++lead;
    reused[i] = std::min<int64_t>(static_cast<int64_t>(lead) * kPrefixBlockTokens, r.prompt_tokens);
    // vLLM computes at least the prompt's last token, so a fully cached prompt still costs one.
    if (reused[i] >= r.prompt_tokens) reused[i] = r.prompt_tokens - 1;
    seen.insert(r.prefix_hashes.begin(), r.prefix_hashes.end());
  }
  return reused;
}

WorkloadMix MixOf(const sim::Trace& trace) {
  WorkloadMix m;
  if (trace.requests.empty()) return m;
  const std::vector<int64_t> reused = ReusedPromptTokens(trace);
  double prompt = 0, computed = 0, output = 0;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    prompt += trace.requests[i].prompt_tokens;
    computed += static_cast<double>(trace.requests[i].prompt_tokens - reused[i]);
    output += trace.requests[i].output_tokens;
  }
  const double n = static_cast<double>(trace.requests.size());
  m.prompt_mean = prompt / n;
  m.prompt_computed_mean = computed / n;
  m.output_mean = output / n;
  return m;
}

PerResource ReplicaCapacity(const sim::DeploymentSpec& d, const WorkloadMix& mix,
                            absl::Duration ttft_target) {
  PerResource cap{};
  const std::unique_ptr<sim::LatencyModel> model = sim::MakeLatencyModel(d);
  const int64_t budget = std::max(1, d.engine.max_num_batched_tokens);
  const double p = std::max(1.0, mix.prompt_mean);
  const double pc = std::clamp(mix.prompt_computed_mean, 1.0, p);
  const double o = std::max(1.0, mix.output_mean);
  const int64_t pc_tokens = std::max<int64_t>(1, std::llround(pc));
  const int64_t cached = std::max<int64_t>(0, std::llround(p) - pc_tokens);

  // Prefill: whole prompts filling the budget, or one prompt in chunks of it.
  if (pc_tokens <= budget) {
    const int64_t k = budget / pc_tokens;
    sim::BatchShape shape;
    shape.prefill_seqs = k;
    shape.prefill_tokens = k * pc_tokens;
    shape.prefill_context_tokens = k * cached;
    shape.prefill_attention_pairs = static_cast<double>(k) * static_cast<double>(pc_tokens) *
                                    (static_cast<double>(cached) + (pc_tokens + 1) / 2.0);
    cap[Index(Resource::kPrefill)] =
        static_cast<double>(shape.prefill_tokens) / model->StepTime(shape).seconds();
  } else {
    cap[Index(Resource::kPrefill)] =
        static_cast<double>(pc_tokens) / PrefillSeconds(*model, pc_tokens, cached, budget);
  }

  // Decode: the largest batch the engine runs, each sequence holding its prompt and half its
  // output.
  const double context = p + o / 2;
  const int64_t kv_tokens = sim::KvCapacityTokens(d);
  const int64_t batch = std::max<int64_t>(
      1, std::min<int64_t>(d.engine.max_num_seqs, static_cast<int64_t>(std::floor(
                                                      static_cast<double>(kv_tokens) / context))));
  sim::BatchShape decode;
  decode.decode_seqs = batch;
  decode.decode_context_tokens = std::llround(static_cast<double>(batch) * context);
  cap[Index(Resource::kDecode)] = static_cast<double>(batch) / model->StepTime(decode).seconds();

  // Requests: the steady mixed step, `batch_mixed` decodes and the prompt tokens that keep them
  // fed (P' per O decode tokens) within the budget, each request leaving after O of them.
  const double per_decode = pc / o;
  const int64_t batch_mixed = std::max<int64_t>(
      1, std::min<int64_t>(batch, static_cast<int64_t>(
                                      std::floor(static_cast<double>(budget) / (1 + per_decode)))));
  sim::BatchShape mixed;
  mixed.decode_seqs = batch_mixed;
  mixed.decode_context_tokens = std::llround(static_cast<double>(batch_mixed) * context);
  mixed.prefill_tokens = std::llround(static_cast<double>(batch_mixed) * per_decode);
  if (mixed.prefill_tokens > 0) {
    mixed.prefill_seqs =
        std::max<int64_t>(1, std::llround(static_cast<double>(mixed.prefill_tokens) / pc));
    mixed.prefill_context_tokens =
        std::llround(static_cast<double>(mixed.prefill_seqs) * static_cast<double>(cached));
    mixed.prefill_attention_pairs =
        static_cast<double>(mixed.prefill_tokens) * (static_cast<double>(cached) + (pc + 1) / 2.0);
  }
  cap[Index(Resource::kRequests)] =
      static_cast<double>(batch_mixed) / o / model->StepTime(mixed).seconds();
  cap[Index(Resource::kKvMemory)] = static_cast<double>(kv_tokens);
  cap[Index(Resource::kQueue)] =
      absl::ToDoubleSeconds(ttft_target) * cap[Index(Resource::kPrefill)] / pc;
  return cap;
}

PerResource ResourceDemand(const sim::Trace& trace, const DemandInputs& in) {
  PerResource demand{};
  if (trace.requests.empty()) return demand;
  const WindowGrid grid = WindowsOf(trace, kDemandWindow);
  const size_t windows = grid.count;
  const double length = grid.length_seconds;
  std::vector<double> requests(windows, 0), prefill(windows, 0), decode(windows, 0), kv(windows, 0);
  const std::vector<int64_t> reused = ReusedPromptTokens(trace);
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const sim::RequestSpec& r = trace.requests[i];
    const size_t k = grid.Index(r.arrival.seconds());
    if (k >= windows) continue;
    requests[k] += 1;
    prefill[k] += static_cast<double>(r.prompt_tokens - reused[i]);
    decode[k] += r.output_tokens;
    const double computed = static_cast<double>(r.prompt_tokens - reused[i]);
    kv[k] += static_cast<double>(r.prompt_tokens) * computed * in.prefill_seconds_per_token +
             (r.prompt_tokens + r.output_tokens / 2.0) * r.output_tokens * in.itl_seconds;
  }
  std::vector<double> queue(windows);
  for (size_t k = 0; k < windows; ++k) {
    requests[k] /= length;
    prefill[k] /= length;
    decode[k] /= length;
    kv[k] /= length;
    queue[k] = requests[k] * in.queue_delay_seconds;
  }
  demand[Index(Resource::kRequests)] = NearestRankP95(requests);
  demand[Index(Resource::kPrefill)] = NearestRankP95(prefill);
  demand[Index(Resource::kDecode)] = NearestRankP95(decode);
  demand[Index(Resource::kKvMemory)] = NearestRankP95(kv);
  demand[Index(Resource::kQueue)] = NearestRankP95(queue);
  return demand;
}

HeadroomTable Headroom(const PerResource& replica_capacity, const PerResource& demand,
                       int32_t replicas) {
  HeadroomTable t;
  t.planned_replicas = replicas;
  double least = std::numeric_limits<double>::infinity();
  for (Resource r : kResources) {
    ResourceHeadroom row;
    row.resource = r;
    row.demand = demand[Index(r)];
    row.capacity = replica_capacity[Index(r)] * std::max(0, replicas);
    row.headroom =
        row.capacity > 0 ? 1.0 - row.demand / row.capacity : (row.demand > 0 ? -1.0 : 1.0);
    if (r == Resource::kKvMemory) {
      row.risk = row.headroom < kTightBelow ? Risk::kMemoryRisk : Risk::kOkay;
    } else {
      row.risk = row.headroom < 0             ? Risk::kShortfall
                 : row.headroom < kTightBelow ? Risk::kTight
                                              : Risk::kOkay;
    }
    if (r != Resource::kRequests && row.headroom < least) {
      least = row.headroom;
      t.binding = r;
    }
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace twinscale::plan
