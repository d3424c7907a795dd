// Metadata accessors; see object_meta.h.
#include "controller/kube/object_meta.h"

#include "absl/strings/str_cat.h"

namespace twinscale::kube {

std::string MetaString(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto value = meta->find(field);
  if (value == meta->end() || !value->is_string()) return "";
  return value->get<std::string>();
}

int64_t GenerationOf(const nlohmann::json& object) {
  if (!object.is_object()) return 0;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return 0;
  auto value = meta->find("generation");
  if (value == meta->end() || !value->is_number_integer()) return 0;
  return value->get<int64_t>();
}

std::string ObjectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

std::string ObjectKey(const nlohmann::json& object) {
  return ObjectKey(NamespaceOf(object), NameOf(object));
}

}  // namespace twinscale::kube
