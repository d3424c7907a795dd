// Kubernetes failures as absl::Status; see api_errors.h.
#include "controller/kube/api_errors.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace twinscale::kube {
namespace {

// Payload type URLs: private to this file, read back through KubeReason() and RetryAfter().
constexpr char kReasonPayload[] = "twinscale.io/kube.Status.reason";
constexpr char kRetryAfterPayload[] = "twinscale.io/kube.retry-after-seconds";

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::StatusCode CodeFor(int http_code, std::string_view reason) {
  switch (http_code) {
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
      return absl::StatusCode::kFailedPrecondition;
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kUnknown;
  }
}

// The reason the server would have sent for a code, when the body didn't say (a proxy's answer,
// an empty body).
std::string_view DefaultReason(int http_code) {
  switch (http_code) {
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
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
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

// The first `n` bytes of `s` on one line, for quoting a body that isn't a Status.
std::string Shorten(std::string_view s, size_t n = 200) {
  std::string out(s.substr(0, n));
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > n) out += "...";
  return std::string(absl::StripAsciiWhitespace(out));
}

}  // namespace

absl::Status KubeApiError(int http_code, std::string_view reason, std::string_view message,
                          std::string_view context, std::optional<absl::Duration> retry_after) {
  if (reason.empty()) reason = DefaultReason(http_code);
  std::string text;
  if (!context.empty()) absl::StrAppend(&text, Sv(context), ": ");
  absl::StrAppend(&text, message.empty() ? Sv(reason) : Sv(message), " (");
  if (!reason.empty()) absl::StrAppend(&text, Sv(reason), ", ");
  absl::StrAppend(&text, "HTTP ", http_code, ")");
  absl::Status status(CodeFor(http_code, reason), text);
  if (!reason.empty()) status.SetPayload(kReasonPayload, absl::Cord(Sv(reason)));
  if (retry_after.has_value()) {
    status.SetPayload(kRetryAfterPayload,
                      absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(*retry_after))));
  }
  return status;
}

absl::Status StatusFromHttpResponse(int http_code, std::string_view body,
                                    std::string_view retry_after_header, std::string_view context) {
  std::string reason, message;
  const nlohmann::json j =
      nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", nlohmann::json()) == "Status") {
    if (auto r = j.find("reason"); r != j.end() && r->is_string()) reason = r->get<std::string>();
    if (auto m = j.find("message"); m != j.end() && m->is_string()) message = m->get<std::string>();
  } else if (!body.empty()) {
    message = Shorten(body);
  }
  // Retry-After is delta-seconds on the API server (it never sends an HTTP date).
  std::optional<absl::Duration> retry_after;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(Sv(retry_after_header)), &seconds) &&
      seconds >= 0 && seconds < 24 * 3600) {
    retry_after = absl::Seconds(seconds);
  }
  return KubeApiError(http_code, reason, message, context, retry_after);
}

std::string KubeReason(const absl::Status& status) {
  const auto reason = status.GetPayload(kReasonPayload);
  return reason.has_value() ? std::string(*reason) : std::string();
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  const auto value = status.GetPayload(kRetryAfterPayload);
  int64_t ms = 0;
  if (!value.has_value() || !absl::SimpleAtoi(std::string(*value), &ms)) return std::nullopt;
  return absl::Milliseconds(ms);
}

bool IsConflict(const absl::Status& status) { return absl::IsAborted(status); }

bool IsExpired(const absl::Status& status) {
  if (!absl::IsFailedPrecondition(status)) return false;
  const std::string reason = KubeReason(status);
  return reason == "Expired" || reason == "Gone";
}

}  // namespace twinscale::kube
