// The in-memory KubeClient; see fake_kube_client.h.
#include "tests/fakes/fake_kube_client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/object_meta.h"

namespace twinscale::fakes {
namespace {

using kube::KubeApiError;
using kube::ResourceRef;
using kube::WatchEventType;
using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string ResourceId(const ResourceRef& ref) {
  return absl::StrCat(ref.group, "/", ref.resource);
}

// "deployments.apps" as the server names a resource in messages.
std::string Qualified(const ResourceRef& ref) {
  return ref.group.empty() ? ref.resource : absl::StrCat(ref.resource, ".", ref.group);
}

absl::Status NotFound(const ResourceRef& ref, std::string_view name) {
  return KubeApiError(404, "NotFound",
                      absl::StrCat(Qualified(ref), " \"", Sv(name), "\" not found"));
}

absl::Status Conflict(const ResourceRef& ref, std::string_view name) {
  return KubeApiError(
      409, "Conflict",
      absl::StrCat("Operation cannot be fulfilled on ", Qualified(ref), " \"", Sv(name),
                   "\": the object has been modified; please apply your changes "
                   "to the latest version and try again"));
}

absl::Status BadRequest(std::string_view message) {
  return KubeApiError(400, "BadRequest", message);
}

// One term of a selector.
struct Requirement {
  enum Op { kEq, kNe, kExists, kNotExists } op;
  std::string key;
  std::string value;
};

absl::StatusOr<std::vector<Requirement>> ParseSelector(std::string_view text) {
  std::vector<Requirement> out;
  for (absl::string_view term : absl::StrSplit(Sv(text), ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    Requirement r;
    if (absl::StrContains(term, " in ") || absl::StrContains(term, " notin ") ||
        absl::StrContains(term, "(")) {
      return BadRequest(absl::StrCat("fake: set-based selector \"", term, "\" not supported"));
    }
    if (absl::ConsumePrefix(&term, "!")) {
      r.op = Requirement::kNotExists;
      r.key = std::string(term);
    } else if (size_t ne = term.find("!="); ne != absl::string_view::npos) {
      r.op = Requirement::kNe;
      r.key = std::string(term.substr(0, ne));
      r.value = std::string(term.substr(ne + 2));
    } else if (size_t eq = term.find('='); eq != absl::string_view::npos) {
      r.op = Requirement::kEq;
      r.key = std::string(term.substr(0, eq));
      absl::string_view value = term.substr(eq + 1);
      absl::ConsumePrefix(&value, "=");
      r.value = std::string(value);
    } else {
      r.op = Requirement::kExists;
      r.key = std::string(term);
    }
    r.key = std::string(absl::StripAsciiWhitespace(r.key));
    r.value = std::string(absl::StripAsciiWhitespace(r.value));
    out.push_back(std::move(r));
  }
  return out;
}

// Looks a value up for a requirement: labels for a label selector, a few metadata fields for a
// field selector. nullopt when absent.
using Lookup = std::function<std::optional<std::string>(const std::string& key)>;

bool Matches(const std::vector<Requirement>& reqs, const Lookup& lookup) {
  for (const Requirement& r : reqs) {
    const std::optional<std::string> v = lookup(r.key);
    switch (r.op) {
      case Requirement::kEq:
        if (!v.has_value() || *v != r.value) return false;
        break;
      case Requirement::kNe:
        if (v.has_value() && *v == r.value) return false;
        break;
      case Requirement::kExists:
        if (!v.has_value()) return false;
        break;
      case Requirement::kNotExists:
        if (v.has_value()) return false;
        break;
    }
  }
  return true;
}

// Filters objects by namespace and selectors.
class Filter {
 public:
  static absl::StatusOr<Filter> Make(const ResourceRef& ref, std::string_view ns,
                                     std::string_view labels, std::string_view fields) {
    Filter f;
    f.ns_ = ref.namespaced ? std::string(ns) : "";
    absl::StatusOr<std::vector<Requirement>> l = ParseSelector(labels);
    if (!l.ok()) return l.status();
    absl::StatusOr<std::vector<Requirement>> fl = ParseSelector(fields);
    if (!fl.ok()) return fl.status();
    for (const Requirement& r : *fl) {
      if (r.key != "metadata.name" && r.key != "metadata.namespace") {
        return BadRequest(absl::StrCat("field label not supported: ", r.key));
      }
    }
    f.labels_ = *std::move(l);
    f.fields_ = *std::move(fl);
    return f;
  }

  bool operator()(const json& o) const {
    if (!ns_.empty() && kube::NamespaceOf(o) != ns_) return false;
    const bool labels_ok =
        Matches(labels_, [&](const std::string& key) -> std::optional<std::string> {
          const json* labels = nullptr;
          if (auto m = o.find("metadata"); m != o.end() && m->is_object()) {
            if (auto l = m->find("labels"); l != m->end() && l->is_object()) labels = &*l;
          }
          if (labels == nullptr) return std::nullopt;
          auto v = labels->find(key);
          if (v == labels->end() || !v->is_string()) return std::nullopt;
          return v->get<std::string>();
        });
    if (!labels_ok) return false;
    return Matches(fields_, [&](const std::string& key) -> std::optional<std::string> {
      return key == "metadata.name" ? kube::NameOf(o) : kube::NamespaceOf(o);
    });
  }

 private:
  std::string ns_;
  std::vector<Requirement> labels_;
  std::vector<Requirement> fields_;
};

// Everything but metadata and status: what `generation` tracks.
json SpecPart(json o) {
  if (o.is_object()) {
    o.erase("metadata");
    o.erase("status");
  }
  return o;
}

// The autoscaling/v1 Scale of an object with spec.replicas.
absl::StatusOr<json> ScaleOf(const ResourceRef& ref, const json& o) {
  const json* replicas = nullptr;
  if (auto spec = o.find("spec"); spec != o.end() && spec->is_object()) {
    if (auto r = spec->find("replicas"); r != spec->end()) replicas = &*r;
  }
  if (replicas == nullptr) {
    return KubeApiError(404, "NotFound",
                        absl::StrCat(Qualified(ref), " \"", kube::NameOf(o),
                                     "\" has no scale subresource (no spec.replicas)"));
  }
  std::vector<std::string> selector;
  if (auto spec = o.find("spec"); spec != o.end()) {
    if (auto sel = spec->find("selector"); sel != spec->end() && sel->is_object()) {
      if (auto ml = sel->find("matchLabels"); ml != sel->end() && ml->is_object()) {
        for (auto it = ml->begin(); it != ml->end(); ++it) {
          if (it.value().is_string()) {
            selector.push_back(absl::StrCat(it.key(), "=", it.value().get<std::string>()));
          }
        }
      }
    }
  }
  int64_t status_replicas = 0;
  if (auto st = o.find("status"); st != o.end() && st->is_object()) {
    if (auto r = st->find("replicas"); r != st->end() && r->is_number_integer()) {
      status_replicas = r->get<int64_t>();
    }
  }
  return json{
      {"apiVersion", "autoscaling/v1"},
      {"kind", "Scale"},
      {"metadata",
       {{"name", kube::NameOf(o)},
        {"namespace", kube::NamespaceOf(o)},
        {"resourceVersion", kube::ResourceVersionOf(o)},
        {"uid", kube::UidOf(o)}}},
      {"spec", {{"replicas", *replicas}}},
      {"status", {{"replicas", status_replicas}, {"selector", absl::StrJoin(selector, ",")}}}};
}

}  // namespace

FakeKubeClient::FakeKubeClient(const Clock* clock)
    : clock_(clock), fixed_clock_(absl::FromUnixSeconds(1700000000)) {
  if (clock_ == nullptr) clock_ = &fixed_clock_;
}

FakeKubeClient::~FakeKubeClient() = default;

void FakeKubeClient::SetInterceptor(Interceptor interceptor) {
  absl::MutexLock lock(&mu_);
  interceptor_ = std::move(interceptor);
}

std::vector<FakeKubeClient::Request> FakeKubeClient::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

void FakeKubeClient::Compact() {
  absl::MutexLock lock(&mu_);
  compacted_ = rv_;
  history_.clear();
}

void FakeKubeClient::DropWatches() {
  absl::MutexLock lock(&mu_);
  ++drops_;
}

void FakeKubeClient::SendBookmarks() {
  absl::MutexLock lock(&mu_);
  ++bookmarks_;
}

int FakeKubeClient::open_watches() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(watchers_.size());
}

bool FakeKubeClient::WaitForOpenWatches(int n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto enough = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return static_cast<int>(watchers_.size()) >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

std::string FakeKubeClient::resource_version() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(rv_);
}

absl::Status FakeKubeClient::Intercept(std::string verb, const ResourceRef& ref,
                                       std::string_view ns, std::string_view name,
                                       std::string_view subresource) {
  Request r{std::move(verb), ref, std::string(ns), std::string(name), std::string(subresource)};
  Interceptor interceptor;
  {
    absl::MutexLock lock(&mu_);
    requests_.push_back(r);
    interceptor = interceptor_;
  }
  // Outside the lock: an interceptor may call back into the fake (to stage a race).
  return interceptor ? interceptor(r) : absl::OkStatus();
}

json FakeKubeClient::Write(const ResourceRef& ref, const std::string& key, json object,
                           WatchEventType type) {
  ++rv_;
  object["metadata"]["resourceVersion"] = absl::StrCat(rv_);
  objects_[ResourceId(ref)][key] = object;
  history_.push_back(Change{rv_, ResourceId(ref), type, object});
  return object;
}

absl::StatusOr<json> FakeKubeClient::GetImpl(const ResourceRef& ref, std::string_view ns,
                                             std::string_view name, std::string_view subresource) {
  if (absl::Status s = Intercept("get", ref, ns, name, subresource); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  const Store& store = objects_[ResourceId(ref)];
  auto it = store.find(kube::ObjectKey(ref.namespaced ? std::string(ns) : "", std::string(name)));
  if (it == store.end()) return NotFound(ref, name);
  if (subresource == "scale") return ScaleOf(ref, it->second);
  if (!subresource.empty() && subresource != "status") {
    return KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  return it->second;
}

absl::StatusOr<kube::ObjectList> FakeKubeClient::ListImpl(const ResourceRef& ref,
                                                          std::string_view ns,
                                                          const kube::ListOptions& options) {
  if (absl::Status s = Intercept("list", ref, ns, "", ""); !s.ok()) return s;
  absl::StatusOr<Filter> filter =
      Filter::Make(ref, ns, options.label_selector, options.field_selector);
  if (!filter.ok()) return filter.status();
  absl::MutexLock lock(&mu_);
  // A continue token is "<resourceVersion of the first page>|<last key returned>".
  std::string after;
  int64_t list_rv = rv_;
  if (!options.continue_token.empty()) {
    const size_t bar = options.continue_token.find('|');
    if (bar == std::string::npos ||
        !absl::SimpleAtoi(options.continue_token.substr(0, bar), &list_rv)) {
      return BadRequest("continue key is not valid");
    }
    if (list_rv < compacted_) {
      return KubeApiError(410, "Expired",
                          "The provided continue parameter is too old to display a consistent "
                          "list result. You can start a new list without the continue parameter.");
    }
    after = options.continue_token.substr(bar + 1);
  }
  kube::ObjectList out;
  out.resource_version = absl::StrCat(list_rv);
  const Store& store = objects_[ResourceId(ref)];
  for (auto it = after.empty() ? store.begin() : store.upper_bound(after); it != store.end();
       ++it) {
    if (!(*filter)(it->second)) continue;
    if (options.limit > 0 && static_cast<int64_t>(out.items.size()) == options.limit) {
      out.continue_token = absl::StrCat(list_rv, "|", std::prev(it)->first);
      // std::prev(it) may be an object the filter skipped; the next page starts after it anyway.
      break;
    }
    out.items.push_back(it->second);
  }
  return out;
}

absl::StatusOr<json> FakeKubeClient::CreateImpl(const ResourceRef& ref, std::string_view ns,
                                                const json& object) {
  std::string name = kube::NameOf(object);
  if (absl::Status s = Intercept("create", ref, ns, name, ""); !s.ok()) return s;
  if (!object.is_object()) return BadRequest("the body is not an object");
  if (ref.namespaced && ns.empty()) return BadRequest("a namespaced object needs a namespace");
  const std::string object_ns = kube::NamespaceOf(object);
  if (ref.namespaced && !object_ns.empty() && object_ns != ns) {
    return BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request");
  }
  if (!kube::ResourceVersionOf(object).empty()) {
    return BadRequest("resourceVersion should not be set on objects to be created");
  }
  absl::MutexLock lock(&mu_);
  json stored = object;
  if (name.empty()) {
    const std::string prefix = kube::MetaString(object, "generateName");
    if (prefix.empty()) return BadRequest("name or generateName is required");
    name = absl::StrCat(prefix, "x", next_uid_);
  }
  const std::string key = kube::ObjectKey(ref.namespaced ? std::string(ns) : "", name);
  Store& store = objects_[ResourceId(ref)];
  if (store.count(key) > 0) {
    return KubeApiError(409, "AlreadyExists",
                        absl::StrCat(Qualified(ref), " \"", name, "\" already exists"));
  }
  if (!stored.contains("apiVersion")) stored["apiVersion"] = ref.ApiVersion();
  json& meta = stored["metadata"];
  meta["name"] = name;
  if (ref.namespaced) meta["namespace"] = std::string(ns);
  meta["uid"] = absl::StrCat("fake-uid-", next_uid_++);
  meta["creationTimestamp"] = kube::FormatKubeTime(clock_->Now());
  meta["generation"] = 1;
  return Write(ref, key, std::move(stored), WatchEventType::kAdded);
}

absl::StatusOr<json> FakeKubeClient::Replace(const ResourceRef& ref, std::string_view ns,
                                             const std::string& name, json wanted,
                                             std::string_view subresource) {
  const std::string key = kube::ObjectKey(ref.namespaced ? std::string(ns) : "", name);
  Store& store = objects_[ResourceId(ref)];
  auto it = store.find(key);
  if (it == store.end()) return NotFound(ref, name);
  const json& stored = it->second;
  if (!wanted.is_object()) return BadRequest("the body is not an object");
  const std::string wanted_rv = kube::ResourceVersionOf(wanted);
  if (!wanted_rv.empty() && wanted_rv != kube::ResourceVersionOf(stored)) {
    return Conflict(ref, name);
  }
  const std::string wanted_name = kube::NameOf(wanted);
  if (!wanted_name.empty() && wanted_name != name) {
    return BadRequest("the name of the object does not match the name on the URL");
  }
  json result;
  if (subresource == "status") {
    result = stored;
    if (wanted.contains("status")) {
      result["status"] = wanted["status"];
    } else {
      result.erase("status");
    }
  } else if (subresource == "scale") {
    const json* replicas = nullptr;
    if (auto spec = wanted.find("spec"); spec != wanted.end() && spec->is_object()) {
      if (auto r = spec->find("replicas"); r != spec->end()) replicas = &*r;
    }
    if (replicas == nullptr || !replicas->is_number_integer() || replicas->get<int64_t>() < 0) {
      return KubeApiError(422, "Invalid", "Scale: spec.replicas must be a non-negative integer");
    }
    absl::StatusOr<json> scale = ScaleOf(ref, stored);  // the parent has spec.replicas at all?
    if (!scale.ok()) return scale.status();
    result = stored;
    result["spec"]["replicas"] = *replicas;
  } else if (subresource.empty()) {
    result = std::move(wanted);
    json& meta = result["metadata"];
    for (const char* kept : {"uid", "creationTimestamp", "generation", "name", "namespace"}) {
      if (stored["metadata"].contains(kept)) meta[kept] = stored["metadata"][kept];
    }
    if (stored.contains("status")) {
      result["status"] = stored["status"];  // a write to the object ignores status
    } else {
      result.erase("status");
    }
  } else {
    return KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  result["metadata"]["resourceVersion"] = kube::ResourceVersionOf(stored);
  if (result == stored) {
    // Nothing changed: the server writes nothing and keeps the resourceVersion.
    return subresource == "scale" ? ScaleOf(ref, stored) : absl::StatusOr<json>(stored);
  }
  if (SpecPart(result) != SpecPart(stored)) {
    result["metadata"]["generation"] = kube::GenerationOf(stored) + 1;
  }
  json written = Write(ref, key, std::move(result), WatchEventType::kModified);
  if (subresource == "scale") return ScaleOf(ref, written);
  return written;
}

absl::StatusOr<json> FakeKubeClient::UpdateImpl(const ResourceRef& ref, std::string_view ns,
                                                const json& object, std::string_view subresource) {
  const std::string name = kube::NameOf(object);
  if (absl::Status s = Intercept("update", ref, ns, name, subresource); !s.ok()) return s;
  if (name.empty()) return BadRequest("metadata.name is required");
  absl::MutexLock lock(&mu_);
  return Replace(ref, ns, name, object, subresource);
}

absl::StatusOr<json> FakeKubeClient::MergePatchImpl(const ResourceRef& ref, std::string_view ns,
                                                    std::string_view name, const json& patch,
                                                    std::string_view subresource) {
  if (absl::Status s = Intercept("patch", ref, ns, name, subresource); !s.ok()) return s;
  if (!patch.is_object()) return BadRequest("a merge patch must be a JSON object");
  absl::MutexLock lock(&mu_);
  const Store& store = objects_[ResourceId(ref)];
  auto it = store.find(kube::ObjectKey(ref.namespaced ? std::string(ns) : "", std::string(name)));
  if (it == store.end()) return NotFound(ref, name);
  json target = it->second;
  if (subresource == "scale") {
    absl::StatusOr<json> scale = ScaleOf(ref, it->second);
    if (!scale.ok()) return scale.status();
    target = *std::move(scale);
  }
  target.merge_patch(patch);
  return Replace(ref, ns, std::string(name), std::move(target), subresource);
}

absl::Status FakeKubeClient::DeleteImpl(const ResourceRef& ref, std::string_view ns,
                                        std::string_view name) {
  if (absl::Status s = Intercept("delete", ref, ns, name, ""); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Store& store = objects_[ResourceId(ref)];
  const std::string key = kube::ObjectKey(ref.namespaced ? std::string(ns) : "", std::string(name));
  auto it = store.find(key);
  if (it == store.end()) return NotFound(ref, name);
  json last = std::move(it->second);
  store.erase(it);
  ++rv_;
  last["metadata"]["resourceVersion"] = absl::StrCat(rv_);
  history_.push_back(Change{rv_, ResourceId(ref), WatchEventType::kDeleted, std::move(last)});
  return absl::OkStatus();
}

absl::StatusOr<kube::WatchEnd> FakeKubeClient::WatchImpl(const ResourceRef& ref,
                                                         std::string_view ns,
                                                         const kube::WatchOptions& options,
                                                         const kube::WatchEventHandler& on_event,
                                                         kube::Cancellation* cancel) {
  if (absl::Status s = Intercept("watch", ref, ns, "", ""); !s.ok()) return s;
  absl::StatusOr<Filter> filter =
      Filter::Make(ref, ns, options.label_selector, options.field_selector);
  if (!filter.ok()) return filter.status();
  const std::string id = ResourceId(ref);

  Watcher watcher;
  int64_t watcher_id = 0;
  int64_t cursor = 0;
  std::vector<kube::WatchEvent> batch;
  {
    absl::MutexLock lock(&mu_);
    if (options.resource_version.empty() || options.resource_version == "0") {
      // "Start now": synthetic ADDED events for what exists, then changes from here on.
      for (const auto& [key, object] : objects_[id]) {
        if ((*filter)(object)) batch.push_back({WatchEventType::kAdded, object});
      }
      cursor = rv_;
    } else if (!absl::SimpleAtoi(options.resource_version, &cursor)) {
      return BadRequest(absl::StrCat("invalid resourceVersion \"", options.resource_version, "\""));
    }
    if (cursor < compacted_) return kube::WatchEnd::kExpired;
    watcher.drops_seen = drops_;
    watcher.bookmarks_seen = bookmarks_;
    watcher_id = next_watcher_++;
    watchers_[watcher_id] = &watcher;
  }
  // Registered without holding mu_: Cancel() runs callbacks under its own lock, then takes ours.
  kube::ScopedCancelCallback on_cancel(cancel, nullptr, [this, &watcher] {
    absl::MutexLock lock(&mu_);
    watcher.cancelled = true;
  });
  const absl::Time deadline = absl::Now() + options.timeout;
  while (true) {
    for (kube::WatchEvent& e : batch) on_event(std::move(e));
    batch.clear();
    absl::MutexLock lock(&mu_);
    const auto ready = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return watcher.cancelled || drops_ != watcher.drops_seen ||
             bookmarks_ != watcher.bookmarks_seen || cursor < compacted_ ||
             (!history_.empty() && history_.back().rv > cursor);
    };
    const bool woke = mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
    if (watcher.cancelled) {
      watchers_.erase(watcher_id);
      return absl::CancelledError("watch cancelled");
    }
    if (drops_ != watcher.drops_seen) {
      watchers_.erase(watcher_id);
      return absl::UnavailableError("fake: watch connection dropped");
    }
    if (cursor < compacted_) {
      watchers_.erase(watcher_id);
      return kube::WatchEnd::kExpired;
    }
    if (!woke) {
      watchers_.erase(watcher_id);
      return kube::WatchEnd::kClosed;  // timeoutSeconds
    }
    for (const Change& c : history_) {
      if (c.rv <= cursor) continue;
      if (c.resource == id && (*filter)(c.object)) batch.push_back({c.type, c.object});
      cursor = c.rv;
    }
    if (bookmarks_ != watcher.bookmarks_seen) {
      watcher.bookmarks_seen = bookmarks_;
      if (options.allow_bookmarks) {
        batch.push_back(
            {WatchEventType::kBookmark,
             json{{"kind", "Bookmark"}, {"metadata", {{"resourceVersion", absl::StrCat(rv_)}}}}});
        cursor = std::max(cursor, rv_);
      }
    }
  }
}

}  // namespace twinscale::fakes
