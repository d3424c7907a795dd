// Structural OpenAPI v3 schemas over yaml-cpp nodes: parsing a schema into a tree of Nodes,
// validating values against it, applying its defaults as the API server does, and checking the
// schema itself. yaml-cpp throws on misuse; this file only reads valid nodes it got from iteration,
// never assigns through a YAML::Node it doesn't own (operator= on a Node writes through to the
// tree), and catches yaml-cpp's exceptions at the public entry points that take outside input.
#include "controller/policy/openapi_schema.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
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
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::policy {

// abseil 20220623 as Debian builds it has its own string_view, which StrCat can't take from a
// std::string_view: Sv converts on the way in.
namespace {
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }
}  // namespace

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

namespace {

using Node = OpenApiSchema::Node;

// Strings longer than this are not matched against a pattern: libstdc++'s std::regex recurses per
// character and can exhaust the stack on long inputs. Every pattern in our CRDs sits beside a
// much smaller maxLength.
constexpr size_t kMaxPatternInput = 4096;

// ---- Scalars -------------------------------------------------------------------------------

bool IsDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = base == 8    ? (c >= '0' && c <= '7')
                    : base == 16 ? absl::ascii_isxdigit(static_cast<unsigned char>(c))
                                 : absl::ascii_isdigit(static_cast<unsigned char>(c));
    if (!ok) return false;
  }
  return true;
}

// YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
      ++i, ++frac_digits;
    }
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!IsDigits(s.substr(i), 10)) return false;
    i = s.size();
  }
  return i == s.size();
}

void ResolvePlain(std::string_view s, JsonScalar& out) {
  using Kind = JsonScalar::Kind;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    out.kind = Kind::kNull;
    return;
  }
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    out.kind = Kind::kBool;
    out.boolean = s[0] == 't' || s[0] == 'T';
    return;
  }
  std::string_view digits = s;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
  if (IsDigits(digits, 10)) {
    int64_t v = 0;
    if (absl::SimpleAtoi(Sv(s), &v)) {
      out.kind = Kind::kInteger;
      out.integer = v;
      out.number = static_cast<double>(v);
    } else {  // beyond int64: JSON still has a number
      out.kind = Kind::kNumber;
      out.number = std::strtod(std::string(s).c_str(), nullptr);
    }
    return;
  }
  // 0o17 and 0x1F: unsigned in YAML 1.2's core schema.
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') &&
      IsDigits(s.substr(2), s[1] == 'o' ? 8 : 16)) {
    errno = 0;
    const unsigned long long v =
        std::strtoull(std::string(s.substr(2)).c_str(), nullptr, s[1] == 'o' ? 8 : 16);
    if (errno == 0 && v <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())) {
      out.kind = Kind::kInteger;
      out.integer = static_cast<int64_t>(v);
      out.number = static_cast<double>(v);
    } else {
      out.kind = Kind::kNumber;
      out.number = static_cast<double>(v);
    }
    return;
  }
  if (IsCoreFloat(s)) {
    out.kind = Kind::kNumber;
    out.number = std::strtod(std::string(s).c_str(), nullptr);
    return;
  }
  std::string_view inf = digits;
  if (inf == ".inf" || inf == ".Inf" || inf == ".INF") {
    out.kind = Kind::kNumber;
    out.number = negative ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
    return;
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    out.kind = Kind::kNumber;
    out.number = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  out.kind = Kind::kString;
}

bool IsNullNode(const YAML::Node& v) {
  if (!v.IsDefined() || v.IsNull()) return true;
  return v.IsScalar() && ResolveScalar(v).kind == JsonScalar::Kind::kNull;
}

