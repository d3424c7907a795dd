// HTTP requests -> ObjectStore calls; see api_router.h.
#include "tests/fake_apiserver/api_router.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/common/status_macros.h"
#include "tests/fake_apiserver/api_status.h"
#include "tests/fake_apiserver/discovery.h"
#include "tests/fake_apiserver/json_yaml.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

ApiResponse JsonResponse(int code, const json& body) {
  ApiResponse r;
  r.code = code;
  r.body = JsonText(body);
  return r;
}

ApiResponse TextResponse(std::string text) {
  ApiResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(text);
  return r;
}

// strconv.ParseBool, as the API server reads boolean parameters.
absl::StatusOr<bool> ParseBool(const std::string& name, const std::string& v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False")
    return false;
  return BadRequestError(absl::StrCat(name, ": invalid boolean \"", v, "\""));
}

std::string Param(const std::map<std::string, std::string>& q, const std::string& name) {
  auto it = q.find(name);
  return it == q.end() ? "" : it->second;
}

absl::StatusOr<bool> BoolParam(const std::map<std::string, std::string>& q,
                               const std::string& name) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return false;
  return ParseBool(name, it->second);
}

absl::StatusOr<int64_t> IntParam(const std::map<std::string, std::string>& q,
                                 const std::string& name) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return 0;
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v) || v < 0) {
    return BadRequestError(absl::StrCat(name, ": invalid value \"", it->second, "\""));
  }
  return v;
}

std::string Header(const ApiRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

// The media type of a Content-Type header, without parameters, in lower case.
std::string MediaType(std::string_view content_type) {
  std::string_view t = content_type.substr(0, content_type.find(';'));
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(Sv(t)));
}

// The deepest nesting of objects and arrays in JSON text (brackets inside strings ignored).
// Checked before parsing: the JSON library and the schema engine recurse per level.
size_t NestingDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Far deeper than any object of the kinds twinscale uses.
constexpr size_t kMaxBodyDepth = 256;

absl::StatusOr<json> ParseBody(const ApiRequest& r, bool allow_empty) {
  const std::string type = MediaType(Header(r, "content-type"));
  if (r.body.empty()) {
    if (allow_empty) return json::object();
    return BadRequestError("the request needs a body");
  }
  if (type.empty() || type == "application/json" || absl::EndsWith(type, "+json")) {
    if (NestingDepth(r.body) > kMaxBodyDepth) {
      return BadRequestError(
          absl::StrCat("the request body nests deeper than ", kMaxBodyDepth, " levels"));
    }
    json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      return BadRequestError(
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json");
    }
    return j;
  }
  // The fake serves JSON bodies only (kubectl and the client libraries send JSON); YAML and
  // protobuf get the 415 the real server gives an unknown format.
  return UnsupportedMediaTypeError(
      absl::StrCat("the body of the request was in an unknown format (", type,
                   ") - the twinscale fake API server accepts application/json"));
}

absl::StatusOr<WriteOptions> WriteOptionsFrom(const std::map<std::string, std::string>& q) {
  WriteOptions w;
  const std::string fv = Param(q, "fieldValidation");
  if (fv == "Strict") {
    w.field_validation = FieldValidation::kStrict;
  } else if (fv == "Ignore") {
    w.field_validation = FieldValidation::kIgnore;
  } else if (fv.empty() || fv == "Warn") {
    w.field_validation = FieldValidation::kWarn;
  } else {
    return BadRequestError(absl::StrCat("fieldValidation: invalid value \"", fv,
                                        "\": supported values are Ignore, Warn and Strict"));
  }
  const std::string dry = Param(q, "dryRun");
  if (dry == "All") {
    w.dry_run = true;
  } else if (!dry.empty()) {
    return BadRequestError(absl::StrCat("dryRun: unsupported value \"", dry, "\""));
  }
  return w;
}

absl::Status ParseSelectors(const ResourceType& type, const std::map<std::string, std::string>& q,
                            LabelSelector& labels, FieldSelector& fields) {
  auto l = LabelSelector::Parse(Param(q, "labelSelector"));
  if (!l.ok()) {
    return BadRequestError(absl::StrCat("unable to parse requirement: ", l.status().message()));
  }
  labels = std::move(*l);
  auto f = FieldSelector::Parse(Param(q, "fieldSelector"));
  if (!f.ok()) return BadRequestError(std::string(f.status().message()));
  for (const FieldRequirement& r : f->requirements()) {
    if (!type.SupportsFieldLabel(r.field)) {
      return BadRequestError(absl::StrCat("field label not supported: ", r.field));
    }
  }
  fields = std::move(*f);
  return absl::OkStatus();
}

