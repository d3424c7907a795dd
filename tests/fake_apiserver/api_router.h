// The Kubernetes REST surface of the fake API server, without sockets: an HTTP request (method,
// path, query, headers, body) becomes an ObjectStore call and a JSON answer, or a watch to start.
// FakeApiServer feeds it from cpprestsdk's listener; fuzz and unit tests call it directly.
//
// Paths:
//   /api, /apis, /apis/{g}, /api/v1, /apis/{g}/{v}      discovery (discovery.h)
//   /version, /healthz, /livez, /readyz                 server info and probes
//   /api/v1/namespaces/{ns}/{resource}[/{name}[/{sub}]]                 namespaced objects
//   /apis/{g}/{v}/namespaces/{ns}/{resource}[/{name}[/{sub}]]
//   /api/v1/{resource}[/{name}[/{sub}]], /apis/{g}/{v}/{resource}[...]  cluster-scoped objects,
//                                                      and lists/watches across all namespaces
// Verbs: GET (get, list, or watch with ?watch=true|1), POST (create), PUT (update), PATCH (by
// Content-Type: merge, strategic merge, JSON patch; apply patches get 415), DELETE (one object,
// or a collection). Query parameters: labelSelector, fieldSelector (only the kind's supported
// field labels, else 400 "field label not supported"), resourceVersion, resourceVersionMatch,
// limit, continue, watch, allowWatchBookmarks, timeoutSeconds, sendInitialEvents,
// fieldValidation (Strict | Warn | Ignore), dryRun=All, includeObject (tables). Others are
// ignored. Request bodies are JSON (nested at most 256 deep); YAML and protobuf get 415.
//
// Thread-safety: Route is const and safe to call concurrently (the store serializes).
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_API_ROUTER_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_API_ROUTER_H_

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "controller/common/clock.h"
#include "tests/fake_apiserver/object_store.h"

namespace twinscale::fake_apiserver {

struct ApiRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // as sent, percent-encoded: "/apis/apps/v1/namespaces/default/deployments"
  std::string query;   // as sent, without '?': "labelSelector=app%3Dweb&watch=1"
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct ApiResponse {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
};

// A watch to start: the HTTP layer answers 200 with a chunked body and hands a sink to
// ObjectStore::Watch.
struct WatchPlan {
  const ResourceType* type = nullptr;
  std::string ns;
  WatchOptions options;
};

// An object or collection path resolved against the store's kinds.
struct ResourcePath {
  const ResourceType* type = nullptr;
  std::string ns;    // "" for cluster-scoped kinds and all-namespace collections
  std::string name;  // "" for a collection
  Subresource sub = Subresource::kNone;
};

// Resolves "/apis/apps/v1/namespaces/default/deployments/web/scale" and the like (percent-encoded
// as sent). 404 PathNotFound for anything that is not a served resource path (discovery paths
// included), as the real server answers.
absl::StatusOr<ResourcePath> ResolveResourcePath(const ObjectStore& store, std::string_view path);

// The JSON error answer for a Status error (api_status.h), with Retry-After when the Status has
// details.retryAfterSeconds.
ApiResponse ErrorResponse(const absl::Status& status);

// The query string's parameters: '&'-separated, '+' read as a space, %XX decoded; the first of a
// repeated name wins.
std::map<std::string, std::string> ParseQuery(std::string_view raw);

// %XX decoding (malformed escapes are kept as written).
std::string PercentDecode(std::string_view s);

class ApiRouter {
 public:
  // `clock` dates table ages; null means a RealClock. Neither is owned.
  ApiRouter(ObjectStore& store, const Clock* clock);

  // The answer to `request`, or the watch to start. `server_address` ("127.0.0.1:8443") goes in
  // the /api document.
  std::variant<ApiResponse, WatchPlan> Route(const ApiRequest& request,
                                             std::string_view server_address = "") const;

 private:
  ObjectStore& store_;
  const Clock* clock_;
  const RealClock real_clock_;
};

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_API_ROUTER_H_
