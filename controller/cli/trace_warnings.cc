// Trace warnings: see trace_warnings.h.
#include "controller/cli/trace_warnings.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace twinscale::cli {

std::vector<std::string> TraceWarnings(const sim::Trace& trace, const sim::DeploymentSpec& d) {
  std::vector<std::string> out;
  if (trace.rows_out_of_order > 0) {
    out.push_back(absl::StrFormat(
        "%s: %d row%s timestamped earlier than the row before (the first at line %d); played in "
        "time order",
        trace.source, trace.rows_out_of_order, trace.rows_out_of_order == 1 ? " is" : "s are",
        trace.first_out_of_order_line));
  }
  const int64_t longest = sim::MaxRequestTokens(d);
  int64_t too_long = 0;
  int64_t first_tokens = 0;
  for (const sim::RequestSpec& r : trace.requests) {
    const int64_t tokens = static_cast<int64_t>(r.prompt_tokens) + r.output_tokens;
    if (tokens <= longest) continue;
    if (too_long++ == 0) first_tokens = tokens;
  }
  if (too_long > 0) {
    out.push_back(absl::StrFormat(
        "%s: %d request%s longer than the %d tokens (prompt + output) a replica of %s can serve "
        "(the first: %d tokens); vLLM refuses such a request, and each counts as a miss",
        trace.source, too_long, too_long == 1 ? " is" : "s are", longest, d.name, first_tokens));
  }
  return out;
}

}  // namespace twinscale::cli
