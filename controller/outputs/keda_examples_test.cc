// The KEDA examples in deploy/keda/ keep the contract docs/usage.md sets, and
// agree with each other: the InferenceAutoscaler loads (in mode KEDA); each ScaledObject follows it
// by name, scales its target within its bounds, has minReplicaCount >= 1, fallback
// currentReplicasIfHigher, scale-down stabilization 0, rate limits that let any decision land in
// one HPA sync (checked with the HPA's own rate-limit arithmetic), and reaches twinscale through
// the Service and the TLS TriggerAuthentication shipped beside it; the controller patch serves
// the port the Service targets, with the certificate Secret mounted where its flags point.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "controller/api/spec_loader.h"
#include "controller/policy/hpa_algorithm.h"
#include "tests/util/hpa_behavior_yaml.h"
#include "yaml-cpp/yaml.h"

namespace twinscale::outputs {
namespace {

using ::testing::Contains;

constexpr char kDir[] = "deploy/keda/";

// Every document of a file.
std::vector<YAML::Node> Load(const std::string& file) {
  return YAML::LoadAllFromFile(std::string(kDir) + file);
}

YAML::Node Only(const std::string& file) {
  std::vector<YAML::Node> docs = Load(file);
  EXPECT_EQ(docs.size(), 1u) << file;
  return docs.empty() ? YAML::Node() : docs[0];
}

using testutil::HpaRulesFromYaml;

TEST(KedaExamplesTest, ScaledObjectsFollowTheInferenceAutoscalerAndKeepTheContract) {
  auto ias = api::LoadInferenceAutoscalerFile(std::string(kDir) + "inferenceautoscaler.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  EXPECT_EQ(ias->spec.mode, api::Mode::kKeda);
  const std::string ias_ns = ias->metadata.namespace_;

  const YAML::Node service = Load("controller-grpc.yaml")[0];
  ASSERT_EQ(service["kind"].as<std::string>(), "Service");
  const std::string address = service["metadata"]["name"].as<std::string>() + "." +
                              service["metadata"]["namespace"].as<std::string>() + ".svc:" +
                              std::to_string(service["spec"]["ports"][0]["port"].as<int>());
  const YAML::Node auth = Only("triggerauthentication.yaml");
  std::set<std::string> params;
  for (const YAML::Node& p : auth["spec"]["secretTargetRef"]) {
    params.insert(p["parameter"].as<std::string>());
  }
  EXPECT_EQ(params, (std::set<std::string>{"caCert", "tlsClientCert", "tlsClientKey"}));

  std::set<std::string> trigger_types;
  for (const char* file :
       {"scaledobject-external.yaml", "alternatives/scaledobject-external-push.yaml"}) {
    SCOPED_TRACE(file);
    const YAML::Node so = Only(file);
    const YAML::Node spec = so["spec"];
    EXPECT_EQ(so["metadata"]["namespace"].as<std::string>(), ias_ns);
    EXPECT_EQ(spec["scaleTargetRef"]["name"].as<std::string>(), ias->spec.target_ref.name);
    EXPECT_GE(spec["minReplicaCount"].as<int>(), 1);
    EXPECT_EQ(spec["minReplicaCount"].as<int>(), ias->spec.min_replicas);
    EXPECT_EQ(spec["maxReplicaCount"].as<int>(), ias->spec.max_replicas);
    EXPECT_EQ(spec["fallback"]["behavior"].as<std::string>(), "currentReplicasIfHigher");
    EXPECT_GE(spec["fallback"]["replicas"].as<int>(), 1);

    const YAML::Node behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"];
    const api::ScalingRules up = HpaRulesFromYaml(behavior["scaleUp"]);
    const api::ScalingRules down = HpaRulesFromYaml(behavior["scaleDown"]);
    EXPECT_EQ(down.stabilization_window, absl::ZeroDuration());
    EXPECT_EQ(up.stabilization_window, absl::ZeroDuration());
    // Any decision lands in one sync: from minReplicaCount straight to maxReplicaCount, and back.
    const absl::Time now = absl::FromUnixSeconds(1795251600);
    EXPECT_GE(policy::HpaScaleUpLimit(ias->spec.min_replicas, {}, up, now), ias->spec.max_replicas);
    EXPECT_LE(policy::HpaScaleDownLimit(ias->spec.max_replicas, {}, down, now),
              ias->spec.min_replicas);

    ASSERT_EQ(spec["triggers"].size(), 1u);
    const YAML::Node trigger = spec["triggers"][0];
    trigger_types.insert(trigger["type"].as<std::string>());
    EXPECT_EQ(trigger["metadata"]["name"].as<std::string>(), ias->metadata.name);
    EXPECT_EQ(trigger["metadata"]["namespace"].as<std::string>(), ias_ns);
    EXPECT_EQ(trigger["metadata"]["scalerAddress"].as<std::string>(), address);
    EXPECT_EQ(trigger["metadata"]["enableTLS"].as<std::string>(), "true");
    EXPECT_EQ(trigger["authenticationRef"]["name"].as<std::string>(),
              auth["metadata"]["name"].as<std::string>());
  }
  EXPECT_EQ(trigger_types, (std::set<std::string>{"external", "external-push"}));
}

TEST(KedaExamplesTest, TheControllerPatchServesWhatTheServiceTargets) {
  const YAML::Node service = Load("controller-grpc.yaml")[0];
  const std::vector<YAML::Node> patches = YAML::LoadAllFromFile("deploy/patches/grpc-server.yaml");
  ASSERT_EQ(patches.size(), 1u) << "deploy/patches/grpc-server.yaml";
  const YAML::Node patch = patches[0];
  const YAML::Node container = patch["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> args;
  for (const YAML::Node& a : container["args"]) args.push_back(a.as<std::string>());
  const int port = service["spec"]["ports"][0]["port"].as<int>();
  EXPECT_THAT(args, Contains("--keda-addr=0.0.0.0:" + std::to_string(port)));
  EXPECT_THAT(args, Contains("--grpc-client-ca=/tls/ca.crt"));  // mutual TLS
  EXPECT_THAT(args, Contains("--leader-elect=true"));
  EXPECT_EQ(container["ports"][0]["name"].as<std::string>(),
            service["spec"]["ports"][0]["targetPort"].as<std::string>());
  EXPECT_EQ(container["ports"][0]["containerPort"].as<int>(), port);
  EXPECT_EQ(container["volumeMounts"][0]["mountPath"].as<std::string>(), "/tls");
  // The Secret mounted is the one cert-manager writes for the server certificate, whose names
  // are the Service's.
  const std::string secret =
      patch["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"].as<std::string>();
  bool found = false;
  for (const YAML::Node& doc : Load("certificates.yaml")) {
    if (doc["kind"].as<std::string>() != "Certificate" ||
        doc["spec"]["secretName"].as<std::string>() != secret) {
      continue;
    }
    found = true;
    std::vector<std::string> names;
    for (const YAML::Node& n : doc["spec"]["dnsNames"]) names.push_back(n.as<std::string>());
    EXPECT_THAT(names, Contains(service["metadata"]["name"].as<std::string>() + "." +
                                service["metadata"]["namespace"].as<std::string>() + ".svc"));
  }
  EXPECT_TRUE(found) << "no Certificate writes Secret " << secret;
}

}  // namespace
}  // namespace twinscale::outputs
