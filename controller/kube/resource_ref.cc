// ResourceRef and REST paths; see resource_ref.h.
#include "controller/kube/resource_ref.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace twinscale::kube {

std::string ResourceRef::ApiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourceRef::DebugName() const {
  return group.empty() ? absl::StrCat(resource, "/", version)
                       : absl::StrCat(resource, ".", group, "/", version);
}

std::string EncodeUrlComponent(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path = ref.group.empty() ? absl::StrCat("/api/", ref.version)
                                       : absl::StrCat("/apis/", ref.group, "/", ref.version);
  if (ref.namespaced && !ns.empty()) absl::StrAppend(&path, "/namespaces/", EncodeUrlComponent(ns));
  absl::StrAppend(&path, "/", ref.resource);
  if (!name.empty()) {
    absl::StrAppend(&path, "/", EncodeUrlComponent(name));
    if (!subresource.empty()) absl::StrAppend(&path, "/", EncodeUrlComponent(subresource));
  }
  return path;
}

}  // namespace twinscale::kube
