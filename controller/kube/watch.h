// A watch stream's vocabulary and its decoder. A watch is a long GET (?watch=true) whose 200
// answer is a stream of JSON lines {"type": ..., "object": ...}: ADDED, MODIFIED, DELETED, BOOKMARK
// (only a newer metadata.resourceVersion to resume from) and ERROR (a Status). The API server
// reports a resourceVersion too old for its history as an ERROR event carrying Status code 410,
// reason Expired, inside the 200 stream (not as an HTTP 410): the decoder turns that into
// kExpired, which means "list again", rather than into an event.
//
// KubeClient::Watch (kube_client.h) runs a stream; DecodeWatchLine is the pure parser of one line
// (fuzzed: tests/fuzz/kube_wire_fuzz.cc).
#ifndef TWINSCALE_CONTROLLER_KUBE_WATCH_H_
#define TWINSCALE_CONTROLLER_KUBE_WATCH_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinscale::kube {

struct WatchOptions {
  // Where to start: the resourceVersion of the list (or the last event) seen. "" starts at the
  // server's "now" and first sends an ADDED for every existing object.
  std::string resource_version;
  bool allow_bookmarks = true;                // allowWatchBookmarks
  absl::Duration timeout = absl::Minutes(5);  // timeoutSeconds: the server ends the stream then
  std::string label_selector;
  std::string field_selector;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object after the change (DELETED: its last state)
};

// Called on the watching thread for each event, in stream order.
using WatchEventHandler = std::function<void(WatchEvent event)>;

// How a watch that did not fail ended.
enum class WatchEnd {
  kClosed,   // the server ended the stream (timeoutSeconds) or it went idle: resume from the
             // last resourceVersion seen
  kExpired,  // the resourceVersion is too old (410 Expired/Gone): list again
};

// One decoded line of a watch stream.
struct WatchLine {
  enum class Kind { kEvent, kExpired, kBlank } kind = Kind::kBlank;
  WatchEvent event;  // when kind == kEvent
};

// Decodes one line. InvalidArgument for a line that is not a watch event (not JSON, no "type" or
// "object", an unknown type); an ERROR event other than expiry becomes the status its Status
// object describes (api_errors.h: a 500 is Unavailable, a 403 PermissionDenied ...). Never throws.
absl::StatusOr<WatchLine> DecodeWatchLine(std::string_view line);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_WATCH_H_
