// DeploymentToJson: the resolved DeploymentSpec in the profile YAML's vocabulary (see the header).
#include "controller/cli/deployment_json.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "simulator/core/time.h"
#include "simulator/model/deployment.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::cli {
namespace {

using nlohmann::ordered_json;
using sim::SimDuration;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// absl::FormatDuration, except zero reads "0s" rather than "0" (both parse back).
std::string DurationText(absl::Duration d) {
  return d == absl::ZeroDuration() ? "0s" : absl::FormatDuration(d);
}

std::string Duration(SimDuration d) { return DurationText(d.ToAbsl()); }

// The spec keeps model coefficients as double microseconds; whole nanoseconds are what the YAML
// can express, so rounding to them loses nothing a profile said.
std::string MicrosDuration(double us) {
  return DurationText(absl::Nanoseconds(std::llround(us * 1e3)));
}

ordered_json Delay(const sim::DelayDistribution& d) {
  ordered_json j;
  j["median"] = Duration(d.median);
  j["p90OverMedian"] = d.p90_over_median;
  return j;
}

}  // namespace

ordered_json DeploymentToJson(const sim::DeploymentSpec& d) {
  ordered_json j;
  j["name"] = d.name;

  ordered_json& model = j["model"];
  model["name"] = d.model.name;
  model["parameters"] = d.model.params;
  model["layers"] = d.model.layers;
  model["queryHeads"] = d.model.query_heads;
  model["kvHeads"] = d.model.kv_heads;
  model["headDim"] = d.model.head_dim;
  model["hidden"] = d.model.hidden;
  model["ffn"] = d.model.ffn;
  model["vocab"] = d.model.vocab;
  model["dtypeBytes"] = d.model.dtype_bytes;
  model["activationWorkspaceGiB"] = d.model.activation_workspace_bytes / kGiB;

  ordered_json& gpu = j["gpu"];
  gpu["name"] = d.gpu.name;
  gpu["memoryMiB"] = d.gpu.memory_bytes / kMiB;
  gpu["peakTflops"] = d.gpu.peak_flops / 1e12;
  gpu["memoryBandwidthTBps"] = d.gpu.memory_bandwidth / 1e12;
  gpu["interconnectGBps"] = d.gpu.interconnect_bandwidth / 1e9;

  j["tensorParallel"] = d.tensor_parallel;

  ordered_json& engine = j["engine"];
  engine["maxNumSeqs"] = d.engine.max_num_seqs;
  engine["maxNumBatchedTokens"] = d.engine.max_num_batched_tokens;
  engine["gpuMemoryUtilization"] = d.engine.gpu_memory_utilization;
  engine["blockSize"] = d.engine.block_size;
  engine["enablePrefixCaching"] = d.engine.enable_prefix_caching;
  engine["schedulerReserveFullIsl"] = d.engine.reserve_full_prompt;
  engine["longPrefillTokenThreshold"] = d.engine.long_prefill_token_threshold;
  engine["kvCapacityTokens"] = d.engine.kv_capacity_tokens_override;
  engine["maxModelLen"] = d.engine.max_model_len;

  j["latencyModel"] = std::string(sim::LatencyModelKindName(d.latency_model));

  ordered_json& roofline = j["roofline"];
  roofline["mfu"] = d.roofline.mfu;
  roofline["attentionMfu"] = d.roofline.attention_mfu;
  roofline["bandwidthEfficiency"] = d.roofline.bandwidth_efficiency;
  roofline["perLayerOverhead"] = MicrosDuration(d.roofline.per_layer_overhead_us);
  roofline["perStepOverhead"] = MicrosDuration(d.roofline.per_step_overhead_us);
  roofline["allreduceLatency"] = MicrosDuration(d.roofline.allreduce_latency_us);
  roofline["frontEndDelay"] = MicrosDuration(d.roofline.front_end_delay_us);
  roofline["tokenEmissionDelay"] = MicrosDuration(d.roofline.token_emission_delay_us);

  ordered_json& linear = j["linear"];
  linear["b0"] = MicrosDuration(d.linear.b0_us);
  linear["b1"] = MicrosDuration(d.linear.b1_us);
  linear["b2"] = MicrosDuration(d.linear.b2_us);
  linear["a0"] = MicrosDuration(d.linear.a0_us);
  linear["a1"] = MicrosDuration(d.linear.a1_us);
  linear["a2"] = MicrosDuration(d.linear.a2_us);

  ordered_json& lifecycle = j["lifecycle"];
  lifecycle["provisioning"] = Delay(d.lifecycle.provisioning);
  lifecycle["loading"] = Delay(d.lifecycle.loading);
  lifecycle["warmingUp"] = Delay(d.lifecycle.warming_up);
  lifecycle["slowPeriod"] = Duration(d.lifecycle.slow_period);
  lifecycle["slowFactor"] = d.lifecycle.slow_factor;
  lifecycle["drainGrace"] = Duration(d.lifecycle.drain_grace);

  ordered_json& derived = j["derived"];
  derived["kvCapacityTokens"] = sim::KvCapacityTokens(d);
  derived["kvCapacityBlocks"] = sim::KvCapacityBlocks(d);
  derived["kvBytesPerTokenPerGpu"] = std::llround(sim::KvBytesPerTokenPerGpu(d));
  derived["weightBytesPerGpu"] = std::llround(sim::WeightBytesPerGpu(d));
  return j;
}

}  // namespace twinscale::cli
