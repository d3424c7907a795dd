// The external metrics API's answers over the DecisionBoard: see external_metrics_api.h.
#include "controller/outputs/external_metrics_api.h"

#include <cmath>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/outputs/external_metrics_request.h"
#include "controller/outputs/keda_metric.h"
#include "nlohmann/json.hpp"

namespace twinscale::outputs {
namespace {

using nlohmann::json;

constexpr char kValueListKind[] = "ExternalMetricValueList";

json GroupVersionForDiscovery() {
  return {{"groupVersion", kExternalMetricsGroupVersion}, {"version", kExternalMetricsVersion}};
}

json Group() {
  return {{"name", kExternalMetricsGroup},
          {"versions", json::array({GroupVersionForDiscovery()})},
          {"preferredVersion", GroupVersionForDiscovery()}};
}

HttpAnswer Ok(const json& body) { return {200, body.dump()}; }

// metav1.Time's form: RFC 3339 in UTC, whole seconds.
std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::string ExternalMetricQuantity(int32_t published_replicas, int32_t current_replicas) {
  const KedaMetric m = KedaMetricFor(published_replicas, current_replicas);
  // The float is n or n - 1 + 0.002: a whole number of milli-units, so rounding is exact.
  const int64_t milli = std::llround(m.metric_value_float * 1000);
  if (milli % 1000 == 0) return absl::StrCat(milli / 1000);
  return absl::StrCat(milli, "m");
}

HttpAnswer KubernetesStatusAnswer(const absl::Status& error, std::string_view name,
                                  std::string_view kind) {
  int code = 500;
  const char* reason = "InternalError";
  switch (error.code()) {
    case absl::StatusCode::kInvalidArgument:
      code = 400;
      reason = "BadRequest";
      break;
    case absl::StatusCode::kUnauthenticated:
      code = 401;
      reason = "Unauthorized";
      break;
    case absl::StatusCode::kPermissionDenied:
      code = 403;
      reason = "Forbidden";
      break;
    case absl::StatusCode::kNotFound:
      code = 404;
      reason = "NotFound";
      break;
    case absl::StatusCode::kUnimplemented:
      code = 405;
      reason = "MethodNotAllowed";
      break;
    case absl::StatusCode::kUnavailable:
      code = 503;
      reason = "ServiceUnavailable";
      break;
    default:
      break;
  }
  json details = json::object();
  if (!name.empty()) details["name"] = std::string(name);
  details["group"] = kExternalMetricsGroup;
  if (!kind.empty()) details["kind"] = std::string(kind);
  const json status = {{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"metadata", json::object()},
                       {"status", "Failure"},
                       {"message", std::string(error.message())},
                       {"reason", reason},
                       {"details", details},
                       {"code", code}};
  // Messages may quote outside input: replace invalid UTF-8 rather than throw.
  return {code, status.dump(-1, ' ', false, json::error_handler_t::replace)};
}

ExternalMetricsApi::ExternalMetricsApi(const DecisionBoard* board,
                                       ExternalMetricsApiOptions options)
    : board_(board), options_(std::move(options)) {}

HttpAnswer ExternalMetricsApi::Handle(std::string_view method, std::string_view path,
                                      std::string_view query) const {
  try {
    absl::StatusOr<ExternalMetricsRequest> request = ParseExternalMetricsRequest(path, query);
    if (!request.ok()) return KubernetesStatusAnswer(request.status());
    if (method != "GET") {
      return KubernetesStatusAnswer(absl::UnimplementedError(
          absl::StrCat("the method ", std::string(method.substr(0, 20)),
                       " is not allowed: the external metrics API is read-only (GET)")));
    }
    switch (request->kind) {
      case ExternalMetricsRequest::Kind::kGroupList:
        return Ok(
            {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array({Group()})}});
      case ExternalMetricsRequest::Kind::kGroup: {
        json group = Group();
        group["kind"] = "APIGroup";
        group["apiVersion"] = "v1";
        return Ok(group);
      }
      case ExternalMetricsRequest::Kind::kResourceList:
        return Ok({{"kind", "APIResourceList"},
                   {"apiVersion", "v1"},
                   {"groupVersion", kExternalMetricsGroupVersion},
                   {"resources", json::array({{{"name", options_.metric_name},
                                               {"singularName", ""},
                                               {"namespaced", true},
                                               {"kind", kValueListKind},
                                               {"verbs", json::array({"get"})}}})}});
      case ExternalMetricsRequest::Kind::kMetricValue:
        return Value(request->namespace_name, request->metric_name, request->autoscaler);
    }
    return KubernetesStatusAnswer(absl::InternalError("unknown request kind"));
  } catch (const std::exception& e) {
    return KubernetesStatusAnswer(absl::InternalError(absl::StrCat("internal error: ", e.what())));
  }
}

HttpAnswer ExternalMetricsApi::Value(const std::string& namespace_name,
                                     const std::string& metric_name,
                                     const std::string& autoscaler) const {
  if (metric_name != options_.metric_name) {
    return KubernetesStatusAnswer(
        absl::NotFoundError(absl::StrCat("the external metric \"", metric_name.substr(0, 200),
                                         "\" is not served: twinscale serves \"",
                                         options_.metric_name, "\"")),
        metric_name.substr(0, 200), kValueListKind);
  }
  const std::string target = absl::StrCat(namespace_name, "/", autoscaler);
  if (!board_->serving()) {
    return KubernetesStatusAnswer(
        absl::UnavailableError(
            "this twinscale replica is not the leader: only the holder of the controller's Lease "
            "serves metrics (the Service should select the pod labelled twinscale.io/leader=true)"),
        options_.metric_name, kValueListKind);
  }
  std::optional<BoardEntry> entry = board_->Get(namespace_name, autoscaler);
  if (!entry.has_value()) {
    return KubernetesStatusAnswer(
        absl::NotFoundError(absl::StrCat(
            "no decision is published for InferenceAutoscaler ", target,
            ": it does not exist, is not watched by this controller, or has not been decided yet "
            "(the first decision comes within one spec.metrics.interval of the controller "
            "starting or becoming leader)")),
        options_.metric_name, kValueListKind);
  }
  const PublishedDecision& d = entry->decision;
  if (d.mode != api::Mode::kHpa) {
    return KubernetesStatusAnswer(
        absl::NotFoundError(absl::StrCat("InferenceAutoscaler ", target, " has spec.mode ",
                                         std::string(api::ModeName(d.mode)),
                                         ": its metric is served only with spec.mode: HPA")),
        options_.metric_name, kValueListKind);
  }
  const int32_t published = d.published_replicas();
  if (published <= 0) {
    return KubernetesStatusAnswer(
        absl::UnavailableError(absl::StrCat(
            "InferenceAutoscaler ", target, " has nothing to publish: its target is at ",
            d.current_replicas, " replicas and its inputs are ",
            d.inputs_stale ? "stale (hold)" : "fresh", "; twinscale never publishes zero")),
        options_.metric_name, kValueListKind);
  }
  const json item = {{"metricName", options_.metric_name},
                     {"metricLabels", {{kAutoscalerLabel, autoscaler}}},
                     {"timestamp", Rfc3339(d.decided_at)},
                     {"value", ExternalMetricQuantity(published, d.current_replicas)}};
  return Ok({{"kind", kValueListKind},
             {"apiVersion", kExternalMetricsGroupVersion},
             {"metadata", json::object()},
             {"items", json::array({item})}});
}

}  // namespace twinscale::outputs
