// Defaulting: a deep copy of a value with the schema's defaults filled in by the API server's rules
// (apiextensions-apiserver's structural defaulting, as openapi_schema.h describes them): a
// non-nullable null is pruned and then defaulted like a missing field, a default applies only
// where its enclosing object exists, and defaulted values are descended into in turn. Never fails:
// a value of the wrong type is copied unchanged for validation to report.
#include <functional>
#include <set>
#include <string>

#include "controller/api/openapi_schema.h"
#include "controller/api/openapi_schema_node.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

using openapi_internal::IsNullNode;
using openapi_internal::Node;

YAML::Node Defaulted(const YAML::Node& v, const Node* s) {
  if (s == nullptr) return YAML::Clone(v);
  if (v.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    std::set<std::string, std::less<>> present;
    for (const auto& entry : v) {
      const Node* child = nullptr;
      if (entry.first.IsScalar()) {
        child = s->Property(entry.first.Scalar());
        if (child == nullptr) child = s->additional_properties.get();
        present.insert(entry.first.Scalar());
      }
      if (child != nullptr && IsNullNode(entry.second) && !child->nullable) {
        // The API server prunes a non-nullable null, then defaults it like a missing field.
        if (child->has_default) {
          out.force_insert(YAML::Clone(entry.first), Defaulted(child->default_value, child));
        }
        continue;
      }
      out.force_insert(YAML::Clone(entry.first), Defaulted(entry.second, child));
    }
    for (const auto& [name, prop] : s->properties) {
      if (prop->has_default && !present.contains(name)) {
        out.force_insert(YAML::Node(name), Defaulted(prop->default_value, prop.get()));
      }
    }
    return out;
  }
  if (v.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    const Node* items = s->items.get();
    for (const auto& item : v) {
      if (items != nullptr && IsNullNode(item) && !items->nullable && items->has_default) {
        out.push_back(Defaulted(items->default_value, items));
      } else {
        out.push_back(Defaulted(item, items));
      }
    }
    return out;
  }
  return YAML::Clone(v);
}

}  // namespace

YAML::Node OpenApiSchema::ApplyDefaults(const YAML::Node& value) const {
  try {
    return Defaulted(value, node_);
  } catch (const YAML::Exception&) {
    return YAML::Clone(value);  // unreachable for parsed nodes; Violations reports the value
  }
}

}  // namespace twinscale::api
