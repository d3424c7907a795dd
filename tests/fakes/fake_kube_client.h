// FakeKubeClient: a KubeClient that keeps objects in memory and follows the API server's rules
// closely enough for unit tests of code written against KubeClient:
//  - one resourceVersion counter for everything (as etcd's revision), set on every write;
//    metadata.uid, creationTimestamp and generation (1 on create, +1 when anything outside
//    metadata and status changes);
//  - Update / MergePatch with metadata.resourceVersion set succeed only against that version
//    (else 409 Conflict -> Aborted); Create of a taken name is AlreadyExists; missing objects
//    NotFound; generateName;
//  - a write to the object ignores .status; the "status" subresource changes only .status; the
//    "scale" subresource of anything with spec.replicas reads and writes an autoscaling/v1 Scale
//    (status.selector from spec.selector.matchLabels);
//  - List with label selectors (k=v, k!=v, k, !k), field selectors (metadata.name,
//    metadata.namespace), limit/continue;
//  - Watch delivers the changes after its resourceVersion in order (from "" or "0": an ADDED for
//    each existing object first), BOOKMARKs on SendBookmarks(), and kExpired for a
//    resourceVersion older than the last Compact(); DropWatches() breaks open streams.
// Test hooks: SetInterceptor() sees every request first and can fail it; requests() logs them.
// Thread-safety: all methods may be called from any thread.
#ifndef TWINSCALE_TESTS_FAKES_FAKE_KUBE_CLIENT_H_
#define TWINSCALE_TESTS_FAKES_FAKE_KUBE_CLIENT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "controller/common/clock.h"
#include "controller/kube/kube_client.h"

namespace twinscale::fakes {

class FakeKubeClient final : public kube::KubeClient {
 public:
  struct Request {
    std::string verb;  // get, list, create, update, patch, delete, watch
    kube::ResourceRef resource;
    std::string namespace_name;
    std::string name;
    std::string subresource;
  };
  // Returns OK to let the request through, or the error to fail it with.
  using Interceptor = std::function<absl::Status(const Request&)>;

  // `clock` (for creationTimestamp) may be null: a fixed time is used then.
  explicit FakeKubeClient(const Clock* clock = nullptr);
  ~FakeKubeClient() override;

  void SetInterceptor(Interceptor interceptor);
  std::vector<Request> requests() const;

  // Forgets the history up to now: a watch from an older resourceVersion (including open ones
  // that have not caught up) gets kExpired, as after etcd's compaction.
  void Compact();
  // Breaks every open watch (they return Unavailable, as on a dropped connection).
  void DropWatches();
  // Sends a BOOKMARK with the current resourceVersion on every open watch that allows them.
  void SendBookmarks();
  int open_watches() const;
  // Waits (real time) until at least `n` watches are open.
  bool WaitForOpenWatches(int n, absl::Duration timeout) const;
  // The current resourceVersion (of the last write).
  std::string resource_version() const;

 private:
  struct Change {
    int64_t rv;
    std::string resource;  // ResourceId
    kube::WatchEventType type;
    nlohmann::json object;
  };
  struct Watcher {
    bool cancelled = false;
    int64_t drops_seen;
    int64_t bookmarks_seen;
  };
  using Store = std::map<std::string, nlohmann::json>;  // by ObjectKey

  absl::StatusOr<nlohmann::json> GetImpl(const kube::ResourceRef& ref, std::string_view ns,
                                         std::string_view name,
                                         std::string_view subresource) override;
  absl::StatusOr<kube::ObjectList> ListImpl(const kube::ResourceRef& ref, std::string_view ns,
                                            const kube::ListOptions& options) override;
  absl::StatusOr<nlohmann::json> CreateImpl(const kube::ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> UpdateImpl(const kube::ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object,
                                            std::string_view subresource) override;
  absl::StatusOr<nlohmann::json> MergePatchImpl(const kube::ResourceRef& ref, std::string_view ns,
                                                std::string_view name, const nlohmann::json& patch,
                                                std::string_view subresource) override;
  absl::Status DeleteImpl(const kube::ResourceRef& ref, std::string_view ns,
                          std::string_view name) override;
  absl::StatusOr<kube::WatchEnd> WatchImpl(const kube::ResourceRef& ref, std::string_view ns,
                                           const kube::WatchOptions& options,
                                           const kube::WatchEventHandler& on_event,
                                           kube::Cancellation* cancel) override;

  absl::Status Intercept(std::string verb, const kube::ResourceRef& ref, std::string_view ns,
                         std::string_view name, std::string_view subresource);
  // Writes `object` (new or replacing), bumping the resourceVersion, and logs the change.
  nlohmann::json Write(const kube::ResourceRef& ref, const std::string& key, nlohmann::json object,
                       kube::WatchEventType type) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stored object replaced by `wanted` (an update or a patch result) under the rules for
  // `subresource`; NotFound / Conflict / BadRequest as the server.
  absl::StatusOr<nlohmann::json> Replace(const kube::ResourceRef& ref, std::string_view ns,
                                         const std::string& name, nlohmann::json wanted,
                                         std::string_view subresource)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  ManualClock fixed_clock_;

  mutable absl::Mutex mu_;
  Interceptor interceptor_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> requests_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Store> objects_ ABSL_GUARDED_BY(mu_);  // by ResourceId
  std::deque<Change> history_ ABSL_GUARDED_BY(mu_);
  int64_t rv_ ABSL_GUARDED_BY(mu_) = 100;
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t drops_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bookmarks_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, Watcher*> watchers_ ABSL_GUARDED_BY(mu_);
  int64_t next_watcher_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace twinscale::fakes

#endif  // TWINSCALE_TESTS_FAKES_FAKE_KUBE_CLIENT_H_
