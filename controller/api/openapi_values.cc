// How the schema engine reads YAML: a scalar as the JSON value it stands for (YAML 1.2's core
// schema, ResolveScalar), the small judgements on values every step shares (null, integral,
// quoted for a message), and field paths: printed as the API server prints them (FormatPath) and
// traced back to a line of the source (LocatePath). Reading a scalar never throws; LocatePath
// catches what yaml-cpp throws.
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/api/openapi_schema.h"
#include "controller/api/openapi_schema_node.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::api {
namespace {

using openapi_internal::Sv;

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

}  // namespace

namespace openapi_internal {

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

}  // namespace openapi_internal

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

}  // namespace twinscale::api
