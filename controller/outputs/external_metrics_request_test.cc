// Parsing of external metrics API requests: the paths the aggregator forwards (as
// k8s.io/metrics' external metrics client builds them: /apis/external.metrics.k8s.io/v1beta1/
// namespaces/<ns>/<lower-cased metric>?labelSelector=<selector.String()>), and every selector that
// must be refused with a reason rather than answered with zero items.
#include "controller/outputs/external_metrics_request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace twinscale::outputs {
namespace {

using Kind = ExternalMetricsRequest::Kind;

TEST(ExternalMetricsRequestTest, DiscoveryPaths) {
  struct Case {
    std::string name, path;
    Kind want;
  };
  const std::vector<Case> cases = {
      {"the group list", "/apis", Kind::kGroupList},
      {"the group list with a trailing slash", "/apis/", Kind::kGroupList},
      {"the group", "/apis/external.metrics.k8s.io", Kind::kGroup},
      {"the resource list", "/apis/external.metrics.k8s.io/v1beta1", Kind::kResourceList},
      {"the resource list with a trailing slash", "/apis/external.metrics.k8s.io/v1beta1/",
       Kind::kResourceList},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseExternalMetricsRequest(c.path, "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, c.want);
  }
}

TEST(ExternalMetricsRequestTest, ValuePathsNameTheAutoscaler) {
  struct Case {
    std::string name, path, query, want_namespace, want_metric, want_autoscaler;
  };
  const std::string base = "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/";
  const std::vector<Case> cases = {
      {"equality, percent-encoded as Go's url.Values encodes it",
       base + "twinscale-desired-replicas", "labelSelector=twinscale.io%2Fautoscaler%3Dllama-8b",
       "llm", "twinscale-desired-replicas", "llama-8b"},
      {"double equals", base + "m", "labelSelector=twinscale.io/autoscaler==llama", "llm", "m",
       "llama"},
      {"a one-value set (matchExpressions In)", base + "m",
       "labelSelector=twinscale.io%2Fautoscaler+in+%28llama%29", "llm", "m", "llama"},
      {"spaces around the operator", base + "m",
       "labelSelector=twinscale.io%2Fautoscaler%20%3D%20llama", "llm", "m", "llama"},
      {"the same name twice", base + "m",
       "labelSelector=twinscale.io/autoscaler=a,twinscale.io/autoscaler+in+(a)", "llm", "m", "a"},
      {"other parameters are ignored", base + "m",
       "limit=5&labelSelector=twinscale.io/autoscaler=x&labelSelector=y", "llm", "m", "x"},
      {"a dotted autoscaler name", base + "m", "labelSelector=twinscale.io/autoscaler=a.b-c", "llm",
       "m", "a.b-c"},
      {"a percent-encoded metric name", base + "twinscale%2Ddesired",
       "labelSelector=twinscale.io/autoscaler=x", "llm", "twinscale-desired", "x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseExternalMetricsRequest(c.path, c.query);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, Kind::kMetricValue);
    EXPECT_EQ(r->namespace_name, c.want_namespace);
    EXPECT_EQ(r->metric_name, c.want_metric);
    EXPECT_EQ(r->autoscaler, c.want_autoscaler);
  }
}

TEST(ExternalMetricsRequestTest, PathsNotServedAreNotFound) {
  const std::vector<std::string> paths = {
      "",
      "/",
      "/api",
      "/apis/metrics.k8s.io",
      "/apis/custom.metrics.k8s.io/v1beta1",
      "/apis/external.metrics.k8s.io/v1beta2",
      "/apis/external.metrics.k8s.io/v1beta1/twinscale-desired-replicas",  // not namespaced
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/m/extra",
      "/apis/external.metrics.k8s.io/v1beta1/namespace/llm/m",
      "/apis//external.metrics.k8s.io",
      "apis",
  };
  for (const std::string& p : paths) {
    SCOPED_TRACE(p);
    auto r = ParseExternalMetricsRequest(p, "labelSelector=twinscale.io/autoscaler=x");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "is not served")) << r.status();
  }
}

TEST(ExternalMetricsRequestTest, BadInputIsInvalidArgumentNamingThePart) {
  struct Case {
    std::string name, path, query, want_in_message;
  };
  const std::string value = "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/m";
  const std::vector<Case> cases = {
      {"no selector: nothing names the autoscaler", value, "", "labelSelector: required"},
      {"an empty selector selects everything, not one", value,
       "labelSelector=", "labelSelector: required"},
      {"a selector that does not parse (the offset is the selector's)", value,
       "labelSelector=twinscale.io/autoscaler+in+x", "labelSelector: at 27: expected '('"},
      {"another label: the item could never carry it", value, "labelSelector=app%3Dweb",
       "\"app=web\": twinscale serves only the label twinscale.io/autoscaler"},
      {"another label beside the right one", value,
       "labelSelector=twinscale.io/autoscaler=x,app=web", "serves only the label"},
      {"not equal names no one autoscaler", value, "labelSelector=twinscale.io/autoscaler!=x",
       "does not name one InferenceAutoscaler"},
      {"notin", value, "labelSelector=twinscale.io/autoscaler+notin+(x)",
       "does not name one InferenceAutoscaler"},
      {"exists", value, "labelSelector=twinscale.io/autoscaler",
       "does not name one InferenceAutoscaler"},
      {"does not exist", value, "labelSelector=!twinscale.io/autoscaler",
       "does not name one InferenceAutoscaler"},
      {"a set of two: the HPA would add two fleets up", value,
       "labelSelector=twinscale.io/autoscaler+in+(a,b)", "names 2 InferenceAutoscalers"},
      {"two names that disagree", value,
       "labelSelector=twinscale.io/autoscaler=a,twinscale.io/autoscaler=b",
       "names both \"a\" and \"b\""},
      {"an empty name", value,
       "labelSelector=twinscale.io/autoscaler=", "labelSelector twinscale.io/autoscaler: required"},
      {"a name no object can have", value, "labelSelector=twinscale.io/autoscaler=Llama_8B",
       "not a valid InferenceAutoscaler name"},
      {"a broken escape in the query (the offset is the query's)", value,
       "labelSelector=twinscale.io%2", "query: at 26: '%' must be followed by two hexadecimal"},
      {"a broken escape in a parameter name", value, "label%zzSelector=x", "query: at 5: '%'"},
      {"a broken escape in the path", "/apis/external.metrics.k8s.io/v1beta1/namespaces/l%g/m",
       "labelSelector=twinscale.io/autoscaler=x", "path: at 50: '%'"},
      {"an invalid namespace", "/apis/external.metrics.k8s.io/v1beta1/namespaces/LLM/m",
       "labelSelector=twinscale.io/autoscaler=x", "path: namespace: \"LLM\" is not a valid"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseExternalMetricsRequest(c.path, c.query);
    ASSERT_FALSE(r.ok()) << "parsed: " << r->autoscaler;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), c.want_in_message)) << r.status();
  }
}

}  // namespace
}  // namespace twinscale::outputs
