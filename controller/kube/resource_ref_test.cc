// REST paths for core, grouped, namespaced and cluster-scoped resources, as the API serves them.
#include "controller/kube/resource_ref.h"

#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

TEST(ResourcePathTest, CoreAndGroupedResources) {
  EXPECT_EQ(ResourcePath(kPods, "ml", "vllm-0"), "/api/v1/namespaces/ml/pods/vllm-0");
  EXPECT_EQ(ResourcePath(kDeployments, "ml", "llama", "scale"),
            "/apis/apps/v1/namespaces/ml/deployments/llama/scale");
  EXPECT_EQ(ResourcePath(kInferenceAutoscalers, "ml", "llama", "status"),
            "/apis/twinscale.io/v1alpha1/namespaces/ml/inferenceautoscalers/llama/status");
  EXPECT_EQ(ResourcePath(kLeases, "kube-system", ""),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
}

TEST(ResourcePathTest, AllNamespacesAndClusterScoped) {
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  const ResourceRef nodes{"", "v1", "nodes", false};
  EXPECT_EQ(ResourcePath(nodes, "ignored", "n1"), "/api/v1/nodes/n1");
}

TEST(ResourcePathTest, SegmentsArePercentEncoded) {
  // RBAC object names may hold ':'; a name can't smuggle a '/' or '?' into the path.
  const ResourceRef roles{"rbac.authorization.k8s.io", "v1", "clusterroles", false};
  EXPECT_EQ(ResourcePath(roles, "", "system:auth/x?y"),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aauth%2Fx%3Fy");
}

TEST(ResourceRefTest, ApiVersionAndName) {
  EXPECT_EQ(kPods.ApiVersion(), "v1");
  EXPECT_EQ(kHorizontalPodAutoscalers.ApiVersion(), "autoscaling/v2");
  EXPECT_EQ(kScaledObjects.ApiVersion(), "keda.sh/v1alpha1");
  EXPECT_EQ(kStatefulSets.DebugName(), "statefulsets.apps/v1");
}

TEST(EncodeUrlComponentTest, KeepsOnlyUnreserved) {
  EXPECT_EQ(EncodeUrlComponent("app=vllm,tier in (a,b)"), "app%3Dvllm%2Ctier%20in%20%28a%2Cb%29");
  EXPECT_EQ(EncodeUrlComponent("A-z_0.9~"), "A-z_0.9~");
}

}  // namespace
}  // namespace twinscale::kube
