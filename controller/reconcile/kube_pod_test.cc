// Pod objects (as the API server writes them) into pod stages: one case per row of the stage rules
// in kube_pod.h, plus the fields the controller reads and clear errors.
#include "controller/reconcile/kube_pod.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace twinscale::reconcile {
namespace {

using Stage = state::PodView::Stage;

nlohmann::json Pod(nlohmann::json conditions, nlohmann::json extra_meta = nlohmann::json::object(),
                   std::string phase = "Running") {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "vllm-0"}, {"uid", "u-1"}, {"creationTimestamp", "2026-11-21T09:00:00Z"}}},
      {"status", {{"phase", phase}, {"podIP", "10.0.0.7"}, {"conditions", conditions}}}};
  if (extra_meta.is_object()) pod["metadata"].update(extra_meta);
  return pod;
}

nlohmann::json Cond(const char* type, const char* status, const char* reason = "",
                    const char* since = "2026-11-21T09:01:30Z") {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"lastTransitionTime", since}};
}

struct StageCase {
  const char* name;
  nlohmann::json pod;
  Stage want;
  bool unschedulable;
};

TEST(KubePodTest, StageRulesTable) {
  const StageCase cases[] = {
      {"no conditions yet (just created)", Pod(nlohmann::json::array()), Stage::kPending, false},
      {"unschedulable", Pod({Cond("PodScheduled", "False", "Unschedulable")}), Stage::kPending,
       true},
      {"scheduled, containers starting",
       Pod({Cond("PodScheduled", "True"), Cond("Initialized", "True"),
            Cond("ContainersReady", "False", "ContainersNotReady"), Cond("Ready", "False")}),
       Stage::kLoading, false},
      {"containers ready, a readiness gate still closed",
       Pod({Cond("PodScheduled", "True"), Cond("ContainersReady", "True"), Cond("Ready", "False")}),
       Stage::kWarmingUp, false},
      {"ready",
       Pod({Cond("PodScheduled", "True"), Cond("ContainersReady", "True"), Cond("Ready", "True")}),
       Stage::kReady, false},
      {"ready but being deleted",
       Pod({Cond("PodScheduled", "True"), Cond("Ready", "True")},
           {{"deletionTimestamp", "2026-11-21T09:05:00Z"}}),
       Stage::kTerminating, false},
      {"failed", Pod({Cond("PodScheduled", "True"), Cond("Ready", "False")}, {}, "Failed"),
       Stage::kTerminating, false},
  };
  for (const StageCase& c : cases) {
    auto pod = ParseKubePod(c.pod);
    ASSERT_TRUE(pod.ok()) << c.name << ": " << pod.status();
    EXPECT_EQ(pod->stage, c.want) << c.name;
    EXPECT_EQ(pod->unschedulable, c.unschedulable) << c.name;
  }
}

TEST(KubePodTest, ReadsAddressAndTimes) {
  auto pod = ParseKubePod(
      Pod({Cond("PodScheduled", "True"), Cond("ContainersReady", "True"), Cond("Ready", "True")}));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "vllm-0");
  EXPECT_EQ(pod->uid, "u-1");
  EXPECT_EQ(pod->ip, "10.0.0.7");
  ASSERT_TRUE(pod->ready_since.has_value());
  // Created 09:00:00, Ready since 09:01:30: a 90 s warm-up.
  EXPECT_EQ(*pod->ready_since - pod->created, absl::Seconds(90));
}

TEST(KubePodTest, ErrorsNameTheField) {
  nlohmann::json no_name = Pod(nlohmann::json::array());
  no_name["metadata"].erase("name");
  EXPECT_NE(ParseKubePod(no_name).status().message().find("metadata.name"), std::string::npos);
  nlohmann::json bad_time = Pod(nlohmann::json::array());
  bad_time["metadata"]["creationTimestamp"] = "yesterday";
  const absl::Status s = ParseKubePod(bad_time).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("creationTimestamp"), std::string::npos) << s;
  EXPECT_NE(s.message().find("yesterday"), std::string::npos) << s;
}

TEST(KubePodTest, ReadsTheVllmContainersEngineArgs) {
  // A sidecar first, then the vLLM container: its command + args, with $(VAR) from literal env
  // (valueFrom is left alone, as the kubelet would leave a reference it can't resolve here).
  nlohmann::json pod = Pod(nlohmann::json::array({Cond("Ready", "True")}));
  pod["spec"] = {
      {"containers",
       {{{"name", "proxy"}, {"command", {"envoy", "-c", "/etc/envoy.yaml"}}},
        {{"name", "vllm"},
         {"command", {"vllm", "serve"}},
         {"args",
          {"meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "$(CTX)", "--max-num-seqs=128"}},
         {"env",
          {{{"name", "CTX"}, {"value", "8k"}},
           {{"name", "TOKEN"}, {"valueFrom", {{"secretKeyRef", {{"name", "hf"}}}}}}}}}}}};
  auto p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args->max_model_len, 8000);
  EXPECT_EQ(p->engine_args->max_num_seqs, 128);
  EXPECT_EQ(p->engine_args_error, "");

  // A command line vLLM would refuse: no args, the reason names the pod, container and flag; the
  // pod itself still reads (its stage and times matter whatever its flags).
  pod["spec"]["containers"][1]["args"] = {"m", "--max-num-seqs", "many"};
  p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args_error,
            "pod vllm-0 container vllm: vLLM flag --max-num-seqs: \"many\" is not an integer");

  // The vLLM image's entrypoint starts the server: a spec with only args is read too.
  pod["spec"]["containers"] = {{{"name", "server"},
                                {"image", "vllm/vllm-openai:v0.11.0"},
                                {"args", {"--model", "m", "--max-num-batched-tokens", "16384"}}}};
  p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args->max_num_batched_tokens, 16384);
  // A command line that says vLLM wins over an image name that merely contains it (a router
  // sidecar listed first).
  pod["spec"]["containers"] = {
      {{"name", "router"}, {"image", "ghcr.io/x/vllm-router:1"}, {"args", {"--port", "9000"}}},
      {{"name", "engine"},
       {"image", "registry/llm:1"},
       {"command", {"vllm", "serve", "m", "--max-num-seqs", "64"}}}};
  p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args->max_num_seqs, 64);

  // Fields of the wrong type (outside input) read as absent, never throw.
  pod["spec"]["containers"] = {{{"name", 7},
                                {"image", 5},
                                {"command", {"vllm", 1, "serve"}},
                                {"env", "SEQS=4"},
                                {"args", {"--max-num-seqs", "8"}}},
                               "not a container"};
  p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args->max_num_seqs, 8);

  // No vLLM container (or no spec at all): nothing to read, and no error.
  pod["spec"]["containers"] = {{{"name", "web"}, {"command", {"nginx"}}}};
  p = ParseKubePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->engine_args.has_value());
  EXPECT_EQ(p->engine_args_error, "");
}

}  // namespace
}  // namespace twinscale::reconcile
