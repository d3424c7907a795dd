// The emitted manifest loads through the same loader as a hand-written one and says what the
// question asked: profile, engine fields, routing, SLO, the answer as maxReplicas, Recommend.
#include "controller/cli/emitted_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "controller/api/spec_loader.h"

namespace twinscale::cli {
namespace {

TEST(EmittedPolicyTest, LoadsAndCarriesTheQuestion) {
  EmittedPolicy p;
  p.profile = "llama-3.1-8b-h200-tp1";
  p.max_num_seqs = 256;
  p.router = sim::RouterKind::kLeastRequests;
  p.max_replicas = 11;
  p.ttft_threshold = absl::Milliseconds(300);
  p.percentile = 95;
  p.ttft_per_prompt_token = absl::Microseconds(100);
  p.comment = {"first line", "second line"};
  const absl::StatusOr<std::string> yaml = EmittedPolicyYaml(p);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(yaml->rfind("# first line\n# second line\n", 0), 0u) << *yaml;
  const absl::StatusOr<api::InferenceAutoscaler> ias =
      api::ParseInferenceAutoscaler(*yaml, "emitted.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status() << "\n" << *yaml;
  EXPECT_EQ(ias->metadata.name, "llama-3-1-8b-h200-tp1");
  EXPECT_EQ(ias->spec.target_ref.name, "vllm-llama-3-1-8b-h200-tp1");
  EXPECT_EQ(ias->spec.mode, api::Mode::kRecommend);
  EXPECT_EQ(ias->spec.min_replicas, 1);
  EXPECT_EQ(ias->spec.max_replicas, 11);
  EXPECT_EQ(ias->spec.model.profile, "llama-3.1-8b-h200-tp1");
  EXPECT_EQ(ias->spec.model.max_num_seqs, 256);
  EXPECT_FALSE(ias->spec.model.max_num_batched_tokens.has_value());
  EXPECT_EQ(ias->spec.routing, api::Routing::kLeastRequests);
  EXPECT_EQ(ias->spec.slo.ttft.threshold, absl::Milliseconds(300));
  EXPECT_EQ(ias->spec.slo.ttft.percentile, 95);
  EXPECT_EQ(ias->spec.slo.ttft.per_prompt_token, absl::Microseconds(100));
  EXPECT_FALSE(ias->spec.slo.itl.has_value());  // no threshold, no ITL objective
}

TEST(EmittedPolicyTest, AFloorAndAnItlObjectiveWhenGiven) {
  EmittedPolicy p;
  p.profile = "llama-3.1-8b-h100-sxm-tp1";
  p.min_replicas = 4;
  p.max_replicas = 20;
  p.itl_threshold = absl::Milliseconds(60);
  p.itl_percentile = 95;
  const absl::StatusOr<std::string> yaml = EmittedPolicyYaml(p);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  const absl::StatusOr<api::InferenceAutoscaler> ias =
      api::ParseInferenceAutoscaler(*yaml, "emitted.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status() << "\n" << *yaml;
  EXPECT_EQ(ias->spec.min_replicas, 4);
  EXPECT_EQ(ias->spec.max_replicas, 20);
  ASSERT_TRUE(ias->spec.slo.itl.has_value());
  EXPECT_EQ(ias->spec.slo.itl->threshold, absl::Milliseconds(60));
  EXPECT_EQ(ias->spec.slo.itl->percentile, 95);
}

TEST(EmittedPolicyTest, ANameTheCrdCannotSayIsRefused) {
  EmittedPolicy p;
  p.profile = "x";
  p.router = sim::RouterKind::kRandomPerConnection;
  EXPECT_EQ(EmittedPolicyYaml(p).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinscale::cli
