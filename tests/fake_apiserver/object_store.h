// The fake API server's storage and its write rules, without HTTP: objects of every registered
// kind keyed by (kind, namespace, name), one global resourceVersion counter (as etcd's revision),
// a bounded history of changes for watches and Exact lists, and the registry strategies' rules
// (resource_type.h) applied on every write. api_router.h turns HTTP requests into these calls;
// FakeApiServer exposes some of them in-process for test harnesses.
//
// Rules (each checked by tests/fake_apiserver/*_test.cc against the documented behaviour):
//  - Create: metadata.uid (random UUID), creationTimestamp (RFC 3339, seconds, from the Clock),
//    namespace from the URL, generateName, generation 1 (kinds that keep one), status dropped
//    when the kind has a status subresource (pods start Pending), schema defaults and validation
//    (custom resources), 409 AlreadyExists, and a new resourceVersion.
//  - Update (PUT): the name and namespace must match the URL (400); a non-empty
//    metadata.resourceVersion must equal the stored one (409 Conflict, "the object has been
//    modified"); an empty one is refused for custom resources (422) and accepted (unconditional)
//    for built-in kinds; a differing metadata.uid is a failed precondition (409). The main
//    resource keeps the stored status; /status keeps everything but status (labels and
//    annotations included); generation +1 only when something other than metadata and status
//    changed (for Deployments annotations too). A write that changes nothing keeps the
//    resourceVersion and sends no watch event, as the real server does.
//  - Patch: application/merge-patch+json (RFC 7386), application/json-patch+json (RFC 6902),
//    application/strategic-merge-patch+json treated as a merge patch for built-in kinds (lists are
//    replaced, not merged by key: see fake_apiserver.h) and refused with 415 for custom
//    resources, as the real server does. A resourceVersion in the patched result is a
//    precondition (409). Then the Update rules.
//  - Delete: 404 when missing; DeleteOptions.preconditions {uid, resourceVersion} (409); a DELETED
//    event whose object carries the deletion's resourceVersion; the answer is the object for pods
//    and Status{status: Success, details} otherwise. No finalizers, no graceful deletion.
//  - /scale (kinds with a ScaleRule): autoscaling/v1 Scale; spec.replicas is omitted when 0 (the
//    Go type's omitempty); writes set the parent's spec.replicas through the parent's rules.
//  - List: label and field selectors; resourceVersion semantics (unset: most recent; "0" or
//    NotOlderThan: current data, 504 "Too large resource version" for an RV the store hasn't
//    reached; Exact, and legacy paging with limit: the data at exactly that RV rebuilt from the
//    history, 410 Expired "The resourceVersion for the provided list is too old." once it has
//    left the window); limit / continue paging with remainingItemCount.
//  - Watch: see Watch().
//
// Thread-safety: every method is safe to call from any thread (one mutex). Watch sinks are called
// with that mutex held and must not call back into the store.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_OBJECT_STORE_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_OBJECT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/resource_type.h"
#include "tests/fake_apiserver/selectors.h"

namespace twinscale::fake_apiserver {

enum class Subresource { kNone, kStatus, kScale };

enum class PatchType {
  kMerge,           // application/merge-patch+json
  kStrategicMerge,  // application/strategic-merge-patch+json
  kJson,            // application/json-patch+json
};

// fieldValidation: what happens to fields the schema doesn't declare (custom resources with a
// schema only). The real server's default is Warn.
enum class FieldValidation {
  kIgnore,  // dropped silently
  kWarn,    // dropped, with a warning ("unknown field \"spec.foo\"") for the Warning header
  kStrict,  // 400 BadRequest "strict decoding error: unknown field \"spec.foo\""
};

struct WriteOptions {
  FieldValidation field_validation = FieldValidation::kWarn;
  bool dry_run = false;  // dryRun=All: everything but storing it
  // Warnings to return in `Warning: 299 - "..."` headers; may be null.
  std::vector<std::string>* warnings = nullptr;
};

struct ListOptions {
  LabelSelector labels;
  FieldSelector fields;
  std::string resource_version;        // "", "0" or a decimal RV
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
  int64_t limit = 0;                   // 0: no paging
  std::string continue_token;
};

struct WatchOptions {
  LabelSelector labels;
  FieldSelector fields;
  std::string resource_version;        // "", "0" or a decimal RV
  std::string resource_version_match;  // "" or "NotOlderThan" (with send_initial_events)
  bool allow_bookmarks = false;
  // sendInitialEvents=true: the current objects as ADDED, then a BOOKMARK annotated
  // "k8s.io/initial-events-end": "true" (the streaming-list protocol of client-go's WatchList).
  bool send_initial_events = false;
  // timeoutSeconds; 0 means the store's default_watch_timeout.
  absl::Duration timeout = absl::ZeroDuration();
};

// Where a watch's events go: one JSON document per event, in order.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // One event ({"type": ..., "object": ...}) without the trailing newline. Called with the
  // store's mutex held: must not block and must not call into the store.
  virtual void Send(const std::string& event_json) = 0;
  // Ends the stream: cleanly (the HTTP body ends), or `abrupt` (the connection is cut without
  // the end of the chunked body, as when a server or proxy dies). Called once, lock held.
  virtual void Close(bool abrupt) = 0;
};

