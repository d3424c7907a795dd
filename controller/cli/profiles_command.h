// `twinscale profiles`: the deployment profiles compiled into the binary, one line each with what
// it assumes (model, GPU, tensor parallelism, engine limits, KV capacity, latency model, warm-up),
// or one profile whole (--show NAME, as the JSON `simulate --output json` echoes).
#ifndef TWINSCALE_CONTROLLER_CLI_PROFILES_COMMAND_H_
#define TWINSCALE_CONTROLLER_CLI_PROFILES_COMMAND_H_

namespace twinscale::cli {

extern const char kProfilesUsage[];
// The source file whose flags belong to this subcommand.
extern const char kProfilesFlagsFile[];

// Runs the subcommand with flags already parsed: 0, or 2 for an unknown profile.
int RunProfilesCommand();

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_PROFILES_COMMAND_H_
