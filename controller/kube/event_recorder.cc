// The event recorder; see event_recorder.h.
#include "controller/kube/event_recorder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/object_meta.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence.
std::string Truncate(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end));
}

// A separator that can't occur in names, reasons or kinds.
constexpr char kSep[] = "\x1f";

}  // namespace

ObjectReference ReferenceTo(const json& object) {
  ObjectReference ref;
  if (object.is_object()) {
    if (auto v = object.find("apiVersion"); v != object.end() && v->is_string()) {
      ref.api_version = v->get<std::string>();
    }
    if (auto k = object.find("kind"); k != object.end() && k->is_string()) {
      ref.kind = k->get<std::string>();
    }
  }
  ref.namespace_name = NamespaceOf(object);
  ref.name = NameOf(object);
  ref.uid = UidOf(object);
  return ref;
}

EventRecorder::EventRecorder(KubeClient* client, const Clock* clock, EventRecorderOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

bool EventRecorder::TakeToken(const std::string& object_key, absl::Time now) {
  auto [it, inserted] = buckets_.try_emplace(object_key);
  Bucket& b = it->second;
  if (inserted) {
    b.tokens = options_.burst;
    b.updated = now;
  }
  if (options_.refill > absl::ZeroDuration() && now > b.updated) {
    b.tokens = std::min<double>(options_.burst,
                                b.tokens + absl::FDivDuration(now - b.updated, options_.refill));
  }
  b.updated = std::max(b.updated, now);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void EventRecorder::Remember(const std::string& key, Written written) {
  written_[key] = std::move(written);
  if (written_.size() <= options_.max_remembered) return;
  auto oldest = std::min_element(
      written_.begin(), written_.end(),
      [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
  written_.erase(oldest);
}

std::string EventRecorder::NextEventName(const std::string& object_name, absl::Time now) {
  // client-go names events "<object>.<unix nanos in hex>"; strictly increasing here, so two
  // events in the same instant (a manual clock) still get distinct names.
  last_name_nanos_ = std::max(last_name_nanos_ + 1, absl::ToUnixNanos(now));
  return absl::StrFormat("%s.%x", object_name, last_name_nanos_);
}

absl::Status EventRecorder::Record(const ObjectReference& object, EventType type,
                                   std::string_view reason, std::string_view message) {
  if (object.name.empty()) {
    return absl::InvalidArgumentError("event: the involved object has no name");
  }
  const std::string type_name = type == EventType::kWarning ? "Warning" : "Normal";
  const std::string text = Truncate(message, options_.max_message_bytes);
  const std::string object_key =
      absl::StrCat(object.api_version, kSep, object.kind, kSep, object.namespace_name, kSep,
                   object.name, kSep, object.uid);
  const std::string key = absl::StrCat(object_key, kSep, type_name, kSep, Sv(reason), kSep, text);

  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  if (!TakeToken(object_key, now)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("event ", Sv(reason), " about ", object.kind, " ", object.namespace_name, "/",
                     object.name, " dropped: rate limit (", options_.burst,
                     " per object, one more every ", absl::FormatDuration(options_.refill), ")"));
  }
  const std::string now_text = FormatKubeTime(now);
  // Events about cluster-scoped objects go to "default", as kubectl looks for them there.
  const std::string ns = object.namespace_name.empty() ? "default" : object.namespace_name;

  int64_t count = 1;
  std::string first_timestamp = now_text;
  if (auto seen = written_.find(key); seen != written_.end()) {
    Written& w = seen->second;
    count = w.count + 1;
    first_timestamp = w.first_timestamp;
    const json patch = {{"count", count}, {"lastTimestamp", now_text}};
    absl::StatusOr<json> patched = client_->MergePatch(kEvents, w.namespace_name, w.name, patch);
    if (patched.ok()) {
      w.count = count;
      w.last_used = now;
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(patched.status())) return patched.status();
    // The Event expired from the cluster: write a new one that carries the count on.
  }

  json involved = {{"kind", object.kind}, {"name", object.name}};
  if (!object.api_version.empty()) involved["apiVersion"] = object.api_version;
  if (!object.namespace_name.empty()) involved["namespace"] = object.namespace_name;
  if (!object.uid.empty()) involved["uid"] = object.uid;
  json source = {{"component", options_.component}};
  if (!options_.instance.empty()) source["host"] = options_.instance;
  json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", NextEventName(object.name, now)}, {"namespace", ns}}},
      {"involvedObject", involved},
      {"reason", std::string(reason)},
      {"message", text},
      {"type", type_name},
      {"source", source},
      {"firstTimestamp", first_timestamp},
      {"lastTimestamp", now_text},
      {"count", count},
      {"reportingComponent", options_.component},
  };
  if (!options_.instance.empty()) event["reportingInstance"] = options_.instance;
  absl::StatusOr<json> created = client_->Create(kEvents, ns, event);
  if (!created.ok()) return created.status();
  Remember(key, Written{ns, NameOf(*created).empty() ? NameOf(event) : NameOf(*created), count,
                        first_timestamp, now});
  return absl::OkStatus();
}

}  // namespace twinscale::kube
