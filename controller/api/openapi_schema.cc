// The schema model and where it comes from: parsing an OpenAPI v3 schema (a CRD version's
// openAPIV3Schema) into a tree of OpenApiSchema::Node, keyword by keyword, refusing any keyword the
// engine does not implement rather than ignoring it; finding that schema in a CRD document; and
// walking the tree (Property, Type). yaml-cpp throws on misuse: this file only reads nodes it got
// from iteration and catches yaml-cpp's exceptions at the entry points that take outside input.
#include "controller/api/openapi_schema.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "controller/api/openapi_schema_node.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {

std::string openapi_internal::Join(std::string_view path, std::string_view child) {
  if (path.empty()) return std::string(child);
  return absl::StrCat(Sv(path), ".", Sv(child));
}

namespace {

using openapi_internal::IntegralValue;
using openapi_internal::Join;
using openapi_internal::Node;
using openapi_internal::Quote;
using openapi_internal::Sv;

absl::Status SchemaError(std::string_view path, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("schema ", path.empty() ? "(root)" : Sv(path), ": ", Sv(message)));
}

class SchemaParser {
 public:
  absl::StatusOr<std::unique_ptr<Node>> Parse(const YAML::Node& y, const std::string& path,
                                              int depth) {
    if (depth > 64) return SchemaError(path, "nested too deeply");
    if (!y.IsMap()) return SchemaError(path, "a schema must be a mapping");
    auto node = std::make_unique<Node>();
    for (const auto& entry : y) {
      if (!entry.first.IsScalar()) return SchemaError(path, "keys must be strings");
      const std::string key = entry.first.Scalar();
      const YAML::Node& v = entry.second;
      const std::string at = Join(path, key);
      if (!node->keywords.insert(key).second) return SchemaError(at, "duplicate keyword");
      absl::Status s = Keyword(*node, key, v, path, at, depth);
      if (!s.ok()) return s;
    }
    return node;
  }

 private:
  static absl::StatusOr<std::string> String(const YAML::Node& v, const std::string& at) {
    if (!v.IsScalar() || ResolveScalar(v).kind != JsonScalar::Kind::kString) {
      return SchemaError(at, "must be a string");
    }
    return v.Scalar();
  }
  static absl::StatusOr<bool> Bool(const YAML::Node& v, const std::string& at) {
    if (!v.IsScalar() || ResolveScalar(v).kind != JsonScalar::Kind::kBool) {
      return SchemaError(at, "must be true or false");
    }
    return ResolveScalar(v).boolean;
  }
  static absl::StatusOr<int64_t> Count(const YAML::Node& v, const std::string& at) {
    std::optional<int64_t> i;
    if (v.IsScalar()) i = IntegralValue(ResolveScalar(v));
    if (!i || *i < 0) return SchemaError(at, "must be a non-negative integer");
    return *i;
  }
  static absl::StatusOr<std::vector<std::string>> Strings(const YAML::Node& v,
                                                          const std::string& at) {
    if (!v.IsSequence()) return SchemaError(at, "must be a list of strings");
    std::vector<std::string> out;
    for (const auto& item : v) {
      if (!item.IsScalar() || ResolveScalar(item).kind != JsonScalar::Kind::kString) {
        return SchemaError(at, "must be a list of strings");
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  absl::Status Keyword(Node& node, const std::string& key, const YAML::Node& v,
                       const std::string& path, const std::string& at, int depth) {
    if (key == "type") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      static const std::set<std::string, std::less<>> kTypes = {"object",  "array",  "string",
                                                                "integer", "number", "boolean"};
      if (!kTypes.contains(*s)) {
        return SchemaError(at, absl::StrCat("unknown type ", Quote(*s),
                                            " (object, array, string, integer, number, boolean)"));
      }
      node.type = *s;
    } else if (key == "description" || key == "title") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      if (key == "description") node.description = *s;
    } else if (key == "example" || key == "externalDocs") {
      // Documentation only.
    } else if (key == "properties") {
      if (!v.IsMap()) return SchemaError(at, "must be a mapping of property names to schemas");
      for (const auto& p : v) {
        if (!p.first.IsScalar()) return SchemaError(at, "property names must be strings");
        const std::string name = p.first.Scalar();
        if (node.Property(name)) return SchemaError(at, absl::StrCat("duplicate property ", name));
        auto child =
            Parse(p.second, absl::StrCat(path.empty() ? "" : path + ".", "properties[", name, "]"),
                  depth + 1);
        if (!child.ok()) return child.status();
        node.properties.emplace_back(name, std::move(*child));
      }
    } else if (key == "required") {
      auto s = Strings(v, at);
      if (!s.ok()) return s.status();
      node.required = std::move(*s);
    } else if (key == "additionalProperties") {
      if (v.IsScalar() && ResolveScalar(v).kind == JsonScalar::Kind::kBool) {
        if (!ResolveScalar(v).boolean) {
          return SchemaError(at, "must not be false (structural schemas prune unknown fields)");
        }
        node.additional_properties_any = true;
      } else {
        auto child = Parse(v, at, depth + 1);
        if (!child.ok()) return child.status();
        node.additional_properties = std::move(*child);
      }
    } else if (key == "items") {
      auto child = Parse(v, at, depth + 1);
      if (!child.ok()) return child.status();
      node.items = std::move(*child);
    } else if (key == "enum") {
      if (!v.IsSequence() || v.size() == 0) return SchemaError(at, "must be a non-empty list");
      for (const auto& item : v) node.enum_values.push_back(YAML::Clone(item));
    } else if (key == "default") {
      node.has_default = true;
      node.default_value = YAML::Clone(v);
    } else if (key == "nullable" || key == "x-kubernetes-preserve-unknown-fields" ||
               key == "x-kubernetes-int-or-string" || key == "x-kubernetes-embedded-resource" ||
               key == "exclusiveMinimum" || key == "exclusiveMaximum") {
      auto b = Bool(v, at);
      if (!b.ok()) return b.status();
      if (key == "nullable") node.nullable = *b;
      if (key == "x-kubernetes-preserve-unknown-fields") node.preserve_unknown_fields = *b;
      if (key == "x-kubernetes-int-or-string") node.int_or_string = *b;
      if (key == "x-kubernetes-embedded-resource") node.embedded_resource = *b;
      if (key == "exclusiveMinimum") node.exclusive_minimum = *b;
      if (key == "exclusiveMaximum") node.exclusive_maximum = *b;
    } else if (key == "minimum" || key == "maximum") {
      const JsonScalar s = v.IsScalar() ? ResolveScalar(v) : JsonScalar{};
      if ((s.kind != JsonScalar::Kind::kInteger && s.kind != JsonScalar::Kind::kNumber) ||
          !std::isfinite(s.number)) {
        return SchemaError(at, "must be a number");
      }
      (key == "minimum" ? node.minimum : node.maximum) = s.number;
      (key == "minimum" ? node.minimum_text : node.maximum_text) = s.text;
    } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems" ||
               key == "minProperties" || key == "maxProperties") {
      auto c = Count(v, at);
      if (!c.ok()) return c.status();
      if (key == "minLength") node.min_length = *c;
      if (key == "maxLength") node.max_length = *c;
      if (key == "minItems") node.min_items = *c;
      if (key == "maxItems") node.max_items = *c;
      if (key == "minProperties") node.min_properties = *c;
      if (key == "maxProperties") node.max_properties = *c;
    } else if (key == "pattern") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      node.pattern = *s;
      try {
        node.pattern_re = std::make_shared<const std::regex>(*s, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return SchemaError(at, absl::StrCat("invalid regular expression: ", e.what()));
      }
    } else if (key == "format") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      node.format = *s;
    } else if (key == "x-kubernetes-list-type") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      if (*s != "atomic" && *s != "set" && *s != "map") {
        return SchemaError(at, "must be atomic, set or map");
      }
      node.list_type = *s;
    } else if (key == "x-kubernetes-list-map-keys") {
      auto s = Strings(v, at);
      if (!s.ok()) return s.status();
      node.list_map_keys = std::move(*s);
    } else if (key == "x-kubernetes-map-type") {
      auto s = String(v, at);
      if (!s.ok()) return s.status();
      if (*s != "granular" && *s != "atomic") return SchemaError(at, "must be granular or atomic");
      node.map_type = *s;
    } else {
      return SchemaError(at,
                         "unsupported keyword (this engine would ignore it; the API server "
                         "would not)");
    }
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<OpenApiSchema> OpenApiSchema::FromYaml(const YAML::Node& schema) {
  try {
    SchemaParser parser;
    auto root = parser.Parse(schema, "", 0);
    if (!root.ok()) return root.status();
    std::shared_ptr<const Node> tree(std::move(*root));
    const Node* node = tree.get();
    return OpenApiSchema(std::move(tree), node);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("schema: ", e.what()));
  }
}

