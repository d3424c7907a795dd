// The truth perturbations (docs/architecture.md "Truth perturbations"): ways in which the fleet
// replay treats as real differs from the twin the policy consults, so a replay report measures a
// policy against a world it does not model exactly. Each can be applied alone or with the others
// (`--truth` takes a comma list); the twin itself is never perturbed, only the truth fleet that
// stands in for the cluster.
//
//   efficiency  compute and bandwidth efficiency x0.8 (SpeedFactors{0.8, 0.8}: every step's
//               prefill and decode terms run at 80% of the profile's speed)
//   noise       gamma noise on every step time, CV 0.1 (FleetOptions::step_noise_cv)
//   warmup      every lifecycle stage's median delay x1.5 and its p90/median ratio x1.3, so the
//               log-normal tail is heavier as well as the middle slower
//   routing     Random routing in truth, whatever router the policy assumes (LeastRequests)
//   frontend    30 ms added to every request's TTFT: the API server's time before the engine sees
//               it (roofline: front_end_delay_us += 30000; linear: a0_us += 30000)
//   all         every one of the above; none: no perturbation.
//
// Pure values and functions; thread-safe.
#ifndef TWINSCALE_CONTROLLER_REPLAY_TRUTH_H_
#define TWINSCALE_CONTROLLER_REPLAY_TRUTH_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "simulator/model/fleet.h"

namespace twinscale::replay {

struct Truth {
  bool efficiency = false;
  bool noise = false;
  bool warmup = false;
  bool routing = false;
  bool frontend = false;

  bool any() const { return efficiency || noise || warmup || routing || frontend; }
  bool operator==(const Truth&) const = default;
};

// The sizes of the perturbations (docs/architecture.md "Truth perturbations"; the warm-up tail
// factor is ours).
inline constexpr double kTruthEfficiency = 0.8;
inline constexpr double kTruthStepNoiseCv = 0.1;
inline constexpr double kTruthWarmupMedianFactor = 1.5;
inline constexpr double kTruthWarmupTailFactor = 1.3;
inline constexpr double kTruthFrontEndDelayUs = 30000.0;

// Parses a list of "none", "efficiency", "noise", "warmup", "routing", "frontend", "all" separated
// by "," or "+" (any case; blanks around names ignored; repeats allowed). InvalidArgument for an
// empty list or element, an unknown name (the message lists the known ones), or "none" beside
// another name.
absl::StatusOr<Truth> ParseTruth(std::string_view text);

// Perturbs the truth fleet's options in place. Multiplies what is there (speed factors, delays),
// so it composes with a deployment that already has its own; sets step_noise_cv to at least 0.1;
// routing replaces the router kind with Random. Applying `none` changes nothing.
void ApplyTruth(const Truth& truth, sim::FleetOptions& options);

// The canonical spelling: "none", or the names set, in the order of the list above and joined by
// "+" (ParseTruth reads it back); "all" when every one is set.
std::string Describe(const Truth& truth);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_TRUTH_H_
