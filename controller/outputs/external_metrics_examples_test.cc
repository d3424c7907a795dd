// The HPA-mode examples in deploy/external-metrics/ keep the contract of docs/architecture.md
// ("Outputs and their contracts") and docs/usage.md ("HPA mode") and agree with each other and with
// the code: the InferenceAutoscaler loads in mode HPA; the HPA follows it through the metric name
// the API serves and a selector that, sent the way an HPA sends it, names that autoscaler; an
// AverageValue target of 1; no stabilization and rate limits that let any decision land in one sync
// (the HPA's own arithmetic); the APIService reaches the Service, which selects only the leader's
// pod and targets the port the controller patch serves, with the certificate of certificates.yaml;
// the RBAC an aggregated server and its HPA client need; and the controller's pod knows its own
// name and namespace (the leader label).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/api/spec_loader.h"
#include "controller/outputs/external_metrics_api.h"
#include "controller/outputs/external_metrics_request.h"
#include "controller/policy/hpa_algorithm.h"
#include "tests/util/hpa_behavior_yaml.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::outputs {
namespace {

using ::testing::Contains;

constexpr char kDir[] = "deploy/external-metrics/";

std::vector<YAML::Node> Load(const std::string& path) { return YAML::LoadAllFromFile(path); }

// The one document of `kind` (and `name`, if given) in a file of deploy/external-metrics/.
YAML::Node Find(const std::string& file, const std::string& kind, const std::string& name = "") {
  YAML::Node found;
  int count = 0;
  for (const YAML::Node& doc : Load(std::string(kDir) + file)) {
    if (doc["kind"].as<std::string>() != kind) continue;
    if (!name.empty() && doc["metadata"]["name"].as<std::string>() != name) continue;
    found = doc;
    ++count;
  }
  EXPECT_EQ(count, 1) << kind << " " << name << " in " << file;
  return found;
}

using testutil::HpaRulesFromYaml;

TEST(ExternalMetricsExamplesTest, TheHpaFollowsTheInferenceAutoscalersMetric) {
  auto ias = api::LoadInferenceAutoscalerFile(std::string(kDir) + "inferenceautoscaler.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  EXPECT_EQ(ias->spec.mode, api::Mode::kHpa);

  const YAML::Node hpa = Find("hpa.yaml", "HorizontalPodAutoscaler");
  EXPECT_EQ(hpa["apiVersion"].as<std::string>(), "autoscaling/v2");
  EXPECT_EQ(hpa["metadata"]["namespace"].as<std::string>(), ias->metadata.namespace_);
  const YAML::Node spec = hpa["spec"];
  EXPECT_EQ(spec["scaleTargetRef"]["name"].as<std::string>(), ias->spec.target_ref.name);
  EXPECT_EQ(spec["scaleTargetRef"]["kind"].as<std::string>(), ias->spec.target_ref.kind);
  EXPECT_EQ(spec["minReplicas"].as<int>(), ias->spec.min_replicas);
  EXPECT_EQ(spec["maxReplicas"].as<int>(), ias->spec.max_replicas);

  ASSERT_EQ(spec["metrics"].size(), 1u);
  const YAML::Node metric = spec["metrics"][0];
  EXPECT_EQ(metric["type"].as<std::string>(), "External");
  EXPECT_EQ(metric["external"]["metric"]["name"].as<std::string>(),
            ExternalMetricsApiOptions().metric_name);
  EXPECT_EQ(metric["external"]["target"]["type"].as<std::string>(), "AverageValue");
  EXPECT_EQ(metric["external"]["target"]["averageValue"].as<std::string>(), "1");
  const auto labels = metric["external"]["metric"]["selector"]["matchLabels"]
                          .as<std::map<std::string, std::string>>();
  EXPECT_EQ(labels, (std::map<std::string, std::string>{{kAutoscalerLabel, ias->metadata.name}}));
  // The request the HPA makes for it (metav1.LabelSelector -> "key=value", percent-encoded)
  // names this autoscaler.
  auto request = ParseExternalMetricsRequest(
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + ias->metadata.namespace_ + "/" +
          metric["external"]["metric"]["name"].as<std::string>(),
      "labelSelector=twinscale.io%2Fautoscaler%3D" + ias->metadata.name);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->autoscaler, ias->metadata.name);
  EXPECT_EQ(request->namespace_name, ias->metadata.namespace_);

  const api::ScalingRules up = HpaRulesFromYaml(spec["behavior"]["scaleUp"]);
  const api::ScalingRules down = HpaRulesFromYaml(spec["behavior"]["scaleDown"]);
  EXPECT_EQ(up.stabilization_window, absl::ZeroDuration());
  EXPECT_EQ(down.stabilization_window, absl::ZeroDuration());
  // Any decision lands in one sync: from minReplicas straight to maxReplicas, and back.
  const absl::Time now = absl::FromUnixSeconds(1795251600);
  EXPECT_GE(policy::HpaScaleUpLimit(ias->spec.min_replicas, {}, up, now), ias->spec.max_replicas);
  EXPECT_LE(policy::HpaScaleDownLimit(ias->spec.max_replicas, {}, down, now),
            ias->spec.min_replicas);
}

TEST(ExternalMetricsExamplesTest, TheApiServiceReachesTheLeaderThroughTheService) {
  const YAML::Node service = Find("apiservice.yaml", "Service");
  const YAML::Node api = Find("apiservice.yaml", "APIService");
  EXPECT_EQ(api["metadata"]["name"].as<std::string>(), "v1beta1.external.metrics.k8s.io");
  EXPECT_EQ(api["spec"]["group"].as<std::string>(), kExternalMetricsGroup);
  EXPECT_EQ(api["spec"]["version"].as<std::string>(), kExternalMetricsVersion);
  const std::string svc_name = service["metadata"]["name"].as<std::string>();
  const std::string svc_ns = service["metadata"]["namespace"].as<std::string>();
  EXPECT_EQ(api["spec"]["service"]["name"].as<std::string>(), svc_name);
  EXPECT_EQ(api["spec"]["service"]["namespace"].as<std::string>(), svc_ns);
  EXPECT_EQ(api["spec"]["service"]["port"].as<int>(),
            service["spec"]["ports"][0]["port"].as<int>());
  EXPECT_FALSE(api["spec"]["insecureSkipTLSVerify"].IsDefined());

  // Only the leader's pod, and only the controller's pods.
  const auto selector = service["spec"]["selector"].as<std::map<std::string, std::string>>();
  EXPECT_EQ(selector.at("twinscale.io/leader"), "true");
  EXPECT_EQ(selector.at("app.kubernetes.io/component"), "controller");

  // The controller patch serves the Service's target port with the flags the server needs.
  const YAML::Node patch = Load("deploy/patches/external-metrics-server.yaml")[0];
  const YAML::Node pod = patch["spec"]["template"]["spec"];
  const YAML::Node container = pod["containers"][0];
  EXPECT_EQ(container["ports"][0]["name"].as<std::string>(),
            service["spec"]["ports"][0]["targetPort"].as<std::string>());
  const int port = container["ports"][0]["containerPort"].as<int>();
  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(a.as<std::string>());
  EXPECT_THAT(args, Contains("--external-metrics-addr=0.0.0.0:" + std::to_string(port)));
  EXPECT_THAT(args, Contains("--leader-elect=true"));
  std::map<std::string, std::string> flags;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq != std::string::npos) flags[a.substr(0, eq)] = a.substr(eq + 1);
  }
  // The aggregator's certificate is checked against the cluster's requestheader CA.
  EXPECT_THAT(args, Contains("--external-metrics-client-ca-from-cluster"));
  EXPECT_FALSE(flags.count("--external-metrics-insecure-skip-client-verify"));
  // The certificate and key point into a mounted volume: cert-manager's Secret, whose
  // Certificate names the Service and is the one the APIService's caBundle comes from.
  std::map<std::string, std::string> mounts;  // mountPath -> volume name
  for (const YAML::Node& m : container["volumeMounts"]) {
    mounts[m["mountPath"].as<std::string>()] = m["name"].as<std::string>();
  }
  auto volume_of = [&](const std::string& file) {
    const std::string dir = file.substr(0, file.rfind('/'));
    EXPECT_TRUE(mounts.count(dir)) << file << " is not in a mounted volume";
    return mounts[dir];
  };
  const std::string tls_volume = volume_of(flags["--external-metrics-tls-cert"]);
  EXPECT_EQ(volume_of(flags["--external-metrics-tls-key"]), tls_volume);
  std::string secret;
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == tls_volume)
      secret = v["secret"]["secretName"].as<std::string>();
  }
  const YAML::Node cert = Find("certificates.yaml", "Certificate");
  EXPECT_EQ(cert["spec"]["secretName"].as<std::string>(), secret);
  EXPECT_EQ(api["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as<std::string>(),
            cert["metadata"]["namespace"].as<std::string>() + "/" +
                cert["metadata"]["name"].as<std::string>());
  std::vector<std::string> names;
  for (const YAML::Node& n : cert["spec"]["dnsNames"]) names.push_back(n.as<std::string>());
  EXPECT_THAT(names, Contains(svc_name + "." + svc_ns + ".svc"));  // what the aggregator checks
}

