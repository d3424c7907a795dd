// The InferenceAutoscaler the reconcile and replay tests share: "llm/llama", Direct mode on the
// Deployment "vllm", the H100 Llama-3.1-8B profile, at most `max_replicas`. Tests set the fields
// they are about on top of it.
#ifndef TWINSCALE_TESTS_UTIL_AUTOSCALER_OBJECT_H_
#define TWINSCALE_TESTS_UTIL_AUTOSCALER_OBJECT_H_

#include "nlohmann/json.hpp"

namespace twinscale::testutil {

inline nlohmann::json LlamaAutoscaler(int max_replicas) {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", "llama"}, {"namespace", "llm"}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
            {"mode", "Direct"},
            {"maxReplicas", max_replicas},
            {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}}}}};
}

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_AUTOSCALER_OBJECT_H_