class ObjectStore {
 public:
  struct Options {
    // Changes kept for watches and Exact lists; older ones are compacted away (a watch from
    // before them gets 410 Expired).
    size_t history_limit = 10000;
    // The first object written gets initial_resource_version + 1.
    int64_t initial_resource_version = 1000;
    // BOOKMARK cadence for watches that allow them (driven by Tick()).
    absl::Duration bookmark_interval = absl::Seconds(1);
    // Length of a watch without timeoutSeconds (the real server picks 30-60 minutes).
    absl::Duration default_watch_timeout = absl::Minutes(30);
    // The store's time: creationTimestamp, watch deadlines and bookmark cadence (Tick reads it).
    // Null means a RealClock. Not owned.
    const Clock* clock = nullptr;
  };

  explicit ObjectStore(Options options);
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // ---- Kinds ----
  // Registers a kind, replacing one with the same group/version/resource.
  void AddType(ResourceType type);
  // The kind served at group/version/resource, or null. Pointers stay valid for the store's
  // life (a replaced kind is kept, unserved).
  const ResourceType* FindType(std::string_view group, std::string_view version,
                               std::string_view resource) const;
  std::vector<const ResourceType*> Types() const;

  // ---- API operations (the HTTP verbs' semantics; errors are api_status.h Status errors) ----
  // `ns` is "" for cluster-scoped kinds, and for lists and watches across all namespaces.
  absl::StatusOr<nlohmann::json> Get(const ResourceType& type, std::string_view ns,
                                     std::string_view name, Subresource sub) const;
  absl::StatusOr<nlohmann::json> List(const ResourceType& type, std::string_view ns,
                                      const ListOptions& options) const;
  absl::StatusOr<nlohmann::json> Create(const ResourceType& type, std::string_view ns,
                                        nlohmann::json body, const WriteOptions& options);
  absl::StatusOr<nlohmann::json> Update(const ResourceType& type, std::string_view ns,
                                        std::string_view name, Subresource sub, nlohmann::json body,
                                        const WriteOptions& options);
  absl::StatusOr<nlohmann::json> Patch(const ResourceType& type, std::string_view ns,
                                       std::string_view name, Subresource sub, PatchType patch_type,
                                       const nlohmann::json& patch, const WriteOptions& options);
  absl::StatusOr<nlohmann::json> Delete(const ResourceType& type, std::string_view ns,
                                        std::string_view name,
                                        const nlohmann::json& delete_options);
  // Deletes every object the selectors match; answers the list of deleted objects.
  absl::StatusOr<nlohmann::json> DeleteCollection(const ResourceType& type, std::string_view ns,
                                                  const ListOptions& options);

  // ---- Direct writes for test harnesses (no preconditions, no status or schema rules) ----
  // Creates or replaces the object as given (kind, apiVersion, name and namespace filled in;
  // uid, creationTimestamp and generation kept or made; generation bumped on a spec change).
  // Produces ADDED / MODIFIED events and a new resourceVersion like any write.
  absl::StatusOr<nlohmann::json> Put(const ResourceType& type, std::string_view ns,
                                     std::string_view name, nlohmann::json object);
  // Read-modify-write under the store's lock; NotFound if missing. `mutate` must not call into
  // the store.
  absl::StatusOr<nlohmann::json> Mutate(const ResourceType& type, std::string_view ns,
                                        std::string_view name,
                                        const std::function<void(nlohmann::json&)>& mutate);

