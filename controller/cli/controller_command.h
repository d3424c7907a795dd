// `twinscale controller`: the Kubernetes operator. Connects to the API server (in-cluster, or a
// kubeconfig), campaigns for the Lease, watches InferenceAutoscalers and reconciles each one every
// spec.metrics.interval (controller/reconcile), and serves /metrics, /healthz and /readyz on a
// plain port. SIGTERM or SIGINT: stop acting, release the Lease, exit 0.
#ifndef TWINSCALE_CONTROLLER_CLI_CONTROLLER_COMMAND_H_
#define TWINSCALE_CONTROLLER_CLI_CONTROLLER_COMMAND_H_

namespace twinscale::cli {

extern const char kControllerUsage[];
extern const char kControllerFlagsFile[];
int RunControllerCommand();

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_CONTROLLER_COMMAND_H_
