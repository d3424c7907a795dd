// Names a kind of Kubernetes object the way the REST API does: API group, version and the plural
// resource name, plus whether objects live in a namespace. ResourcePath() turns a ResourceRef and
// an object's coordinates into the URL path the API server serves it at.
#ifndef TWINSCALE_CONTROLLER_KUBE_RESOURCE_REF_H_
#define TWINSCALE_CONTROLLER_KUBE_RESOURCE_REF_H_

#include <string>
#include <string_view>

namespace twinscale::kube {

struct ResourceRef {
  std::string group;     // "" for the core group ("v1" objects: pods, events)
  std::string version;   // "v1", "v2", "v1alpha1"
  std::string resource;  // lower-case plural: "deployments"
  bool namespaced = true;

  // The apiVersion objects of this resource carry: "apps/v1", or "v1" for the core group.
  std::string ApiVersion() const;
  // For messages: "deployments.apps/v1", "pods/v1".
  std::string DebugName() const;

  friend bool operator==(const ResourceRef&, const ResourceRef&) = default;
};

// The resources twinscale touches. (Globals of a non-trivial type, but immutable and read only
// after main starts; a function per constant would read worse at every call site.)
inline const ResourceRef kPods{"", "v1", "pods", true};
inline const ResourceRef kEvents{"", "v1", "events", true};
inline const ResourceRef kConfigMaps{"", "v1", "configmaps", true};
inline const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const ResourceRef kDeployments{"apps", "v1", "deployments", true};
inline const ResourceRef kStatefulSets{"apps", "v1", "statefulsets", true};
inline const ResourceRef kInferenceAutoscalers{"twinscale.io", "v1alpha1", "inferenceautoscalers",
                                               true};
inline const ResourceRef kHorizontalPodAutoscalers{"autoscaling", "v2", "horizontalpodautoscalers",
                                                   true};
inline const ResourceRef kScaledObjects{"keda.sh", "v1alpha1", "scaledobjects", true};

// "/api/v1/namespaces/{ns}/pods/{name}/{subresource}" or "/apis/{group}/{version}/...".
// An empty `ns` (or a cluster-scoped resource) leaves out the namespace: for a namespaced resource
// that is the all-namespaces collection. An empty `name` gives the collection; an empty
// `subresource` the object itself. Each segment is percent-encoded.
std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name = "",
                         std::string_view subresource = "");

// Percent-encodes everything but RFC 3986's unreserved characters (for path segments and query
// values such as label selectors).
std::string EncodeUrlComponent(std::string_view s);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_RESOURCE_REF_H_
