// The fake API server over real HTTP (cpprestsdk's client on loopback), rule by rule as
// fake_apiserver.h lists them, with expectations from the Kubernetes API documentation: object
// and list shapes, Status errors, optimistic concurrency, generation and the status subresource,
// CRD defaults and validation, the scale subresource, patches, deletes, discovery, and the fault
// hooks (injected errors, Retry-After, pause/resume, the request log).
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/test_http.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;
using testing::Get;
using testing::HttpResult;
using testing::MergePatch;
using testing::Post;
using testing::Put;
using testing::Request;

constexpr char kDeployments[] = "/apis/apps/v1/namespaces/default/deployments";
constexpr char kIas[] = "/apis/twinscale.io/v1alpha1/namespaces/default/inferenceautoscalers";

FakeApiServer::Fault Fault(std::string method, std::string path_prefix, int code, int count = 1,
                           int retry_after_seconds = 0) {
  FakeApiServer::Fault f;
  f.method = std::move(method);
  f.path_prefix = std::move(path_prefix);
  f.code = code;
  f.count = count;
  f.retry_after_seconds = retry_after_seconds;
  return f;
}

json Deployment(const std::string& name, int replicas = 2) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"labels", {{"app", name}, {"tier", "serve"}}}}},
          {"spec",
           {{"replicas", replicas},
            {"selector",
             {{"matchLabels", {{"app", name}}},
              {"matchExpressions",
               {{{"key", "tier"}, {"operator", "In"}, {"values", {"serve", "batch"}}}}}}},
            {"template", {{"metadata", {{"labels", {{"app", name}, {"tier", "serve"}}}}}}}}}};
}

// An InferenceAutoscaler with only the CRD's required fields.
json MinimalIas(const std::string& name) {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "llm"}}},
            {"maxReplicas", 8},
            {"model", {{"profile", "llama-3.1-8b-h100"}}}}}};
}

class ApiServerHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.Set(absl::FromUnixSeconds(1714564800));  // 2024-05-01T12:00:00Z
    FakeApiServer::Options o;
    o.clock = &clock_;
    auto s = FakeApiServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    url_ = server_->url();
  }

  // Asserts `r` is the Status error the API conventions describe.
  static void ExpectStatus(const HttpResult& r, int code, const std::string& reason) {
    EXPECT_EQ(r.code, code) << r.body << r.error;
    EXPECT_EQ(r.json.value("kind", ""), "Status") << r.body;
    EXPECT_EQ(r.json.value("apiVersion", ""), "v1") << r.body;
    EXPECT_EQ(r.json.value("status", ""), "Failure") << r.body;
    EXPECT_EQ(r.json.value("reason", ""), reason) << r.body;
    EXPECT_EQ(r.json.value("code", 0), code) << r.body;
  }

  ManualClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::string url_;
};

// ---- Rule 1 and 2: objects, lists, selectors ------------------------------------------------

