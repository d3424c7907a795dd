// KubeClient: the Kubernetes API as twinscale uses it: read, list, write and watch objects as JSON.
// HttpKubeClient (rest_client.h) talks to a real API server; tests/fakes/fake_kube_client.h keeps
// objects in memory with the same rules, so the reconciler, informer and leader election can be
// tested without a server.
//
// Objects are nlohmann::json exactly as the API serves them. Errors follow api_errors.h (NotFound,
// Aborted for a 409 Conflict, AlreadyExists, FailedPrecondition + reason Expired for a 410, ...).
// Optimistic concurrency: an Update whose metadata.resourceVersion is set succeeds only if the
// stored object still has that version (else Aborted: re-read and retry); a MergePatch may carry
// metadata.resourceVersion for the same precondition.
//
// The public methods are non-virtual (they give the defaults); implementations override the
// private *Impl methods (the non-virtual interface idiom: defaults on virtual functions are a
// trap). Thread-safety: implementations are safe to call from several threads at once.
#ifndef TWINSCALE_CONTROLLER_KUBE_KUBE_CLIENT_H_
#define TWINSCALE_CONTROLLER_KUBE_KUBE_CLIENT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/resource_ref.h"
#include "controller/kube/watch.h"

namespace twinscale::kube {

struct ListOptions {
  std::string label_selector;    // "app=vllm,tier in (a,b)"
  std::string field_selector;    // "metadata.name=x"
  std::string resource_version;  // "" = the latest (a quorum read); "0" = any cached version
  int64_t limit = 0;             // page size; 0 = everything in one answer
  std::string continue_token;    // from the previous page's ObjectList::continue_token
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion: where a watch resumes
  std::string continue_token;    // "" on the last page
};

class KubeClient {
 public:
  virtual ~KubeClient();

  // GET one object, or its subresource ("status", "scale": the latter answers an
  // autoscaling/v1 Scale with spec.replicas, status.replicas and status.selector).
  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                                     std::string_view name, std::string_view subresource = "") {
    return GetImpl(ref, ns, name, subresource);
  }

  // GET a collection (`ns` "" = all namespaces for a namespaced resource). One page: follow
  // continue_token for more when options.limit > 0.
  absl::StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                                  const ListOptions& options = {}) {
    return ListImpl(ref, ns, options);
  }

  // POST a new object (metadata.name, or metadata.generateName). Returns the stored object.
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object) {
    return CreateImpl(ref, ns, object);
  }

  // PUT the whole object (named by its metadata.name), or its "status" / "scale" subresource. A
  // spec update ignores status and a status update ignores everything but status (the server's
  // rule). Returns the stored object.
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        std::string_view subresource = "") {
    return UpdateImpl(ref, ns, object, subresource);
  }

  // PATCH with a JSON merge patch (RFC 7386, application/merge-patch+json): fields in `patch`
  // replace the stored ones, null deletes. Subresource "status" or "scale" as for Update.
  absl::StatusOr<nlohmann::json> MergePatch(const ResourceRef& ref, std::string_view ns,
                                            std::string_view name, const nlohmann::json& patch,
                                            std::string_view subresource = "") {
    return MergePatchImpl(ref, ns, name, patch, subresource);
  }

  // DELETE. NotFound when there was nothing to delete.
  absl::Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name) {
    return DeleteImpl(ref, ns, name);
  }

  // Watches a collection and calls `on_event` on this thread for each event as it arrives, until
  // the stream ends. Returns kClosed when the server ended it (timeoutSeconds) or it stayed idle
  // past the client's inactivity timeout; kExpired when options.resource_version is too old (the
  // server's ERROR event with code 410, or an HTTP 410); Cancelled when `cancel` (or the client's
  // shutdown token) fired; other errors as api_errors.h (a failed connection, a 403, a malformed
  // event). `cancel` may be null.
  absl::StatusOr<WatchEnd> Watch(const ResourceRef& ref, std::string_view ns,
                                 const WatchOptions& options, const WatchEventHandler& on_event,
                                 Cancellation* cancel = nullptr) {
    return WatchImpl(ref, ns, options, on_event, cancel);
  }

 private:
  virtual absl::StatusOr<nlohmann::json> GetImpl(const ResourceRef& ref, std::string_view ns,
                                                 std::string_view name,
                                                 std::string_view subresource) = 0;
  virtual absl::StatusOr<ObjectList> ListImpl(const ResourceRef& ref, std::string_view ns,
                                              const ListOptions& options) = 0;
  virtual absl::StatusOr<nlohmann::json> CreateImpl(const ResourceRef& ref, std::string_view ns,
                                                    const nlohmann::json& object) = 0;
  virtual absl::StatusOr<nlohmann::json> UpdateImpl(const ResourceRef& ref, std::string_view ns,
                                                    const nlohmann::json& object,
                                                    std::string_view subresource) = 0;
  virtual absl::StatusOr<nlohmann::json> MergePatchImpl(const ResourceRef& ref, std::string_view ns,
                                                        std::string_view name,
                                                        const nlohmann::json& patch,
                                                        std::string_view subresource) = 0;
  virtual absl::Status DeleteImpl(const ResourceRef& ref, std::string_view ns,
                                  std::string_view name) = 0;
  virtual absl::StatusOr<WatchEnd> WatchImpl(const ResourceRef& ref, std::string_view ns,
                                             const WatchOptions& options,
                                             const WatchEventHandler& on_event,
                                             Cancellation* cancel) = 0;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_KUBE_CLIENT_H_
