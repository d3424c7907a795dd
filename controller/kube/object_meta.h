// Reading an object's metadata out of its JSON without exceptions: missing or mistyped fields read
// as empty / zero, because objects come from the API server (or a fake) and a watch must not die on
// one odd object.
#ifndef TWINSCALE_CONTROLLER_KUBE_OBJECT_META_H_
#define TWINSCALE_CONTROLLER_KUBE_OBJECT_META_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace twinscale::kube {

// metadata.<field> as a string ("" when absent or not a string).
std::string MetaString(const nlohmann::json& object, const char* field);
inline std::string NameOf(const nlohmann::json& o) { return MetaString(o, "name"); }
inline std::string NamespaceOf(const nlohmann::json& o) { return MetaString(o, "namespace"); }
inline std::string ResourceVersionOf(const nlohmann::json& o) {
  return MetaString(o, "resourceVersion");
}
inline std::string UidOf(const nlohmann::json& o) { return MetaString(o, "uid"); }
// metadata.generation (0 when absent).
int64_t GenerationOf(const nlohmann::json& object);

// "namespace/name", or "name" for a cluster-scoped object: the informer cache's key (client-go's
// MetaNamespaceKeyFunc).
std::string ObjectKey(const nlohmann::json& object);
std::string ObjectKey(const std::string& ns, const std::string& name);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_OBJECT_META_H_