TEST_F(ApiServerHttpTest, CreateFillsServerSideMetadata) {
  HttpResult r = Post(url_, kDeployments, Deployment("web"));
  ASSERT_EQ(r.code, 201) << r.body << r.error;
  const json& md = r.json["metadata"];
  EXPECT_EQ(md["name"], "web");
  EXPECT_EQ(md["namespace"], "default");
  EXPECT_EQ(md["creationTimestamp"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(md["generation"], 1);
  EXPECT_EQ(md["resourceVersion"], "1001");
  EXPECT_EQ(md["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(r.json["kind"], "Deployment");
  EXPECT_EQ(r.json["apiVersion"], "apps/v1");

  HttpResult got = Get(url_, std::string(kDeployments) + "/web");
  ASSERT_EQ(got.code, 200);
  EXPECT_EQ(got.json, r.json);

  HttpResult again = Post(url_, kDeployments, Deployment("web"));
  ExpectStatus(again, 409, "AlreadyExists");
  EXPECT_EQ(again.json["message"], "deployments.apps \"web\" already exists");
  EXPECT_EQ(again.json["details"],
            json({{"name", "web"}, {"group", "apps"}, {"kind", "deployments"}}));

  HttpResult missing = Get(url_, std::string(kDeployments) + "/nope");
  ExpectStatus(missing, 404, "NotFound");
  EXPECT_EQ(missing.json["message"], "deployments.apps \"nope\" not found");
}

TEST_F(ApiServerHttpTest, CreateChecksNamesAndNamespaces) {
  json generated = Deployment("");
  generated["metadata"].erase("name");
  generated["metadata"]["generateName"] = "web-";
  HttpResult g = Post(url_, kDeployments, generated);
  ASSERT_EQ(g.code, 201) << g.body;
  EXPECT_TRUE(absl::StartsWith(g.json["metadata"]["name"].get<std::string>(), "web-"));
  EXPECT_EQ(g.json["metadata"]["name"].get<std::string>().size(), 9u);  // "web-" + 5 characters

  json other_ns = Deployment("web");
  other_ns["metadata"]["namespace"] = "prod";
  ExpectStatus(Post(url_, kDeployments, other_ns), 400, "BadRequest");

  ExpectStatus(Post(url_, kDeployments, Deployment("Web_1")), 422, "Invalid");

  json wrong_kind = Deployment("web");
  wrong_kind["kind"] = "StatefulSet";
  ExpectStatus(Post(url_, kDeployments, wrong_kind), 400, "BadRequest");

  ExpectStatus(Request(url_, "POST", kDeployments, "{not json"), 400, "BadRequest");
}

TEST_F(ApiServerHttpTest, ListsAreTypedListsWithTheListResourceVersion) {
  ASSERT_EQ(Post(url_, kDeployments, Deployment("b")).code, 201);
  ASSERT_EQ(Post(url_, kDeployments, Deployment("a")).code, 201);
  ASSERT_EQ(Post(url_, "/apis/apps/v1/namespaces/prod/deployments", Deployment("c")).code, 201);

  HttpResult list = Get(url_, kDeployments);
  ASSERT_EQ(list.code, 200) << list.body;
  EXPECT_EQ(list.json["kind"], "DeploymentList");
  EXPECT_EQ(list.json["apiVersion"], "apps/v1");
  EXPECT_EQ(list.json["metadata"]["resourceVersion"], "1003");
  ASSERT_EQ(list.json["items"].size(), 2u);
  EXPECT_EQ(list.json["items"][0]["metadata"]["name"], "a");  // name order, as etcd keys
  EXPECT_EQ(list.json["items"][1]["metadata"]["name"], "b");

  HttpResult all = Get(url_, "/apis/apps/v1/deployments");
  ASSERT_EQ(all.code, 200) << all.body;
  EXPECT_EQ(all.json["items"].size(), 3u);

  // Custom resources are unstructured: their list items keep apiVersion and kind.
  ASSERT_EQ(Post(url_, kIas, MinimalIas("x")).code, 201);
  HttpResult ias = Get(url_, kIas);
  ASSERT_EQ(ias.code, 200);
  EXPECT_EQ(ias.json["kind"], "InferenceAutoscalerList");
  EXPECT_EQ(ias.json["items"][0]["kind"], "InferenceAutoscaler");
}

TEST_F(ApiServerHttpTest, LabelAndFieldSelectorsFilterLists) {
  auto pod = [](const std::string& name, json labels) {
    return json{{"metadata", {{"name", name}, {"labels", labels}}}};
  };
  const std::string pods = "/api/v1/namespaces/default/pods";
  ASSERT_EQ(Post(url_, pods, pod("p1", {{"a", "b"}, {"e", "x"}, {"g", "1"}})).code, 201);
  ASSERT_EQ(Post(url_, pods, pod("p2", {{"a", "b"}, {"c", "d"}, {"e", "y"}, {"g", "1"}})).code,
            201);
  ASSERT_EQ(Post(url_, pods, pod("p3", {{"a", "b"}, {"e", "x"}, {"f", "1"}, {"g", "1"}})).code,
            201);
  ASSERT_EQ(Post(url_, pods, pod("p4", {{"a", "z"}, {"e", "x"}, {"g", "1"}})).code, 201);
  ASSERT_EQ(Post(url_, pods, pod("p5", {{"a", "b"}, {"e", "x"}})).code, 201);
  auto names = [&](const std::string& query) {
    HttpResult r = Get(url_, pods + "?" + query);
    EXPECT_EQ(r.code, 200) << query << ": " << r.body;
    std::vector<std::string> out;
    for (const json& i : r.json["items"]) out.push_back(i["metadata"]["name"]);
    return out;
  };
  // a=b,c!=d,e in (x,y),!f,g  — p1 only: p2 has c=d, p3 has f, p4 has a=z, p5 lacks g.
  EXPECT_EQ(names("labelSelector=a%3Db%2Cc%21%3Dd%2Ce+in+%28x%2Cy%29%2C%21f%2Cg"),
            std::vector<std::string>{"p1"});
  EXPECT_EQ(names("labelSelector=e%20notin%20(x)"), std::vector<std::string>{"p2"});
  EXPECT_EQ(names("fieldSelector=metadata.name%3Dp3"), std::vector<std::string>{"p3"});
  EXPECT_EQ(names("fieldSelector=metadata.name!%3Dp3&labelSelector=a%3Db,g"),
            (std::vector<std::string>{"p1", "p2"}));

  HttpResult bad_label = Get(url_, pods + "?labelSelector=a+in+b");
  ExpectStatus(bad_label, 400, "BadRequest");
  HttpResult bad_field = Get(url_, pods + "?fieldSelector=spec.containers%3Dx");
  ExpectStatus(bad_field, 400, "BadRequest");
  EXPECT_EQ(bad_field.json["message"], "field label not supported: spec.containers");
}

// ---- Rule 2 and 3: concurrency, generation, status ------------------------------------------

TEST_F(ApiServerHttpTest, StaleResourceVersionsConflict) {
  HttpResult created = Post(url_, kDeployments, Deployment("web"));
  ASSERT_EQ(created.code, 201);
  json first = created.json;
  first["spec"]["replicas"] = 3;
  HttpResult updated = Put(url_, std::string(kDeployments) + "/web", first);
  ASSERT_EQ(updated.code, 200) << updated.body;

  // The same resourceVersion again is now stale.
  first["spec"]["replicas"] = 4;
  HttpResult stale = Put(url_, std::string(kDeployments) + "/web", first);
  ExpectStatus(stale, 409, "Conflict");
  EXPECT_EQ(stale.json["message"],
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been "
            "modified; please apply your changes to the latest version and try again");

  // A resourceVersion inside a merge patch is a precondition.
  HttpResult stale_patch =
      MergePatch(url_, std::string(kDeployments) + "/web",
                 {{"metadata", {{"resourceVersion", created.json["metadata"]["resourceVersion"]}}},
                  {"spec", {{"replicas", 9}}}});
  ExpectStatus(stale_patch, 409, "Conflict");
  HttpResult good_patch =
      MergePatch(url_, std::string(kDeployments) + "/web",
                 {{"metadata", {{"resourceVersion", updated.json["metadata"]["resourceVersion"]}}},
                  {"spec", {{"replicas", 9}}}});
  ASSERT_EQ(good_patch.code, 200) << good_patch.body;
  EXPECT_EQ(good_patch.json["spec"]["replicas"], 9);

  // Built-in kinds accept an unconditional update; custom resources don't.
  json unconditional = good_patch.json;
  unconditional["metadata"].erase("resourceVersion");
  EXPECT_EQ(Put(url_, std::string(kDeployments) + "/web", unconditional).code, 200);
  HttpResult ias = Post(url_, kIas, MinimalIas("x"));
  ASSERT_EQ(ias.code, 201);
  json ias_unconditional = ias.json;
  ias_unconditional["metadata"].erase("resourceVersion");
  HttpResult refused = Put(url_, std::string(kIas) + "/x", ias_unconditional);
  ExpectStatus(refused, 422, "Invalid");
  EXPECT_TRUE(
      absl::StrContains(refused.json["message"].get<std::string>(), "metadata.resourceVersion"));
}

TEST_F(ApiServerHttpTest, GenerationBumpsOnlyOnSpecChanges) {
  HttpResult ias = Post(url_, kIas, MinimalIas("x"));
  ASSERT_EQ(ias.code, 201);
  EXPECT_EQ(ias.json["metadata"]["generation"], 1);
  const std::string path = std::string(kIas) + "/x";

  HttpResult labeled = MergePatch(url_, path, {{"metadata", {{"labels", {{"team", "ml"}}}}}});
  ASSERT_EQ(labeled.code, 200) << labeled.body;
  EXPECT_EQ(labeled.json["metadata"]["generation"], 1);
  EXPECT_NE(labeled.json["metadata"]["resourceVersion"], ias.json["metadata"]["resourceVersion"]);

  HttpResult status = MergePatch(url_, path + "/status",
                                 {{"status", {{"observedGeneration", 1}, {"desiredReplicas", 3}}}});
  ASSERT_EQ(status.code, 200) << status.body;
  EXPECT_EQ(status.json["metadata"]["generation"], 1);
  EXPECT_EQ(status.json["status"]["desiredReplicas"], 3);

  HttpResult spec = MergePatch(url_, path, {{"spec", {{"maxReplicas", 12}}}});
  ASSERT_EQ(spec.code, 200) << spec.body;
  EXPECT_EQ(spec.json["metadata"]["generation"], 2);
  EXPECT_EQ(spec.json["status"]["desiredReplicas"], 3) << "status survives spec writes";
}

TEST_F(ApiServerHttpTest, SpecUpdatesIgnoreStatusAndStatusUpdatesIgnoreSpec) {
  HttpResult ias = Post(url_, kIas, MinimalIas("x"));
  ASSERT_EQ(ias.code, 201);
  const std::string path = std::string(kIas) + "/x";

  json both = ias.json;
  both["spec"]["maxReplicas"] = 20;
  both["status"] = {{"desiredReplicas", 5}};
  HttpResult main = Put(url_, path, both);
  ASSERT_EQ(main.code, 200) << main.body;
  EXPECT_EQ(main.json["spec"]["maxReplicas"], 20);
  EXPECT_FALSE(main.json.contains("status"));

  json status_write = main.json;
  status_write["spec"]["maxReplicas"] = 99;
  status_write["status"] = {{"desiredReplicas", 5}};
  HttpResult status = Put(url_, path + "/status", status_write);
  ASSERT_EQ(status.code, 200) << status.body;
  EXPECT_EQ(status.json["spec"]["maxReplicas"], 20);
  EXPECT_EQ(status.json["status"]["desiredReplicas"], 5);
  EXPECT_EQ(status.json["metadata"]["generation"], 2);  // the PUT's spec change, not /status

  // A status write that changes nothing writes nothing.
  HttpResult again = Put(url_, path + "/status", status.json);
  ASSERT_EQ(again.code, 200);
  EXPECT_EQ(again.json["metadata"]["resourceVersion"], status.json["metadata"]["resourceVersion"]);
}

// ---- Rule 4: the CRD's schema ---------------------------------------------------------------

TEST_F(ApiServerHttpTest, AppliesTheCrdDefaults) {
  HttpResult r = Post(url_, kIas, MinimalIas("llm"));
  ASSERT_EQ(r.code, 201) << r.body;
  const json& spec = r.json["spec"];
  // The CRD's defaults for the spec (docs/operations.md "Tuning the InferenceAutoscaler").
  EXPECT_EQ(spec["mode"], "Recommend");
  EXPECT_EQ(spec["minReplicas"], 1);
  EXPECT_EQ(spec["routing"], "Random");
  EXPECT_EQ(spec["slo"]["ttft"]["threshold"], "500ms");
  EXPECT_EQ(spec["slo"]["ttft"]["percentile"], 90);
  EXPECT_EQ(spec["scaleDown"]["stabilizationWindowSeconds"], 300);
  EXPECT_DOUBLE_EQ(spec["scaleDown"]["safetyMargin"].get<double>(), 0.8);
  EXPECT_EQ(spec["limits"]["queueDepthPerReplica"], 4);
  EXPECT_DOUBLE_EQ(spec["limits"]["kvCacheUtilization"].get<double>(), 0.85);
  EXPECT_EQ(spec["admission"]["enabled"], false);
  EXPECT_EQ(spec["metrics"]["interval"], "15s");
  EXPECT_EQ(spec["metrics"]["staleAfter"], "45s");
  // Given values are kept.
  EXPECT_EQ(spec["maxReplicas"], 8);
}

TEST_F(ApiServerHttpTest, RejectsSchemaInvalidObjectsNamingTheField) {
  json no_max = MinimalIas("a");
  no_max["spec"].erase("maxReplicas");
  HttpResult r1 = Post(url_, kIas, no_max);
  ExpectStatus(r1, 422, "Invalid");
  EXPECT_TRUE(
      absl::StrContains(r1.json["message"].get<std::string>(),
                        "InferenceAutoscaler.twinscale.io \"a\" is invalid: spec.maxReplicas"))
      << r1.body;
  ASSERT_EQ(r1.json["details"]["causes"].size(), 1u);
  EXPECT_EQ(r1.json["details"]["causes"][0]["field"], "spec.maxReplicas");
  EXPECT_EQ(r1.json["details"]["causes"][0]["reason"], "FieldValueRequired");

  json bad_mode = MinimalIas("b");
  bad_mode["spec"]["mode"] = "Turbo";
  HttpResult r2 = Post(url_, kIas, bad_mode);
  ExpectStatus(r2, 422, "Invalid");
  EXPECT_EQ(r2.json["details"]["causes"][0]["field"], "spec.mode");
  EXPECT_EQ(r2.json["details"]["causes"][0]["reason"], "FieldValueNotSupported");

  json zero_min = MinimalIas("c");
  zero_min["spec"]["minReplicas"] = 0;
  HttpResult r3 = Post(url_, kIas, zero_min);
  ExpectStatus(r3, 422, "Invalid");
  EXPECT_EQ(r3.json["details"]["causes"][0]["field"], "spec.minReplicas");

  // Updates are validated too.
  HttpResult ok = Post(url_, kIas, MinimalIas("d"));
  ASSERT_EQ(ok.code, 201);
  HttpResult r4 = MergePatch(url_, std::string(kIas) + "/d",
                             {{"spec", {{"slo", {{"ttft", {{"threshold", "fast"}}}}}}}});
  ExpectStatus(r4, 422, "Invalid");
  EXPECT_EQ(r4.json["details"]["causes"][0]["field"], "spec.slo.ttft.threshold");
}

TEST_F(ApiServerHttpTest, UnknownFieldsArePrunedWithAWarningOrRefusedWhenStrict) {
  json extra = MinimalIas("x");
  extra["spec"]["maxReplica"] = 3;  // a typo
  HttpResult warn = Post(url_, kIas, extra);
  ASSERT_EQ(warn.code, 201) << warn.body;
  EXPECT_FALSE(warn.json["spec"].contains("maxReplica"));
  EXPECT_EQ(warn.headers["warning"], "299 - \"unknown field \\\"spec.maxReplica\\\"\"");

  extra["metadata"]["name"] = "y";
  HttpResult strict =
      Request(url_, "POST", std::string(kIas) + "?fieldValidation=Strict", extra.dump());
  ExpectStatus(strict, 400, "BadRequest");
  EXPECT_EQ(strict.json["message"], "strict decoding error: unknown field \"spec.maxReplica\"");
}

// ---- Rule 5: /scale -------------------------------------------------------------------------

TEST_F(ApiServerHttpTest, ScaleSubresourceReadsAndWritesReplicas) {
  HttpResult d = Post(url_, kDeployments, Deployment("web", 2));
  ASSERT_EQ(d.code, 201);
  ASSERT_TRUE(server_
                  ->Mutate(std::string(kDeployments) + "/web",
                           [](json& o) {
                             o["status"] = {{"replicas", 2}};
                           })
                  .ok());
  const std::string scale_path = std::string(kDeployments) + "/web/scale";
  HttpResult scale = Get(url_, scale_path);
  ASSERT_EQ(scale.code, 200) << scale.body;
  EXPECT_EQ(scale.json["kind"], "Scale");
  EXPECT_EQ(scale.json["apiVersion"], "autoscaling/v1");
  EXPECT_EQ(scale.json["metadata"]["name"], "web");
  EXPECT_EQ(scale.json["metadata"]["namespace"], "default");
  EXPECT_EQ(scale.json["metadata"]["uid"], d.json["metadata"]["uid"]);
  EXPECT_EQ(scale.json["spec"]["replicas"], 2);
  EXPECT_EQ(scale.json["status"]["replicas"], 2);
  // matchLabels and matchExpressions, sorted by key.
  EXPECT_EQ(scale.json["status"]["selector"], "app=web,tier in (batch,serve)");

  // PUT with the current resourceVersion.
  json put = scale.json;
  put["spec"]["replicas"] = 4;
  HttpResult put_r = Put(url_, scale_path, put);
  ASSERT_EQ(put_r.code, 200) << put_r.body;
  EXPECT_EQ(put_r.json["spec"]["replicas"], 4);
  HttpResult parent = Get(url_, std::string(kDeployments) + "/web");
  EXPECT_EQ(parent.json["spec"]["replicas"], 4);
  EXPECT_EQ(parent.json["metadata"]["generation"], 2);
  EXPECT_EQ(parent.json["metadata"]["resourceVersion"], put_r.json["metadata"]["resourceVersion"]);

  // The same (now stale) resourceVersion again.
  put["spec"]["replicas"] = 5;
  ExpectStatus(Put(url_, scale_path, put), 409, "Conflict");

  // Merge patch, the way twinscale's Direct mode writes /scale.
  HttpResult patched = MergePatch(url_, scale_path, {{"spec", {{"replicas", 6}}}});
  ASSERT_EQ(patched.code, 200) << patched.body;
  EXPECT_EQ(patched.json["spec"]["replicas"], 6);
  EXPECT_EQ(Get(url_, std::string(kDeployments) + "/web").json["metadata"]["generation"], 3);
  // ...with a stale precondition.
  ExpectStatus(
      MergePatch(url_, scale_path,
                 {{"metadata", {{"resourceVersion", d.json["metadata"]["resourceVersion"]}}},
                  {"spec", {{"replicas", 1}}}}),
      409, "Conflict");

  ExpectStatus(MergePatch(url_, scale_path, {{"spec", {{"replicas", -1}}}}), 422, "Invalid");

  // Zero replicas: ScaleSpec.replicas is omitempty, so the field disappears.
  HttpResult zero = MergePatch(url_, scale_path, {{"spec", {{"replicas", 0}}}});
  ASSERT_EQ(zero.code, 200) << zero.body;
  EXPECT_FALSE(zero.json["spec"].contains("replicas"));
  EXPECT_EQ(Get(url_, std::string(kDeployments) + "/web").json["spec"]["replicas"], 0);

  // No /scale on kinds without one.
  ExpectStatus(Get(url_, std::string(kIas) + "/x/scale"), 404, "NotFound");
}

// ---- Patches and deletes --------------------------------------------------------------------

TEST_F(ApiServerHttpTest, PatchTypesFollowTheirRfcs) {
  ASSERT_EQ(Post(url_, kDeployments, Deployment("web")).code, 201);
  const std::string path = std::string(kDeployments) + "/web";
  // RFC 7386: null deletes a key, objects merge, arrays are replaced.
  HttpResult merged =
      MergePatch(url_, path, {{"metadata", {{"labels", {{"tier", nullptr}, {"new", "yes"}}}}}});
  ASSERT_EQ(merged.code, 200) << merged.body;
  EXPECT_EQ(merged.json["metadata"]["labels"], json({{"app", "web"}, {"new", "yes"}}));

  // RFC 6902: a failed test operation applies nothing.
  HttpResult failed = Request(url_, "PATCH", path,
                              R"([{"op":"test","path":"/spec/replicas","value":99},
                                  {"op":"replace","path":"/spec/replicas","value":1}])",
                              "application/json-patch+json");
  ExpectStatus(failed, 422, "Invalid");
  HttpResult applied = Request(url_, "PATCH", path,
                               R"([{"op":"test","path":"/spec/replicas","value":2},
                                   {"op":"replace","path":"/spec/replicas","value":1}])",
                               "application/json-patch+json");
  ASSERT_EQ(applied.code, 200) << applied.body;
  EXPECT_EQ(applied.json["spec"]["replicas"], 1);

  // Strategic merge patch: maps merge like a merge patch on built-in kinds...
  HttpResult smp = Request(url_, "PATCH", path, R"({"metadata":{"annotations":{"a":"b"}}})",
                           "application/strategic-merge-patch+json");
  ASSERT_EQ(smp.code, 200) << smp.body;
  EXPECT_EQ(smp.json["metadata"]["annotations"]["a"], "b");
  // ...and custom resources refuse it, as the real server does.
  ASSERT_EQ(Post(url_, kIas, MinimalIas("x")).code, 201);
  ExpectStatus(Request(url_, "PATCH", std::string(kIas) + "/x", R"({"spec":{"maxReplicas":3}})",
                       "application/strategic-merge-patch+json"),
               415, "UnsupportedMediaType");
  ExpectStatus(Request(url_, "PATCH", path, "{}", "application/apply-patch+yaml"), 415,
               "UnsupportedMediaType");
  ExpectStatus(MergePatch(url_, std::string(kDeployments) + "/missing", json::object()), 404,
               "NotFound");
}

