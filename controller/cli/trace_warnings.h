// What a user should hear about a trace before it is simulated or replayed, rather than find in a
// count afterwards: rows the reader put back in time order, and requests no replica can ever
// serve (longer than max_model_len or the whole KV cache: vLLM refuses them, and the twin counts
// each as a rejected request, a miss). One line each; none when there is nothing to say.
#ifndef TWINSCALE_CONTROLLER_CLI_TRACE_WARNINGS_H_
#define TWINSCALE_CONTROLLER_CLI_TRACE_WARNINGS_H_

#include <string>
#include <vector>

#include "simulator/model/deployment.h"
#include "simulator/workload/trace.h"

namespace twinscale::cli {

std::vector<std::string> TraceWarnings(const sim::Trace& trace, const sim::DeploymentSpec& d);

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_TRACE_WARNINGS_H_
