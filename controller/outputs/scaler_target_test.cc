// Which InferenceAutoscaler a ScaledObject's trigger follows, and the messages a bad trigger gets
// (each naming the metadata key to fix).
#include "controller/outputs/scaler_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace twinscale::outputs {
namespace {

using ::testing::HasSubstr;

TEST(ScalerTargetTest, NameAndNamespaceOrTheScaledObjectsNamespace) {
  auto t = ResolveScalerTarget("llama", "shared", "llm", "so");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->namespace_name, "shared");
  EXPECT_EQ(t->name, "llama");
  t = ResolveScalerTarget("llama", std::nullopt, "llm", "so");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->namespace_name, "llm");
  t = ResolveScalerTarget("llama", "", "llm", "so");  // an empty value counts as absent
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->namespace_name, "llm");
}

TEST(ScalerTargetTest, BadTriggersNameTheKey) {
  struct Case {
    std::string why;
    std::optional<std::string_view> name, ns;
    std::string so_namespace;
    std::string want;  // in the message
  };
  const Case cases[] = {
      {"no name", std::nullopt, "llm", "llm", "scalerMetadata.name: required"},
      {"an empty name", "", "llm", "llm", "scalerMetadata.name: required"},
      {"no namespace anywhere", "llama", std::nullopt, "", "scalerMetadata.namespace: required"},
      {"upper case in the name", "Llama", std::nullopt, "llm", "scalerMetadata.name: \"Llama\""},
      {"a dot in the namespace", "llama", "llm.prod", "llm", "scalerMetadata.namespace"},
      {"a bad ScaledObject namespace", "llama", std::nullopt, "LLM", "ScaledObjectRef.namespace"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    auto t = ResolveScalerTarget(c.name, c.ns, c.so_namespace, "vllm-so");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.want));
  }
  // The ScaledObject is named, so the error in KEDA's log says which trigger to fix.
  EXPECT_THAT(
      std::string(
          ResolveScalerTarget(std::nullopt, std::nullopt, "llm", "vllm-so").status().message()),
      HasSubstr("ScaledObject llm/vllm-so"));
}

}  // namespace
}  // namespace twinscale::outputs