TEST_F(ApiServerHttpTest, DeleteAnswersAsTheRealServer) {
  ASSERT_EQ(Post(url_, kDeployments, Deployment("web")).code, 201);
  HttpResult deleted = Request(url_, "DELETE", std::string(kDeployments) + "/web");
  ASSERT_EQ(deleted.code, 200) << deleted.body;
  EXPECT_EQ(deleted.json["kind"], "Status");
  EXPECT_EQ(deleted.json["status"], "Success");
  EXPECT_EQ(deleted.json["details"]["name"], "web");
  EXPECT_EQ(deleted.json["details"]["kind"], "deployments");
  ExpectStatus(Get(url_, std::string(kDeployments) + "/web"), 404, "NotFound");
  ExpectStatus(Request(url_, "DELETE", std::string(kDeployments) + "/web"), 404, "NotFound");

  // Pods answer with the deleted object.
  ASSERT_EQ(Post(url_, "/api/v1/namespaces/default/pods", {{"metadata", {{"name", "p"}}}}).code,
            201);
  HttpResult pod = Request(url_, "DELETE", "/api/v1/namespaces/default/pods/p");
  ASSERT_EQ(pod.code, 200) << pod.body;
  EXPECT_EQ(pod.json["kind"], "Pod");
  EXPECT_EQ(pod.json["status"]["phase"], "Pending");  // what a new Pod starts as
}

