// DNS-1123 name checks: see object_names.h.
#include "controller/outputs/object_names.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace twinscale::outputs {
namespace {

bool IsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

// The value as a person reads it in a message: quoted, cut after 80 characters.
std::string Quoted(std::string_view value) {
  const bool cut = value.size() > 80;
  std::string out = "\"";
  out.append(value.substr(0, 80));
  out.append(cut ? "...\"" : "\"");
  return out;
}

}  // namespace

absl::Status ValidateNamespaceName(std::string_view value, std::string_view field) {
  if (value.empty())
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": required"));
  if (!IsLabel(value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(field), ": ", Quoted(value),
        " is not a valid namespace name (a DNS-1123 label: at most 63 lower-case letters, digits "
        "and '-', starting and ending with a letter or digit)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateObjectName(std::string_view value, std::string_view field) {
  if (value.empty())
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": required"));
  bool ok = value.size() <= 253;
  if (ok) {
    for (absl::string_view label :
         absl::StrSplit(absl::string_view(value.data(), value.size()), '.')) {
      if (!IsLabel(std::string_view(label.data(), label.size()))) {
        ok = false;
        break;
      }
    }
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(field), ": ", Quoted(value),
        " is not a valid InferenceAutoscaler name (a DNS-1123 subdomain: at most 253 lower-case "
        "letters, digits, '-' and '.', each dot-separated part starting and ending with a letter "
        "or digit)"));
  }
  return absl::OkStatus();
}

}  // namespace twinscale::outputs
