// Checks on a schema itself rather than on values: the API server's structural-schema rules for a
// CRD (every node typed, keywords that fit the type, defaults and enum values valid against their
// own node, list-map keys sound, the root's metadata left to Kubernetes) and the project's own rule
// that every property is documented. These run on the CRD in tests and in the fake API server, not
// on every manifest: a CRD that passes them is one the API server would accept.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/openapi_schema_node.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

using openapi_internal::IsNullNode;
using openapi_internal::Join;
using openapi_internal::Node;
using openapi_internal::NodeViolations;
using openapi_internal::Quote;
using openapi_internal::Sv;

class StructuralChecker {
 public:
  void Check(const Node& s, const std::string& path, bool root, bool in_metadata) {
    const bool untyped_ok = s.int_or_string || s.preserve_unknown_fields;
    if (s.type.empty() && !untyped_ok)
      Add(path, "type is required (structural schemas type every node)");
    if (root && s.type != "object") Add(path, "the root must be of type object");
    if (s.int_or_string && !s.type.empty()) {
      Add(path, "x-kubernetes-int-or-string requires an empty type");
    }
    if (s.preserve_unknown_fields && !s.type.empty() && s.type != "object") {
      Add(path, "x-kubernetes-preserve-unknown-fields needs type object (or none)");
    }
    const bool object = s.type == "object" || (s.type.empty() && s.preserve_unknown_fields);
    const bool array = s.type == "array";
    const bool string = s.type == "string" || s.int_or_string;
    const bool numeric = s.type == "integer" || s.type == "number" || s.int_or_string;
    Applies(s, path, object,
            {"properties", "required", "additionalProperties", "minProperties", "maxProperties",
             "x-kubernetes-map-type"});
    Applies(
        s, path, array,
        {"items", "minItems", "maxItems", "x-kubernetes-list-type", "x-kubernetes-list-map-keys"});
    Applies(s, path, string, {"pattern", "minLength", "maxLength"});
    Applies(s, path, numeric, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"});
    if (array && !s.items) Add(path, "an array needs items");
    if (!s.properties.empty() && (s.additional_properties || s.additional_properties_any)) {
      Add(path, "properties and additionalProperties are mutually exclusive");
    }
    if (s.keywords.contains("exclusiveMinimum") && !s.minimum) {
      Add(path, "exclusiveMinimum needs minimum");
    }
    if (s.keywords.contains("exclusiveMaximum") && !s.maximum) {
      Add(path, "exclusiveMaximum needs maximum");
    }
    if (s.minimum && s.maximum && *s.minimum > *s.maximum) Add(path, "minimum exceeds maximum");
    if (s.min_length && s.max_length && *s.min_length > *s.max_length) {
      Add(path, "minLength exceeds maxLength");
    }
    if (s.min_items && s.max_items && *s.min_items > *s.max_items) {
      Add(path, "minItems exceeds maxItems");
    }
    if (!s.format.empty()) {
      if ((s.format == "int32" || s.format == "int64") && s.type != "integer") {
        Add(path, absl::StrCat("format ", s.format, " needs type integer"));
      }
      if ((s.format == "float" || s.format == "double") && s.type != "number") {
        Add(path, absl::StrCat("format ", s.format, " needs type number"));
      }
      if (s.format == "date-time" && s.type != "string") {
        Add(path, "format date-time needs type string");
      }
    }
    if (!s.properties.empty() || !s.preserve_unknown_fields) {
      for (const std::string& r : s.required) {
        if (!s.Property(r))
          Add(path, absl::StrCat("required field ", Quote(r), " is not a property"));
      }
    }
    if (s.has_default) {
      if (in_metadata) {
        Add(path, "defaults are not allowed inside metadata");
      } else if (IsNullNode(s.default_value) && !s.nullable) {
        Add(path, "default must not be null (the field is not nullable)");
      } else {
        for (const FieldError& e : NodeViolations(s.default_value, s, "default", 20)) {
          Add(path, absl::StrCat("invalid default: ", e.ToString()));
        }
      }
    }
    for (size_t i = 0; i < s.enum_values.size(); ++i) {
      if (!IsNullNode(s.enum_values[i]) || !s.nullable) {
        CheckEnumValue(s, s.enum_values[i], path, i);
      }
    }
    if (!s.list_map_keys.empty() && s.list_type != "map") {
      Add(path, "x-kubernetes-list-map-keys needs x-kubernetes-list-type: map");
    }
    if (s.list_type == "map") {
      if (s.list_map_keys.empty()) Add(path, "x-kubernetes-list-type map needs list-map-keys");
      if (s.items && s.items->type != "object") {
        Add(path, "x-kubernetes-list-type map needs object items");
      }
      for (const std::string& k : s.list_map_keys) {
        const Node* key = s.items ? s.items->Property(k) : nullptr;
        if (key == nullptr) {
          Add(path, absl::StrCat("list-map key ", Quote(k), " is not a property of the items"));
          continue;
        }
        if (key->type != "string" && key->type != "integer" && key->type != "number" &&
            key->type != "boolean") {
          Add(path, absl::StrCat("list-map key ", Quote(k), " must be a scalar"));
        }
        const auto& req = s.items->required;
        if (!key->has_default && std::find(req.begin(), req.end(), k) == req.end()) {
          Add(path, absl::StrCat("list-map key ", Quote(k), " must be required or defaulted"));
        }
      }
    }
    for (const auto& [name, child] : s.properties) {
      const std::string child_path =
          absl::StrCat(path.empty() ? "" : path + ".", "properties[", name, "]");
      if (root && name == "metadata") CheckMetadata(*child, child_path);
      Check(*child, child_path, false, in_metadata || (root && name == "metadata"));
    }
    if (s.items) Check(*s.items, Join(path, "items"), false, in_metadata);
    if (s.additional_properties) {
      Check(*s.additional_properties, Join(path, "additionalProperties"), false, in_metadata);
    }
  }

  absl::Status Result() const {
    if (errors_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("schema is not structural: ", absl::StrJoin(errors_, "; ")));
  }

 private:
  void Add(const std::string& path, std::string_view message) {
    errors_.push_back(absl::StrCat(path.empty() ? "(root)" : path, ": ", Sv(message)));
  }

  void Applies(const Node& s, const std::string& path, bool applies,
               std::initializer_list<std::string_view> keywords) {
    if (applies) return;
    for (std::string_view k : keywords) {
      if (s.keywords.contains(k)) {
        Add(path, absl::StrCat(Sv(k), " does not apply to type ",
                               s.type.empty() ? std::string("(none)") : s.type));
      }
    }
  }

  void CheckEnumValue(const Node& s, const YAML::Node& value, const std::string& path, size_t i) {
    // Validate against a copy of the node without its enum (membership is trivially true).
    Node copy;
    copy.type = s.type;
    copy.nullable = s.nullable;
    copy.int_or_string = s.int_or_string;
    copy.minimum = s.minimum, copy.maximum = s.maximum;
    copy.minimum_text = s.minimum_text, copy.maximum_text = s.maximum_text;
    copy.exclusive_minimum = s.exclusive_minimum, copy.exclusive_maximum = s.exclusive_maximum;
    copy.min_length = s.min_length, copy.max_length = s.max_length;
    copy.pattern = s.pattern, copy.pattern_re = s.pattern_re;
    copy.format = s.format;
    if (s.type == "object" || s.type == "array") {
      // Compound enums are rare; check their shape only.
      if ((s.type == "object") != value.IsMap() || (s.type == "array") != value.IsSequence()) {
        Add(path, absl::StrCat("enum[", i, "]: must be of type ", s.type));
      }
      return;
    }
    for (const FieldError& e : NodeViolations(value, copy, absl::StrCat("enum[", i, "]"), 20)) {
      Add(path, e.ToString());
    }
  }

  // The API server (apiextensions structural validation) lets the root's metadata say only
  // `type: object` and restrict name and generateName: any other keyword, a description or a
  // default included, is Forbidden ("must not specify anything other than name and
  // generateName").
  void CheckMetadata(const Node& s, const std::string& path) {
    for (const std::string& keyword : s.keywords) {
      if (keyword != "type" && keyword != "properties") {
        Add(path, absl::StrCat("metadata must not specify anything other than name and "
                               "generateName (found ",
                               keyword, ")"));
      }
    }
    for (const auto& [name, child] : s.properties) {
      if (name != "name" && name != "generateName") {
        Add(path, absl::StrCat("metadata must not specify anything other than name and "
                               "generateName (found properties[",
                               name, "])"));
      }
    }
  }

  std::vector<std::string> errors_;
};

void Undocumented(const Node& s, const std::string& path, std::vector<std::string>& out) {
  for (const auto& [name, child] : s.properties) {
    const std::string child_path = path.empty() ? name : absl::StrCat(path, ".", name);
    // The root's metadata may carry no description (see CheckMetadata): ObjectMeta is documented
    // by Kubernetes.
    const bool root_metadata = path.empty() && name == "metadata";
    if (child->description.empty() && !root_metadata) out.push_back(child_path);
    Undocumented(*child, child_path, out);
  }
  if (s.items) Undocumented(*s.items, path + "[*]", out);
  if (s.additional_properties) Undocumented(*s.additional_properties, path + "[*]", out);
}

}  // namespace

absl::Status OpenApiSchema::CheckStructural() const {
  StructuralChecker checker;
  try {
    checker.Check(*node_, "", node_ == root_.get(), false);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("schema: ", e.what()));
  }
  return checker.Result();
}

std::vector<std::string> OpenApiSchema::UndocumentedFields() const {
  std::vector<std::string> out;
  Undocumented(*node_, "", out);
  return out;
}

}  // namespace twinscale::api
