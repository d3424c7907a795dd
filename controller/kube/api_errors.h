// Kubernetes API failures as absl::Status, with the meanings the rest of twinscale agrees on
// (docs/architecture.md "Error codes"). The API server answers a failed request with an HTTP code
// and a `Status` object ({"kind":"Status","reason":"NotFound","message":"pods \"x\" not
// found","code":404}); the reason and message travel in the absl::Status (the reason as a payload,
// read back with KubeReason()).
//
//   HTTP code (Status reason)     absl code            what the caller does
//   404 (NotFound)                NotFound             the object is gone: stop
//   409 (AlreadyExists)           AlreadyExists        create raced: read it instead
//   409 (Conflict, any other)     Aborted              stale resourceVersion: re-read, retry
//   410 (Expired / Gone)          FailedPrecondition   resourceVersion too old: re-list
//   400, 415, 422 (Invalid)       InvalidArgument      the request is wrong: report, no retry
//   401                           Unauthenticated      token or certificate refused
//   403                           PermissionDenied     RBAC forbids it
//   405                           Unimplemented        the resource doesn't support the verb
//   429, 500, 502, 503, 504       Unavailable          retry later; RetryAfter() when the
//                                                      server sent Retry-After
//   other codes                   Unknown
// Transport failures (connection refused, TLS) are Unavailable; timeouts DeadlineExceeded;
// shutdown Cancelled (http_transport).
#ifndef TWINSCALE_CONTROLLER_KUBE_API_ERRORS_H_
#define TWINSCALE_CONTROLLER_KUBE_API_ERRORS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace twinscale::kube {

// The absl::Status for a failed request: `http_code` and the Status object's `reason` choose the
// code (table above); the message is "<context>: <message> (<reason>, HTTP <code>)".
// `retry_after` is kept for RetryAfter().
absl::Status KubeApiError(int http_code, std::string_view reason, std::string_view message,
                          std::string_view context = "",
                          std::optional<absl::Duration> retry_after = std::nullopt);

// The absl::Status for a non-2xx HTTP answer: reads the reason and message out of a Status body
// when there is one (anything else is quoted, shortened), and the Retry-After header (seconds).
// Never throws, whatever the bytes.
absl::Status StatusFromHttpResponse(int http_code, std::string_view body,
                                    std::string_view retry_after_header, std::string_view context);

// The Kubernetes Status reason an error carries ("NotFound", "Conflict", "Expired", ...), or "".
std::string KubeReason(const absl::Status& status);

// How long the server asked the caller to wait (429 / 503 with Retry-After), if it said.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

// A write lost an optimistic-concurrency race (409 Conflict): re-read the object and retry.
bool IsConflict(const absl::Status& status);
// A 404 (the object or namespace does not exist) and a 409 AlreadyExists (a create found the
// name taken) are exactly absl::IsNotFound and absl::IsAlreadyExists: use those (a twin here would
// make every unqualified call ambiguous through argument-dependent lookup).
// The resourceVersion (or continue token) is too old for the server's history (410, reason
// Expired or Gone): list again from scratch.
bool IsExpired(const absl::Status& status);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_API_ERRORS_H_
