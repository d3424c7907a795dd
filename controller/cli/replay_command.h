// `twinscale replay`: the dry run. Replays a trace (or a synthetic workload) against a simulated
// fleet that stands in for the cluster — perturbed away from the twin's own model by --truth — and
// runs each policy given with --policy on it (InferenceAutoscaler manifests and the peers' baseline
// families), then prints a side-by-side table of cost (GPU-hours) and SLO attainment with the
// zero-lag oracle as the lower bound, and writes summary.json and timeline.csv with --out.
#ifndef TWINSCALE_CONTROLLER_CLI_REPLAY_COMMAND_H_
#define TWINSCALE_CONTROLLER_CLI_REPLAY_COMMAND_H_

namespace twinscale::cli {

extern const char kReplayUsage[];
extern const char kReplayFlagsFile[];
int RunReplayCommand();

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_REPLAY_COMMAND_H_
