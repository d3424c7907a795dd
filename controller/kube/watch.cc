// The watch stream decoder; see watch.h.
#include "controller/kube/watch.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/api_errors.h"

namespace twinscale::kube {

absl::StatusOr<WatchLine> DecodeWatchLine(std::string_view line) {
  WatchLine out;
  const absl::string_view trimmed =
      absl::StripAsciiWhitespace(absl::string_view(line.data(), line.size()));
  if (trimmed.empty()) return out;  // kBlank
  nlohmann::json j =
      nlohmann::json::parse(trimmed.begin(), trimmed.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("watch stream: a line is not a JSON object: ",
                                                   std::string(trimmed.substr(0, 120))));
  }
  auto type = j.find("type");
  auto object = j.find("object");
  if (type == j.end() || !type->is_string() || object == j.end() || !object->is_object()) {
    return absl::InvalidArgumentError(
        "watch stream: an event needs a string \"type\" and an object \"object\"");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ERROR") {
    // The object is a Status. 410 (reason Expired, or Gone from older servers) means the
    // resourceVersion left the server's history window.
    const nlohmann::json& status = *object;
    int code = 0;
    if (auto c = status.find("code"); c != status.end() && c->is_number_integer()) {
      const int64_t v = c->get<int64_t>();
      if (v > 0 && v < 1000) code = static_cast<int>(v);
    }
    std::string reason, message;
    if (auto r = status.find("reason"); r != status.end() && r->is_string()) {
      reason = r->get<std::string>();
    }
    if (auto m = status.find("message"); m != status.end() && m->is_string()) {
      message = m->get<std::string>();
    }
    if (code == 410 || reason == "Expired" || reason == "Gone") {
      out.kind = WatchLine::Kind::kExpired;
      return out;
    }
    return KubeApiError(code == 0 ? 500 : code, reason, message, "watch ERROR event");
  }
  if (t == "ADDED") {
    out.event.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    out.event.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    out.event.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    out.event.type = WatchEventType::kBookmark;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("watch stream: unknown event type \"", t.substr(0, 40), "\""));
  }
  out.kind = WatchLine::Kind::kEvent;
  out.event.object = std::move(*object);
  return out;
}

}  // namespace twinscale::kube