TEST(ExternalMetricsExamplesTest, RbacGrantsWhatTheAggregatedServerAndTheHpaNeed) {
  // roleRef name -> (binding kind, binding namespace, subject "namespace/name").
  struct Binding {
    std::string kind, ns, subject;
  };
  std::map<std::string, Binding> bindings;
  std::set<std::string> readers;  // ClusterRoles that read external.metrics.k8s.io
  for (const YAML::Node& doc : Load(std::string(kDir) + "rbac.yaml")) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRole") {
      for (const YAML::Node& rule : doc["rules"]) {
        const auto groups = rule["apiGroups"].as<std::vector<std::string>>();
        const auto verbs = rule["verbs"].as<std::vector<std::string>>();
        if (groups == std::vector<std::string>{kExternalMetricsGroup} &&
            std::find(verbs.begin(), verbs.end(), "get") != verbs.end()) {
          readers.insert(doc["metadata"]["name"].as<std::string>());
        }
      }
      continue;
    }
    ASSERT_EQ(doc["subjects"].size(), 1u);
    const YAML::Node s = doc["subjects"][0];
    bindings[doc["roleRef"]["name"].as<std::string>()] = {
        kind, doc["metadata"]["namespace"] ? doc["metadata"]["namespace"].as<std::string>() : "",
        s["namespace"].as<std::string>() + "/" + s["name"].as<std::string>()};
  }
  const std::string controller_sa = "twinscale-system/twinscale-controller";
  ASSERT_TRUE(bindings.count("system:auth-delegator"));
  EXPECT_EQ(bindings["system:auth-delegator"].kind, "ClusterRoleBinding");
  EXPECT_EQ(bindings["system:auth-delegator"].subject, controller_sa);
  ASSERT_TRUE(bindings.count("extension-apiserver-authentication-reader"));
  EXPECT_EQ(bindings["extension-apiserver-authentication-reader"].kind, "RoleBinding");
  EXPECT_EQ(bindings["extension-apiserver-authentication-reader"].ns, "kube-system");
  EXPECT_EQ(bindings["extension-apiserver-authentication-reader"].subject, controller_sa);
  ASSERT_EQ(readers.size(), 1u);
  const std::string reader = *readers.begin();
  ASSERT_TRUE(bindings.count(reader));
  EXPECT_EQ(bindings[reader].kind, "ClusterRoleBinding");
  EXPECT_EQ(bindings[reader].subject, "kube-system/horizontal-pod-autoscaler");
}

TEST(ExternalMetricsExamplesTest, TheControllerPodKnowsItsNameAndNamespace) {
  const YAML::Node deployment = Load("deploy/controller/deployment.yaml")[0];
  const YAML::Node container = deployment["spec"]["template"]["spec"]["containers"][0];
  std::map<std::string, std::string> env;  // name -> fieldRef.fieldPath
  for (const YAML::Node& e : container["env"]) {
    if (e["valueFrom"]["fieldRef"]) {
      env[e["name"].as<std::string>()] = e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
    }
  }
  EXPECT_EQ(env["POD_NAME"], "metadata.name");
  EXPECT_EQ(env["POD_NAMESPACE"], "metadata.namespace");
  // The gRPC Service of KEDA mode selects the leader too.
  const YAML::Node grpc = Load("deploy/keda/controller-grpc.yaml")[0];
  EXPECT_EQ(grpc["spec"]["selector"]["twinscale.io/leader"].as<std::string>(), "true");
}

}  // namespace
}  // namespace twinscale::outputs
