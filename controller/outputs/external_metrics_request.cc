// Parsing of external metrics API requests: see external_metrics_request.h.
#include "controller/outputs/external_metrics_request.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/kube/selectors.h"
#include "controller/outputs/object_names.h"

namespace twinscale::outputs {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `text` (and '+' as a space when `plus_is_space`, as in a query). `offset` is
// where `text` starts in the whole path or query, for the message.
absl::StatusOr<std::string> Unescape(std::string_view text, size_t offset, bool plus_is_space,
                                     std::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(what), ": at ", offset + i,
                         ": '%' must be followed by two hexadecimal digits"));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The first labelSelector parameter of the query, decoded; nullopt when absent.
absl::StatusOr<std::optional<std::string>> LabelSelectorParam(std::string_view query) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(start, end - start);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      const std::string_view raw_key = pair.substr(0, eq);
      absl::StatusOr<std::string> key = Unescape(raw_key, start, true, "query");
      if (!key.ok()) return key.status();
      if (*key == "labelSelector") {
        if (eq == std::string_view::npos) return std::optional<std::string>(std::string());
        absl::StatusOr<std::string> value =
            Unescape(pair.substr(eq + 1), start + eq + 1, true, "query");
        if (!value.ok()) return value.status();
        return std::optional<std::string>(*std::move(value));
      }
    }
    start = end + 1;
  }
  return std::optional<std::string>();
}

std::string HowToName() {
  return absl::StrCat("name one InferenceAutoscaler with ", kAutoscalerLabel,
                      "=<name> (the HPA's metric.selector.matchLabels)");
}

// The one autoscaler the selector names (external_metrics_request.h).
absl::StatusOr<std::string> AutoscalerOf(const std::optional<std::string>& text) {
  if (!text.has_value() || text->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("labelSelector: required: ", HowToName()));
  }
  absl::StatusOr<kube::LabelSelector> selector = kube::LabelSelector::Parse(*text);
  if (!selector.ok()) return selector.status();
  std::optional<std::string> name;
  using Op = kube::LabelRequirement::Op;
  for (const kube::LabelRequirement& r : selector->requirements()) {
    if (r.key != kAutoscalerLabel) {
      return absl::InvalidArgumentError(absl::StrCat("labelSelector: \"", r.String(),
                                                     "\": twinscale serves only the label ",
                                                     kAutoscalerLabel, "; ", HowToName()));
    }
    std::string named;
    if ((r.op == Op::kEquals || r.op == Op::kDoubleEquals) && r.values.size() == 1) {
      named = r.values[0];
    } else if (r.op == Op::kIn && r.values.size() == 1) {
      named = r.values[0];
    } else if (r.op == Op::kIn) {
      return absl::InvalidArgumentError(absl::StrCat(
          "labelSelector: \"", r.String(), "\" names ", r.values.size(),
          " InferenceAutoscalers; one metric follows one (an HPA would add their values up): ",
          HowToName()));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("labelSelector: \"", r.String(),
                                                     "\" does not name one InferenceAutoscaler; ",
                                                     HowToName()));
    }
    if (name.has_value() && *name != named) {
      return absl::InvalidArgumentError(absl::StrCat("labelSelector: names both \"", *name,
                                                     "\" and \"", named,
                                                     "\": no autoscaler has both names"));
    }
    name = std::move(named);
  }
  if (!name.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("labelSelector: required: ", HowToName()));
  }
  if (absl::Status s = ValidateObjectName(*name, absl::StrCat("labelSelector ", kAutoscalerLabel));
      !s.ok()) {
    return s;
  }
  return *std::move(name);
}

absl::Status NotServed(std::string_view path) {
  return absl::NotFoundError(absl::StrCat(
      "the path \"", std::string(path.substr(0, 200)), "\" is not served: twinscale serves /apis/",
      kExternalMetricsGroupVersion, "/namespaces/<namespace>/<metric>?labelSelector=",
      kAutoscalerLabel, "%3D<name> and its discovery documents"));
}

}  // namespace

absl::StatusOr<ExternalMetricsRequest> ParseExternalMetricsRequest(std::string_view path,
                                                                   std::string_view query) {
  std::string_view trimmed = path;
  if (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  if (trimmed.empty() || trimmed.front() != '/') return NotServed(path);
  // Split, then decode each segment: an escaped '/' stays inside its segment.
  std::vector<std::string> segments;
  size_t start = 1;
  while (start <= trimmed.size()) {
    size_t end = trimmed.find('/', start);
    if (end == std::string_view::npos) end = trimmed.size();
    absl::StatusOr<std::string> segment =
        Unescape(trimmed.substr(start, end - start), start, false, "path");
    if (!segment.ok()) return segment.status();
    if (segment->empty()) return NotServed(path);
    segments.push_back(*std::move(segment));
    start = end + 1;
  }

  ExternalMetricsRequest request;
  const size_t n = segments.size();
  if (n == 0 || segments[0] != "apis") return NotServed(path);
  if (n == 1) {
    request.kind = ExternalMetricsRequest::Kind::kGroupList;
    return request;
  }
  if (segments[1] != kExternalMetricsGroup) return NotServed(path);
  if (n == 2) {
    request.kind = ExternalMetricsRequest::Kind::kGroup;
    return request;
  }
  if (segments[2] != kExternalMetricsVersion) return NotServed(path);
  if (n == 3) {
    request.kind = ExternalMetricsRequest::Kind::kResourceList;
    return request;
  }
  // External metrics are namespaced only: namespaces/{namespace}/{metric}.
  if (n != 6 || segments[3] != "namespaces") return NotServed(path);
  if (absl::Status s = ValidateNamespaceName(segments[4], "path: namespace"); !s.ok()) return s;
  request.kind = ExternalMetricsRequest::Kind::kMetricValue;
  request.namespace_name = segments[4];
  request.metric_name = segments[5];
  absl::StatusOr<std::optional<std::string>> selector = LabelSelectorParam(query);
  if (!selector.ok()) return selector.status();
  absl::StatusOr<std::string> autoscaler = AutoscalerOf(*selector);
  if (!autoscaler.ok()) return autoscaler.status();
  request.autoscaler = *std::move(autoscaler);
  return request;
}

}  // namespace twinscale::outputs