ApiResponse WithWarnings(ApiResponse r, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) {
    std::string quoted = "\"";
    for (char c : w) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    quoted += '"';
    r.headers.emplace_back("Warning", absl::StrCat("299 - ", quoted));
  }
  return r;
}

}  // namespace

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() &&
        absl::ascii_isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        absl::ascii_isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      int v = 0;
      for (int k = 1; k <= 2; ++k) {
        const char c = s[i + k];
        v = v * 16 + (absl::ascii_isdigit(static_cast<unsigned char>(c))
                          ? c - '0'
                          : absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10);
      }
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(std::string_view raw) {
  std::map<std::string, std::string> out;
  for (absl::string_view part : absl::StrSplit(Sv(raw), '&', absl::SkipEmpty())) {
    std::string p(part);
    for (char& c : p) {
      if (c == '+') c = ' ';
    }
    const size_t eq = p.find('=');
    std::string key = PercentDecode(p.substr(0, eq));
    std::string value = eq == std::string::npos ? "" : PercentDecode(p.substr(eq + 1));
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

ApiResponse ErrorResponse(const absl::Status& status) {
  const json s = StatusJson(status);
  ApiResponse r = JsonResponse(s.value("code", 500), s);
  if (s.contains("details") && s["details"].contains("retryAfterSeconds")) {
    r.headers.emplace_back("Retry-After", JsonText(s["details"]["retryAfterSeconds"]));
  }
  return r;
}

absl::StatusOr<ResourcePath> ResolveResourcePath(const ObjectStore& store, std::string_view path) {
  std::vector<std::string> segs;
  for (absl::string_view s : absl::StrSplit(Sv(path), '/', absl::SkipEmpty())) {
    segs.push_back(PercentDecode(std::string_view(s.data(), s.size())));
  }
  if (segs.empty() || (segs[0] != "api" && segs[0] != "apis")) return PathNotFoundError();
  const bool core = segs[0] == "api";
  std::string group, version;
  size_t i = 1;
  if (!core) {
    if (segs.size() < 2) return PathNotFoundError();
    group = segs[i++];
  }
  if (segs.size() <= i) return PathNotFoundError();
  version = segs[i++];
  const std::vector<std::string> rest(segs.begin() + i, segs.end());
  if (rest.empty()) return PathNotFoundError();
  std::string ns, resource, name, sub;
  // /namespaces/{ns}/{resource}/...: a namespaced path; /namespaces/{name}[/{sub}] is the
  // Namespace object itself.
  const bool namespaced_path = rest[0] == "namespaces" && rest.size() >= 3 &&
                               store.FindType(group, version, rest[2]) != nullptr;
  if (namespaced_path) {
    if (rest.size() > 5) return PathNotFoundError();
    ns = rest[1];
    resource = rest[2];
    if (rest.size() > 3) name = rest[3];
    if (rest.size() > 4) sub = rest[4];
  } else {
    if (rest.size() > 3) return PathNotFoundError();
    resource = rest[0];
    if (rest.size() > 1) name = rest[1];
    if (rest.size() > 2) sub = rest[2];
  }
  ResourcePath out;
  out.type = store.FindType(group, version, resource);
  if (out.type == nullptr) return PathNotFoundError();
  // A named object of a namespaced kind needs its namespace; cluster-scoped kinds have none.
  if (out.type->namespaced && ns.empty() && !name.empty()) return PathNotFoundError();
  if (!out.type->namespaced && !ns.empty()) return PathNotFoundError();
  if (sub == "status" && out.type->status_subresource) {
    out.sub = Subresource::kStatus;
  } else if (sub == "scale" && out.type->scale) {
    out.sub = Subresource::kScale;
  } else if (!sub.empty()) {
    return PathNotFoundError();
  }
  out.ns = std::move(ns);
  out.name = std::move(name);
  return out;
}

ApiRouter::ApiRouter(ObjectStore& store, const Clock* clock) : store_(store), clock_(clock) {}

std::variant<ApiResponse, WatchPlan> ApiRouter::Route(const ApiRequest& request,
                                                      std::string_view server_address) const {
  const std::string& method = request.method;
  std::vector<std::string> segs;
  for (absl::string_view s : absl::StrSplit(request.path, '/', absl::SkipEmpty())) {
    segs.push_back(PercentDecode(std::string_view(s.data(), s.size())));
  }
  const std::map<std::string, std::string> q = ParseQuery(request.query);
  const std::vector<const ResourceType*> types = store_.Types();

  // ---- Server info, probes and discovery ----
  if (segs.empty()) {
    return JsonResponse(
        200,
        {{"paths", {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"}}});
  }
  if (segs.size() == 1 && (segs[0] == "healthz" || segs[0] == "livez" || segs[0] == "readyz")) {
    return TextResponse("ok");
  }
  if (segs.size() == 1 && segs[0] == "version") {
    return JsonResponse(200, {{"major", "1"},
                              {"minor", "32"},
                              {"gitVersion", "v1.32.0-twinscale-fake"},
                              {"gitCommit", "0000000000000000000000000000000000000000"},
                              {"gitTreeState", "clean"},
                              {"buildDate", "2024-12-11T00:00:00Z"},
                              {"goVersion", "go1.23"},
                              {"compiler", "gc"},
                              {"platform", "linux/amd64"}});
  }
  if (segs[0] != "api" && segs[0] != "apis") return ErrorResponse(PathNotFoundError());
  const bool core = segs[0] == "api";
  if (method == "GET") {
    if (segs.size() == 1) {
      return JsonResponse(200, core ? CoreApiVersions(server_address) : ApiGroupList(types));
    }
    if (!core && segs.size() == 2) {
      json g = ApiGroup(types, segs[1]);
      if (g.is_null()) return ErrorResponse(PathNotFoundError());
      return JsonResponse(200, g);
    }
    if ((core && segs.size() == 2) || (!core && segs.size() == 3)) {
      json l =
          core ? ApiResourceList(types, "", segs[1]) : ApiResourceList(types, segs[1], segs[2]);
      if (l.is_null()) return ErrorResponse(PathNotFoundError());
      return JsonResponse(200, l);
    }
  }

  // ---- Resources ----
  auto resolved = ResolveResourcePath(store_, request.path);
  if (!resolved.ok()) return ErrorResponse(resolved.status());
  const ResourcePath& p = *resolved;
  const ResourceType* type = p.type;
  const Subresource sub = p.sub;

  auto run = [&]() -> std::variant<ApiResponse, WatchPlan> {
    auto fail = [](const absl::Status& s) -> std::variant<ApiResponse, WatchPlan> {
      return ErrorResponse(s);
    };
    if (p.name.empty()) {
      // ---- Collections ----
      if (method == "GET") {
        auto watch = BoolParam(q, "watch");
        if (!watch.ok()) return fail(watch.status());
        LabelSelector labels;
        FieldSelector fields;
        if (absl::Status s = ParseSelectors(*type, q, labels, fields); !s.ok()) return fail(s);
        if (*watch) {
          WatchPlan plan;
          plan.type = type;
          plan.ns = p.ns;
          plan.options.labels = std::move(labels);
          plan.options.fields = std::move(fields);
          plan.options.resource_version = Param(q, "resourceVersion");
          plan.options.resource_version_match = Param(q, "resourceVersionMatch");
          auto bookmarks = BoolParam(q, "allowWatchBookmarks");
          if (!bookmarks.ok()) return fail(bookmarks.status());
          plan.options.allow_bookmarks = *bookmarks;
          auto initial = BoolParam(q, "sendInitialEvents");
          if (!initial.ok()) return fail(initial.status());
          plan.options.send_initial_events = *initial;
          auto timeout = IntParam(q, "timeoutSeconds");
          if (!timeout.ok()) return fail(timeout.status());
          plan.options.timeout = absl::Seconds(*timeout);
          return plan;
        }
        ListOptions options;
        options.labels = std::move(labels);
        options.fields = std::move(fields);
        options.resource_version = Param(q, "resourceVersion");
        options.resource_version_match = Param(q, "resourceVersionMatch");
        options.continue_token = Param(q, "continue");
        auto limit = IntParam(q, "limit");
        if (!limit.ok()) return fail(limit.status());
        options.limit = *limit;
        auto list = store_.List(*type, p.ns, options);
        if (!list.ok()) return fail(list.status());
        if (WantsTable(Header(request, "accept"))) {
          const Clock& clock = clock_ != nullptr ? *clock_ : real_clock_;
          json table = ToTable(*type, (*list)["items"],
                               (*list)["metadata"]["resourceVersion"].get<std::string>(),
                               Param(q, "includeObject"), clock.Now());
          if ((*list)["metadata"].contains("continue")) {
            table["metadata"]["continue"] = (*list)["metadata"]["continue"];
          }
          return JsonResponse(200, table);
        }
        return JsonResponse(200, *list);
      }
      if (method == "POST") {
        if (type->namespaced && p.ns.empty()) return fail(PathNotFoundError());
        auto body = ParseBody(request, false);
        if (!body.ok()) return fail(body.status());
        auto options = WriteOptionsFrom(q);
        if (!options.ok()) return fail(options.status());
        std::vector<std::string> warnings;
        options->warnings = &warnings;
        auto created = store_.Create(*type, p.ns, std::move(*body), *options);
        if (!created.ok()) return fail(created.status());
        return WithWarnings(JsonResponse(201, *created), warnings);
      }
      if (method == "DELETE") {
        ListOptions options;
        if (absl::Status s = ParseSelectors(*type, q, options.labels, options.fields); !s.ok()) {
          return fail(s);
        }
        auto deleted = store_.DeleteCollection(*type, p.ns, options);
        if (!deleted.ok()) return fail(deleted.status());
        return JsonResponse(200, *deleted);
      }
      return fail(MethodNotAllowedError(
          absl::StrCat(method, " is not allowed on a collection of ", type->GroupResource())));
    }

    // ---- One object ----
    if (method == "GET") {
      auto object = store_.Get(*type, p.ns, p.name, sub);
      if (!object.ok()) return fail(object.status());
      if (sub == Subresource::kNone && WantsTable(Header(request, "accept"))) {
        const Clock& clock = clock_ != nullptr ? *clock_ : real_clock_;
        return JsonResponse(
            200, ToTable(*type, *object, (*object)["metadata"].value("resourceVersion", ""),
                         Param(q, "includeObject"), clock.Now()));
      }
      return JsonResponse(200, *object);
    }
    if (method == "PUT" || method == "PATCH") {
      auto options = WriteOptionsFrom(q);
      if (!options.ok()) return fail(options.status());
      std::vector<std::string> warnings;
      options->warnings = &warnings;
      absl::StatusOr<json> result;
      if (method == "PUT") {
        auto body = ParseBody(request, false);
        if (!body.ok()) return fail(body.status());
        result = store_.Update(*type, p.ns, p.name, sub, std::move(*body), *options);
      } else {
        const std::string media = MediaType(Header(request, "content-type"));
        PatchType patch_type;
        if (media == "application/merge-patch+json") {
          patch_type = PatchType::kMerge;
        } else if (media == "application/strategic-merge-patch+json") {
          patch_type = PatchType::kStrategicMerge;
        } else if (media == "application/json-patch+json") {
          patch_type = PatchType::kJson;
        } else if (absl::StartsWith(media, "application/apply-patch")) {
          return fail(UnsupportedMediaTypeError(
              "the twinscale fake API server does not serve server-side apply "
              "(application/apply-patch+yaml); use a merge, strategic-merge or JSON patch"));
        } else {
          return fail(UnsupportedMediaTypeError(absl::StrCat(
              "the body of the request was in an unknown format (", media,
              ") - accepted media types include: application/json-patch+json, "
              "application/merge-patch+json, application/strategic-merge-patch+json")));
        }
        auto body = ParseBody(request, false);
        if (!body.ok()) return fail(body.status());
        result = store_.Patch(*type, p.ns, p.name, sub, patch_type, *body, *options);
      }
      if (!result.ok()) return fail(result.status());
      return WithWarnings(JsonResponse(200, *result), warnings);
    }
    if (method == "DELETE" && sub == Subresource::kNone) {
      auto body = ParseBody(request, true);
      if (!body.ok()) return fail(body.status());
      auto deleted = store_.Delete(*type, p.ns, p.name, *body);
      if (!deleted.ok()) return fail(deleted.status());
      return JsonResponse(200, *deleted);
    }
    return fail(
        MethodNotAllowedError(absl::StrCat(method, " is not allowed on ", type->GroupResource(),
                                           sub == Subresource::kStatus  ? "/status"
                                           : sub == Subresource::kScale ? "/scale"
                                                                        : "")));
  };
  return run();
}

}  // namespace twinscale::fake_apiserver
