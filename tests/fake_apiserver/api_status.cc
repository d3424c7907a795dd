// Kubernetes Status errors carried in absl::Status payloads; see api_status.h.
#include "tests/fake_apiserver/api_status.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/fake_apiserver/json_yaml.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;

// The payload key; any unique URL-like string does (absl requires one).
constexpr char kPayloadUrl[] = "type.twinscale.io/k8s.io.apimachinery.pkg.apis.meta.v1.Status";

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::StatusCode AbslCode(int code, std::string_view reason) {
  switch (code) {
    case 400:
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kUnknown;
  }
}

int CodeFromAbsl(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnimplemented:
      return 405;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kOutOfRange:
      return 410;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::optional<json> Payload(const absl::Status& status) {
  absl::optional<absl::Cord> cord = status.GetPayload(kPayloadUrl);
  if (!cord) return std::nullopt;
  return json::parse(std::string(*cord), nullptr, /*allow_exceptions=*/false);
}

std::string QualifiedResource(std::string_view group, std::string_view resource) {
  if (group.empty()) return std::string(resource);
  return absl::StrCat(Sv(resource), ".", Sv(group));
}

json ResourceDetails(std::string_view group, std::string_view resource, std::string_view name) {
  json d = json::object();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = resource;
  return d;
}

}  // namespace

std::string_view ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

absl::Status ApiError(int code, std::string_view reason, std::string_view message, json details) {
  json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"code", code}};
  if (!reason.empty()) s["reason"] = reason;
  if (details.is_object() && !details.empty()) s["details"] = std::move(details);
  absl::Status status(AbslCode(code, reason), Sv(message));
  status.SetPayload(kPayloadUrl, absl::Cord(JsonText(s)));
  return status;
}

json StatusJson(const absl::Status& status) {
  if (std::optional<json> p = Payload(status); p && p->is_object()) return *p;
  const int code = CodeFromAbsl(status.code());
  json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Failure"},
            {"message", std::string(status.message())},
            {"code", code}};
  if (std::string_view r = ReasonForCode(code); !r.empty()) s["reason"] = r;
  return s;
}

int HttpCode(const absl::Status& status) {
  const json s = StatusJson(status);
  return s.value("code", 500);
}

std::string Reason(const absl::Status& status) {
  const json s = StatusJson(status);
  return s.value("reason", "");
}

absl::Status NotFoundError(std::string_view group, std::string_view resource,
                           std::string_view name) {
  return ApiError(404, "NotFound",
                  absl::StrCat(QualifiedResource(group, resource), " \"", Sv(name), "\" not found"),
                  ResourceDetails(group, resource, name));
}

absl::Status AlreadyExistsError(std::string_view group, std::string_view resource,
                                std::string_view name) {
  return ApiError(
      409, "AlreadyExists",
      absl::StrCat(QualifiedResource(group, resource), " \"", Sv(name), "\" already exists"),
      ResourceDetails(group, resource, name));
}

absl::Status ConflictError(std::string_view group, std::string_view resource, std::string_view name,
                           std::string_view why) {
  return ApiError(
      409, "Conflict",
      absl::StrCat("Operation cannot be fulfilled on ", QualifiedResource(group, resource), " \"",
                   Sv(name), "\": ", Sv(why)),
      ResourceDetails(group, resource, name));
}

absl::Status InvalidError(std::string_view group, std::string_view kind, std::string_view name,
                          const std::vector<FieldCause>& causes) {
  std::vector<std::string> parts;
  json causes_json = json::array();
  for (const FieldCause& c : causes) {
    parts.push_back(c.field.empty() ? c.message : absl::StrCat(c.field, ": ", c.message));
    causes_json.push_back({{"reason", c.reason}, {"message", c.message}, {"field", c.field}});
  }
  const std::string list =
      parts.size() == 1 ? parts[0] : absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
  const std::string qualified_kind =
      group.empty() ? std::string(kind) : absl::StrCat(Sv(kind), ".", Sv(group));
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  details["kind"] = kind;
  details["causes"] = std::move(causes_json);
  return ApiError(422, "Invalid",
                  absl::StrCat(qualified_kind, " \"", Sv(name), "\" is invalid: ", list),
                  std::move(details));
}

absl::Status BadRequestError(std::string_view message) {
  return ApiError(400, "BadRequest", message);
}

absl::Status MethodNotAllowedError(std::string_view message) {
  return ApiError(405, "MethodNotAllowed", message);
}

absl::Status UnsupportedMediaTypeError(std::string_view message) {
  return ApiError(415, "UnsupportedMediaType", message);
}

absl::Status PathNotFoundError() {
  return ApiError(404, "NotFound", "the server could not find the requested resource",
                  json::object());
}

absl::Status ExpiredError(std::string_view message) { return ApiError(410, "Expired", message); }

absl::Status TooLargeResourceVersionError(int64_t requested, int64_t current) {
  json details = {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                           {"message", "Too large resource version"}}})},
                  {"retryAfterSeconds", 1}};
  return ApiError(504, "Timeout",
                  absl::StrCat("Too large resource version: ", requested, ", current: ", current),
                  std::move(details));
}

absl::Status UnauthorizedError() { return ApiError(401, "Unauthorized", "Unauthorized"); }

absl::Status InjectedError(int code, std::string_view message, int retry_after_seconds) {
  json details = json::object();
  if (retry_after_seconds > 0) details["retryAfterSeconds"] = retry_after_seconds;
  return ApiError(code, ReasonForCode(code), message, std::move(details));
}

}  // namespace twinscale::fake_apiserver
