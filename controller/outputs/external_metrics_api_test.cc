// The external metrics API's answers, against the documented shapes of external.metrics.k8s.io/
// v1beta1 (ExternalMetricValueList, APIResourceList, metav1.Status) and the HPA's arithmetic for
// an External metric with an AverageValue target, written out here independently of the code:
// the HPA sums the items' values in milli-units, and with target t (milli) and c current
// replicas keeps c when 0.9 <= sum / (t * c) <= 1.1, else proposes ceil(sum / t)
// (pkg/controller/podautoscaler/replica_calculator.go, GetExternalPerPodMetricReplicas).
#include "controller/outputs/external_metrics_api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace twinscale::outputs {
namespace {

using nlohmann::json;

// A quantity string of the forms the API publishes ("12", "8002m") in milli-units.
int64_t Milli(const std::string& q) {
  int64_t n = 0;
  if (!q.empty() && q.back() == 'm') {
    EXPECT_TRUE(absl::SimpleAtoi(q.substr(0, q.size() - 1), &n)) << q;
    return n;
  }
  EXPECT_TRUE(absl::SimpleAtoi(q, &n)) << q;
  return n * 1000;
}

// The HPA's proposal for an External AverageValue metric of target 1 (1000 milli), with the
// default tolerance as Tolerances.isWithin applies it: 1 - 0.1 <= ratio <= 1 + 0.1, inclusive.
int32_t HpaProposal(int64_t value_milli, int32_t current) {
  const double ratio = static_cast<double>(value_milli) / (1000.0 * current);
  if (1 - 0.1 <= ratio && ratio <= 1 + 0.1) return current;
  return static_cast<int32_t>((value_milli + 999) / 1000);
}

TEST(ExternalMetricQuantityTest, LandsWhereTheHpaTolerancePermits) {
  struct Case {
    std::string name;
    int32_t current, published;
    std::string want_quantity;
    int32_t want_hpa;  // the default HPA's proposal (10% tolerance)
  };
  const std::vector<Case> cases = {
      {"hold", 10, 10, "10", 10},
      {"scale up past the band lands", 10, 12, "12", 12},
      {"from one to many", 1, 48, "48", 48},
      {"20 -> 21 is ratio 1.05: swallowed by the band", 20, 21, "21", 20},
      {"10 -> 11 is ratio 1.1, on the band's edge: swallowed", 10, 11, "11", 10},
      {"10 -> 9 publishes 8.002: ratio 0.8002 lands on 9", 10, 9, "8002m", 9},
      {"19 -> 18 lands", 19, 18, "17002m", 18},
      {"20 -> 19 is ratio 0.9001: swallowed", 20, 19, "18002m", 20},
      {"30 -> 15", 30, 15, "14002m", 15},
      {"2 -> 1 publishes 0.002, never zero", 2, 1, "2m", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string q = ExternalMetricQuantity(c.published, c.current);
    EXPECT_EQ(q, c.want_quantity);
    EXPECT_EQ(HpaProposal(Milli(q), c.current), c.want_hpa);
    // With a tolerance of 0 every decision lands: the quantity's ceiling is the decision.
    EXPECT_EQ((Milli(q) + 999) / 1000, c.published);
  }
}

class ExternalMetricsApiTest : public ::testing::Test {
 protected:
  static constexpr char kValuePath[] =
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas";
  static constexpr char kSelector[] = "labelSelector=twinscale.io%2Fautoscaler%3Dllama";

  void Publish(int32_t current, int32_t desired, bool stale, api::Mode mode = api::Mode::kHpa) {
    PublishedDecision d;
    d.mode = mode;
    d.current_replicas = current;
    d.desired_replicas = desired;
    d.inputs_stale = stale;
    d.decided_at = absl::FromCivil(absl::CivilSecond(2026, 1, 2, 3, 4, 5), absl::UTCTimeZone()) +
                   absl::Milliseconds(250);
    board_.Publish("llm", "llama", d);
  }

  json Get(const std::string& path, const std::string& query, int want_code) {
    const HttpAnswer a = api_.Handle("GET", path, query);
    EXPECT_EQ(a.code, want_code) << a.body;
    return json::parse(a.body, nullptr, false);
  }

  // The one item's value, after checking the list's shape.
  std::string ValueOf(const json& list) {
    EXPECT_EQ(list.value("kind", ""), "ExternalMetricValueList");
    EXPECT_EQ(list.value("apiVersion", ""), "external.metrics.k8s.io/v1beta1");
    EXPECT_TRUE(list.contains("metadata"));
    if (!list.contains("items") || list["items"].size() != 1) {
      ADD_FAILURE() << "want exactly one item: " << list.dump();
      return "";
    }
    const json& item = list["items"][0];
    EXPECT_EQ(item.value("metricName", ""), "twinscale-desired-replicas");
    EXPECT_EQ(item["metricLabels"], json({{"twinscale.io/autoscaler", "llama"}}));
    EXPECT_EQ(item.value("timestamp", ""), "2026-01-02T03:04:05Z");
    return item.value("value", "");
  }

  // A Status body with `code` and `reason`, whose message contains `text`.
  void ExpectStatus(const json& status, int code, const std::string& reason,
                    const std::string& text) {
    EXPECT_EQ(status.value("kind", ""), "Status");
    EXPECT_EQ(status.value("apiVersion", ""), "v1");
    EXPECT_EQ(status.value("status", ""), "Failure");
    EXPECT_EQ(status.value("code", 0), code);
    EXPECT_EQ(status.value("reason", ""), reason);
    EXPECT_TRUE(absl::StrContains(status.value("message", ""), text)) << status.dump();
  }

  DecisionBoard board_;
  ExternalMetricsApi api_{&board_};
};

TEST_F(ExternalMetricsApiTest, DiscoveryDescribesTheGroupAndItsMetric) {
  const json gv = {{"groupVersion", "external.metrics.k8s.io/v1beta1"}, {"version", "v1beta1"}};
  json list = Get("/apis", "", 200);
  EXPECT_EQ(list.value("kind", ""), "APIGroupList");
  ASSERT_EQ(list["groups"].size(), 1u);
  EXPECT_EQ(list["groups"][0].value("name", ""), "external.metrics.k8s.io");
  EXPECT_EQ(list["groups"][0]["preferredVersion"], gv);

  json group = Get("/apis/external.metrics.k8s.io", "", 200);
  EXPECT_EQ(group.value("kind", ""), "APIGroup");
  EXPECT_EQ(group["versions"], json::array({gv}));

  json resources = Get("/apis/external.metrics.k8s.io/v1beta1", "", 200);
  EXPECT_EQ(resources.value("kind", ""), "APIResourceList");
  EXPECT_EQ(resources.value("groupVersion", ""), "external.metrics.k8s.io/v1beta1");
  ASSERT_EQ(resources["resources"].size(), 1u);
  const json& r = resources["resources"][0];
  EXPECT_EQ(r.value("name", ""), "twinscale-desired-replicas");
  EXPECT_EQ(r.value("kind", ""), "ExternalMetricValueList");
  EXPECT_TRUE(r.value("namespaced", false));
  EXPECT_EQ(r["verbs"], json::array({"get"}));

  // A follower still answers discovery (the aggregator's availability check reads it).
  board_.SetServing(false);
  Get("/apis/external.metrics.k8s.io/v1beta1", "", 200);
}

TEST_F(ExternalMetricsApiTest, ValuesLandOnTheDecisionAndHoldWhenStale) {
  struct Case {
    std::string name;
    int32_t current, desired;
    bool stale;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"scale up", 3, 5, false, "5"},
      {"hold", 4, 4, false, "4"},
      {"scale down lands below the band", 10, 9, false, "8002m"},
      {"stale inputs publish the current count, not the decision", 4, 1, true, "4"},
      {"stale inputs never publish a scale-up either", 4, 8, true, "4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Publish(c.current, c.desired, c.stale);
    EXPECT_EQ(ValueOf(Get(kValuePath, kSelector, 200)), c.want);
  }
}

TEST_F(ExternalMetricsApiTest, ErrorsAreStatusesWithTheRightCode) {
  Publish(3, 5, false);
  ExpectStatus(Get(kValuePath, "labelSelector=app%3Dweb", 400), 400, "BadRequest",
               "serves only the label twinscale.io/autoscaler");
  ExpectStatus(Get(kValuePath, "", 400), 400, "BadRequest", "labelSelector: required");
  ExpectStatus(Get(kValuePath, "labelSelector=twinscale.io%2Fautoscaler%3Dother", 404), 404,
               "NotFound", "no decision is published for InferenceAutoscaler llm/other");
  ExpectStatus(Get("/apis/external.metrics.k8s.io/v1beta1/namespaces/team-b/"
                   "twinscale-desired-replicas",
                   kSelector, 404),
               404, "NotFound", "InferenceAutoscaler team-b/llama");
  ExpectStatus(
      Get("/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/queue-depth", kSelector, 404), 404,
      "NotFound", "\"queue-depth\" is not served");
  ExpectStatus(Get("/apis/metrics.k8s.io/v1beta1", "", 404), 404, "NotFound", "is not served");

  const HttpAnswer post = api_.Handle("POST", kValuePath, kSelector);
  EXPECT_EQ(post.code, 405);
  ExpectStatus(json::parse(post.body), 405, "MethodNotAllowed", "read-only");

  // Another mode: Recommend must stay a dry run, KEDA and Direct act elsewhere.
  Publish(3, 5, false, api::Mode::kKeda);
  ExpectStatus(Get(kValuePath, kSelector, 404), 404, "NotFound", "has spec.mode KEDA");
  Publish(3, 5, false, api::Mode::kRecommend);
  ExpectStatus(Get(kValuePath, kSelector, 404), 404, "NotFound", "has spec.mode Recommend");

  // A target at zero with stale inputs: nothing but zero to publish, so an error instead.
  Publish(0, 2, true);
  ExpectStatus(Get(kValuePath, kSelector, 503), 503, "ServiceUnavailable", "never publishes zero");

  // A follower serves no values.
  Publish(3, 5, false);
  board_.SetServing(false);
  ExpectStatus(Get(kValuePath, kSelector, 503), 503, "ServiceUnavailable", "not the leader");
}

TEST(KubernetesStatusAnswerTest, MapsCodesAndReasons) {
  struct Case {
    absl::Status status;
    int code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {absl::InvalidArgumentError("x"), 400, "BadRequest"},
      {absl::UnauthenticatedError("x"), 401, "Unauthorized"},
      {absl::PermissionDeniedError("x"), 403, "Forbidden"},
      {absl::NotFoundError("x"), 404, "NotFound"},
      {absl::UnimplementedError("x"), 405, "MethodNotAllowed"},
      {absl::UnavailableError("x"), 503, "ServiceUnavailable"},
      {absl::InternalError("x"), 500, "InternalError"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    const HttpAnswer a = KubernetesStatusAnswer(c.status, "m", "ExternalMetricValueList");
    EXPECT_EQ(a.code, c.code);
    const json s = json::parse(a.body);
    EXPECT_EQ(s.value("code", 0), c.code);
    EXPECT_EQ(s.value("reason", ""), c.reason);
    EXPECT_EQ(s["details"], json({{"name", "m"},
                                  {"group", "external.metrics.k8s.io"},
                                  {"kind", "ExternalMetricValueList"}}));
  }
  // A message quoting invalid UTF-8 from a request still makes valid JSON.
  const HttpAnswer bad = KubernetesStatusAnswer(absl::NotFoundError("metric \"\xff\""));
  EXPECT_FALSE(json::parse(bad.body, nullptr, false).is_discarded());
}

}  // namespace
}  // namespace twinscale::outputs