// An integral JSON value that fits int64 (1 and 1.0 both are, as in the API server).
std::optional<int64_t> IntegralValue(const JsonScalar& s) {
  if (s.kind == JsonScalar::Kind::kInteger) return s.integer;
  if (s.kind == JsonScalar::Kind::kNumber && std::isfinite(s.number) &&
      std::trunc(s.number) == s.number && std::fabs(s.number) < 9.2e18) {
    return static_cast<int64_t>(s.number);
  }
  return std::nullopt;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

// A shortened, quoted rendering of user text for messages.
std::string QuoteShort(std::string_view s) {
  constexpr size_t kMax = 80;
  if (s.size() <= kMax) return Quote(s);
  return Quote(s.substr(0, kMax)) + "...";
}

std::string Describe(const YAML::Node& v) {
  if (IsNullNode(v)) return "null";
  if (v.IsMap()) return "an object";
  if (v.IsSequence()) return "a list";
  const JsonScalar s = ResolveScalar(v);
  switch (s.kind) {
    case JsonScalar::Kind::kBool:
      return absl::StrCat("boolean ", s.boolean ? "true" : "false");
    case JsonScalar::Kind::kInteger:
      return absl::StrCat("integer ", s.text);
    case JsonScalar::Kind::kNumber:
      return absl::StrCat("number ", s.text);
    default:
      return absl::StrCat("string ", QuoteShort(s.text));
  }
}

// A canonical JSON rendering, for equality (enum, set and map-list uniqueness): object keys
// sorted, integral numbers printed as integers so 1 and 1.0 compare equal.
std::string CanonicalJson(const YAML::Node& v) {
  if (IsNullNode(v)) return "null";
  if (v.IsMap()) {
    std::map<std::string, std::string> entries;
    for (const auto& e : v) {
      entries[e.first.IsScalar() ? e.first.Scalar() : CanonicalJson(e.first)] =
          CanonicalJson(e.second);
    }
    std::string out = "{";
    for (const auto& [k, val] : entries) {
      if (out.size() > 1) out += ',';
      absl::StrAppend(&out, Quote(k), ":", val);
    }
    return out + "}";
  }
  if (v.IsSequence()) {
    std::string out = "[";
    for (const auto& item : v) {
      if (out.size() > 1) out += ',';
      out += CanonicalJson(item);
    }
    return out + "]";
  }
  const JsonScalar s = ResolveScalar(v);
  switch (s.kind) {
    case JsonScalar::Kind::kBool:
      return s.boolean ? "true" : "false";
    case JsonScalar::Kind::kInteger:
      return absl::StrCat(s.integer);
    case JsonScalar::Kind::kNumber:
      if (auto i = IntegralValue(s)) return absl::StrCat(*i);
      return absl::StrFormat("%.17g", s.number);
    default:
      return Quote(s.text);
  }
}

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
                        absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate closest to `name` if it is close enough to be a likely typo.
std::optional<std::string> Suggest(std::string_view name, const std::vector<std::string>& options) {
  if (name.size() > 256) return std::nullopt;  // keep the quadratic distance cheap
  const size_t limit = name.size() >= 5 ? 2 : 1;
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& o : options) {
    const size_t d = EditDistance(name, o);
    if (d < best_distance) best = o, best_distance = d;
  }
  return best;
}

// ---- Parsing a schema ----------------------------------------------------------------------

std::string Join(std::string_view path, std::string_view child) {
  if (path.empty()) return std::string(child);
  return absl::StrCat(Sv(path), ".", Sv(child));
}

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

// ---- Validation ----------------------------------------------------------------------------

PathElement Prop(std::string_view name) {
  return PathElement{PathElement::Kind::kProperty, std::string(name), 0};
}
PathElement MapKey(std::string_view name) {
  return PathElement{PathElement::Kind::kMapKey, std::string(name), 0};
}
PathElement Index(size_t i) { return PathElement{PathElement::Kind::kIndex, "", i}; }

bool IsYaml11BoolWord(std::string_view s) {
  const std::string l = absl::AsciiStrToLower(Sv(s));
  return l == "yes" || l == "no" || l == "on" || l == "off" || l == "y" || l == "n";
}

class Validator {
 public:
  Validator(std::string_view prefix, size_t max_errors) : prefix_(prefix), max_(max_errors) {}

