// Fuzzes the profile loader (YAML from users' --profile-dir): any bytes as a deployment, model or
// GPU profile must give a profile or a clear error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "simulator/profiles/profile_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* base = new auto(twinscale::sim::ProfileRegistry::LoadEmbedded());
  if (!base->ok()) return 0;
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  for (const char* path : {"deployments/fuzz.yaml", "models/fuzz.yaml", "gpus/fuzz.yaml"}) {
    twinscale::sim::ProfileRegistry registry = **base;
    if (!registry.AddYaml(path, yaml).ok()) continue;
    (void)registry.Resolve("fuzz", {});
    twinscale::sim::DeploymentOverrides o;
    o.model = "fuzz";
    o.gpu = "fuzz";
    (void)registry.Resolve("", o);
  }
  return 0;
}
