// FakeApiServer over cpprestsdk's http_listener; see fake_apiserver.h. This file is the only one
// that includes cpprest headers. cpprestsdk throws, and an unobserved exception in a pplx task
// terminates the process: every task here gets a continuation that observes it.
#include "tests/fake_apiserver/fake_apiserver.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "controller/common/free_port.h"
#include "tests/fake_apiserver/api_router.h"
#include "tests/fake_apiserver/api_status.h"
#include "tests/fake_apiserver/object_store.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;
namespace http = web::http;
namespace listener = web::http::experimental::listener;

// A client that stops reading would make a watch buffer grow without end; past this the watch
// is cut, as the real server drops watchers that fall too far behind.
constexpr size_t kMaxUnreadWatchBytes = 64 << 20;

template <typename T>
void Observe(pplx::task<T> task) {
  task.then([](pplx::task<T> t) {
    try {
      t.get();
    } catch (...) {
      // The client went away or the server is closing: nothing to do.
    }
  });
}

// A watch's HTTP body: events are appended to a producer/consumer buffer that the listener reads
// and sends as chunks; sync() after each event releases the listener's pending read at once.
class StreamSink final : public WatchSink {
 public:
  StreamSink() = default;
  concurrency::streams::istream Stream() { return buffer_.create_istream(); }

  void Send(const std::string& event_json) override {
    if (closed_) return;
    if (buffer_.in_avail() > kMaxUnreadWatchBytes) {
      Close(/*abrupt=*/true);
      return;
    }
    const std::string line = event_json + "\n";
    try {
      buffer_.putn_nocopy(reinterpret_cast<const uint8_t*>(line.data()), line.size()).wait();
      buffer_.sync().wait();
    } catch (...) {
      closed_ = true;
    }
  }

  void Close(bool abrupt) override {
    if (closed_) return;
    closed_ = true;
    try {
      if (abrupt) {
        // A failed body makes the listener cut the connection without the final chunk.
        buffer_
            .close(std::ios_base::out,
                   std::make_exception_ptr(std::runtime_error("watch dropped by the fake")))
            .wait();
      } else {
        buffer_.close(std::ios_base::out).wait();
      }
    } catch (...) {
    }
  }

 private:
  concurrency::streams::producer_consumer_buffer<uint8_t> buffer_;
  bool closed_ = false;  // guarded by the store's mutex (Send/Close run under it)
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("can't read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ConfigureTls(boost::asio::ssl::context& ctx, const std::string& cert, const std::string& key,
                  const std::string& client_ca) {
  ctx.set_options(boost::asio::ssl::context::default_workarounds |
                  boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                  boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
  ctx.use_certificate_chain_file(cert);
  ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
  if (!client_ca.empty()) {
    ctx.load_verify_file(client_ca);
    ctx.set_verify_mode(boost::asio::ssl::verify_peer |
                        boost::asio::ssl::verify_fail_if_no_peer_cert);
  }
}

}  // namespace

// Shared with the pplx continuations of in-flight requests, which may run after the
// FakeApiServer is gone: each holds a reference until it has finished.
constexpr std::string_view kCrdCollection =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

struct FakeApiServer::Impl : std::enable_shared_from_this<FakeApiServer::Impl> {
  struct Held {
    http::http_request request;
    ApiRequest api;
  };

  explicit Impl(Options o)
      : options(std::move(o)),
        store(ObjectStore::Options{options.history_limit, options.initial_resource_version,
                                   options.bookmark_interval, options.default_watch_timeout,
                                   options.clock}),
        router(store, options.clock),
        token(options.bearer_token) {}

  const Options options;
  ObjectStore store;
  ApiRouter router;
  std::unique_ptr<listener::http_listener> http;
  std::string base_url;
  int port = 0;
  std::thread ticker;
  absl::Notification stop_ticker;

  mutable absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool paused ABSL_GUARDED_BY(mu) = false;
  std::deque<Held> held ABSL_GUARDED_BY(mu);
  std::vector<Fault> faults ABSL_GUARDED_BY(mu);
  std::vector<LoggedRequest> log ABSL_GUARDED_BY(mu);
  std::string token ABSL_GUARDED_BY(mu);

  // Over HTTPS every answer closes its connection. A kept-alive TLS connection that a
  // cpprestsdk client drops (no close_notify) wakes the listener's read with a truncated-stream
  // error, which the listener answers from a task thread while close() tears the socket down:
  // a crash inside boost::asio (see external_metrics_server.cc, which does the same).
  void CloseOverTls(http::http_response& response) const {
    if (!options.tls_cert_file.empty() && !response.headers().has("Connection")) {
      response.headers().add("Connection", "close");
    }
  }

