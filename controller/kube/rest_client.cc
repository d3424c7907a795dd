// The REST client; see rest_client.h.
#include "controller/kube/rest_client.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/common/status_macros.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/http_transport.h"
#include "controller/kube/object_meta.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Appends "?k=v" / "&k=v" with the value percent-encoded; skips empty values.
void AddQuery(std::string& path, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  absl::StrAppend(&path, path.find('?') == std::string::npos ? "?" : "&", Sv(key), "=",
                  EncodeUrlComponent(value));
}

// The object's name for a PUT, or InvalidArgument.
absl::StatusOr<std::string> NameForUpdate(const ResourceRef& ref, const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("update of ", ref.DebugName(), ": the object has no metadata.name"));
  }
  return name;
}

}  // namespace

HttpKubeClient::HttpKubeClient(std::unique_ptr<HttpTransport> transport,
                               HttpKubeClientOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {}

HttpKubeClient::~HttpKubeClient() = default;

absl::StatusOr<std::unique_ptr<HttpKubeClient>> HttpKubeClient::FromConfig(
    const ClusterConfig& config, const Clock* clock, HttpKubeClientOptions options) {
  HttpTransportOptions t;
  t.request_timeout = options.request_timeout;
  t.shutdown = options.shutdown;
  t.user_agent = options.user_agent;
  t.token_refresh = options.token_refresh;
  TS_ASSIGN_OR_RETURN(std::unique_ptr<HttpTransport> transport,
                      HttpTransport::Create(config, clock, std::move(t)));
  return std::unique_ptr<HttpKubeClient>(
      new HttpKubeClient(std::move(transport), std::move(options)));
}

const std::string& HttpKubeClient::server() const { return transport_->server(); }

absl::StatusOr<json> HttpKubeClient::Call(std::string_view method, const std::string& path,
                                          const json* body, std::string_view content_type) {
  std::string text;
  if (body != nullptr) text = body->dump();
  TS_ASSIGN_OR_RETURN(
      HttpAnswer answer,
      transport_->Send(method, path, body != nullptr ? &text : nullptr, content_type));
  const std::string context = absl::StrCat(Sv(method), " ", path);
  if (answer.status_code < 200 || answer.status_code > 299) {
    return StatusFromHttpResponse(answer.status_code, answer.body, answer.retry_after, context);
  }
  json j = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    // A 2xx that isn't a JSON object: a proxy in the way, or not an API server at all.
    return absl::UnavailableError(
        absl::StrCat(context, ": HTTP ", answer.status_code,
                     " answer is not a JSON object: ", answer.body.substr(0, 120)));
  }
  return j;
}

absl::StatusOr<json> HttpKubeClient::GetImpl(const ResourceRef& ref, std::string_view ns,
                                             std::string_view name, std::string_view subresource) {
  if (name.empty()) return absl::InvalidArgumentError("get: empty name");
  return Call("GET", ResourcePath(ref, ns, name, subresource), nullptr, "");
}

absl::StatusOr<ObjectList> HttpKubeClient::ListImpl(const ResourceRef& ref, std::string_view ns,
                                                    const ListOptions& options) {
  std::string path = ResourcePath(ref, ns);
  AddQuery(path, "labelSelector", options.label_selector);
  AddQuery(path, "fieldSelector", options.field_selector);
  AddQuery(path, "resourceVersion", options.resource_version);
  if (options.limit > 0) AddQuery(path, "limit", absl::StrCat(options.limit));
  AddQuery(path, "continue", options.continue_token);
  TS_ASSIGN_OR_RETURN(json j, Call("GET", path, nullptr, ""));
  ObjectList out;
  auto items = j.find("items");
  if (items != j.end() && !items->is_null()) {
    if (!items->is_array()) {
      return absl::UnavailableError(absl::StrCat("GET ", path, ": \"items\" is not a list"));
    }
    out.items.reserve(items->size());
    for (json& item : *items) out.items.push_back(std::move(item));
  }
  out.resource_version = MetaString(j, "resourceVersion");
  out.continue_token = MetaString(j, "continue");
  return out;
}

absl::StatusOr<json> HttpKubeClient::CreateImpl(const ResourceRef& ref, std::string_view ns,
                                                const json& object) {
  return Call("POST", ResourcePath(ref, ns), &object, "application/json");
}

absl::StatusOr<json> HttpKubeClient::UpdateImpl(const ResourceRef& ref, std::string_view ns,
                                                const json& object, std::string_view subresource) {
  TS_ASSIGN_OR_RETURN(const std::string name, NameForUpdate(ref, object));
  return Call("PUT", ResourcePath(ref, ns, name, subresource), &object, "application/json");
}

absl::StatusOr<json> HttpKubeClient::MergePatchImpl(const ResourceRef& ref, std::string_view ns,
                                                    std::string_view name, const json& patch,
                                                    std::string_view subresource) {
  if (name.empty()) return absl::InvalidArgumentError("merge patch: empty name");
  return Call("PATCH", ResourcePath(ref, ns, name, subresource), &patch,
              "application/merge-patch+json");
}

absl::Status HttpKubeClient::DeleteImpl(const ResourceRef& ref, std::string_view ns,
                                        std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("delete: empty name");
  return Call("DELETE", ResourcePath(ref, ns, name), nullptr, "").status();
}

absl::StatusOr<WatchEnd> HttpKubeClient::WatchImpl(const ResourceRef& ref, std::string_view ns,
                                                   const WatchOptions& options,
                                                   const WatchEventHandler& on_event,
                                                   Cancellation* cancel) {
  std::string path = ResourcePath(ref, ns);
  AddQuery(path, "watch", "true");
  AddQuery(path, "resourceVersion", options.resource_version);
  if (options.allow_bookmarks) AddQuery(path, "allowWatchBookmarks", "true");
  const int64_t timeout_seconds = std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout));
  AddQuery(path, "timeoutSeconds", absl::StrCat(timeout_seconds));
  AddQuery(path, "labelSelector", options.label_selector);
  AddQuery(path, "fieldSelector", options.field_selector);

  bool expired = false;
  absl::Status stream_error;
  const auto on_line = [&](std::string_view line) {
    absl::StatusOr<WatchLine> decoded = DecodeWatchLine(line);
    if (!decoded.ok()) {
      stream_error = decoded.status();
      return false;
    }
    switch (decoded->kind) {
      case WatchLine::Kind::kBlank:
        return true;
      case WatchLine::Kind::kExpired:
        expired = true;
        return false;
      case WatchLine::Kind::kEvent:
        on_event(std::move(decoded->event));
        return true;
    }
    return true;
  };
  TS_ASSIGN_OR_RETURN(
      HttpAnswer answer,
      transport_->StreamLines(path, absl::Seconds(timeout_seconds) + options_.watch_idle_margin,
                              on_line, cancel));
  if (answer.status_code == 410) return WatchEnd::kExpired;  // older servers answer so
  if (answer.status_code != 200) {
    return StatusFromHttpResponse(answer.status_code, answer.body, answer.retry_after,
                                  absl::StrCat("GET ", path));
  }
  if (!stream_error.ok()) return stream_error;
  return expired ? WatchEnd::kExpired : WatchEnd::kClosed;
}

}  // namespace twinscale::kube
