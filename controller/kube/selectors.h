// Kubernetes label and field selectors, as the API server parses and applies them
// (k8s.io/apimachinery/pkg/labels and pkg/fields): the `labelSelector` / `fieldSelector` query
// parameters of list and watch, and the selector string of a Scale's status.selector. Used by the
// fake API server (tests/fake_apiserver) to serve lists and watches, and by the external metrics
// API (controller/outputs/external_metrics_request.h) to read the HPA's metric selector. Pure: no
// I/O (library ts_kube_selectors, apart from the REST client's).
//
// Label selector grammar (comma-separated requirements, spaces allowed around tokens):
//   key            the label exists            !key           the label does not exist
//   key=value      equal (also key==value)      key!=value     not equal, or absent
//   key in (a,b)   one of                       key notin (a,b) none of, or absent
//   key>N, key<N   integer comparison (the label must exist and parse as an integer)
// `key=` selects an empty value, and so does `key in ()` (the set holding ""). Keys are qualified
// names ([prefix/]name, name <= 63 characters, alphanumeric at both ends, '-', '_', '.' inside;
// prefix a DNS subdomain); values are <= 63 characters of the same alphabet, or empty. An empty
// selector selects everything.
//
// Field selector grammar: comma-separated `field=value`, `field==value`, `field!=value`; a
// backslash escapes ',', '=', '!' and '\' in values. Which fields a resource supports is the
// caller's business (FieldSelector::Fields lists them for checking).
//
// Errors are InvalidArgument naming the 0-based byte offset in the selector and what was expected
// ("labelSelector: at 6: expected '(' after 'in', found 'a'").
//
// Thread-safety: immutable values; const methods may run concurrently.
#ifndef TWINSCALE_CONTROLLER_KUBE_SELECTORS_H_
#define TWINSCALE_CONTROLLER_KUBE_SELECTORS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace twinscale::kube {

struct LabelRequirement {
  enum class Op {
    kExists,
    kDoesNotExist,
    kEquals,        // key=value
    kDoubleEquals,  // key==value (same meaning, printed as written)
    kNotEquals,
    kIn,
    kNotIn,
    kGreaterThan,
    kLessThan,
  };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // sorted and unique for kIn / kNotIn; one value otherwise

  // Whether `labels` (a JSON object of string values; null or missing means no labels) satisfy
  // this requirement.
  bool Matches(const nlohmann::json& labels) const;
  // As Kubernetes prints it: "a=b", "!a", "a in (x,y)".
  std::string String() const;
};

class LabelSelector {
 public:
  // The everything selector.
  LabelSelector() = default;

  // Parses the query-parameter form. InvalidArgument with the offset of the problem.
  static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  // metav1.LabelSelectorAsSelector: a {matchLabels, matchExpressions} object (In, NotIn, Exists,
  // DoesNotExist). InvalidArgument for a malformed object or an unknown operator. An empty object
  // selects everything.
  static absl::StatusOr<LabelSelector> FromLabelSelectorJson(const nlohmann::json& selector);

  // Whether the labels of an object (its metadata.labels) match every requirement.
  bool Matches(const nlohmann::json& labels) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

  // The canonical string: requirements sorted by key, joined by ",". What a Deployment's
  // /scale reports as status.selector ("app=web,tier in (a,b)").
  std::string String() const;

 private:
  std::vector<LabelRequirement> requirements_;
};

struct FieldRequirement {
  std::string field;    // "metadata.name"
  bool negate = false;  // "!="
  std::string value;
};

class FieldSelector {
 public:
  FieldSelector() = default;

  // InvalidArgument with the offset of a term that has no operator.
  static absl::StatusOr<FieldSelector> Parse(std::string_view text);

  // Whether `object` matches: each field is looked up as a dotted path into the object
  // (scalars compare as their JSON text without quotes; a missing field is "").
  bool Matches(const nlohmann::json& object) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<FieldRequirement> requirements_;
};

// The value of a dotted path ("metadata.name", "status.phase") in `object` as a field selector
// compares it: strings as they are, numbers and booleans as JSON text, missing or null as "".
std::string FieldValue(const nlohmann::json& object, std::string_view path);

// A DNS-1123 subdomain (a label key's prefix, most kinds' metadata.name): lowercase alphanumerics,
// '-' and '.', alphanumeric at both ends, at most 253 characters.
bool IsDnsSubdomain(std::string_view s);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_SELECTORS_H_