  void Check(const YAML::Node& v, const Node& s) {
    if (IsNullNode(v)) {
      if (s.nullable || (s.type.empty() && s.preserve_unknown_fields)) return;
      TypeError(v, s);
      return;
    }
    if (s.int_or_string) {
      const JsonScalar j = v.IsScalar() ? ResolveScalar(v) : JsonScalar{};
      if (j.kind == JsonScalar::Kind::kString) {
        CheckString(j, s);
      } else if (v.IsScalar() && IntegralValue(j).has_value()) {
        CheckNumber(j, s);
      } else {
        Add(absl::StrCat("must be an integer or a string, got ", Describe(v)));
        return;
      }
      CheckEnum(v, s);
      return;
    }
    if (s.type.empty()) {  // untyped: only preserve-unknown-fields reaches here in a valid schema
      if (v.IsMap()) CheckObject(v, s);
      if (v.IsSequence() && s.items) CheckArray(v, s);
      return;
    }
    const JsonScalar j = v.IsScalar() ? ResolveScalar(v) : JsonScalar{};
    if (s.type == "object") {
      if (!v.IsMap()) return TypeError(v, s);
      CheckObject(v, s);
    } else if (s.type == "array") {
      if (!v.IsSequence()) return TypeError(v, s);
      CheckArray(v, s);
    } else if (s.type == "string") {
      if (!v.IsScalar() || j.kind != JsonScalar::Kind::kString) return TypeError(v, s);
      CheckString(j, s);
    } else if (s.type == "integer") {
      if (!v.IsScalar() || !IntegralValue(j)) return TypeError(v, s);
      CheckNumber(j, s);
    } else if (s.type == "number") {
      if (!v.IsScalar() ||
          (j.kind != JsonScalar::Kind::kInteger && j.kind != JsonScalar::Kind::kNumber)) {
        return TypeError(v, s);
      }
      if (!std::isfinite(j.number))
        return Add(absl::StrCat("must be a finite number, got ", j.text));
      CheckNumber(j, s);
    } else if (s.type == "boolean") {
      if (!v.IsScalar() || j.kind != JsonScalar::Kind::kBool) return TypeError(v, s);
    }
    CheckEnum(v, s);
  }

  std::vector<FieldError> Take() && {
    if (dropped_ > 0) {
      errors_.push_back(FieldError{{}, "", absl::StrCat("and ", dropped_, " more errors")});
    }
    return std::move(errors_);
  }

 private:
  void Add(std::string message) {
    if (errors_.size() >= max_) {
      ++dropped_;
      return;
    }
    errors_.push_back(FieldError{path_, FormatPath(prefix_, path_), std::move(message)});
  }

  void TypeError(const YAML::Node& v, const Node& s) {
    std::string message = absl::StrCat("must be of type ", s.type, ", got ", Describe(v));
    const JsonScalar j = v.IsScalar() ? ResolveScalar(v) : JsonScalar{};
    if (s.type == "boolean" && j.kind == JsonScalar::Kind::kString && IsYaml11BoolWord(j.text)) {
      message += " (yes/no/on/off are strings here: write true or false)";
    } else if (s.type == "string" && s.pattern == kDurationPattern &&
               (j.kind == JsonScalar::Kind::kInteger || j.kind == JsonScalar::Kind::kNumber)) {
      message += " (a duration needs a unit, e.g. \"500ms\" or \"5m\")";
    } else if (s.type == "string" && v.IsScalar() && j.kind != JsonScalar::Kind::kNull) {
      message += " (quote it to make it a string)";
    } else if (s.type == "integer" && j.kind == JsonScalar::Kind::kNumber) {
      message = absl::StrCat("must be an integer, got ", j.text);
    }
    Add(std::move(message));
  }

  void CheckObject(const YAML::Node& v, const Node& s) {
    std::set<std::string, std::less<>> seen;
    for (const auto& entry : v) {
      if (!entry.first.IsScalar()) {
        Add("object keys must be strings");
        continue;
      }
      const std::string name = entry.first.Scalar();
      if (!seen.insert(name).second) {
        path_.push_back(Prop(name));
        Add("duplicate key");
        path_.pop_back();
        continue;
      }
      if (const Node* p = s.Property(name)) {
        path_.push_back(Prop(name));
        Check(entry.second, *p);
        path_.pop_back();
      } else if (s.additional_properties) {
        path_.push_back(MapKey(name));
        Check(entry.second, *s.additional_properties);
        path_.pop_back();
      } else if (!s.additional_properties_any && !s.preserve_unknown_fields) {
        path_.push_back(Prop(name));
        Add(UnknownField(name, s));
        path_.pop_back();
      }
    }
    for (const std::string& r : s.required) {
      if (seen.contains(r)) continue;
      path_.push_back(Prop(r));
      Add("required field is missing");
      path_.pop_back();
    }
    if (s.min_properties && static_cast<int64_t>(seen.size()) < *s.min_properties) {
      Add(absl::StrCat("must have at least ", *s.min_properties, " entries, got ", seen.size()));
    }
    if (s.max_properties && static_cast<int64_t>(seen.size()) > *s.max_properties) {
      Add(absl::StrCat("must have at most ", *s.max_properties, " entries, got ", seen.size()));
    }
  }

  static std::string UnknownField(std::string_view name, const Node& s) {
    std::vector<std::string> known;
    for (const auto& [n, p] : s.properties) known.push_back(n);
    if (known.empty()) return "unknown field (this object has no fields)";
    if (auto near = Suggest(name, known)) {
      return absl::StrCat("unknown field (did you mean ", Quote(*near), "?)");
    }
    return absl::StrCat("unknown field (known fields: ", absl::StrJoin(known, ", "), ")");
  }

