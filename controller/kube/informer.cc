// List-then-watch informer; see informer.h.
#include "controller/kube/informer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/object_meta.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

const Clock* DefaultClock() {
  static const RealClock* clock = new RealClock();
  return clock;
}

// A watch shorter than this that saw no event is treated as a failure (client-go's "very short
// watch"), so that a server closing streams at once is retried with backoff, not in a hot loop.
constexpr absl::Duration kShortWatch = absl::Seconds(1);

}  // namespace

Informer::Informer(KubeClient* client, InformerOptions options)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : DefaultClock()) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(InformerHandler* handler) { handlers_.push_back(handler); }

void Informer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

bool Informer::HasSynced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

bool Informer::Current() const {
  absl::MutexLock lock(&mu_);
  if (!synced_) return false;
  if (!failing_) return true;
  // A watch that has stayed open past the short-watch mark got through: the server is back.
  return watch_started_.has_value() && clock_->Now() - *watch_started_ >= kShortWatch;
}

bool Informer::WaitForSync(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&synced_), timeout);
  return synced_;
}

std::optional<json> Informer::Get(std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(ObjectKey(std::string(ns), std::string(name)));
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::List(std::string_view ns) const {
  absl::MutexLock lock(&mu_);
  std::vector<json> out;
  for (const auto& [key, object] : cache_) {
    if (ns.empty() || NamespaceOf(object) == ns) out.push_back(object);
  }
  return out;
}

std::string Informer::LastResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

InformerStats Informer::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void Informer::Sleep(absl::Duration d) {
  if (options_.sleep) {
    options_.sleep(d);
  } else {
    cancel_.WaitFor(d);
  }
}

void Informer::RecordError(const absl::Status& s) {
  {
    absl::MutexLock lock(&mu_);
    failing_ = true;
    ++stats_.errors;
    stats_.last_error = std::string(s.message());
  }
  if (options_.on_error) options_.on_error(s);
}

void Informer::Run() {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  bool first_watch = true;
  bool just_listed = false;  // the coming watch starts from a list made a moment ago
  while (!cancel_.IsCancelled()) {
    if (need_list) {
      const absl::Status listed = ListAndReplace();
      if (cancel_.IsCancelled()) break;
      if (!listed.ok()) {
        RecordError(listed);
        Sleep(backoff.Next());
        continue;
      }
      need_list = false;
      just_listed = true;
    }

    WatchOptions watch;
    watch.resource_version = LastResourceVersion();
    watch.allow_bookmarks = true;
    watch.timeout = options_.watch_timeout;
    watch.label_selector = options_.label_selector;
    watch.field_selector = options_.field_selector;
    int64_t events_seen = 0;
    const absl::Time started = clock_->Now();
    {
      absl::MutexLock lock(&mu_);
      ++stats_.watches;
      if (!first_watch) ++stats_.watch_restarts;
      watch_started_ = started;
    }
    first_watch = false;
    const absl::StatusOr<WatchEnd> end = client_->Watch(
        options_.resource, options_.namespace_name, watch,
        [&](WatchEvent event) { HandleEvent(std::move(event), events_seen); }, &cancel_);
    {
      absl::MutexLock lock(&mu_);
      watch_started_.reset();
      // A watch that lasted got through, however it ended (an expiry or a cut is handled below).
      if (clock_->Now() - started >= kShortWatch) failing_ = false;
    }
    if (cancel_.IsCancelled()) break;
    const bool after_list = just_listed;
    just_listed = false;
    // A watch that delivered events was healthy, however it ended: the next failure starts the
    // backoff over.
    if (events_seen > 0) backoff.Reset();

    if ((end.ok() && *end == WatchEnd::kExpired) || (!end.ok() && IsExpired(end.status()))) {
      // Our resourceVersion left the server's history: only a fresh list can tell what changed.
      {
        absl::MutexLock lock(&mu_);
        ++stats_.expired;
      }
      need_list = true;
      // Expiring straight after a fresh list means a broken server: slow down then.
      if (after_list && events_seen == 0) Sleep(backoff.Next());
      continue;
    }
    if (!end.ok()) {
      RecordError(end.status());
      Sleep(RetryAfter(end.status()).value_or(backoff.Next()));
      continue;
    }
    // The server closed the stream (its timeout) or it went idle: resume from where we are.
    if (events_seen == 0 && clock_->Now() - started < kShortWatch) {
      RecordError(absl::UnavailableError(absl::StrCat("watch of ", options_.resource.DebugName(),
                                                      " closed at once without an event")));
      Sleep(backoff.Next());
    } else if (events_seen == 0) {
      backoff.Reset();  // a quiet watch that ran its course
    }
  }
}

absl::Status Informer::ListAndReplace() {
  std::map<std::string, json> fresh;
  ListOptions list;
  list.label_selector = options_.label_selector;
  list.field_selector = options_.field_selector;
  list.limit = options_.page_size;
  std::string resource_version;
  do {
    absl::StatusOr<ObjectList> page =
        client_->List(options_.resource, options_.namespace_name, list);
    if (!page.ok()) return page.status();
    for (json& item : page->items) {
      std::string key = ObjectKey(item);
      fresh.emplace(std::move(key), std::move(item));
    }
    resource_version = page->resource_version;
    list.continue_token = page->continue_token;
  } while (!list.continue_token.empty() && !cancel_.IsCancelled());
  if (cancel_.IsCancelled()) return absl::CancelledError("informer stopped");

  // Reconcile with the cache (DeltaFIFO.Replace): deletions for what vanished, upserts for what is
  // new or has another resourceVersion. Unchanged objects are not delivered again.
  std::vector<json> deleted;
  std::vector<std::pair<std::optional<json>, json>> upserted;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, old_object] : cache_) {
      if (fresh.find(key) == fresh.end()) deleted.push_back(old_object);
    }
    for (const auto& [key, object] : fresh) {
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        upserted.emplace_back(std::nullopt, object);
      } else if (ResourceVersionOf(old->second) != ResourceVersionOf(object)) {
        upserted.emplace_back(old->second, object);
      }
    }
    cache_ = std::move(fresh);
    resource_version_ = resource_version;
    failing_ = false;
    ++stats_.lists;
    if (synced_) ++stats_.relists;
    synced_ = true;
  }
  for (const json& gone : deleted) {
    for (InformerHandler* h : handlers_) h->OnDelete(gone);
  }
  for (const auto& [old_object, object] : upserted) {
    for (InformerHandler* h : handlers_) {
      h->OnUpsert(old_object.has_value() ? &*old_object : nullptr, object);
    }
  }
  return absl::OkStatus();
}

void Informer::HandleEvent(WatchEvent event, int64_t& events_seen) {
  ++events_seen;
  const std::string rv = ResourceVersionOf(event.object);
  const std::string key = ObjectKey(event.object);
  std::optional<json> old_object;
  bool known = false;
  {
    absl::MutexLock lock(&mu_);
    failing_ = false;  // the server is answering
    if (!rv.empty()) resource_version_ = rv;
    if (event.type == WatchEventType::kBookmark) return;
    auto it = cache_.find(key);
    known = it != cache_.end();
    if (event.type == WatchEventType::kDeleted) {
      if (known) cache_.erase(it);
    } else {
      if (known) old_object = std::move(it->second);
      cache_[key] = event.object;
    }
  }
  if (event.type == WatchEventType::kDeleted) {
    // A deletion of an object we never saw has nothing to tell a handler.
    if (!known) return;
    for (InformerHandler* h : handlers_) h->OnDelete(event.object);
    return;
  }
  for (InformerHandler* h : handlers_) {
    h->OnUpsert(old_object.has_value() ? &*old_object : nullptr, event.object);
  }
}

}  // namespace twinscale::kube
