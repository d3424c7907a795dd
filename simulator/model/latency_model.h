// How long one engine step takes, given the shape of the batch it runs. Pluggable: `roofline`
// (physics of the GPU) and `linear` (a fitted BLIS-style model), both optionally scaled by two
// calibration factors (prefill speed, decode speed) fitted online by the controller.
//
// roofline: step = max(GEMM FLOPs / (peak x mfu), (weights + KV read of every running sequence's
//   context) / (bandwidth x efficiency)) + prefill attention (quadratic in the prompt) / (peak x
//   attention_mfu) + layers x per-layer overhead + per-step overhead + TP all-reduce time.
// linear: step = b0 + b1 x prefill tokens + b2 x decode tokens.
//
// Speed factors divide the prefill terms by SpeedFactors::prefill and the decode terms by
// SpeedFactors::decode. roofline: the compute leg of the max is split token by token (prefill
// tokens' GEMMs / prefill, decode tokens' GEMMs / decode), the memory leg is divided by decode,
// the attention term by prefill; overheads and the all-reduce are not scaled (latency_model.cc
// says why). linear: b1 / prefill, b2 / decode; b0 and the a's are not scaled.
//
// Implementations are immutable after construction and safe to share between threads.
#ifndef TWINSCALE_SIMULATOR_MODEL_LATENCY_MODEL_H_
#define TWINSCALE_SIMULATOR_MODEL_LATENCY_MODEL_H_

#include <cstdint>
#include <memory>

#include "simulator/core/time.h"
#include "simulator/model/deployment.h"

namespace twinscale::sim {

// Aggregate shape of one step. Everything the models need, in O(1) from the engine's counters.
struct BatchShape {
  int64_t decode_seqs = 0;             // sequences producing one token each this step
  int64_t decode_context_tokens = 0;   // sum over decode sequences of tokens already in KV
  int64_t prefill_seqs = 0;            // sequences running a prefill chunk this step
  int64_t prefill_tokens = 0;          // sum of chunk sizes
  int64_t prefill_context_tokens = 0;  // sum over chunks of tokens already in KV before the chunk
  // Sum over chunks of c x (prefix + (c + 1) / 2): query-key pairs of causal attention, the
  // quadratic term that dominates very long prompts.
  double prefill_attention_pairs = 0;
};

// Multiplicative speed factors: 1 = the profile's speed; 2 = twice as fast. Bounded by the
// controller's calibration; the simulator accepts any positive value.
struct SpeedFactors {
  double prefill = 1.0;
  double decode = 1.0;
};

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  // GPU time of one step with this shape (> 0 when the shape is non-empty).
  virtual SimDuration StepTime(const BatchShape& shape) const = 0;
  // StepTime of `count` consecutive steps of `decode_seqs` decodes and nothing else, the first with
  // `context_tokens` of context and each next one with decode_seqs more, into out[0, count): the
  // same durations as StepTime gives one by one, in one call (coalesced steps; replica.h).
  virtual void DecodeStepTimes(int64_t decode_seqs, int64_t context_tokens, int64_t count,
                               SimDuration* out) const;
  // Time in the API server before the request reaches the engine's waiting queue.
  virtual SimDuration FrontEndDelay(int32_t prompt_tokens) const = 0;
  // Delay between the end of a step and the emission of the token it produced.
  virtual SimDuration TokenEmissionDelay() const = 0;
};

std::unique_ptr<LatencyModel> MakeLatencyModel(const DeploymentSpec& deployment,
                                               SpeedFactors speed = {});

// A request's time to first token alone on an idle engine: the front end's delay, its prompt in
// chunks of the engine's per-step limit (max_num_batched_tokens, or long_prefill_token_threshold
// when set and smaller), one step each and each attending to the chunks before it, then the first
// token's emission. No load can make a request faster than this; what load adds is the wait.
SimDuration UnloadedTtft(const LatencyModel& model, const EngineLimits& engine,
                         int32_t prompt_tokens);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_LATENCY_MODEL_H_
