// The external metrics API's answers (docs/architecture.md "Outputs and their contracts"; the
// answers table in docs/usage.md "HPA mode: the external metrics API"): what twinscale
// says to a request for external.metrics.k8s.io/v1beta1, as an HTTP status code and a JSON body,
// read from the DecisionBoard. The HTTPS transport is ExternalMetricsServer
// (external_metrics_server.h); this part is pure apart from reading the board, so every answer is
// unit-tested without sockets.
//
// Answers (paths and selectors: external_metrics_request.h):
//   discovery  200: /apis an APIGroupList, /apis/external.metrics.k8s.io an APIGroup,
//              /apis/external.metrics.k8s.io/v1beta1 an APIResourceList with one resource per
//              served metric (kind ExternalMetricValueList, namespaced, verbs [get]). Discovery
//              is answered by followers too: it holds no decision, and the aggregator's
//              availability check of the APIService reads it.
//   a value    200: an ExternalMetricValueList {kind, apiVersion, metadata: {}, items: [exactly
//              one item {metricName, metricLabels {twinscale.io/autoscaler: <name>}, timestamp
//              (the decision's time, RFC 3339, UTC, seconds), value}]}. The value is a
//              Kubernetes quantity string: ExternalMetricQuantity(the published count, the
//              current count), so an HPA with an AverageValue target of 1 lands on the decision
//              (keda_metric.h has the arithmetic; "3", "8002m"). While the inputs are stale the
//              published count is the current one (hold), never zero.
//   errors     a Kubernetes Status {kind: Status, apiVersion: v1, metadata: {}, status: Failure,
//              message, reason, details: {name, group, kind}, code}, never an empty item list
//              (an HPA reads zero items as "no metrics returned"):
//                400 BadRequest          a malformed path or query, a labelSelector that does not
//                                        name exactly one InferenceAutoscaler;
//                404 NotFound            a path not served, a metric name not served, an
//                                        autoscaler with no published decision (it does not
//                                        exist, is not watched, or has not been decided since
//                                        the controller started or became leader), or one whose
//                                        spec.mode is not HPA (Recommend must not act; KEDA and
//                                        Direct act elsewhere) — the message says which;
//                405 MethodNotAllowed    anything but GET;
//                503 ServiceUnavailable  this replica is not the leader (DecisionBoard::serving()
//                                        is false), or the target is at 0 replicas with stale
//                                        inputs (nothing but zero to publish).
// An HPA that gets an error keeps the current replica count (it never scales on a failed
// metric), so every error above holds the fleet where it is.
//
// Client certificates (401/403) are the transport's business: an untrusted or missing one fails
// the TLS handshake before any answer (external_metrics_server.h).
//
// Thread-safety: Handle may be called from any number of threads at once.
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_API_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_API_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "controller/outputs/decision_board.h"

namespace twinscale::outputs {

struct ExternalMetricsApiOptions {
  // ["twinscale-desired-replicas"] the metric's name, as the HPA's metric.name gives it (the HPA
  // lower-cases it in the request; keep it lower-case).
  std::string metric_name = "twinscale-desired-replicas";
};

struct HttpAnswer {
  int code = 200;
  std::string body;  // JSON (Content-Type: application/json)
};

class ExternalMetricsApi {
 public:
  // `board` must outlive the API.
  explicit ExternalMetricsApi(const DecisionBoard* board, ExternalMetricsApiOptions options = {});

  // `path` as sent (percent-encoded, without the query), `query` the raw query string without
  // '?'. Never throws.
  HttpAnswer Handle(std::string_view method, std::string_view path, std::string_view query) const;

  const ExternalMetricsApiOptions& options() const { return options_; }

 private:
  HttpAnswer Value(const std::string& namespace_name, const std::string& metric_name,
                   const std::string& autoscaler) const;

  const DecisionBoard* const board_;
  const ExternalMetricsApiOptions options_;
};

// The quantity string published for a count: KedaMetricFor(published_replicas,
// current_replicas).metric_value_float in Kubernetes' canonical form, whole numbers plain ("12")
// and the rest in milli-units ("8002m" for a scale-down to 9 from 10).
std::string ExternalMetricQuantity(int32_t published_replicas, int32_t current_replicas);

// A Kubernetes Status answer for an error: the HTTP code its absl code maps to (InvalidArgument
// 400, Unauthenticated 401, PermissionDenied 403, NotFound 404, Unimplemented 405, Unavailable
// 503, anything else 500) and the Status JSON with the matching reason. `name` and `kind` fill
// details ("" leaves them out).
HttpAnswer KubernetesStatusAnswer(const absl::Status& error, std::string_view name = "",
                                  std::string_view kind = "");

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_EXTERNAL_METRICS_API_H_
