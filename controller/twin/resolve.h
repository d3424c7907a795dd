// From an InferenceAutoscaler spec to everything the decision needs: the deployment the twin
// simulates (the spec's model profile with its overrides), the policy's resolved parameters (the
// spec's values, with the expected and p99 warm-up taken from the profile's lifecycle when the spec
// doesn't say), and the twin's options (routing, calibration). Lives in twin/ because it is the one
// place that turns simulator profiles into policy numbers.
#ifndef TWINSCALE_CONTROLLER_TWIN_RESOLVE_H_
#define TWINSCALE_CONTROLLER_TWIN_RESOLVE_H_

#include "absl/status/statusor.h"
#include "controller/api/spec.h"
#include "controller/policy/recommend.h"
#include "controller/twin/running_engine.h"
#include "controller/twin/twin_forecaster.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::twin {

struct ResolvedTarget {
  sim::DeploymentSpec deployment;
  StatedEngineSettings stated;  // which engine settings spec.model states (they win over the pods')
  policy::PolicyConfig policy;
  TwinOptions twin;
};

// Expected pod-creation-to-Ready time of the profile (sum of the stages' medians) and a p99 bound
// (sum of each stage's log-normal p99: median x (p90/median)^(2.326/1.2816)).
absl::Duration ExpectedWarmup(const sim::LifecycleSpec& lifecycle);
absl::Duration P99Warmup(const sim::LifecycleSpec& lifecycle);

sim::RouterKind RouterFor(api::Routing routing);

// InvalidArgument naming the field when the profile is unknown or an override is invalid.
absl::StatusOr<ResolvedTarget> Resolve(const api::InferenceAutoscalerSpec& spec,
                                       const sim::ProfileRegistry& profiles);

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_RESOLVE_H_
