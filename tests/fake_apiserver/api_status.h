// Kubernetes `Status` errors as absl::Status: the fake API server's store and router return
// absl::Status / StatusOr like the rest of twinscale, and each error carries the exact `Status`
// object the HTTP layer sends ({kind: Status, apiVersion: v1, metadata: {}, status: Failure,
// message, reason, details, code}) as a payload, so the wire answer and the in-process answer are
// the same error. The messages follow k8s.io/apimachinery/pkg/api/errors (`deployments.apps "web"
// not found`, `Operation cannot be fulfilled on ...`), so a client's error handling can be tested
// against the text a real cluster returns.
//
// HTTP code -> absl code: 400 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied,
// 404 NotFound, 405 Unimplemented, 409 AlreadyExists (reason AlreadyExists) or Aborted (Conflict),
// 410 OutOfRange (Expired / Gone), 415 InvalidArgument, 422 InvalidArgument, 429
// ResourceExhausted, 500 Internal, 503 Unavailable, 504 DeadlineExceeded; others Unknown.
//
// Thread-safety: free functions over values.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_API_STATUS_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_API_STATUS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace twinscale::fake_apiserver {

// A Status error: `code` is the HTTP status, `reason` the StatusReason ("NotFound",
// "AlreadyExists", "Conflict", "Invalid", "Expired", ...), `details` the StatusDetails object
// ({name, group, kind, uid, causes, retryAfterSeconds}; omitted when empty).
absl::Status ApiError(int code, std::string_view reason, std::string_view message,
                      nlohmann::json details = nlohmann::json::object());

// The Status object an error stands for: its payload when it was made by ApiError, else one
// built from its absl code (500 InternalError for codes without a better match).
nlohmann::json StatusJson(const absl::Status& status);

// The HTTP status code of an error (from its payload; else mapped from the absl code).
int HttpCode(const absl::Status& status);

// The StatusReason of an error ("" when it has none).
std::string Reason(const absl::Status& status);

// The usual errors, named after apimachinery's constructors. `group_resource` is the resource as
// the API server qualifies it: "deployments.apps", "pods", "inferenceautoscalers.twinscale.io".
// `group` and `resource` go in details as the real server puts them there (details.kind is the
// plural resource for these).
absl::Status NotFoundError(std::string_view group, std::string_view resource,
                           std::string_view name);
absl::Status AlreadyExistsError(std::string_view group, std::string_view resource,
                                std::string_view name);
// 409 reason Conflict: "Operation cannot be fulfilled on <gr> \"<name>\": <why>".
absl::Status ConflictError(std::string_view group, std::string_view resource, std::string_view name,
                           std::string_view why);
// The `why` of a stale resourceVersion.
inline constexpr std::string_view kObjectModified =
    "the object has been modified; please apply your changes to the latest version and try again";

// One field error of a 422 Invalid answer.
struct FieldCause {
  std::string field;                         // "spec.maxReplicas"
  std::string message;                       // "Required value"
  std::string reason = "FieldValueInvalid";  // FieldValueRequired, FieldValueNotSupported, ...
};
// 422 reason Invalid: "<Kind>.<group> \"<name>\" is invalid: <field>: <message>" (a list in
// brackets when there are several), with details {name, group, kind: <Kind>, causes}.
absl::Status InvalidError(std::string_view group, std::string_view kind, std::string_view name,
                          const std::vector<FieldCause>& causes);

absl::Status BadRequestError(std::string_view message);
absl::Status MethodNotAllowedError(std::string_view message);
absl::Status UnsupportedMediaTypeError(std::string_view message);
// 404 for a path no resource serves: "the server could not find the requested resource".
absl::Status PathNotFoundError();
// 410 reason Expired (what a watch from a compacted resourceVersion, or an Exact list of one,
// gets).
absl::Status ExpiredError(std::string_view message);
// 504 reason Timeout "Too large resource version: R, current: C", retryAfterSeconds 1.
absl::Status TooLargeResourceVersionError(int64_t requested, int64_t current);
absl::Status UnauthorizedError();
// A generic failure for fault injection: the reason the real server uses for `code`
// (InternalError, ServiceUnavailable, TooManyRequests, Conflict, Timeout, ...), and
// details.retryAfterSeconds when retry_after_seconds > 0.
absl::Status InjectedError(int code, std::string_view message, int retry_after_seconds);

// The StatusReason the API server uses for an HTTP code ("" if none).
std::string_view ReasonForCode(int code);

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_API_STATUS_H_
