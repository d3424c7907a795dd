// Truth perturbations: see truth.h.
#include "controller/replay/truth.h"

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace twinscale::replay {
namespace {

struct Named {
  const char* name;
  bool Truth::*flag;
};
constexpr std::array<Named, 5> kPerturbations = {{
    {"efficiency", &Truth::efficiency},
    {"noise", &Truth::noise},
    {"warmup", &Truth::warmup},
    {"routing", &Truth::routing},
    {"frontend", &Truth::frontend},
}};

void Slower(sim::DelayDistribution& d) {
  d.median = sim::SimDuration::FromSecondsF(d.median.seconds() * kTruthWarmupMedianFactor);
  d.p90_over_median *= kTruthWarmupTailFactor;
}

}  // namespace

absl::StatusOr<Truth> ParseTruth(std::string_view text) {
  const std::string input(text);
  Truth truth;
  bool none = false;
  int named = 0;
  for (absl::string_view part : absl::StrSplit(input, absl::ByAnyChar(",+"))) {
    const std::string word = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (word.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("truth \"", input, "\": empty perturbation name"));
    }
    if (word == "none") {
      none = true;
      continue;
    }
    ++named;
    if (word == "all") {
      for (const Named& p : kPerturbations) truth.*(p.flag) = true;
      continue;
    }
    bool found = false;
    for (const Named& p : kPerturbations) {
      if (word == p.name) {
        truth.*(p.flag) = true;
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("truth \"", input, "\": unknown perturbation \"", word,
                       "\" (known: none, efficiency, noise, warmup, routing, frontend, all)"));
    }
  }
  if (none && named > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("truth \"", input, "\": \"none\" can't be combined with perturbations"));
  }
  return truth;
}

void ApplyTruth(const Truth& truth, sim::FleetOptions& options) {
  sim::DeploymentSpec& d = options.deployment;
  if (truth.efficiency) {
    options.speed.prefill *= kTruthEfficiency;
    options.speed.decode *= kTruthEfficiency;
  }
  if (truth.noise && options.step_noise_cv < kTruthStepNoiseCv) {
    options.step_noise_cv = kTruthStepNoiseCv;
  }
  if (truth.warmup) {
    Slower(d.lifecycle.provisioning);
    Slower(d.lifecycle.loading);
    Slower(d.lifecycle.warming_up);
  }
  if (truth.routing) options.router.kind = sim::RouterKind::kRandom;
  if (truth.frontend) {
    // Both models' front-end terms, whichever the deployment uses: the inactive one is ignored.
    d.roofline.front_end_delay_us += kTruthFrontEndDelayUs;
    d.linear.a0_us += kTruthFrontEndDelayUs;
  }
}

std::string Describe(const Truth& truth) {
  std::vector<std::string> names;
  for (const Named& p : kPerturbations) {
    if (truth.*(p.flag)) names.push_back(p.name);
  }
  if (names.empty()) return "none";
  if (names.size() == kPerturbations.size()) return "all";
  return absl::StrJoin(names, "+");
}

}  // namespace twinscale::replay
