// Fuzzes the fake API server's request handling (paths, query parameters, content types and JSON
// bodies from clients: outside input) in process, without sockets. The input is
// "METHOD\nPATH\nQUERY\nCONTENT-TYPE\nBODY"; every request must get an answer (a JSON body and a
// status code, or a watch), never a crash, an exception or a hang. The store is rebuilt every
// 2000 inputs so its contents stay small.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "controller/common/clock.h"
#include "nlohmann/json.hpp"
#include "tests/fake_apiserver/api_router.h"

namespace {

using namespace twinscale::fake_apiserver;

class DiscardSink : public WatchSink {
 public:
  void Send(const std::string& event) override {
    if (nlohmann::json::parse(event, nullptr, false).is_discarded()) abort();
  }
  void Close(bool) override {}
};

std::string_view TakeLine(std::string_view& in) {
  const size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static twinscale::ManualClock clock(absl::FromUnixSeconds(1714564800));
  static std::unique_ptr<ObjectStore> store;
  static int calls = 0;
  if (store == nullptr || ++calls % 2000 == 0) {
    ObjectStore::Options o;
    o.history_limit = 64;
    o.clock = &clock;
    store = std::make_unique<ObjectStore>(o);
    for (ResourceType& t : BuiltinResourceTypes()) store->AddType(std::move(t));
  }
  std::string_view in(reinterpret_cast<const char*>(data), size);
  ApiRequest request;
  request.method = std::string(TakeLine(in));
  request.path = std::string(TakeLine(in));
  request.query = std::string(TakeLine(in));
  request.headers["content-type"] = std::string(TakeLine(in));
  request.headers["accept"] = "application/json;as=Table;v=v1;g=meta.k8s.io";
  request.body = std::string(in);
  ApiRouter router(*store, &clock);
  auto routed = router.Route(request, "127.0.0.1:1");
  if (auto* response = std::get_if<ApiResponse>(&routed)) {
    if (response->code < 200 || response->code > 599) abort();
    if (response->content_type == "application/json" &&
        nlohmann::json::parse(response->body, nullptr, false).is_discarded()) {
      abort();
    }
    return 0;
  }
  const WatchPlan& plan = std::get<WatchPlan>(routed);
  auto id = store->Watch(*plan.type, plan.ns, plan.options, std::make_shared<DiscardSink>());
  if (id.ok()) store->StopWatch(*id);
  return 0;
}