std::optional<OpenApiSchema> OpenApiSchema::Property(std::string_view name) const {
  const Node* p = node_->Property(name);
  if (p == nullptr) return std::nullopt;
  return OpenApiSchema(root_, p);
}

const std::string& OpenApiSchema::Type() const { return node_->type; }

absl::StatusOr<OpenApiSchema> CrdVersionSchema(const YAML::Node& crd, std::string_view version) {
  try {
    if (!crd.IsMap()) return absl::InvalidArgumentError("a CRD must be a mapping");
    const YAML::Node kind = crd["kind"];
    const YAML::Node api_version = crd["apiVersion"];
    if (!kind.IsDefined() || !kind.IsScalar() || kind.Scalar() != "CustomResourceDefinition" ||
        !api_version.IsDefined() || !api_version.IsScalar() ||
        api_version.Scalar() != "apiextensions.k8s.io/v1") {
      return absl::InvalidArgumentError("not an apiextensions.k8s.io/v1 CustomResourceDefinition");
    }
    const YAML::Node spec = crd["spec"];
    const YAML::Node versions = spec.IsDefined() ? spec["versions"] : YAML::Node();
    if (!versions.IsDefined() || !versions.IsSequence())
      return absl::InvalidArgumentError("CRD: spec.versions is missing");
    size_t i = 0;
    for (const auto& v : versions) {
      const YAML::Node name = v.IsMap() ? v["name"] : YAML::Node();
      if (name.IsDefined() && name.IsScalar() && name.Scalar() == version) {
        const YAML::Node wrapper = v["schema"];
        const YAML::Node schema =
            wrapper.IsDefined() && wrapper.IsMap() ? wrapper["openAPIV3Schema"] : YAML::Node();
        if (!schema.IsDefined() || !schema.IsMap()) {
          return absl::InvalidArgumentError(
              absl::StrCat("CRD: spec.versions[", i, "].schema.openAPIV3Schema is missing"));
        }
        return OpenApiSchema::FromYaml(schema);
      }
      ++i;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("CRD: no version ", Quote(version), " in spec.versions"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("CRD: ", e.what()));
  }
}

}  // namespace twinscale::api