TEST_F(ApiServerHttpTest, LeasesAreWonByTheFirstWriter) {
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/twinscale/leases";
  HttpResult created = Post(url_, leases,
                            {{"metadata", {{"name", "leader"}}},
                             {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}});
  ASSERT_EQ(created.code, 201) << created.body;
  // Two candidates read the same lease and both try to take it.
  json by_b = created.json, by_c = created.json;
  by_b["spec"]["holderIdentity"] = "b";
  by_c["spec"]["holderIdentity"] = "c";
  HttpResult b = Put(url_, leases + "/leader", by_b);
  HttpResult c = Put(url_, leases + "/leader", by_c);
  EXPECT_EQ(b.code, 200) << b.body;
  ExpectStatus(c, 409, "Conflict");
  EXPECT_EQ(Get(url_, leases + "/leader").json["spec"]["holderIdentity"], "b");
}

TEST_F(ApiServerHttpTest, ServesDiscoveryAndRejectsUnknownPaths) {
  HttpResult apis = Get(url_, "/apis");
  ASSERT_EQ(apis.code, 200);
  EXPECT_EQ(apis.json["kind"], "APIGroupList");
  std::vector<std::string> groups;
  for (const json& g : apis.json["groups"]) groups.push_back(g["name"]);
  for (const char* g :
       {"apps", "autoscaling", "coordination.k8s.io", "events.k8s.io", "keda.sh", "twinscale.io"}) {
    EXPECT_NE(std::find(groups.begin(), groups.end(), g), groups.end()) << g;
  }
  HttpResult apps = Get(url_, "/apis/apps/v1");
  ASSERT_EQ(apps.code, 200);
  EXPECT_EQ(apps.json["kind"], "APIResourceList");
  bool has_scale = false;
  for (const json& r : apps.json["resources"]) {
    if (r["name"] == "deployments/scale") {
      has_scale = true;
      EXPECT_EQ(r["kind"], "Scale");
      EXPECT_EQ(r["group"], "autoscaling");
    }
  }
  EXPECT_TRUE(has_scale);
  ExpectStatus(Get(url_, "/apis/nope.io/v1/namespaces/default/things"), 404, "NotFound");
  ExpectStatus(Request(url_, "PUT", kDeployments, "{}"), 405, "MethodNotAllowed");
}

