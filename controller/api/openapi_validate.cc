// Validation: every way a value fails its schema, as the API server reports it (type, enum,
// bounds, lengths, pattern, format, required and unknown fields, duplicate keys, list sets and
// maps), each with its field path and a message a person can act on ("did you mean", "quote it",
// "a duration needs a unit"). The Validator walks the value and the schema together and stops
// recording after max_errors. It reads the value as given: defaults are openapi_defaults.cc's job,
// done before.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/api/edit_distance.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/openapi_schema_node.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

using openapi_internal::IntegralValue;
using openapi_internal::IsNullNode;
using openapi_internal::Node;
using openapi_internal::Quote;
using openapi_internal::Sv;

// Strings longer than this are not matched against a pattern: libstdc++'s std::regex recurses per
// character and can exhaust the stack on long inputs. Every pattern in our CRDs sits beside a
// much smaller maxLength.
constexpr size_t kMaxPatternInput = 4096;

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

}  // namespace

std::vector<FieldError> openapi_internal::NodeViolations(const YAML::Node& value,
                                                         const Node& schema,
                                                         std::string_view prefix,
                                                         size_t max_errors) {
  Validator v(prefix, max_errors);
  v.Check(value, schema);
  return std::move(v).Take();
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

}  // namespace twinscale::api
