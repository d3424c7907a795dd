// The two latency models behind LatencyModel: `roofline` (the GPU's physics) and `linear` (BLIS's
// fitted form). StepTime runs once per engine step, millions of times per run, so every constant
// is folded in the constructor (speed factors included) and StepTime is a handful of
// multiply-adds: no allocation, no division, no branches beyond the empty-shape check and the max.
//
// Where the calibration factors act (SpeedFactors: 2 = twice as fast):
//   roofline step = max(C_prefill / f_p + C_decode / f_d,  M / f_d)      the forward pass
//                 + A / f_p                                             prefill attention
//                 + layers x per_layer + per_step + all-reduce          fixed costs, unscaled
//   where C_prefill = prefill tokens' GEMM time, C_decode = decode tokens' GEMM time, M = time to
//   read the weights and every sequence's KV context (plus write the new prefill KV), and A = the
//   causal attention of the prefill chunks. The compute leg of the max is split token by token
//   between the two factors; the memory leg is decode's, because a step with decodes in it is
//   memory-bound and the decode factor is fitted from inter-token latency against batch size,
//   which is exactly that leg. Overheads and the all-reduce are CPU and interconnect costs that
//   neither fitted slope measures, so they stay as the profile sets them. A factor of k on a term
//   is the same as k x the efficiency it divides by (mfu, attention_mfu, bandwidth_efficiency).
//   linear step = b0 + b1 x prefill tokens / f_p + b2 x decode tokens / f_d.
#include "simulator/model/latency_model.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "simulator/core/time.h"
#include "simulator/model/deployment.h"

namespace twinscale::sim {
namespace {

bool IsEmpty(const BatchShape& s) { return s.decode_seqs <= 0 && s.prefill_tokens <= 0; }

// The times of `count` decode steps of `decode_seqs` sequences whose contexts grow by one token
// each step, from `context_tokens` in all: step_time(shape) per step.
template <typename StepTimeFn>
void FillDecodeStepTimes(const StepTimeFn& step_time, int64_t decode_seqs, int64_t context_tokens,
                         int64_t count, SimDuration* out) {
  BatchShape shape;
  shape.decode_seqs = decode_seqs;
  for (int64_t i = 0; i < count; ++i) {
    shape.decode_context_tokens = context_tokens + i * decode_seqs;
    out[i] = step_time(shape);
  }
}

// DecodeStepTimes for a model class: its own StepTime, called without virtual dispatch so the
// loop inlines it (the steps are independent, so their arithmetic overlaps).
template <typename Model>
void DecodeStepTimesOf(const Model& m, int64_t decode_seqs, int64_t context_tokens, int64_t count,
                       SimDuration* out) {
  FillDecodeStepTimes([&m](const BatchShape& s) { return m.Model::StepTime(s); }, decode_seqs,
                      context_tokens, count, out);
}

class RooflineModel final : public LatencyModel {
 public:
  RooflineModel(const DeploymentSpec& d, SpeedFactors speed) {
    const RooflineParams& r = d.roofline;
    const int32_t tp = std::max<int32_t>(1, d.tensor_parallel);
    const double layers = d.model.layers;
    constexpr double kUsPerS = 1e6;

    // GEMMs: 2 FLOPs per parameter per token, the parameters split over TP ranks.
    const double gemm_us_per_token =
        2.0 * d.model.params / tp / (d.gpu.peak_flops * r.mfu) * kUsPerS;
    prefill_gemm_us_per_token_ = gemm_us_per_token / speed.prefill;
    decode_gemm_us_per_token_ = gemm_us_per_token / speed.decode;

    // HBM traffic: the weights once per step, and every token of KV the step reads or writes.
    const double effective_bandwidth = d.gpu.memory_bandwidth * r.bandwidth_efficiency;
    weight_read_us_ = WeightBytesPerGpu(d) / effective_bandwidth * kUsPerS / speed.decode;
    kv_us_per_token_ = KvBytesPerTokenPerGpu(d) / effective_bandwidth * kUsPerS / speed.decode;

    // Causal attention of prefill chunks: QK^T and PV are 2 x head_dim FLOPs each per query-key
    // pair per query head, in every layer; the heads are split over TP ranks.
    const double attention_flops_per_pair =
        4.0 * layers * d.model.query_heads * d.model.head_dim / tp;
    attention_us_per_pair_ =
        attention_flops_per_pair / (d.gpu.peak_flops * r.attention_mfu) * kUsPerS / speed.prefill;

    // Fixed per step: launches per layer, the engine's CPU work, and with TP > 1 two all-reduces
    // per layer (after attention and after the MLP), each a latency plus a ring's
    // 2 (TP - 1) / TP x the activation bytes (tokens x hidden x dtype) over the interconnect.
    fixed_us_ = layers * r.per_layer_overhead_us + r.per_step_overhead_us;
    allreduce_us_per_token_ = 0;
    if (tp > 1) {
      const double allreduces = 2.0 * layers;
      fixed_us_ += allreduces * r.allreduce_latency_us;
      const double ring_share = 2.0 * (tp - 1) / tp;
      allreduce_us_per_token_ = allreduces * ring_share * d.model.hidden * d.model.dtype_bytes /
                                d.gpu.interconnect_bandwidth * kUsPerS;
    }
    front_end_delay_ = SimDuration::FromMicrosF(r.front_end_delay_us);
    token_emission_delay_ = SimDuration::FromMicrosF(r.token_emission_delay_us);
  }