// ---- Rule 8: fault hooks --------------------------------------------------------------------

TEST_F(ApiServerHttpTest, InjectedFaultsFailTheNextMatchingRequests) {
  ASSERT_EQ(Post(url_, kDeployments, Deployment("web")).code, 201);
  const std::string path = std::string(kDeployments) + "/web";
  server_->FailNext(Fault("GET", kDeployments, 503, /*count=*/2, /*retry_after_seconds=*/3));
  server_->FailNext(Fault("PATCH", "", 429, /*count=*/1, /*retry_after_seconds=*/1));
  server_->FailNext(Fault("", "/api/v1", 500));

  HttpResult first = Get(url_, path);
  ExpectStatus(first, 503, "ServiceUnavailable");
  EXPECT_EQ(first.headers["retry-after"], "3");
  EXPECT_EQ(first.json["details"]["retryAfterSeconds"], 3);
  ExpectStatus(Get(url_, path), 503, "ServiceUnavailable");
  EXPECT_EQ(Get(url_, path).code, 200) << "only two GETs fail";

  HttpResult throttled = MergePatch(url_, path, {{"spec", {{"replicas", 3}}}});
  ExpectStatus(throttled, 429, "TooManyRequests");
  EXPECT_EQ(throttled.headers["retry-after"], "1");
  EXPECT_EQ(Get(url_, path).json["spec"]["replicas"], 2) << "a failed write writes nothing";
  EXPECT_EQ(MergePatch(url_, path, {{"spec", {{"replicas", 3}}}}).code, 200);

  ExpectStatus(Get(url_, "/api/v1/namespaces/default/pods"), 500, "InternalError");
  EXPECT_EQ(Get(url_, "/api/v1/namespaces/default/pods").code, 200);

  server_->FailNext(Fault("PUT", kDeployments, 409, /*count=*/5));
  server_->ClearFaults();
  EXPECT_EQ(Put(url_, path, Get(url_, path).json).code, 200);
}