  void Reply(http::http_request& request, const ApiResponse& r) {
    http::http_response response(static_cast<http::status_code>(r.code));
    for (const auto& [name, value] : r.headers) response.headers().add(name, value);
    CloseOverTls(response);
    response.set_body(r.body, r.content_type);
    Observe(request.reply(response));
  }

  void OnRequest(http::http_request request) {
    ApiRequest api;
    api.method = request.method();
    const web::uri relative = request.relative_uri();
    api.path = relative.path();
    api.query = relative.query();
    for (const auto& [name, value] : request.headers()) {
      api.headers[absl::AsciiStrToLower(name)] = value;
    }
    request.extract_vector().then([self = shared_from_this(), request,
                                   api](pplx::task<std::vector<unsigned char>> body) mutable {
      try {
        const std::vector<unsigned char> bytes = body.get();
        api.body.assign(bytes.begin(), bytes.end());
      } catch (...) {
        self->Reply(request, ErrorResponse(BadRequestError("the request body could not be read")));
        return;
      }
      self->Admit(std::move(request), std::move(api));
    });
  }

  void Admit(http::http_request request, ApiRequest api) {
    {
      absl::MutexLock lock(&mu);
      LoggedRequest entry;
      entry.method = api.method;
      entry.path = api.path;
      entry.query = api.query;
      entry.params = ParseQuery(api.query);
      auto ct = api.headers.find("content-type");
      entry.content_type = ct == api.headers.end() ? "" : ct->second;
      entry.body = api.body;
      entry.headers = api.headers;
      log.push_back(std::move(entry));
      if (stopping) {
        Reply(request, ErrorResponse(InjectedError(503, "the fake API server is stopping", 0)));
        return;
      }
      if (paused) {
        held.push_back({std::move(request), std::move(api)});
        return;
      }
    }
    Process(request, api);
  }

  void Process(http::http_request& request, const ApiRequest& api) {
    {
      absl::MutexLock lock(&mu);
      if (!token.empty()) {
        auto auth = api.headers.find("authorization");
        if (auth == api.headers.end() || auth->second != "Bearer " + token) {
          Reply(request, ErrorResponse(UnauthorizedError()));
          return;
        }
      }
      for (auto it = faults.begin(); it != faults.end(); ++it) {
        if (!it->method.empty() && !absl::EqualsIgnoreCase(it->method, api.method)) continue;
        if (!absl::StartsWith(api.path, it->path_prefix)) continue;
        const absl::Status error = InjectedError(
            it->code,
            it->message.empty() ? absl::StrCat("injected fault: ", it->code) : it->message,
            it->retry_after_seconds);
        if (--it->count <= 0) faults.erase(it);
        Reply(request, ErrorResponse(error));
        return;
      }
    }
    if (api.path == kCrdCollection && api.method == "POST") {
      Reply(request, CreateCrd(api));
      return;
    }
    auto host = api.headers.find("host");
    std::variant<ApiResponse, WatchPlan> routed;
    try {
      routed = router.Route(api, host == api.headers.end() ? "" : host->second);
    } catch (const std::exception& e) {
      // A bug in the fake, not the client's fault: answer as the real server does for panics.
      Reply(request, ErrorResponse(ApiError(500, "InternalError",
                                            absl::StrCat("fake API server error: ", e.what()))));
      return;
    }
    if (auto* response = std::get_if<ApiResponse>(&routed)) {
      Reply(request, *response);
      return;
    }
    StartWatch(request, std::get<WatchPlan>(routed));
  }

