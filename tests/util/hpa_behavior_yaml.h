// An HPA's spec.behavior.scaleUp / scaleDown block, as written in the shipped examples (a
// ScaledObject's advanced.horizontalPodAutoscalerConfig.behavior, an autoscaling/v2 HPA), read
// into api::ScalingRules so tests can check the examples with the project's HPA arithmetic.
// Header-only; for tests of files the project ships (the YAML is trusted to have every field).
#ifndef TWINSCALE_TESTS_UTIL_HPA_BEHAVIOR_YAML_H_
#define TWINSCALE_TESTS_UTIL_HPA_BEHAVIOR_YAML_H_

#include <string>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::testutil {

inline api::ScalingRules HpaRulesFromYaml(const YAML::Node& n) {
  api::ScalingRules r;
  r.stabilization_window = absl::Seconds(n["stabilizationWindowSeconds"].as<int>());
  r.select = n["selectPolicy"].as<std::string>() == "Min" ? api::SelectPolicy::kMin
                                                          : api::SelectPolicy::kMax;
  for (const YAML::Node& p : n["policies"]) {
    api::ScalingPolicy sp;
    sp.type = p["type"].as<std::string>() == "Pods" ? api::ScalingPolicy::Type::kPods
                                                    : api::ScalingPolicy::Type::kPercent;
    sp.value = p["value"].as<int>();
    sp.period = absl::Seconds(p["periodSeconds"].as<int>());
    r.policies.push_back(sp);
  }
  return r;
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_HPA_BEHAVIOR_YAML_H_
