// The schema engine's own parts, shared by its files and by nothing else: the parsed schema tree
// (OpenApiSchema::Node) and the helpers on YAML values that more than one step needs. The engine
// is one concept per file: openapi_values.cc reads YAML as the JSON it stands for and names places
// in it, openapi_schema.cc parses a schema (from a CRD) into Nodes, openapi_validate.cc checks a
// value against them, openapi_defaults.cc applies their defaults and openapi_structural.cc checks
// the schema itself. Private to those files (hack/lint.sh): callers use openapi_schema.h.
//
// yaml-cpp throws on misuse. The engine's files only read valid nodes they got from iteration,
// never assign through a YAML::Node they don't own (operator= on a Node writes through to the
// tree), and catch yaml-cpp's exceptions at the public entry points that take outside input.
//
// Thread-safety: a Node is immutable once parsed and may be read concurrently; the functions are
// pure.
#ifndef TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_NODE_H_
#define TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_NODE_H_

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

#include "absl/strings/string_view.h"
#include "controller/api/openapi_schema.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {

struct OpenApiSchema::Node {
  std::string type;  // "" when untyped (int-or-string, preserve-unknown-fields)
  std::string description;
  std::vector<std::pair<std::string, std::unique_ptr<Node>>> properties;  // in schema order
  std::vector<std::string> required;
  std::unique_ptr<Node> additional_properties;  // the schema of a map's values
  bool additional_properties_any = false;       // additionalProperties: true
  std::unique_ptr<Node> items;
  std::vector<YAML::Node> enum_values;  // cloned from the schema document
  bool has_default = false;
  YAML::Node default_value;  // cloned; meaningful only if has_default
  bool nullable = false;
  std::optional<double> minimum, maximum;
  std::string minimum_text, maximum_text;  // as written, for messages
  bool exclusive_minimum = false, exclusive_maximum = false;
  std::optional<int64_t> min_length, max_length, min_items, max_items, min_properties,
      max_properties;
  std::string pattern;
  std::shared_ptr<const std::regex> pattern_re;
  std::string format;
  bool preserve_unknown_fields = false, int_or_string = false, embedded_resource = false;
  std::string list_type, map_type;
  std::vector<std::string> list_map_keys;
  std::set<std::string, std::less<>> keywords;  // every keyword present, for CheckStructural

  const Node* Property(std::string_view name) const {
    for (const auto& [n, p] : properties) {
      if (n == name) return p.get();
    }
    return nullptr;
  }
};

namespace openapi_internal {

using Node = OpenApiSchema::Node;

// abseil 20220623 as Debian builds it has its own string_view, which StrCat can't take from a
// std::string_view: Sv converts on the way in.
inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Values (openapi_values.cc) --------------------------------------------------------------

// True for an absent node, a YAML null, and a plain scalar that resolves to null ("~", "null", "").
bool IsNullNode(const YAML::Node& v);

// An integral JSON value that fits int64 (1 and 1.0 both are, as in the API server).
std::optional<int64_t> IntegralValue(const JsonScalar& s);

// `s` in double quotes, with quotes and backslashes escaped and newlines written as \n, for
// messages.
std::string Quote(std::string_view s);

// ---- Parsing (openapi_schema.cc) -------------------------------------------------------------

// A keyword's path in the schema: `child` under `path`, dot-separated ("" is the root).
std::string Join(std::string_view path, std::string_view child);

// ---- Validation (openapi_validate.cc) --------------------------------------------------------

// Every failure of `value` against `schema`, in document order, at most `max_errors` (then a last
// error says how many more there were), with field paths starting with `prefix`. May throw
// YAML::Exception on a node it can't read: callers that take outside input catch it.
std::vector<FieldError> NodeViolations(const YAML::Node& value, const Node& schema,
                                       std::string_view prefix, size_t max_errors);

}  // namespace openapi_internal
}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_OPENAPI_SCHEMA_NODE_H_
