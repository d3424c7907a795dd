// The resolved deployment as JSON: what `twinscale simulate --output json` echoes so a result
// carries the exact configuration it came from (profiles, overrides and defaults all applied).
//
// Keys are the camelCase of the profile YAML (simulator/profiles/), so an echoed section can be
// pasted back into a profile: gpu {memoryMiB, peakTflops, memoryBandwidthTBps, interconnectGBps},
// model {parameters, layers, ..., activationWorkspaceGiB}, tensorParallel, engine {maxNumSeqs,
// maxNumBatchedTokens, gpuMemoryUtilization, blockSize, enablePrefixCaching,
// schedulerReserveFullIsl, longPrefillTokenThreshold, kvCapacityTokens (the override; 0 =
// computed), maxModelLen}, latencyModel,
// roofline {...}, linear {b0..a2}, lifecycle {...}.
// Durations are absl::FormatDuration strings ("30s", "1.5ms", "6.91042ms"), which
// absl::ParseDuration reads back exactly. Every section is present whichever latency model is
// active. A "derived" object adds what the arithmetic gives: kvCapacityTokens, kvCapacityBlocks,
// kvBytesPerTokenPerGpu, weightBytesPerGpu (bytes, integers).
#ifndef TWINSCALE_CONTROLLER_CLI_DEPLOYMENT_JSON_H_
#define TWINSCALE_CONTROLLER_CLI_DEPLOYMENT_JSON_H_

#include "nlohmann/json.hpp"
#include "simulator/model/deployment.h"

namespace twinscale::cli {

nlohmann::ordered_json DeploymentToJson(const twinscale::sim::DeploymentSpec& d);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_DEPLOYMENT_JSON_H_
