// `twinscale simulate`: answers capacity questions with the twin. Runs a fleet of one deployment
// profile against a synthetic workload or a real trace and prints what it measured (table or JSON),
// or, with --find-replicas, the smallest fleet that meets the TTFT SLO under several seeds, with
// its margin (and, with --emit-policy, an InferenceAutoscaler for it).
#ifndef TWINSCALE_CONTROLLER_CLI_SIMULATE_COMMAND_H_
#define TWINSCALE_CONTROLLER_CLI_SIMULATE_COMMAND_H_

#include <string>
#include <vector>

namespace twinscale::cli {

// One-paragraph description for `twinscale --help` and `twinscale simulate --help`.
extern const char kSimulateUsage[];
// The source file whose flags belong to this subcommand (for per-subcommand help and checks).
extern const char kSimulateFlagsFile[];

// Runs the subcommand with flags already parsed. Returns the process exit code (0 ok; 2 bad input:
// a flag out of range, a missing or malformed file, a run too large for its limits; 1 any other
// failure); errors are printed to stderr.
int RunSimulate();

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_SIMULATE_COMMAND_H_
