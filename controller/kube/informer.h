// An informer: keeps a local, thread-safe copy of one kind of object (optionally one namespace,
// one label selector) up to date by list-then-watch on its own thread, and tells handlers about
// each change. The same contract as client-go's shared informer, smaller:
//  - List (paged), then watch from the list's resourceVersion; each event updates the cache and
//    calls the handlers; BOOKMARK events only move the resourceVersion on.
//  - A watch that ends normally resumes from the last resourceVersion seen (no re-list).
//  - Expired (the server's 410 ERROR event, or an HTTP 410) re-lists, and the re-list is
//    reconciled with the cache as client-go's DeltaFIFO.Replace does: objects that vanished
//    during the gap get OnDelete, new or changed ones OnUpsert.
//  - A failed list or watch backs off (capped exponential with jitter, through an injectable
//    sleep) and tries again; a watch resumes where it was.
//  - Stop() returns promptly: it cancels the watch in flight and any backoff wait.
// Handlers run on the informer's thread, one call at a time, outside the cache lock (they may call
// Get/List); they must not block for long. Never call Stop() from a handler.
// Thread-safety: everything but AddHandler (before Start only) may be called from any thread.
#ifndef TWINSCALE_CONTROLLER_KUBE_INFORMER_H_
#define TWINSCALE_CONTROLLER_KUBE_INFORMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/backoff.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/resource_ref.h"

namespace twinscale::kube {

class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  // A new object (`old_object` null) or a new version of a known one.
  virtual void OnUpsert(const nlohmann::json* old_object, const nlohmann::json& object) = 0;
  // An object is gone; `last_state` is the last version known (from the DELETED event, or the
  // cache when a re-list found it missing).
  virtual void OnDelete(const nlohmann::json& last_state) = 0;
};

struct InformerOptions {
  ResourceRef resource;
  std::string namespace_name;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;                          // list page size (limit); 0 = no paging
  absl::Duration watch_timeout = absl::Minutes(5);  // timeoutSeconds of each watch
  BackoffPolicy backoff;                            // after a failed list or watch
  // Waits between attempts; default: real time, cut short by Stop(). Tests inject their own.
  std::function<void(absl::Duration)> sleep;
  // Measures how long a watch lasted (a watch that ends within a second with no event is treated
  // as a failure, so a server that closes at once is not hammered). Default: a RealClock.
  const Clock* clock = nullptr;
  // Told about every failed list or watch (for logs); called on the informer thread. Optional.
  std::function<void(const absl::Status&)> on_error;
};

// Counters for the controller's own /metrics.
struct InformerStats {
  int64_t lists = 0;           // complete lists (the first one included)
  int64_t relists = 0;         // lists after the first (after expiry or a failed list)
  int64_t watches = 0;         // watch requests started
  int64_t watch_restarts = 0;  // watches started again after a failure or expiry
  int64_t expired = 0;         // times the server said our resourceVersion was too old
  int64_t errors = 0;          // failed lists and watches
  std::string last_error;
};

class Informer {
 public:
  // `client` must outlive the informer.
  Informer(KubeClient* client, InformerOptions options);
  ~Informer();  // Stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before Start(). Not owned; must outlive the informer.
  void AddHandler(InformerHandler* handler);

  // Starts the list-then-watch thread. Once only.
  void Start();
  // Cancels the watch and waits for the thread. Idempotent; the informer can't be restarted.
  void Stop();

  // True once the first list has been applied to the cache.
  bool HasSynced() const;
  // Whether the cache is current: synced, and no list or watch has failed since the last attempt
  // that succeeded (a list that completed, a watch event or bookmark, or a watch open for a
  // second — one that fails connects fails at once). While false (the server down, the watch
  // refused) the cache is as of the last success and may miss changes: a caller that must not act
  // on old data reads the server itself then. A watch that ends and resumes is not a failure.
  bool Current() const;
  // Waits (real time) until HasSynced() or `timeout`; returns HasSynced().
  bool WaitForSync(absl::Duration timeout) const;

  std::optional<nlohmann::json> Get(std::string_view ns, std::string_view name) const;
  // All cached objects (of namespace `ns` if not ""), ordered by namespace/name.
  std::vector<nlohmann::json> List(std::string_view ns = "") const;
  // The resourceVersion the next watch would resume from.
  std::string LastResourceVersion() const;
  InformerStats stats() const;

 private:
  void Run();
  absl::Status ListAndReplace();
  void HandleEvent(WatchEvent event, int64_t& events_seen);
  void Sleep(absl::Duration d);
  void RecordError(const absl::Status& s);

  KubeClient* const client_;
  const InformerOptions options_;
  const Clock* clock_;
  std::vector<InformerHandler*> handlers_;
  Cancellation cancel_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  std::map<std::string, nlohmann::json> cache_ ABSL_GUARDED_BY(mu_);  // by ObjectKey
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  bool failing_ ABSL_GUARDED_BY(mu_) = false;  // the last attempt failed (see Current)
  std::optional<absl::Time> watch_started_ ABSL_GUARDED_BY(mu_);  // while a watch is open
  InformerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_INFORMER_H_
