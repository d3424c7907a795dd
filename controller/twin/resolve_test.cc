// Resolution of a spec against the profiles: the sample manifest's numbers reach the policy, the
// warm-up comes from the profile's lifecycle when the spec leaves it out, and errors name the
// field.
#include "controller/twin/resolve.h"

#include <gtest/gtest.h>

#include "controller/api/spec_loader.h"

namespace twinscale::twin {
namespace {

TEST(ResolveTest, TheSampleManifestResolvesAgainstTheDefaultProfile) {
  auto ias = api::LoadInferenceAutoscalerFile("deploy/samples/llama-3.1-8b-h100.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  auto r = Resolve(ias->spec, *profiles);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->deployment.name, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(r->policy.ttft_threshold, absl::Milliseconds(500));
  EXPECT_EQ(r->policy.percentile, 90);
  EXPECT_EQ(r->policy.max_replicas, ias->spec.max_replicas);
  EXPECT_EQ(r->policy.surplus_window, absl::Minutes(30));  // slo.ttft.surplusWindow's default
  api::InferenceAutoscalerSpec off = ias->spec;
  off.slo.ttft.surplus_window = absl::ZeroDuration();
  auto r_off = Resolve(off, *profiles);
  ASSERT_TRUE(r_off.ok()) << r_off.status();
  EXPECT_EQ(r_off->policy.surplus_window, absl::ZeroDuration());
  // scaleDown.clearlySafeWindow: its default, and a stated window, reach the policy.
  EXPECT_EQ(r->policy.clear_scale_in_window, absl::Minutes(3));
  off.scale_down.clearly_safe_window = absl::Seconds(90);
  auto r_clear = Resolve(off, *profiles);
  ASSERT_TRUE(r_clear.ok()) << r_clear.status();
  EXPECT_EQ(r_clear->policy.clear_scale_in_window, absl::Seconds(90));
  // slo.target's defaults, and a stated target, reach the policy as they are (percent).
  EXPECT_EQ(r->policy.target_requests, 95);
  EXPECT_EQ(r->policy.target_minutes, 95);
  EXPECT_EQ(r->policy.target_window, absl::Hours(24));
  api::InferenceAutoscalerSpec strict = ias->spec;
  strict.slo.target = api::SloTarget{99.5, 90, absl::Hours(168)};
  auto r_strict = Resolve(strict, *profiles);
  ASSERT_TRUE(r_strict.ok()) << r_strict.status();
  EXPECT_EQ(r_strict->policy.target_requests, 99.5);
  EXPECT_EQ(r_strict->policy.target_minutes, 90);
  EXPECT_EQ(r_strict->policy.target_window, absl::Hours(168));
  // The profile's lifecycle medians: provisioning 0 s + loading 20 s + warming up 25 s = 45 s.
  EXPECT_EQ(r->policy.warmup_expected, absl::Seconds(45));
  // p99 per stage = median x ratio^(2.326/1.2816): 20 x 1.5^1.815 + 25 x 1.6^1.815 = 41.7 + 58.9.
  EXPECT_NEAR(absl::ToDoubleSeconds(P99Warmup(r->deployment.lifecycle)), 100.6, 0.5);
}

TEST(ResolveTest, TheCodeAssistantSampleCarriesItsContextLimitToTheDeployment) {
  auto ias = api::LoadInferenceAutoscalerFile("deploy/samples/code-assistant-8k.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  auto r = Resolve(ias->spec, *profiles);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->deployment.engine.max_model_len, 8192);
  EXPECT_TRUE(r->stated.max_model_len);  // stated, so it wins over the pods' --max-model-len
  EXPECT_FALSE(r->stated.max_num_seqs);
  // Left out, the profile's: Llama 3.1's own 131,072-token context.
  api::InferenceAutoscalerSpec plain = ias->spec;
  plain.model.max_model_len.reset();
  auto r_plain = Resolve(plain, *profiles);
  ASSERT_TRUE(r_plain.ok()) << r_plain.status();
  EXPECT_EQ(r_plain->deployment.engine.max_model_len, 131072);
}

TEST(ResolveTest, AnUnknownProfileNamesTheField) {
  api::InferenceAutoscalerSpec spec;
  spec.model.profile = "no-such-profile";
  spec.max_replicas = 3;
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  auto r = Resolve(spec, *profiles);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.model.profile"), std::string::npos);
}

}  // namespace
}  // namespace twinscale::twin
