// The fake API server's object store and write rules; see object_store.h.
#include "tests/fake_apiserver/object_store.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/api/openapi_schema.h"
#include "controller/common/status_macros.h"
#include "controller/kube/selectors.h"
#include "tests/fake_apiserver/api_status.h"
#include "tests/fake_apiserver/json_yaml.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Small JSON helpers ---------------------------------------------------------------------

std::string MetaString(const json& object, const char* key) {
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto v = md->find(key);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

json& Meta(json& object) {
  json& md = object["metadata"];
  if (!md.is_object()) md = json::object();
  return md;
}

// The value at a dotted path (".spec.replicas"), or null.
const json* AtPath(const json& object, std::string_view path) {
  const json* cur = &object;
  for (absl::string_view part : absl::StrSplit(Sv(path), '.', absl::SkipEmpty())) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(std::string(part));
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

void SetPath(json& object, std::string_view path, json value) {
  json* cur = &object;
  for (absl::string_view part : absl::StrSplit(Sv(path), '.', absl::SkipEmpty())) {
    if (!cur->is_object()) *cur = json::object();
    cur = &(*cur)[std::string(part)];
  }
  *cur = std::move(value);
}

int64_t IntAt(const json& object, std::string_view path) {
  const json* v = AtPath(object, path);
  return v != nullptr && v->is_number_integer() ? v->get<int64_t>() : 0;
}

// Everything but metadata and status: what metadata.generation tracks.
bool SpecChanged(const ResourceType& type, const json& before, const json& after) {
  auto strip = [](json o) {
    if (o.is_object()) {
      o.erase("metadata");
      o.erase("status");
    }
    return o;
  };
  if (strip(before) != strip(after)) return true;
  if (type.annotations_bump_generation) {
    const json* a = AtPath(before, "metadata.annotations");
    const json* b = AtPath(after, "metadata.annotations");
    const json empty = json::object();
    if ((a ? *a : empty) != (b ? *b : empty)) return true;
  }
  return false;
}

// 400 when the body names another kind or version than the URL serves.
absl::Status CheckTypeMeta(const ResourceType& type, const json& body) {
  if (auto v = body.find("apiVersion"); v != body.end() && !v->is_null()) {
    if (!v->is_string() || v->get<std::string>() != type.ApiVersion()) {
      return BadRequestError(absl::StrCat(
          "the API version in the data (", v->is_string() ? v->get<std::string>() : v->dump(),
          ") does not match the expected API version (", type.ApiVersion(), ")"));
    }
  }
  if (auto k = body.find("kind"); k != body.end() && !k->is_null()) {
    if (!k->is_string() || k->get<std::string>() != type.kind) {
      return BadRequestError(absl::StrCat("the kind in the data (",
                                          k->is_string() ? k->get<std::string>() : k->dump(),
                                          ") does not match the expected kind (", type.kind, ")"));
    }
  }
  if (auto md = body.find("metadata"); md != body.end() && !md->is_null() && !md->is_object()) {
    return BadRequestError("metadata must be an object");
  }
  return absl::OkStatus();
}

absl::Status BodyMustBeObject(const json& body) {
  if (body.is_object()) return absl::OkStatus();
  return BadRequestError(
      "the body of the request was in an unknown format - accepted media types include: "
      "application/json, application/yaml");
}

std::string EventTypeName(bool old_match, bool new_match, bool deleted) {
  if (deleted) return old_match ? "DELETED" : "";
  if (old_match && new_match) return "MODIFIED";
  if (new_match) return "ADDED";
  if (old_match) return "DELETED";
  return "";
}

json WithResourceVersion(json object, int64_t rv) {
  Meta(object)["resourceVersion"] = absl::StrCat(rv);
  return object;
}

std::string ErrorEvent(const absl::Status& status) {
  return JsonText(json{{"type", "ERROR"}, {"object", StatusJson(status)}});
}

json Bookmark(const ResourceType& type, int64_t rv, bool initial_events_end) {
  json md = {{"resourceVersion", absl::StrCat(rv)}};
  if (initial_events_end) md["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  return {{"type", "BOOKMARK"},
          {"object", {{"kind", type.kind}, {"apiVersion", type.ApiVersion()}, {"metadata", md}}}};
}

// Removes the field at `path` (as the schema engine reports it) from `object`.
void ErasePath(json& object, const std::vector<api::PathElement>& path) {
  json* cur = &object;
  for (size_t i = 0; i < path.size(); ++i) {
    const api::PathElement& e = path[i];
    const bool last = i + 1 == path.size();
    if (e.kind == api::PathElement::Kind::kIndex) {
      if (!cur->is_array() || e.index >= cur->size()) return;
      if (last) {
        cur->erase(e.index);
        return;
      }
      cur = &(*cur)[e.index];
    } else {
      if (!cur->is_object() || !cur->contains(e.key)) return;
      if (last) {
        cur->erase(e.key);
        return;
      }
      cur = &(*cur)[e.key];
    }
  }
}

// The fake's strategic merge is a merge patch with lists merged by key; its directives ($patch,
// $retainKeys, $setElementOrder/..., $deleteFromPrimitiveList/...) are outside that scope and are
// dropped so they are never stored as fields.
void StripPatchDirectives(json& patch) {
  if (patch.is_object()) {
    for (auto it = patch.begin(); it != patch.end();) {
      if (!it.key().empty() && it.key()[0] == '$') {
        it = patch.erase(it);
      } else {
        StripPatchDirectives(it.value());
        ++it;
      }
    }
  } else if (patch.is_array()) {
    for (json& item : patch) StripPatchDirectives(item);
  }
}

// A continue token: the snapshot's RV and the last key served, base64 of a small JSON object.
std::string EncodeContinue(int64_t rv, const std::string& ns, const std::string& name) {
  return absl::WebSafeBase64Escape(JsonText(json{{"rv", rv}, {"ns", ns}, {"name", name}}));
}

absl::Status DecodeContinue(const std::string& token, int64_t& rv, std::string& ns,
                            std::string& name) {
  std::string raw;
  if (!absl::WebSafeBase64Unescape(token, &raw)) {
    return BadRequestError("continue key is not valid: not base64");
  }
  const json j = json::parse(raw, nullptr, false);
  if (!j.is_object() || !j.contains("rv") || !j["rv"].is_number_integer() || !j.contains("ns") ||
      !j["ns"].is_string() || !j.contains("name") || !j["name"].is_string()) {
    return BadRequestError("continue key is not valid: unexpected content");
  }
  rv = j["rv"].get<int64_t>();
  ns = j["ns"].get<std::string>();
  name = j["name"].get<std::string>();
  return absl::OkStatus();
}

bool ParseRv(const std::string& text, int64_t& rv) {
  return absl::SimpleAtoi(text, &rv) && rv >= 0;
}

// The autoscaling/v1 Scale of `object`.
json ScaleOf(const ResourceType& type, const json& object) {
  const ScaleRule& rule = *type.scale;
  json md = json::object();
  for (const char* key : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    const std::string v = MetaString(object, key);
    if (!v.empty()) md[key] = v;
  }
  json spec = json::object();
  // ScaleSpec.Replicas is `json:"replicas,omitempty"`: 0 is not written.
  if (int64_t r = IntAt(object, rule.spec_replicas_path); r != 0) spec["replicas"] = r;
  json status = {{"replicas", IntAt(object, rule.status_replicas_path)}};
  std::string selector;
  if (rule.selector_from_spec) {
    const json* sel = AtPath(object, "spec.selector");
    if (sel != nullptr) {
      auto parsed = LabelSelector::FromLabelSelectorJson(*sel);
      if (parsed.ok()) selector = parsed->String();
    }
  } else if (!rule.label_selector_path.empty()) {
    const json* sel = AtPath(object, rule.label_selector_path);
    if (sel != nullptr && sel->is_string()) selector = sel->get<std::string>();
  }
  if (!selector.empty()) status["selector"] = selector;
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", std::move(md)},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

absl::Status PreconditionUid(const ResourceType& type, std::string_view name,
                             const std::string& want, const json& stored) {
  const std::string have = MetaString(stored, "uid");
  if (want.empty() || want == have) return absl::OkStatus();
  return ConflictError(type.group, type.resource, name,
                       absl::StrCat("Precondition failed: UID in precondition: ", want,
                                    ", UID in object meta: ", have));
}

}  // namespace

// ---- Construction and kinds ---------------------------------------------------------------------

ObjectStore::ObjectStore(Options options)
    : options_(std::move(options)),
      rv_(options_.initial_resource_version),
      compacted_rv_(options_.initial_resource_version),
      uid_rng_(std::random_device{}()) {}

ObjectStore::~ObjectStore() { CloseAllWatches(false); }

void ObjectStore::AddType(ResourceType type) {
  absl::MutexLock lock(&mu_);
  types_.push_back(std::make_unique<ResourceType>(std::move(type)));
  served_[types_.back()->Key()] = types_.back().get();
}

const ResourceType* ObjectStore::FindType(std::string_view group, std::string_view version,
                                          std::string_view resource) const {
  absl::MutexLock lock(&mu_);
  const std::string key = group.empty()
                              ? absl::StrCat(Sv(version), "/", Sv(resource))
                              : absl::StrCat(Sv(group), "/", Sv(version), "/", Sv(resource));
  auto it = served_.find(key);
  return it == served_.end() ? nullptr : it->second;
}

std::vector<const ResourceType*> ObjectStore::Types() const {
  absl::MutexLock lock(&mu_);
  std::vector<const ResourceType*> out;
  for (const auto& [key, t] : served_) out.push_back(t);
  return out;
}

// ---- Helpers ------------------------------------------------------------------------------------

std::string ObjectStore::NowRfc3339() const {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", clock().Now(), absl::UTCTimeZone());
}

std::string ObjectStore::NewUidLocked() {
  const uint64_t a = uid_rng_(), b = uid_rng_();
  // A version-4 UUID: 4 in the version nibble, 10 in the variant bits.
  const uint64_t hi = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  const uint64_t lo = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff,
                         lo >> 48, lo & 0xffffffffffffULL);
}

const ObjectStore::ObjectMap& ObjectStore::ObjectsLocked(const ResourceType& type) const {
  static const ObjectMap* const kEmpty = new ObjectMap();
  auto it = objects_.find(type.Key());
  return it == objects_.end() ? *kEmpty : it->second;
}

ObjectStore::Object ObjectStore::FindLocked(const ResourceType& type, std::string_view ns,
                                            std::string_view name) const {
  const ObjectMap& m = ObjectsLocked(type);
  auto it = m.find({std::string(type.namespaced ? ns : ""), std::string(name)});
  return it == m.end() ? nullptr : it->second;
}

bool ObjectStore::WatcherMatches(const Watcher& w, const json& object) const {
  const json* labels = AtPath(object, "metadata.labels");
  return w.options.labels.Matches(labels ? *labels : json()) && w.options.fields.Matches(object);
}

std::string ObjectStore::EventFor(const Watcher& w, const Event& e) const {
  if (w.type->Key() != e.type->Key()) return "";
  if (!w.ns.empty() && w.ns != e.ns) return "";
  const bool deleted = e.kind == EventType::kDeleted;
  const bool new_match = !deleted && WatcherMatches(w, *e.object);
  const bool old_match = e.prev != nullptr && WatcherMatches(w, *e.prev);
  const std::string type = EventTypeName(old_match, new_match, deleted);
  if (type.empty()) return "";
  // An object leaving the selection is sent as DELETED with its previous content at this
  // event's resourceVersion, as the watch cache does.
  const json& object = type == "DELETED" ? WithResourceVersion(*e.prev, e.rv) : *e.object;
  return JsonText(json{{"type", type}, {"object", object}});
}

void ObjectStore::DispatchLocked(const Event& e) {
  for (auto& [id, w] : watchers_) {
    const std::string event = EventFor(w, e);
    if (!event.empty()) w.sink->Send(event);
  }
}

json ObjectStore::CommitLocked(const ResourceType& type, std::string_view ns, std::string_view name,
                               EventType kind, json object, Object prev) {
  ++rv_;
  Meta(object)["resourceVersion"] = absl::StrCat(rv_);
  auto stored = std::make_shared<const json>(std::move(object));
  ObjectMap& m = objects_[type.Key()];
  const std::pair<std::string, std::string> key{std::string(type.namespaced ? ns : ""),
                                                std::string(name)};
  if (kind == EventType::kDeleted) {
    m.erase(key);
  } else {
    m[key] = stored;
  }
  Event e{rv_, &type, key.first, key.second, kind, stored, std::move(prev)};
  DispatchLocked(e);
  history_.push_back(std::move(e));
  while (history_.size() > options_.history_limit) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  if (options_.history_limit == 0) compacted_rv_ = rv_;
  return *stored;
}

absl::Status ObjectStore::ApplySchema(const ResourceType& type, json& object,
                                      const WriteOptions& options) const {
  if (type.default_replicas) {
    json& spec = object["spec"];
    if (spec.is_null()) spec = json::object();
    if (spec.is_object() && (!spec.contains("replicas") || spec["replicas"].is_null())) {
      spec["replicas"] = 1;
    }
  }
  if (!type.schema) return absl::OkStatus();
  const json metadata = object.contains("metadata") ? object["metadata"] : json::object();
  // The server handles metadata itself; the CRD's schema may only say `metadata: {type: object}`.
  json envelope = object;
  envelope["metadata"] = json::object();
  const YAML::Node defaulted = type.schema->ApplyDefaults(JsonToYaml(envelope));
  const std::vector<api::FieldError> errors = type.schema->Violations(defaulted, "", 50);
  std::vector<std::vector<api::PathElement>> unknown_paths;
  std::vector<std::string> unknown;
  std::vector<FieldCause> causes;
  for (const api::FieldError& e : errors) {
    if (absl::StartsWith(e.message, "unknown field")) {
      unknown_paths.push_back(e.path);
      unknown.push_back(absl::StrCat("unknown field \"", e.field, "\""));
      continue;
    }
    FieldCause c{e.field, e.message, "FieldValueInvalid"};
    if (absl::StrContains(e.message, "required")) c.reason = "FieldValueRequired";
    if (absl::StartsWith(e.message, "must be one of")) c.reason = "FieldValueNotSupported";
    causes.push_back(std::move(c));
  }
  if (!unknown.empty()) {
    if (options.field_validation == FieldValidation::kStrict) {
      return BadRequestError(absl::StrCat("strict decoding error: ", absl::StrJoin(unknown, ", ")));
    }
    if (options.field_validation == FieldValidation::kWarn && options.warnings != nullptr) {
      for (const std::string& u : unknown) options.warnings->push_back(u);
    }
  }
  if (!causes.empty()) {
    return InvalidError(type.group, type.kind, MetaString(object, "name"), causes);
  }
  json out = YamlToJson(defaulted);
  for (const auto& path : unknown_paths) ErasePath(out, path);
  out["metadata"] = metadata;
  object = std::move(out);
  return absl::OkStatus();
}

// ---- Reads
// ----------------------------------------------------------------------------------------

absl::StatusOr<json> ObjectStore::Get(const ResourceType& type, std::string_view ns,
                                      std::string_view name, Subresource sub) const {
  absl::MutexLock lock(&mu_);
  Object o = FindLocked(type, ns, name);
  if (o == nullptr) return NotFoundError(type.group, type.resource, name);
  if (sub == Subresource::kScale) {
    if (!type.scale) return PathNotFoundError();
    return ScaleOf(type, *o);
  }
  return *o;
}

ObjectStore::ObjectMap ObjectStore::SnapshotLocked(const ResourceType& type, int64_t rv) const {
  ObjectMap snapshot = ObjectsLocked(type);
  const std::string key = type.Key();
  for (auto it = history_.rbegin(); it != history_.rend() && it->rv > rv; ++it) {
    if (it->type->Key() != key) continue;
    const std::pair<std::string, std::string> k{it->ns, it->name};
    if (it->kind == EventType::kAdded) {
      snapshot.erase(k);
    } else {
      snapshot[k] = it->prev;
    }
  }
  return snapshot;
}

absl::StatusOr<json> ObjectStore::List(const ResourceType& type, std::string_view ns,
                                       const ListOptions& options) const {
  const std::string& rv_text = options.resource_version;
  const std::string& match = options.resource_version_match;
  if (!match.empty() && match != "NotOlderThan" && match != "Exact") {
    return ApiError(422, "Invalid",
                    absl::StrCat("resourceVersionMatch: Unsupported value: \"", match,
                                 "\": supported values: \"Exact\", \"NotOlderThan\""));
  }
  if (!match.empty() && rv_text.empty()) {
    return ApiError(422, "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                    "resourceVersion is provided");
  }
  if (!options.continue_token.empty() && !rv_text.empty() && rv_text != "0") {
    return ApiError(422, "Invalid",
                    "resourceVersion: Forbidden: specifying resource version is not allowed "
                    "when using continue");
  }
  int64_t requested = 0;
  if (!rv_text.empty() && !ParseRv(rv_text, requested)) {
    return BadRequestError(absl::StrCat("invalid resource version: \"", rv_text, "\""));
  }
  if (match == "Exact" && requested == 0) {
    return ApiError(422, "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is "
                    "forbidden for resourceVersion \"0\"");
  }
  std::string start_ns, start_name;
  bool exact = match == "Exact" || (match.empty() && options.limit > 0 && requested > 0);
  int64_t continue_rv = 0;
  if (!options.continue_token.empty()) {
    TS_RETURN_IF_ERROR(DecodeContinue(options.continue_token, continue_rv, start_ns, start_name));
    exact = true;
    requested = continue_rv;
  }

  absl::MutexLock lock(&mu_);
  int64_t list_rv = rv_;
  ObjectMap snapshot;
  if (exact) {
    if (requested < compacted_rv_) {
      if (!options.continue_token.empty()) {
        return ExpiredError(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter.");
      }
      return ExpiredError("The resourceVersion for the provided list is too old.");
    }
    if (requested > rv_) return TooLargeResourceVersionError(requested, rv_);
    snapshot = SnapshotLocked(type, requested);
    list_rv = requested;
  } else {
    if (requested > rv_) return TooLargeResourceVersionError(requested, rv_);
    snapshot = ObjectsLocked(type);
  }

  json items = json::array();
  std::string last_ns, last_name;
  int64_t remaining = 0;
  const bool paging = options.limit > 0;
  for (const auto& [key, object] : snapshot) {
    if (!ns.empty() && key.first != ns) continue;
    if (!options.continue_token.empty() && key <= std::make_pair(start_ns, start_name)) continue;
    const json* labels = AtPath(*object, "metadata.labels");
    if (!options.labels.Matches(labels ? *labels : json())) continue;
    if (!options.fields.Matches(*object)) continue;
    if (paging && static_cast<int64_t>(items.size()) >= options.limit) {
      ++remaining;
      continue;
    }
    json item = *object;
    // Typed lists of built-in kinds don't repeat apiVersion and kind on each item.
    if (!type.custom_resource) {
      item.erase("apiVersion");
      item.erase("kind");
    }
    items.push_back(std::move(item));
    last_ns = key.first;
    last_name = key.second;
  }
  json metadata = {{"resourceVersion", absl::StrCat(list_rv)}};
  if (remaining > 0) {
    metadata["continue"] = EncodeContinue(list_rv, last_ns, last_name);
    if (options.labels.Empty() && options.fields.Empty()) {
      metadata["remainingItemCount"] = remaining;
    }
  }
  return json{{"kind", type.list_kind},
              {"apiVersion", type.ApiVersion()},
              {"metadata", std::move(metadata)},
              {"items", std::move(items)}};
}

// ---- Writes
// ----------------------------------------------------------------------------------------

absl::StatusOr<json> ObjectStore::Create(const ResourceType& type, std::string_view ns, json body,
                                         const WriteOptions& options) {
  TS_RETURN_IF_ERROR(BodyMustBeObject(body));
  TS_RETURN_IF_ERROR(CheckTypeMeta(type, body));
  json& md = Meta(body);
  if (type.namespaced) {
    const std::string body_ns = MetaString(body, "namespace");
    if (body_ns.empty()) {
      md["namespace"] = ns;
    } else if (body_ns != ns) {
      return BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
  } else {
    md.erase("namespace");
  }
  if (!MetaString(body, "resourceVersion").empty()) {
    return ApiError(500, "InternalError",
                    "resourceVersion should not be set on objects to be created");
  }
  body["apiVersion"] = type.ApiVersion();
  body["kind"] = type.kind;
  if (type.status_subresource) body.erase("status");
  if (!type.initial_status_json.empty()) body["status"] = json::parse(type.initial_status_json);
  md.erase("generation");
  if (type.has_generation) md["generation"] = 1;
  md.erase("deletionTimestamp");

  absl::MutexLock lock(&mu_);
  if (MetaString(body, "name").empty()) {
    const std::string generate = MetaString(body, "generateName");
    if (generate.empty()) {
      return InvalidError(type.group, type.kind, "",
                          {{"metadata.name", "Required value: name or generateName is required",
                            "FieldValueRequired"}});
    }
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string suffix;
    for (int i = 0; i < 5; ++i) suffix += kAlphabet[uid_rng_() % (sizeof(kAlphabet) - 1)];
    md["name"] = generate + suffix;
  }
  const std::string name = MetaString(body, "name");
  if (!kube::IsDnsSubdomain(name)) {
    return InvalidError(
        type.group, type.kind, name,
        {{"metadata.name",
          absl::StrCat("Invalid value: \"", name,
                       "\": a lowercase RFC 1123 subdomain must consist of lower case "
                       "alphanumeric characters, '-' or '.', and must start and end with an "
                       "alphanumeric character")}});
  }
  TS_RETURN_IF_ERROR(ApplySchema(type, body, options));
  if (FindLocked(type, ns, name) != nullptr) {
    return AlreadyExistsError(type.group, type.resource, name);
  }
  json& meta = Meta(body);
  meta["uid"] = NewUidLocked();
  meta["creationTimestamp"] = NowRfc3339();
  if (options.dry_run) return body;
  return CommitLocked(type, ns, name, EventType::kAdded, std::move(body), nullptr);
}

absl::StatusOr<json> ObjectStore::Update(const ResourceType& type, std::string_view ns,
                                         std::string_view name, Subresource sub, json body,
                                         const WriteOptions& options) {
  absl::MutexLock lock(&mu_);
  if (sub == Subresource::kScale) return UpdateScaleLocked(type, ns, name, body, options);
  return UpdateLocked(type, ns, name, sub, std::move(body), options);
}

absl::StatusOr<json> ObjectStore::UpdateLocked(const ResourceType& type, std::string_view ns,
                                               std::string_view name, Subresource sub, json body,
                                               const WriteOptions& options) {
  TS_RETURN_IF_ERROR(BodyMustBeObject(body));
  TS_RETURN_IF_ERROR(CheckTypeMeta(type, body));
  Object old = FindLocked(type, ns, name);
  if (old == nullptr) return NotFoundError(type.group, type.resource, name);
  const std::string body_name = MetaString(body, "name");
  if (body_name != name) {
    return BadRequestError(absl::StrCat("the name of the object (", body_name,
                                        ") does not match the name on the URL (", Sv(name), ")"));
  }
  if (type.namespaced) {
    const std::string body_ns = MetaString(body, "namespace");
    if (!body_ns.empty() && body_ns != ns) {
      return BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
  }
  const std::string old_rv = MetaString(*old, "resourceVersion");
  const std::string body_rv = MetaString(body, "resourceVersion");
  if (!body_rv.empty() && body_rv != old_rv) {
    return ConflictError(type.group, type.resource, name, kObjectModified);
  }
  if (body_rv.empty() && !type.allow_unconditional_update) {
    return InvalidError(
        type.group, type.kind, name,
        {{"metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update"}});
  }
  TS_RETURN_IF_ERROR(PreconditionUid(type, name, MetaString(body, "uid"), *old));

  json updated;
  if (sub == Subresource::kStatus) {
    // A /status write changes the status only: metadata (labels, annotations too) and spec stay.
    updated = *old;
    if (body.contains("status")) {
      updated["status"] = body["status"];
    } else {
      updated.erase("status");
    }
  } else {
    updated = std::move(body);
    json& md = Meta(updated);
    const json& old_md = (*old)["metadata"];
    for (const char* key : {"uid", "creationTimestamp", "generation", "deletionTimestamp"}) {
      if (old_md.contains(key)) {
        md[key] = old_md[key];
      } else {
        md.erase(key);
      }
    }
    md["name"] = name;
    if (type.namespaced) md["namespace"] = ns;
    if (type.status_subresource) {
      if (old->contains("status")) {
        updated["status"] = (*old)["status"];
      } else {
        updated.erase("status");
      }
    }
    updated["apiVersion"] = type.ApiVersion();
    updated["kind"] = type.kind;
  }
  Meta(updated)["resourceVersion"] = old_rv;
  TS_RETURN_IF_ERROR(ApplySchema(type, updated, options));
  if (type.has_generation) {
    const int64_t generation = IntAt(*old, "metadata.generation");
    Meta(updated)["generation"] = SpecChanged(type, *old, updated) ? generation + 1 : generation;
  }
  // No change, no write: the resourceVersion stays and no watch event goes out.
  if (updated == *old || options.dry_run) return updated;
  return CommitLocked(type, ns, name, EventType::kModified, std::move(updated), old);
}

absl::StatusOr<json> ObjectStore::UpdateScaleLocked(const ResourceType& type, std::string_view ns,
                                                    std::string_view name, const json& scale,
                                                    const WriteOptions& options) {
  if (!type.scale) return PathNotFoundError();
  TS_RETURN_IF_ERROR(BodyMustBeObject(scale));
  Object old = FindLocked(type, ns, name);
  if (old == nullptr) return NotFoundError(type.group, type.resource, name);
  const std::string scale_name = MetaString(scale, "name");
  if (!scale_name.empty() && scale_name != name) {
    return BadRequestError(absl::StrCat("the name of the object (", scale_name,
                                        ") does not match the name on the URL (", Sv(name), ")"));
  }
  const std::string rv = MetaString(scale, "resourceVersion");
  if (!rv.empty() && rv != MetaString(*old, "resourceVersion")) {
    return ConflictError(type.group, type.resource, name, kObjectModified);
  }
  TS_RETURN_IF_ERROR(PreconditionUid(type, name, MetaString(scale, "uid"), *old));
  // ScaleSpec.replicas is omitempty: absent means 0.
  int64_t replicas = 0;
  if (const json* r = AtPath(scale, "spec.replicas"); r != nullptr && !r->is_null()) {
    if (!r->is_number_integer()) {
      return BadRequestError(
          absl::StrCat("Scale in version \"v1\" cannot be handled as a Scale: "
                       "spec.replicas: expected an integer, got ",
                       r->dump()));
    }
    replicas = r->get<int64_t>();
  }
  if (replicas < 0) {
    return InvalidError("autoscaling", "Scale", name,
                        {{"spec.replicas", absl::StrCat("Invalid value: ", replicas,
                                                        ": must be greater than or equal to 0")}});
  }
  json updated = *old;
  SetPath(updated, type.scale->spec_replicas_path, replicas);
  if (type.has_generation && SpecChanged(type, *old, updated)) {
    Meta(updated)["generation"] = IntAt(*old, "metadata.generation") + 1;
  }
  if (updated == *old || options.dry_run) return ScaleOf(type, updated);
  return ScaleOf(type, CommitLocked(type, ns, name, EventType::kModified, std::move(updated), old));
}

absl::StatusOr<json> ObjectStore::Patch(const ResourceType& type, std::string_view ns,
                                        std::string_view name, Subresource sub,
                                        PatchType patch_type, const json& patch,
                                        const WriteOptions& options) {
  if (patch_type == PatchType::kStrategicMerge && type.custom_resource) {
    return UnsupportedMediaTypeError(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
  }
  absl::MutexLock lock(&mu_);
  Object old = FindLocked(type, ns, name);
  if (old == nullptr) return NotFoundError(type.group, type.resource, name);
  if (sub == Subresource::kScale && !type.scale) return PathNotFoundError();
  json base = sub == Subresource::kScale ? ScaleOf(type, *old) : *old;
  const std::string base_rv = MetaString(base, "resourceVersion");
  json patched;
  if (patch_type == PatchType::kJson) {
    if (!patch.is_array()) {
      return BadRequestError(
          "a JSON patch (application/json-patch+json) must be a list of operations");
    }
    try {
      patched = base.patch(patch);
    } catch (const json::exception& e) {
      return ApiError(422, "Invalid",
                      absl::StrCat("the JSON patch could not be applied: ", e.what()));
    }
  } else {
    if (!patch.is_object()) {
      return BadRequestError("a merge patch must be a JSON object");
    }
    json p = patch;
    if (patch_type == PatchType::kStrategicMerge) StripPatchDirectives(p);
    patched = base;
    patched.merge_patch(p);
  }
  // A resourceVersion the patch put in the object is a precondition.
  const std::string patched_rv = MetaString(patched, "resourceVersion");
  if (!patched_rv.empty() && patched_rv != base_rv) {
    return ConflictError(type.group, type.resource, name, kObjectModified);
  }
  if (!patched.is_object()) return BadRequestError("the patched object is not a JSON object");
  Meta(patched)["resourceVersion"] = base_rv;
  if (sub == Subresource::kScale) return UpdateScaleLocked(type, ns, name, patched, options);
  return UpdateLocked(type, ns, name, sub, std::move(patched), options);
}

absl::StatusOr<json> ObjectStore::Delete(const ResourceType& type, std::string_view ns,
                                         std::string_view name, const json& delete_options) {
  absl::MutexLock lock(&mu_);
  return DeleteLocked(type, ns, name, delete_options);
}

absl::StatusOr<json> ObjectStore::DeleteLocked(const ResourceType& type, std::string_view ns,
                                               std::string_view name, const json& delete_options) {
  Object old = FindLocked(type, ns, name);
  if (old == nullptr) return NotFoundError(type.group, type.resource, name);
  if (const json* pre = AtPath(delete_options, "preconditions");
      pre != nullptr && pre->is_object()) {
    if (auto uid = pre->find("uid"); uid != pre->end() && uid->is_string()) {
      TS_RETURN_IF_ERROR(PreconditionUid(type, name, uid->get<std::string>(), *old));
    }
    if (auto rv = pre->find("resourceVersion"); rv != pre->end() && rv->is_string()) {
      const std::string have = MetaString(*old, "resourceVersion");
      if (rv->get<std::string>() != have) {
        return ConflictError(
            type.group, type.resource, name,
            absl::StrCat("Precondition failed: ResourceVersion in precondition: ",
                         rv->get<std::string>(), ", ResourceVersion in object meta: ", have));
      }
    }
  }
  const json deleted = CommitLocked(type, ns, name, EventType::kDeleted, *old, old);
  if (type.delete_returns_object) return deleted;
  json details = {{"name", name}, {"kind", type.resource}, {"uid", MetaString(*old, "uid")}};
  if (!type.group.empty()) details["group"] = type.group;
  return json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Success"},
              {"details", std::move(details)}};
}

absl::StatusOr<json> ObjectStore::DeleteCollection(const ResourceType& type, std::string_view ns,
                                                   const ListOptions& options) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto& [key, object] : ObjectsLocked(type)) {
    if (!ns.empty() && key.first != ns) continue;
    const json* labels = AtPath(*object, "metadata.labels");
    if (!options.labels.Matches(labels ? *labels : json())) continue;
    if (!options.fields.Matches(*object)) continue;
    keys.push_back(key);
  }
  json items = json::array();
  for (const auto& [object_ns, object_name] : keys) {
    Object old = FindLocked(type, object_ns, object_name);
    items.push_back(CommitLocked(type, object_ns, object_name, EventType::kDeleted, *old, old));
  }
  return json{{"kind", type.list_kind},
              {"apiVersion", type.ApiVersion()},
              {"metadata", {{"resourceVersion", absl::StrCat(rv_)}}},
              {"items", std::move(items)}};
}

// ---- Direct writes
// ----------------------------------------------------------------------------------

absl::StatusOr<json> ObjectStore::Put(const ResourceType& type, std::string_view ns,
                                      std::string_view name, json object) {
  absl::MutexLock lock(&mu_);
  return WriteDirectLocked(type, ns, name, std::move(object), FindLocked(type, ns, name));
}

absl::StatusOr<json> ObjectStore::Mutate(const ResourceType& type, std::string_view ns,
                                         std::string_view name,
                                         const std::function<void(json&)>& mutate) {
  absl::MutexLock lock(&mu_);
  Object old = FindLocked(type, ns, name);
  if (old == nullptr) return NotFoundError(type.group, type.resource, name);
  json object = *old;
  mutate(object);
  return WriteDirectLocked(type, ns, name, std::move(object), old);
}

absl::StatusOr<json> ObjectStore::WriteDirectLocked(const ResourceType& type, std::string_view ns,
                                                    std::string_view name, json object,
                                                    Object old) {
  if (!object.is_object()) return absl::InvalidArgumentError("an object must be a JSON object");
  object["apiVersion"] = type.ApiVersion();
  object["kind"] = type.kind;
  json& md = Meta(object);
  md["name"] = name;
  if (type.namespaced) {
    md["namespace"] = ns;
  } else {
    md.erase("namespace");
  }
  if (old != nullptr) {
    const json& old_md = (*old)["metadata"];
    if (!md.contains("uid")) md["uid"] = old_md["uid"];
    if (!md.contains("creationTimestamp")) md["creationTimestamp"] = old_md["creationTimestamp"];
    md["resourceVersion"] = old_md["resourceVersion"];
    if (type.has_generation) {
      const int64_t generation = IntAt(*old, "metadata.generation");
      md["generation"] = SpecChanged(type, *old, object) ? generation + 1 : generation;
    }
    if (object == *old) return object;
    return CommitLocked(type, ns, name, EventType::kModified, std::move(object), old);
  }
  md.erase("resourceVersion");
  if (!md.contains("uid")) md["uid"] = NewUidLocked();
  if (!md.contains("creationTimestamp")) md["creationTimestamp"] = NowRfc3339();
  if (type.has_generation && !md.contains("generation")) md["generation"] = 1;
  return CommitLocked(type, ns, name, EventType::kAdded, std::move(object), nullptr);
}

// ---- Watches
// ----------------------------------------------------------------------------------------

absl::StatusOr<uint64_t> ObjectStore::Watch(const ResourceType& type, std::string_view ns,
                                            const WatchOptions& options,
                                            std::shared_ptr<WatchSink> sink) {
  if (options.send_initial_events) {
    if (options.resource_version_match != "NotOlderThan") {
      return ApiError(422, "Invalid",
                      "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                      "resourceVersionMatch to NotOlderThan");
    }
    if (!options.allow_bookmarks) {
      return ApiError(422, "Invalid",
                      "allowWatchBookmarks: Forbidden: sendInitialEvents requires "
                      "allowWatchBookmarks=true");
    }
  } else if (!options.resource_version_match.empty()) {
    return ApiError(422, "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for "
                    "watch unless sendInitialEvents is provided");
  }
  int64_t from = 0;
  const bool current_state = options.resource_version.empty() || options.resource_version == "0" ||
                             options.send_initial_events;
  if (!options.resource_version.empty() && !ParseRv(options.resource_version, from)) {
    return BadRequestError(
        absl::StrCat("invalid resource version: \"", options.resource_version, "\""));
  }

  absl::MutexLock lock(&mu_);
  const absl::Time now = clock().Now();
  const absl::Duration length =
      options.timeout > absl::ZeroDuration() ? options.timeout : options_.default_watch_timeout;
  Watcher w{0, &type, std::string(type.namespaced ? ns : ""), options, sink, now + length, now};
  if (from > rv_) {
    sink->Send(ErrorEvent(TooLargeResourceVersionError(from, rv_)));
    sink->Close(false);
    return 0;
  }
  if (current_state) {
    for (const auto& [key, object] : ObjectsLocked(type)) {
      if (!w.ns.empty() && key.first != w.ns) continue;
      if (!WatcherMatches(w, *object)) continue;
      sink->Send(JsonText(json{{"type", "ADDED"}, {"object", *object}}));
    }
    if (options.send_initial_events) sink->Send(JsonText(Bookmark(type, rv_, true)));
  } else {
    if (from < compacted_rv_) {
      sink->Send(ErrorEvent(ExpiredError(
          absl::StrCat("too old resource version: ", from, " (", compacted_rv_, ")"))));
      sink->Close(false);
      return 0;
    }
    for (const Event& e : history_) {
      if (e.rv <= from) continue;
      const std::string event = EventFor(w, e);
      if (!event.empty()) sink->Send(event);
    }
  }
  w.id = next_watch_id_++;
  const uint64_t id = w.id;
  watchers_.emplace(id, std::move(w));
  return id;
}

void ObjectStore::StopWatch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

void ObjectStore::CloseAllWatches(bool abrupt) {
  // Closed outside mu_: a close waits on the HTTP library's thread pool, whose threads may be
  // finishing other watches' bodies and waiting for mu_ in StopWatch — with many watches open
  // (one per informer) that starved the pool and hung Stop(). Nothing else reaches a watcher
  // once it has left watchers_ (Send and Close run for listed watchers, under mu_).
  std::map<uint64_t, Watcher> closing;
  {
    absl::MutexLock lock(&mu_);
    closing.swap(watchers_);
  }
  for (auto& [id, w] : closing) w.sink->Close(abrupt);
}

size_t ObjectStore::WatchCount() const {
  absl::MutexLock lock(&mu_);
  return watchers_.size();
}

void ObjectStore::Tick() {
  const absl::Time now = clock().Now();
  absl::MutexLock lock(&mu_);
  const absl::Duration interval = options_.bookmark_interval;
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    Watcher& w = it->second;
    if (now >= w.deadline) {
      w.sink->Close(false);
      it = watchers_.erase(it);
      continue;
    }
    if (w.options.allow_bookmarks && now - w.last_bookmark >= interval) {
      w.sink->Send(JsonText(Bookmark(*w.type, rv_, false)));
      w.last_bookmark = now;
    }
    ++it;
  }
}

// ---- History
// ----------------------------------------------------------------------------------------

void ObjectStore::Compact() {
  absl::MutexLock lock(&mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

int64_t ObjectStore::ResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return rv_;
}

int64_t ObjectStore::CompactedResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return compacted_rv_;
}

}  // namespace twinscale::fake_apiserver
