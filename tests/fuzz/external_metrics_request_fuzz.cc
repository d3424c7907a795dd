// Fuzzes the external metrics API's request parsing and answers (controller/outputs/
// external_metrics_request.h, external_metrics_api.h): the path and query an HTTPS client sends,
// as "<path>?<query>" (outside input). Any bytes must parse or give a clear error, never crash or
// hang; a value request that parses names a valid namespace and autoscaler; every answer is
// valid JSON (an API object or a Kubernetes Status) with an HTTP code the API documents.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/time/time.h"
#include "controller/outputs/decision_board.h"
#include "controller/outputs/external_metrics_api.h"
#include "controller/outputs/external_metrics_request.h"
#include "controller/outputs/object_names.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace twinscale::outputs;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t q = text.find('?');
  const std::string_view path = text.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : text.substr(q + 1);

  auto r = ParseExternalMetricsRequest(path, query);
  if (r.ok() && r->kind == ExternalMetricsRequest::Kind::kMetricValue) {
    if (!ValidateNamespaceName(r->namespace_name, "ns").ok()) abort();
    if (!ValidateObjectName(r->autoscaler, "name").ok()) abort();
  }

  static DecisionBoard* board = [] {
    auto* b = new DecisionBoard();
    PublishedDecision d;
    d.mode = twinscale::api::Mode::kHpa;
    d.current_replicas = 10;
    d.desired_replicas = 9;
    d.decided_at = absl::FromUnixSeconds(1767225600);
    b->Publish("llm", "llama", d);
    return b;
  }();
  static const ExternalMetricsApi api(board);
  const HttpAnswer a = api.Handle("GET", path, query);
  switch (a.code) {
    case 200:
    case 400:
    case 404:
    case 405:
    case 503:
      break;
    default:
      abort();
  }
  if (nlohmann::json::parse(a.body, nullptr, false).is_discarded()) abort();
  return 0;
}
