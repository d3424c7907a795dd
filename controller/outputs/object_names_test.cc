// Kubernetes name checks, with why each bad name is bad.
#include "controller/outputs/object_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace twinscale::outputs {
namespace {

using ::testing::HasSubstr;

TEST(ObjectNamesTest, Namespaces) {
  EXPECT_TRUE(ValidateNamespaceName("llm", "f").ok());
  EXPECT_TRUE(ValidateNamespaceName("team-a-2", "f").ok());
  EXPECT_TRUE(ValidateNamespaceName(std::string(63, 'a'), "f").ok());
  struct Bad {
    std::string value, why;
  };
  const Bad bad[] = {
      {"", "empty"},
      {"LLM", "upper case"},
      {"-llm", "starts with a dash"},
      {"llm-", "ends with a dash"},
      {"llm.prod", "a dot: namespaces are labels, not subdomains"},
      {"llm_prod", "an underscore"},
      {std::string(64, 'a'), "64 characters"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.why);
    const absl::Status s = ValidateNamespaceName(b.value, "scalerMetadata.namespace");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("scalerMetadata.namespace"));
  }
}

TEST(ObjectNamesTest, InferenceAutoscalerNames) {
  EXPECT_TRUE(ValidateObjectName("llama-3-1-8b", "f").ok());
  EXPECT_TRUE(ValidateObjectName("llama.3.1", "f").ok());
  EXPECT_TRUE(ValidateObjectName("a", "f").ok());
  struct Bad {
    std::string value, why;
  };
  const Bad bad[] = {
      {"", "empty"},
      {"Llama", "upper case"},
      {"llama_8b", "an underscore"},
      {"llama..8b", "an empty part between dots"},
      {".llama", "starts with a dot"},
      {"llama-.8b", "a part ending with a dash"},
      {"llama/8b", "a slash"},
      {std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
           std::string(63, 'd'),
       "255 characters, every part a valid label"},
      {std::string(64, 'a'), "a part of 64 characters"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.why);
    const absl::Status s = ValidateObjectName(b.value, "scalerMetadata.name");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("scalerMetadata.name"));
  }
  EXPECT_THAT(std::string(ValidateObjectName("", "scalerMetadata.name").message()),
              HasSubstr("required"));
}

}  // namespace
}  // namespace twinscale::outputs
