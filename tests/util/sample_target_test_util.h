// For the twin's tests: a shipped sample manifest resolved against the embedded profiles, as the
// controller resolves a CR (loader, schema defaults, profile, overrides). Test-only.
#ifndef TWINSCALE_TESTS_UTIL_SAMPLE_TARGET_TEST_UTIL_H_
#define TWINSCALE_TESTS_UTIL_SAMPLE_TARGET_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "controller/api/spec_loader.h"
#include "controller/twin/resolve.h"

namespace twinscale::twin {

struct SampleTarget {
  api::InferenceAutoscalerSpec spec;
  ResolvedTarget resolved;
};

// `path` relative to the repository root (the tests' working directory), e.g.
// "deploy/samples/llama-3.1-8b-h100.yaml". Fails the test when it doesn't load or resolve.
inline SampleTarget ResolveSample(const std::string& path) {
  SampleTarget out;
  auto ias = api::LoadInferenceAutoscalerFile(path);
  EXPECT_TRUE(ias.ok()) << ias.status();
  if (!ias.ok()) return out;
  out.spec = ias->spec;
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(profiles.ok()) << profiles.status();
  if (!profiles.ok()) return out;
  auto r = Resolve(ias->spec, *profiles);
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) out.resolved = *std::move(r);
  return out;
}

}  // namespace twinscale::twin

#endif  // TWINSCALE_TESTS_UTIL_SAMPLE_TARGET_TEST_UTIL_H_
