// Fuzzes what KEDA sends twinscale: a ScaledObjectRef's trigger metadata (name, namespace) and
// the ScaledObject's namespace, through ResolveScalerTarget. Invariants: no crash; an accepted
// target has names any Kubernetes object could have (non-empty, lower-case DNS-1123); a refusal is
// InvalidArgument naming a key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "controller/outputs/object_names.h"
#include "controller/outputs/scaler_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Three NUL-separated fields: name, namespace (absent when missing), the ScaledObject's
  // namespace.
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t a = in.find('\0');
  const std::string_view name = in.substr(0, a);
  std::optional<std::string_view> ns;
  std::string_view so_ns;
  if (a != std::string_view::npos) {
    const std::string_view rest = in.substr(a + 1);
    const size_t b = rest.find('\0');
    ns = rest.substr(0, b);
    if (b != std::string_view::npos) so_ns = rest.substr(b + 1);
  }
  auto t = twinscale::outputs::ResolveScalerTarget(name, ns, so_ns, "fuzz");
  if (t.ok()) {
    if (!twinscale::outputs::ValidateObjectName(t->name, "name").ok() ||
        !twinscale::outputs::ValidateNamespaceName(t->namespace_name, "namespace").ok()) {
      std::abort();
    }
  } else {
    const bool names_a_key =
        t.status().message().find("scalerMetadata.") != std::string_view::npos ||
        t.status().message().find("ScaledObjectRef.") != std::string_view::npos;
    if (t.status().code() != absl::StatusCode::kInvalidArgument || !names_a_key) std::abort();
  }
  return 0;
}