  void CheckArray(const YAML::Node& v, const Node& s) {
    const int64_t n = static_cast<int64_t>(v.size());
    if (s.min_items && n < *s.min_items) {
      Add(absl::StrCat("must have at least ", *s.min_items, *s.min_items == 1 ? " item" : " items",
                       ", got ", n));
    }
    if (s.max_items && n > *s.max_items) {
      Add(absl::StrCat("must have at most ", *s.max_items, *s.max_items == 1 ? " item" : " items",
                       ", got ", n));
    }
    std::set<std::string> seen;
    size_t i = 0;
    for (const auto& item : v) {
      path_.push_back(Index(i++));
      if (s.items) Check(item, *s.items);
      if (s.list_type == "set" && !seen.insert(CanonicalJson(item)).second) {
        Add("duplicate item in a set");
      } else if (s.list_type == "map" && item.IsMap()) {
        std::vector<std::string> parts;
        for (const std::string& k : s.list_map_keys) {
          std::string rendered = "null";
          for (const auto& e : item) {
            if (e.first.IsScalar() && e.first.Scalar() == k) {
              rendered = CanonicalJson(e.second);
              break;
            }
          }
          parts.push_back(absl::StrCat(k, "=", rendered));
        }
        const std::string key = absl::StrJoin(parts, ",");
        if (!seen.insert(key).second) Add(absl::StrCat("duplicate entry with ", key));
      }
      path_.pop_back();
    }
  }

  void CheckString(const JsonScalar& j, const Node& s) {
    const size_t length = Utf8Length(j.text);
    if (s.min_length && static_cast<int64_t>(length) < *s.min_length) {
      Add(*s.min_length == 1
              ? std::string("must not be empty")
              : absl::StrCat("must be at least ", *s.min_length, " characters long, got ", length));
    }
    bool too_long = false;
    if (s.max_length && static_cast<int64_t>(length) > *s.max_length) {
      Add(absl::StrCat("must be at most ", *s.max_length, " characters long, got ", length));
      too_long = true;
    }
    if (s.pattern_re && !too_long) {
      if (j.text.size() > kMaxPatternInput) {
        Add(absl::StrCat("is too long (", j.text.size(), " bytes) to check against its pattern"));
      } else if (!std::regex_search(j.text, *s.pattern_re)) {
        if (s.pattern == kDurationPattern) {
          Add(
              absl::StrCat("must be a duration such as 500ms, 5m or 1h30m (units ns, us, ms, s, "
                           "m, h), got ",
                           QuoteShort(j.text)));
        } else {
          Add(absl::StrCat("must match the pattern ", s.pattern, ", got ", QuoteShort(j.text)));
        }
      }
    }
    if (s.format == "date-time") {
      absl::Time t;
      std::string err;
      if (!absl::ParseTime(absl::RFC3339_full, j.text, &t, &err)) {
        Add(absl::StrCat("must be an RFC 3339 date-time such as 2024-05-01T12:00:00Z, got ",
                         QuoteShort(j.text)));
      }
    }
  }

  void CheckNumber(const JsonScalar& j, const Node& s) {
    const double x = j.number;
    if (s.minimum) {
      if (s.exclusive_minimum ? !(x > *s.minimum) : !(x >= *s.minimum)) {
        Add(absl::StrCat("must be ", s.exclusive_minimum ? "> " : ">= ", s.minimum_text, ", got ",
                         j.text));
      }
    }
    if (s.maximum) {
      if (s.exclusive_maximum ? !(x < *s.maximum) : !(x <= *s.maximum)) {
        Add(absl::StrCat("must be ", s.exclusive_maximum ? "< " : "<= ", s.maximum_text, ", got ",
                         j.text));
      }
    }
    if (s.format == "int32") {
      const auto i = IntegralValue(j);
      if (i &&
          (*i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())) {
        Add(absl::StrCat("must fit in a 32-bit integer, got ", j.text));
      }
    }
  }