  // ---- Watches ----
  // Starts a watch of `type` in `ns` ("" = all namespaces). Errors before the stream starts
  // (an unparsable resourceVersion, sendInitialEvents without resourceVersionMatch=NotOlderThan)
  // are returned; once the resourceVersion has parsed, errors go to the sink as one ERROR event
  // and the sink is closed, as the real server does inside an HTTP 200 stream:
  //   - RV older than the history window: Status{code: 410, reason: Expired, message:
  //     "too old resource version: R (C)"}, C being the newest compacted RV;
  //   - RV newer than the store: Status{code: 504, reason: Timeout, "Too large resource version"}.
  // RV "" or "0": ADDED events for the current objects first, then changes. RV R: every retained
  // change after R, then live changes. With selectors, an object that starts matching arrives as
  // ADDED and one that stops matching as DELETED (the watch cache's rule). Returns a watch id
  // (0 when the watch ended at once).
  absl::StatusOr<uint64_t> Watch(const ResourceType& type, std::string_view ns,
                                 const WatchOptions& options, std::shared_ptr<WatchSink> sink);
  // Forgets a watch whose client went away (no Close on the sink). No-op if already ended.
  void StopWatch(uint64_t id);
  // Ends every open watch (see WatchSink::Close).
  void CloseAllWatches(bool abrupt);
  size_t WatchCount() const;
  // Sends due bookmarks and ends watches whose timeout has passed, by the store's clock. Called
  // periodically.
  void Tick();

  // ---- History ----
  // Drops all history: a watch or Exact list from any RV older than the current one gets 410.
  void Compact();
  int64_t ResourceVersion() const;
  // Changes after this RV are retained.
  int64_t CompactedResourceVersion() const;

 private:
  enum class EventType { kAdded, kModified, kDeleted };
  using Object = std::shared_ptr<const nlohmann::json>;
  using ObjectMap = std::map<std::pair<std::string, std::string>, Object>;  // (ns, name)

  struct Event {
    int64_t rv;
    const ResourceType* type;
    std::string ns, name;
    EventType kind;
    Object object;  // the new state (for DELETED: the last state, at the deletion's RV)
    Object prev;    // the state before (null for ADDED)
  };

  struct Watcher {
    uint64_t id;
    const ResourceType* type;
    std::string ns;
    WatchOptions options;
    std::shared_ptr<WatchSink> sink;
    absl::Time deadline;
    absl::Time last_bookmark;
  };

  absl::StatusOr<nlohmann::json> UpdateLocked(const ResourceType& type, std::string_view ns,
                                              std::string_view name, Subresource sub,
                                              nlohmann::json body, const WriteOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<nlohmann::json> UpdateScaleLocked(const ResourceType& type, std::string_view ns,
                                                   std::string_view name,
                                                   const nlohmann::json& scale,
                                                   const WriteOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Put / Mutate: stores `object` as given over `old` (null: a new object).
  absl::StatusOr<nlohmann::json> WriteDirectLocked(const ResourceType& type, std::string_view ns,
                                                   std::string_view name, nlohmann::json object,
                                                   Object old) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<nlohmann::json> DeleteLocked(const ResourceType& type, std::string_view ns,
                                              std::string_view name,
                                              const nlohmann::json& delete_options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Defaults, pruning of unknown fields and schema validation; 422 / 400 errors.
  absl::Status ApplySchema(const ResourceType& type, nlohmann::json& object,
                           const WriteOptions& options) const;
  // Stores `object` (its resourceVersion set to a new RV) and tells the watchers. Returns the
  // stored object.
  nlohmann::json CommitLocked(const ResourceType& type, std::string_view ns, std::string_view name,
                              EventType kind, nlohmann::json object, Object prev)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchLocked(const Event& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The event `e` as watcher `w` sees it ("" when it doesn't see it).
  std::string EventFor(const Watcher& w, const Event& e) const;
  bool WatcherMatches(const Watcher& w, const nlohmann::json& object) const;
  ObjectMap SnapshotLocked(const ResourceType& type, int64_t rv) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const ObjectMap& ObjectsLocked(const ResourceType& type) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Object FindLocked(const ResourceType& type, std::string_view ns, std::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewUidLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Clock& clock() const { return options_.clock != nullptr ? *options_.clock : real_clock_; }
  std::string NowRfc3339() const;

  const Options options_;
  const RealClock real_clock_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<ResourceType>> types_ ABSL_GUARDED_BY(mu_);   // owned, never freed
  std::map<std::string, const ResourceType*> served_ ABSL_GUARDED_BY(mu_);  // by Key()
  std::map<std::string, ObjectMap> objects_ ABSL_GUARDED_BY(mu_);           // by Key()
  std::deque<Event> history_ ABSL_GUARDED_BY(mu_);
  int64_t rv_ ABSL_GUARDED_BY(mu_);
  int64_t compacted_rv_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::mt19937_64 uid_rng_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_OBJECT_STORE_H_