  SimDuration StepTime(const BatchShape& s) const override {
    if (IsEmpty(s)) return SimDuration::Zero();
    const double prefill = static_cast<double>(s.prefill_tokens);
    const double decode = static_cast<double>(s.decode_seqs);
    const double compute_us =
        prefill * prefill_gemm_us_per_token_ + decode * decode_gemm_us_per_token_;
    const double kv_tokens =
        static_cast<double>(s.decode_context_tokens + s.prefill_context_tokens + s.prefill_tokens);
    const double memory_us = weight_read_us_ + kv_tokens * kv_us_per_token_;
    const double us = std::max(compute_us, memory_us) +
                      s.prefill_attention_pairs * attention_us_per_pair_ + fixed_us_ +
                      (prefill + decode) * allreduce_us_per_token_;
    return SimDuration::FromMicrosF(us);
  }

  void DecodeStepTimes(int64_t decode_seqs, int64_t context_tokens, int64_t count,
                       SimDuration* out) const override {
    DecodeStepTimesOf(*this, decode_seqs, context_tokens, count, out);
  }
  SimDuration FrontEndDelay(int32_t) const override { return front_end_delay_; }
  SimDuration TokenEmissionDelay() const override { return token_emission_delay_; }

 private:
  double prefill_gemm_us_per_token_;
  double decode_gemm_us_per_token_;
  double weight_read_us_;
  double kv_us_per_token_;
  double attention_us_per_pair_;
  double fixed_us_;
  double allreduce_us_per_token_;
  SimDuration front_end_delay_;
  SimDuration token_emission_delay_;
};

class LinearModel final : public LatencyModel {
 public:
  LinearModel(const LinearCoefficients& c, SpeedFactors speed)
      : b0_us_(c.b0_us),
        b1_us_(c.b1_us / speed.prefill),
        b2_us_(c.b2_us / speed.decode),
        a0_us_(c.a0_us),
        a1_us_(c.a1_us),
        token_emission_delay_(SimDuration::FromMicrosF(c.a2_us)) {}

  SimDuration StepTime(const BatchShape& s) const override {
    if (IsEmpty(s)) return SimDuration::Zero();
    return SimDuration::FromMicrosF(b0_us_ + b1_us_ * static_cast<double>(s.prefill_tokens) +
                                    b2_us_ * static_cast<double>(s.decode_seqs));
  }
  void DecodeStepTimes(int64_t decode_seqs, int64_t context_tokens, int64_t count,
                       SimDuration* out) const override {
    DecodeStepTimesOf(*this, decode_seqs, context_tokens, count, out);
  }
  SimDuration FrontEndDelay(int32_t prompt_tokens) const override {
    return SimDuration::FromMicrosF(a0_us_ + a1_us_ * prompt_tokens);
  }
  SimDuration TokenEmissionDelay() const override { return token_emission_delay_; }

 private:
  double b0_us_, b1_us_, b2_us_;
  double a0_us_, a1_us_;
  SimDuration token_emission_delay_;
};

}  // namespace

void LatencyModel::DecodeStepTimes(int64_t decode_seqs, int64_t context_tokens, int64_t count,
                                   SimDuration* out) const {
  FillDecodeStepTimes([this](const BatchShape& s) { return StepTime(s); }, decode_seqs,
                      context_tokens, count, out);
}

std::unique_ptr<LatencyModel> MakeLatencyModel(const DeploymentSpec& deployment,
                                               SpeedFactors speed) {
  switch (deployment.latency_model) {
    case LatencyModelKind::kLinear:
      return std::make_unique<LinearModel>(deployment.linear, speed);
    case LatencyModelKind::kRoofline:
      break;
  }
  return std::make_unique<RooflineModel>(deployment, speed);
}

SimDuration UnloadedTtft(const LatencyModel& model, const EngineLimits& engine,
                         int32_t prompt_tokens) {
  int64_t chunk_limit = std::max(1, engine.max_num_batched_tokens);
  if (engine.long_prefill_token_threshold > 0) {
    chunk_limit = std::min<int64_t>(chunk_limit, engine.long_prefill_token_threshold);
  }
  const int64_t prompt = std::max(1, prompt_tokens);
  SimDuration t = model.FrontEndDelay(prompt_tokens);
  for (int64_t done = 0; done < prompt;) {
    const int64_t chunk = std::min(chunk_limit, prompt - done);
    BatchShape shape;
    shape.prefill_seqs = 1;
    shape.prefill_tokens = chunk;
    shape.prefill_context_tokens = done;
    shape.prefill_attention_pairs =
        static_cast<double>(chunk) * (static_cast<double>(done) + (chunk + 1) / 2.0);
    t += model.StepTime(shape);
    done += chunk;
  }
  return t + model.TokenEmissionDelay();
}

}  // namespace twinscale::sim