TEST_F(ApiServerHttpTest, PausedRequestsHangUntilResumed) {
  server_->Pause();
  // A client with a short timeout gives up...
  HttpResult timed_out =
      Request(url_, "GET", "/version", "", "application/json", {}, {}, absl::Milliseconds(300));
  EXPECT_EQ(timed_out.code, 0) << timed_out.body;
  EXPECT_FALSE(timed_out.error.empty());
  // ...while a patient one is answered after Resume().
  HttpResult patient;
  std::thread t([&] { patient = Get(url_, "/version"); });
  absl::SleepFor(absl::Milliseconds(300));
  server_->Resume();
  t.join();
  EXPECT_EQ(patient.code, 200) << patient.error;
  EXPECT_EQ(patient.json["major"], "1");
}

TEST_F(ApiServerHttpTest, LogsEveryRequest) {
  server_->ClearRequests();
  HttpResult r =
      Request(url_, "PATCH", std::string(kDeployments) + "/web?fieldManager=twinscale&dryRun=All",
              R"({"spec":{"replicas":3}})", "application/merge-patch+json",
              {{"User-Agent", "twinscale-test"}});
  ExpectStatus(r, 404, "NotFound");
  const auto log = server_->Requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].method, "PATCH");
  EXPECT_EQ(log[0].path, std::string(kDeployments) + "/web");
  EXPECT_EQ(log[0].query, "fieldManager=twinscale&dryRun=All");
  EXPECT_EQ(log[0].params.at("fieldManager"), "twinscale");
  EXPECT_EQ(log[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(log[0].body, R"({"spec":{"replicas":3}})");
  EXPECT_EQ(log[0].headers.at("user-agent"), "twinscale-test");
}

TEST_F(ApiServerHttpTest, InProcessWritesAreVisibleOverHttp) {
  auto put = server_->Put("/api/v1/namespaces/default/pods/web-0",
                          {{"metadata", {{"labels", {{"app", "web"}}}}},
                           {"status", {{"phase", "Running"}, {"podIP", "127.0.0.2"}}}});
  ASSERT_TRUE(put.ok()) << put.status();
  HttpResult got = Get(url_, "/api/v1/namespaces/default/pods/web-0");
  ASSERT_EQ(got.code, 200);
  EXPECT_EQ(got.json["status"]["phase"], "Running");
  EXPECT_EQ(got.json["metadata"]["resourceVersion"], std::to_string(server_->ResourceVersion()));
  auto listed = server_->List("/api/v1/namespaces/default/pods", "app=web");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)["items"].size(), 1u);
  EXPECT_TRUE(server_->Delete("/api/v1/namespaces/default/pods/web-0").ok());
  EXPECT_EQ(server_->Get("/api/v1/namespaces/default/pods/web-0").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinscale::fake_apiserver
