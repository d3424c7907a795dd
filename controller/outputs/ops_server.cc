// The ops endpoints over cpprestsdk's http_listener; see ops_server.h.
#include "controller/outputs/ops_server.h"

#include <cpprest/http_listener.h>

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"

namespace twinscale::outputs {
namespace {

using web::http::http_request;
using web::http::status_code;
using web::http::status_codes;

// Replies and observes the reply's task, so a client that went away can't leave an unobserved
// exception behind (pplx would report it when the task is destroyed).
void Reply(http_request& request, status_code code, const std::string& body,
           const std::string& content_type) {
  web::http::http_response response(code);
  if (request.method() != web::http::methods::HEAD) {
    response.set_body(body, content_type);
  } else {
    response.headers().set_content_type(content_type);
  }
  response.headers().add("Cache-Control", "no-store");
  try {
    request.reply(response).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
  } catch (...) {
  }
}

constexpr char kPlain[] = "text/plain; charset=utf-8";

}  // namespace

class OpsServer::Impl {
 public:
  Impl(const MetricsRegistry& registry, ReadinessCheck readiness, OpsServerOptions options)
      : registry_(registry), readiness_(std::move(readiness)), options_(std::move(options)) {}

  absl::Status Start() {
    if (listener_ != nullptr) return absl::FailedPreconditionError("ops server already started");
    if (options_.port < 1 || options_.port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("ops server: port ", options_.port, " is not in 1..65535"));
    }
    try {
      auto listener =
          std::make_unique<web::http::experimental::listener::http_listener>(web::uri(Url()));
      listener->support([this](http_request request) { Handle(request); });
      listener->open().wait();
      listener_ = std::move(listener);
    } catch (const web::uri_exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("ops server: bad address ", Url(), ": ", e.what()));
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("ops server: can't listen on ", Url(), ": ", e.what()));
    }
    return absl::OkStatus();
  }

  void Stop() {
    if (listener_ == nullptr) return;
    try {
      listener_->close().wait();
    } catch (...) {
    }
    listener_.reset();
  }

  std::string Url() const { return absl::StrCat("http://", options_.address, ":", options_.port); }

 private:
  void Handle(http_request& request) {
    try {
      const std::string path = web::uri::decode(request.relative_uri().path());
      const bool known = path == "/metrics" || path == "/healthz" || path == "/readyz";
      if (!known) {
        Reply(request, status_codes::NotFound, "not found\n", kPlain);
        return;
      }
      if (request.method() != web::http::methods::GET &&
          request.method() != web::http::methods::HEAD) {
        Reply(request, status_codes::MethodNotAllowed, "method not allowed\n", kPlain);
        return;
      }
      if (path == "/metrics") {
        Reply(request, status_codes::OK, registry_.Render(), kPrometheusTextContentType);
      } else if (path == "/healthz") {
        Reply(request, status_codes::OK, "ok\n", kPlain);
      } else {
        const absl::Status ready = CheckReady();
        if (ready.ok()) {
          Reply(request, status_codes::OK, "ok\n", kPlain);
        } else {
          Reply(request, status_codes::ServiceUnavailable,
                absl::StrCat("not ready: ", ready.message(), "\n"), kPlain);
        }
      }
    } catch (const std::exception& e) {
      Reply(request, status_codes::InternalError, absl::StrCat("internal error: ", e.what(), "\n"),
            kPlain);
    }
  }

  absl::Status CheckReady() const {
    if (!readiness_) return absl::OkStatus();
    try {
      return readiness_();
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("readiness check failed: ", e.what()));
    } catch (...) {
      return absl::InternalError("readiness check failed");
    }
  }

  const MetricsRegistry& registry_;
  const ReadinessCheck readiness_;
  const OpsServerOptions options_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

OpsServer::OpsServer(const MetricsRegistry& registry, ReadinessCheck readiness,
                     OpsServerOptions options)
    : impl_(std::make_unique<Impl>(registry, std::move(readiness), std::move(options))) {}

OpsServer::~OpsServer() { Stop(); }

absl::Status OpsServer::Start() { return impl_->Start(); }

void OpsServer::Stop() { impl_->Stop(); }

std::string OpsServer::url() const { return impl_->Url(); }

}  // namespace twinscale::outputs
