// Discovery documents and Table conversion for kubectl; see discovery.h.
#include "tests/fake_apiserver/discovery.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Group versions of a group, newest first by the Kubernetes version order would be the real
// server's preference; with one version per group here, sorted order is enough.
std::vector<std::string> VersionsOf(const std::vector<const ResourceType*>& types,
                                    std::string_view group) {
  std::set<std::string> versions;
  for (const ResourceType* t : types) {
    if (t->group == group) versions.insert(t->version);
  }
  return {versions.begin(), versions.end()};
}

json GroupJson(const std::vector<const ResourceType*>& types, const std::string& group) {
  json versions = json::array();
  for (const std::string& v : VersionsOf(types, group)) {
    versions.push_back({{"groupVersion", absl::StrCat(group, "/", v)}, {"version", v}});
  }
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions.at(0)}};
}

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

absl::Time ParseTimestamp(const json& object) {
  const json* ts = AtPath(object, "metadata.creationTimestamp");
  absl::Time t;
  std::string err;
  if (ts == nullptr || !ts->is_string() ||
      !absl::ParseTime(absl::RFC3339_full, ts->get<std::string>(), &t, &err)) {
    return absl::InfinitePast();
  }
  return t;
}

std::string AgeCell(const json& object, absl::Time now) {
  const absl::Time created = ParseTimestamp(object);
  if (created == absl::InfinitePast()) return "<unknown>";
  return HumanDuration(now - created);
}

}  // namespace

json CoreApiVersions(std::string_view server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

json ApiGroupList(const std::vector<const ResourceType*>& types) {
  std::set<std::string> groups;
  for (const ResourceType* t : types) {
    if (!t->group.empty()) groups.insert(t->group);
  }
  json list = json::array();
  for (const std::string& g : groups) list.push_back(GroupJson(types, g));
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}};
}

json ApiGroup(const std::vector<const ResourceType*>& types, std::string_view group) {
  if (group.empty() || VersionsOf(types, group).empty()) return nullptr;
  json g = GroupJson(types, std::string(group));
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json ApiResourceList(const std::vector<const ResourceType*>& types, std::string_view group,
                     std::string_view version) {
  json resources = json::array();
  for (const ResourceType* t : types) {
    if (t->group != group || t->version != version) continue;
    json r = {
        {"name", t->resource},
        {"singularName", t->singular},
        {"namespaced", t->namespaced},
        {"kind", t->kind},
        {"verbs",
         {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}};
    if (!t->short_names.empty()) r["shortNames"] = t->short_names;
    if (!t->categories.empty()) r["categories"] = t->categories;
    resources.push_back(std::move(r));
    if (t->status_subresource) {
      resources.push_back({{"name", t->resource + "/status"},
                           {"singularName", ""},
                           {"namespaced", t->namespaced},
                           {"kind", t->kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
    if (t->scale) {
      resources.push_back({{"name", t->resource + "/scale"},
                           {"singularName", ""},
                           {"namespaced", t->namespaced},
                           {"group", "autoscaling"},
                           {"version", "v1"},
                           {"kind", "Scale"},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty()) return nullptr;
  const std::string gv =
      group.empty() ? std::string(version) : absl::StrCat(Sv(group), "/", Sv(version));
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", gv},
          {"resources", resources}};
}

bool WantsTable(std::string_view accept) {
  return absl::StrContains(Sv(accept), "as=Table") &&
         absl::StrContains(Sv(accept), "g=meta.k8s.io");
}

json ToTable(const ResourceType& type, const json& objects, std::string_view list_resource_version,
             std::string_view include_object, absl::Time now) {
  json columns = json::array();
  columns.push_back({{"name", "Name"},
                     {"type", "string"},
                     {"format", "name"},
                     {"description", "Name must be unique within a namespace."},
                     {"priority", 0}});
  bool has_age_column = false;
  for (const PrinterColumn& c : type.printer_columns) {
    columns.push_back({{"name", c.name},
                       {"type", c.type == "date" ? "string" : c.type},
                       {"format", c.format},
                       {"description", c.description},
                       {"priority", c.priority}});
    has_age_column = has_age_column || c.json_path == ".metadata.creationTimestamp";
  }
  if (!has_age_column) {
    columns.push_back({{"name", "Age"},
                       {"type", "string"},
                       {"format", ""},
                       {"description", "CreationTimestamp is the time the object was created."},
                       {"priority", 0}});
  }
  json rows = json::array();
  const json items = objects.is_array() ? objects : json::array({objects});
  for (const json& o : items) {
    json cells = json::array();
    const json* name = AtPath(o, "metadata.name");
    cells.push_back(name != nullptr ? *name : json(""));
    for (const PrinterColumn& c : type.printer_columns) {
      if (c.type == "date") {
        const json* v = AtPath(o, c.json_path);
        if (v == nullptr || !v->is_string()) {
          cells.push_back(nullptr);
          continue;
        }
        json stub = {{"metadata", {{"creationTimestamp", *v}}}};
        cells.push_back(AgeCell(stub, now));
        continue;
      }
      const json* v = AtPath(o, c.json_path);
      cells.push_back(v != nullptr ? *v : json(nullptr));
    }
    if (!has_age_column) cells.push_back(AgeCell(o, now));
    json row = {{"cells", cells}};
    if (include_object == "Object") {
      row["object"] = o;
    } else if (include_object != "None") {
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/v1"},
                       {"metadata", o.value("metadata", json::object())}};
    }
    rows.push_back(std::move(row));
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", list_resource_version}}},
          {"columnDefinitions", columns},
          {"rows", rows}};
}

std::string HumanDuration(absl::Duration d) {
  const int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return absl::StrCat(seconds, "s");
  const int64_t minutes = absl::ToInt64Minutes(d);
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? absl::StrCat(minutes, "m") : absl::StrCat(minutes, "m", s, "s");
  }
  if (minutes < 60 * 3) return absl::StrCat(minutes, "m");
  const int64_t hours = absl::ToInt64Hours(d);
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? absl::StrCat(hours, "h") : absl::StrCat(hours, "h", m, "m");
  }
  if (hours < 48) return absl::StrCat(hours, "h");
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? absl::StrCat(hours / 24, "d") : absl::StrCat(hours / 24, "d", h, "h");
  }
  if (hours < 24 * 365 * 2) return absl::StrCat(hours / 24, "d");
  if (hours < 24 * 365 * 8) {
    const int64_t days = (hours / 24) % 365;
    return days == 0 ? absl::StrCat(hours / 24 / 365, "y")
                     : absl::StrCat(hours / 24 / 365, "y", days, "d");
  }
  return absl::StrCat(hours / 24 / 365, "y");
}

}  // namespace twinscale::fake_apiserver
