// `twinscale plan --review FILE`: the launch-week capacity review (docs/plan.md). Reads a review
// file (controller/plan/review.h), runs every scenario on every deployment profile on the twin
// (controller/plan/capacity_plan.h) and prints the table, or the JSON with --output json; --out
// DIR writes plan.json and report.html; --emit-policy FILE writes the InferenceAutoscaler for the
// chosen profile.
#ifndef TWINSCALE_CONTROLLER_CLI_PLAN_COMMAND_H_
#define TWINSCALE_CONTROLLER_CLI_PLAN_COMMAND_H_

namespace twinscale::cli {

extern const char kPlanUsage[];
// The source file whose flags belong to this subcommand.
extern const char kPlanFlagsFile[];
// Flags defined by other subcommands' files that `plan` takes too, space-separated.
extern const char kPlanBorrowedFlags[];

// Runs the subcommand with flags already parsed: 0; 2 for bad input (a malformed review file,
// with its line; a flag out of range; an output it cannot write); 1 for any other failure.
int RunPlanCommand();

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_PLAN_COMMAND_H_