  // POST of a CustomResourceDefinition (JSON, as kubectl sends it): the schema checks the real
  // server makes (ResourceTypesFromCrd, CheckStructural) decide between 201 and 422 Invalid; on
  // 201 (unless ?dryRun=All) the CRD's kinds are served from then on. The answer is the CRD as
  // sent with the Established condition a real server reports once the kinds are served.
  ApiResponse CreateCrd(const ApiRequest& api) {
    nlohmann::json crd = nlohmann::json::parse(api.body, nullptr, /*allow_exceptions=*/false);
    if (!crd.is_object()) {
      return ErrorResponse(BadRequestError("the CustomResourceDefinition is not a JSON object"));
    }
    const std::string name = crd.value("metadata", nlohmann::json::object()).value("name", "");
    auto types = ResourceTypesFromCrd(crd.dump(), "CustomResourceDefinition");
    if (!types.ok()) {
      return ErrorResponse(InvalidError(
          "apiextensions.k8s.io", "CustomResourceDefinition", name,
          {{"spec.validation.openAPIV3Schema", std::string(types.status().message())}}));
    }
    if (ParseQuery(api.query).count("dryRun") == 0) {
      for (ResourceType& t : *types) store.AddType(std::move(t));
    }
    crd["status"]["conditions"] = nlohmann::json::array(
        {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}},
         {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"}}});
    ApiResponse r;
    r.code = 201;
    r.body = crd.dump();
    return r;
  }

  void StartWatch(http::http_request& request, const WatchPlan& plan) {
    auto sink = std::make_shared<StreamSink>();
    absl::StatusOr<uint64_t> id;
    {
      // Under mu so that Stop(), which sets `stopping` and then closes every watch, can't miss
      // one registered concurrently.
      absl::MutexLock lock(&mu);
      if (stopping) {
        Reply(request, ErrorResponse(InjectedError(503, "the fake API server is stopping", 0)));
        return;
      }
      id = store.Watch(*plan.type, plan.ns, plan.options, sink);
    }
    if (!id.ok()) {
      Reply(request, ErrorResponse(id.status()));
      return;
    }
    http::http_response response(http::status_codes::OK);
    CloseOverTls(response);
    response.set_body(sink->Stream(), "application/json");
    const uint64_t watch_id = *id;
    request.reply(response).then(
        [self = shared_from_this(), watch_id, sink](pplx::task<void> done) {
          try {
            done.get();
          } catch (...) {
          }
          // The body ended (or the client went away): forget the watch.
          if (watch_id != 0) self->store.StopWatch(watch_id);
        });
  }

  void Tick() {
    const absl::Duration period =
        std::clamp(options.bookmark_interval / 4, absl::Milliseconds(5), absl::Milliseconds(50));
    while (!stop_ticker.WaitForNotificationWithTimeout(period)) {
      store.Tick();
    }
  }
};

FakeApiServer::FakeApiServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeApiServer::~FakeApiServer() { Stop(); }

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(Options options) {
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return absl::InvalidArgumentError("HTTPS needs both tls_cert_file and tls_key_file");
  }
  if (!tls && !options.client_ca_file.empty()) {
    return absl::InvalidArgumentError("client_ca_file needs HTTPS (tls_cert_file, tls_key_file)");
  }
  if (tls) {
    // Load the files once now, so a bad file is an error here rather than a failed handshake.
    try {
      boost::asio::ssl::context probe(boost::asio::ssl::context::sslv23);
      ConfigureTls(probe, options.tls_cert_file, options.tls_key_file, options.client_ca_file);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TLS files (", options.tls_cert_file, ", ", options.tls_key_file,
          options.client_ca_file.empty() ? "" : ", " + options.client_ca_file, "): ", e.what()));
    }
  }
  auto impl = std::make_shared<Impl>(options);
  for (ResourceType& t : BuiltinResourceTypes()) impl->store.AddType(std::move(t));
  for (const std::string& path : options.crd_files) {
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    auto types = ResourceTypesFromCrd(*text, path);
    if (!types.ok()) return types.status();
    for (ResourceType& t : *types) impl->store.AddType(std::move(t));
  }

  listener::http_listener_config config;
  if (tls) {
    const std::string cert = options.tls_cert_file, key = options.tls_key_file,
                      ca = options.client_ca_file;
    config.set_ssl_context_callback([cert, key, ca](boost::asio::ssl::context& ctx) {
      try {
        ConfigureTls(ctx, cert, key, ca);
      } catch (...) {
        // Unreadable now (checked at Start): this connection's handshake fails.
      }
    });
  }
  // The listener calls its handler only while open, and close() waits for calls in progress; the
  // ticker is joined by Stop(): a raw pointer is enough for both.
  Impl* raw = impl.get();
  std::string last_error;
  // A port picked by FreeTcpPort can be taken by someone else before the listener binds it: retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int port = options.port != 0 ? options.port : FreeTcpPort(options.address);
    if (port == 0) {
      last_error = "no free port";
      continue;
    }
    const std::string url = absl::StrCat(tls ? "https" : "http", "://", options.address, ":", port);
    try {
      auto l = std::make_unique<listener::http_listener>(url + "/", config);
      l->support([raw](http::http_request request) { raw->OnRequest(std::move(request)); });
      l->open().wait();
      impl->http = std::move(l);
      impl->base_url = url;
      impl->port = port;
      break;
    } catch (const std::exception& e) {
      last_error = e.what();
      if (options.port != 0) break;
    }
  }
  if (impl->http == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("can't listen on ", options.address, ":", options.port, ": ", last_error));
  }
  impl->ticker = std::thread([raw] { raw->Tick(); });
  return std::unique_ptr<FakeApiServer>(new FakeApiServer(std::move(impl)));
}

