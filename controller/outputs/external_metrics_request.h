// What a request to twinscale's external metrics API (external.metrics.k8s.io/v1beta1, the API an
// HPA's `type: External` metric reads through the Kubernetes aggregator) asks for: a discovery
// document or one metric value, and for a value, which InferenceAutoscaler. Pure; outside input
// (the path and query come from the network: fuzzed, tests/fuzz/external_metrics_request_fuzz.cc).
//
// Paths served (as the aggregator forwards them, percent-encoded; one trailing '/' is ignored):
//   /apis                                              the APIGroupList (this one group)
//   /apis/external.metrics.k8s.io                      the APIGroup
//   /apis/external.metrics.k8s.io/v1beta1              the APIResourceList (the served metrics)
//   /apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}?labelSelector=...
//                                                      the metric's value for one autoscaler
//
// Which InferenceAutoscaler: the HPA's namespace (the path's {namespace}: an HPA reads external
// metrics only in its own namespace) and the metric selector's label `twinscale.io/autoscaler`,
// which must name exactly one: `twinscale.io/autoscaler=NAME`, `twinscale.io/autoscaler==NAME` or
// `twinscale.io/autoscaler in (NAME)` (what an HPA sends for `matchLabels` or a one-value `In`
// expression). Every other selector is refused rather than answered with zero items (the HPA
// reads zero items as "no metrics returned" and stops scaling without saying why): no selector,
// another key, `!=`, `notin`, `!key`, a bare `key`, `in` with several names, or two names that
// disagree. Label values are at most 63 characters, so an InferenceAutoscaler whose name is longer
// can't be named here.
//
// Errors (mapped to a Kubernetes Status by the server):
//   NotFound         a path this API does not serve ("/apis/metrics.k8s.io", a cluster-scoped
//                    metric path, ".../namespaces/x" without a metric, ...);
//   InvalidArgument  a malformed percent-escape in the path or query, an invalid namespace name,
//                    or a labelSelector that does not parse or does not name exactly one
//                    autoscaler; the message names the part ("labelSelector: at 6: ...",
//                    "query: at 12: ...", "path: namespace ...").
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_REQUEST_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_REQUEST_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinscale::outputs {

inline constexpr char kExternalMetricsGroup[] = "external.metrics.k8s.io";
inline constexpr char kExternalMetricsVersion[] = "v1beta1";
inline constexpr char kExternalMetricsGroupVersion[] = "external.metrics.k8s.io/v1beta1";
// The label of the HPA's metric selector that names the InferenceAutoscaler.
inline constexpr char kAutoscalerLabel[] = "twinscale.io/autoscaler";

struct ExternalMetricsRequest {
  enum class Kind {
    kGroupList,     // /apis
    kGroup,         // /apis/external.metrics.k8s.io
    kResourceList,  // /apis/external.metrics.k8s.io/v1beta1
    kMetricValue,   // .../namespaces/{namespace}/{metric}
  };
  Kind kind = Kind::kGroupList;
  // kMetricValue only: the path's namespace and metric name (percent-decoded; the HPA sends the
  // metric name lower-cased) and the autoscaler the labelSelector names.
  std::string namespace_name;
  std::string metric_name;
  std::string autoscaler;
};

// `path`: the request path as sent, without the query; `query`: the raw query string without the
// '?' ("" when none). Query parameters other than labelSelector are ignored (as the API server
// ignores list options a resource does not use); of repeated labelSelector parameters the first
// counts (Go's url.Values.Get). See the file comment for the errors.
absl::StatusOr<ExternalMetricsRequest> ParseExternalMetricsRequest(std::string_view path,
                                                                   std::string_view query);

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_REQUEST_H_
