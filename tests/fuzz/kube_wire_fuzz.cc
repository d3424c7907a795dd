// Fuzzes the parsers of what the API server sends (controller/kube): a watch stream line
// (DecodeWatchLine) and a failed answer's body (StatusFromHttpResponse). Any bytes must decode or
// give an error, never crash; a decoded event always carries a JSON object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/kube/api_errors.h"
#include "controller/kube/watch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto line = twinscale::kube::DecodeWatchLine(bytes);
  if (line.ok() && line->kind == twinscale::kube::WatchLine::Kind::kEvent &&
      !line->event.object.is_object()) {
    abort();
  }
  // The first byte picks an HTTP code in 400..655; the rest is the body.
  if (size > 0) {
    const int code = 400 + static_cast<unsigned char>(bytes[0]);
    const absl::Status s =
        twinscale::kube::StatusFromHttpResponse(code, bytes.substr(1), bytes.substr(1, 4), "fuzz");
    if (s.ok()) abort();  // a failed answer is never OK
    (void)twinscale::kube::KubeReason(s);
    (void)twinscale::kube::RetryAfter(s);
  }
  return 0;
}