void FakeApiServer::Stop() {
  if (impl_ == nullptr) return;
  std::deque<Impl::Held> held;
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    held.swap(impl_->held);
  }
  if (impl_->ticker.joinable()) {
    impl_->stop_ticker.Notify();
    impl_->ticker.join();
  }
  // Open response bodies keep the listener's connections alive: end them before closing it.
  impl_->store.CloseAllWatches(false);
  for (Impl::Held& h : held) {
    impl_->Reply(h.request,
                 ErrorResponse(InjectedError(503, "the fake API server is stopping", 0)));
  }
  if (impl_->http != nullptr) {
    try {
      impl_->http->close().wait();
    } catch (...) {
    }
  }
}

std::string FakeApiServer::url() const { return impl_->base_url; }
int FakeApiServer::port() const { return impl_->port; }

absl::StatusOr<json> FakeApiServer::Get(std::string_view path) const {
  auto p = ResolveResourcePath(impl_->store, path);
  if (!p.ok()) return p.status();
  if (p->name.empty()) return PathNotFoundError();
  return impl_->store.Get(*p->type, p->ns, p->name, p->sub);
}

absl::StatusOr<json> FakeApiServer::List(std::string_view collection_path,
                                         std::string_view label_selector) const {
  auto p = ResolveResourcePath(impl_->store, collection_path);
  if (!p.ok()) return p.status();
  if (!p->name.empty()) return PathNotFoundError();
  ListOptions options;
  auto labels = LabelSelector::Parse(label_selector);
  if (!labels.ok()) return BadRequestError(std::string(labels.status().message()));
  options.labels = std::move(*labels);
  return impl_->store.List(*p->type, p->ns, options);
}

absl::StatusOr<json> FakeApiServer::Put(std::string_view path, json object) {
  auto p = ResolveResourcePath(impl_->store, path);
  if (!p.ok()) return p.status();
  if (p->name.empty()) return PathNotFoundError();
  return impl_->store.Put(*p->type, p->ns, p->name, std::move(object));
}

absl::StatusOr<json> FakeApiServer::Mutate(std::string_view path,
                                           const std::function<void(json&)>& mutate) {
  auto p = ResolveResourcePath(impl_->store, path);
  if (!p.ok()) return p.status();
  if (p->name.empty()) return PathNotFoundError();
  return impl_->store.Mutate(*p->type, p->ns, p->name, mutate);
}

absl::Status FakeApiServer::Delete(std::string_view path) {
  auto p = ResolveResourcePath(impl_->store, path);
  if (!p.ok()) return p.status();
  if (p->name.empty()) return PathNotFoundError();
  return impl_->store.Delete(*p->type, p->ns, p->name, json::object()).status();
}

int64_t FakeApiServer::ResourceVersion() const { return impl_->store.ResourceVersion(); }

void FakeApiServer::AddResourceType(ResourceType type) { impl_->store.AddType(std::move(type)); }

absl::Status FakeApiServer::LoadCrd(std::string_view yaml, std::string_view where) {
  auto types = ResourceTypesFromCrd(yaml, where);
  if (!types.ok()) return types.status();
  for (ResourceType& t : *types) impl_->store.AddType(std::move(t));
  return absl::OkStatus();
}

void FakeApiServer::FailNext(Fault fault) {
  absl::MutexLock lock(&impl_->mu);
  if (fault.count > 0) impl_->faults.push_back(std::move(fault));
}

void FakeApiServer::ClearFaults() {
  absl::MutexLock lock(&impl_->mu);
  impl_->faults.clear();
}

void FakeApiServer::CloseWatches(bool abrupt) { impl_->store.CloseAllWatches(abrupt); }

size_t FakeApiServer::OpenWatches() const { return impl_->store.WatchCount(); }

bool FakeApiServer::WaitForWatches(size_t n, absl::Duration timeout) const {
  absl::Notification never;
  const absl::Time deadline = absl::Now() + timeout;
  while (impl_->store.WatchCount() < n) {
    if (absl::Now() >= deadline) return false;
    never.WaitForNotificationWithTimeout(absl::Milliseconds(10));
  }
  return true;
}

void FakeApiServer::Compact() { impl_->store.Compact(); }

void FakeApiServer::Pause() {
  absl::MutexLock lock(&impl_->mu);
  impl_->paused = true;
}

void FakeApiServer::Resume() {
  std::deque<Impl::Held> held;
  {
    absl::MutexLock lock(&impl_->mu);
    impl_->paused = false;
    held.swap(impl_->held);
  }
  for (Impl::Held& h : held) impl_->Process(h.request, h.api);
}

void FakeApiServer::SetBearerToken(std::string token) {
  absl::MutexLock lock(&impl_->mu);
  impl_->token = std::move(token);
}

std::vector<FakeApiServer::LoggedRequest> FakeApiServer::Requests() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->log;
}

void FakeApiServer::ClearRequests() {
  absl::MutexLock lock(&impl_->mu);
  impl_->log.clear();
}

}  // namespace twinscale::fake_apiserver