  void CheckEnum(const YAML::Node& v, const Node& s) {
    if (s.enum_values.empty()) return;
    const std::string got = CanonicalJson(v);
    std::vector<std::string> options, option_texts;
    for (const YAML::Node& e : s.enum_values) {
      const std::string c = CanonicalJson(e);
      if (c == got) return;
      options.push_back(c);
      if (e.IsScalar()) option_texts.push_back(e.Scalar());
    }
    std::string message = absl::StrCat("must be one of ", absl::StrJoin(options, ", "), ", got ",
                                       got.size() > 80 ? got.substr(0, 80) + "..." : got);
    if (v.IsScalar()) {
      if (auto near = Suggest(v.Scalar(), option_texts)) {
        absl::StrAppend(&message, " (did you mean ", Quote(*near), "?)");
      }
    }
    Add(std::move(message));
  }

  std::string prefix_;
  size_t max_;
  size_t dropped_ = 0;
  std::vector<PathElement> path_;
  std::vector<FieldError> errors_;
};

// ---- Defaulting ----------------------------------------------------------------------------

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

// ---- Structural checks ---------------------------------------------------------------------

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
        Validator v("default", 20);
        v.Check(s.default_value, s);
        for (const FieldError& e : std::move(v).Take()) {
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
    Validator v(absl::StrCat("enum[", i, "]"), 20);
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
    v.Check(value, copy);
    for (const FieldError& e : std::move(v).Take()) Add(path, e.ToString());
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

// ---- Public API ----------------------------------------------------------------------------

JsonScalar ResolveScalar(const YAML::Node& node) {
  JsonScalar out;
  if (!node.IsDefined() || !node.IsScalar()) return out;
  out.text = node.Scalar();
  const std::string& tag = node.Tag();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") {
    out.kind = JsonScalar::Kind::kString;
    return out;
  }
  ResolvePlain(out.text, out);
  return out;
}

std::string FormatPath(std::string_view prefix, const std::vector<PathElement>& path) {
  std::string out(prefix);
  for (const PathElement& e : path) {
    switch (e.kind) {
      case PathElement::Kind::kProperty:
        if (!out.empty()) out += '.';
        out += e.key;
        break;
      case PathElement::Kind::kMapKey:
        absl::StrAppend(&out, "[", e.key, "]");
        break;
      case PathElement::Kind::kIndex:
        absl::StrAppend(&out, "[", e.index, "]");
        break;
    }
  }
  return out;
}

YAML::Mark LocatePath(const YAML::Node& root, const std::vector<PathElement>& path) {
  YAML::Mark mark = YAML::Mark::null_mark();
  try {
    if (!root.IsDefined()) return mark;
    mark = root.Mark();
    YAML::Node cur;
    cur.reset(root);  // reset rebinds; operator= would write through to the document
    for (const PathElement& e : path) {
      bool found = false;
      if (e.kind == PathElement::Kind::kIndex) {
        if (!cur.IsSequence()) break;
        size_t i = 0;
        for (const auto& item : cur) {
          if (i++ == e.index) {
            mark = item.Mark();
            YAML::Node next;
            next.reset(item);
            cur.reset(next);
            found = true;
            break;
          }
        }
      } else {
        if (!cur.IsMap()) break;
        for (const auto& entry : cur) {
          if (entry.first.IsScalar() && entry.first.Scalar() == e.key) {
            mark = entry.first.Mark();  // a null value's own mark points past it: use the key's
            YAML::Node next;
            next.reset(entry.second);
            cur.reset(next);
            found = true;
            break;
          }
        }
      }
      if (!found) break;
    }
  } catch (const YAML::Exception&) {
    // A best-effort location: keep what was found.
  }
  return mark;
}

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

std::vector<FieldError> OpenApiSchema::Violations(const YAML::Node& value, std::string_view path,
                                                  size_t max_errors) const {
  Validator v(path, std::max<size_t>(max_errors, 1));
  try {
    v.Check(value, *node_);
  } catch (const YAML::Exception& e) {
    return {FieldError{{}, std::string(path), absl::StrCat("unreadable value: ", e.what())}};
  }
  return std::move(v).Take();
}

absl::Status OpenApiSchema::Validate(const YAML::Node& value, std::string path) const {
  const std::vector<FieldError> errors = Violations(value, path);
  if (errors.empty()) return absl::OkStatus();
  std::vector<std::string> parts;
  for (const FieldError& e : errors) parts.push_back(e.ToString());
  return absl::InvalidArgumentError(absl::StrJoin(parts, "; "));
}

YAML::Node OpenApiSchema::ApplyDefaults(const YAML::Node& value) const {
  try {
    return Defaulted(value, node_);
  } catch (const YAML::Exception&) {
    return YAML::Clone(value);  // unreachable for parsed nodes; Violations reports the value
  }
}

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

}  // namespace twinscale::policy
