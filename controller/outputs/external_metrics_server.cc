// The external metrics API over HTTPS (cpprestsdk's http_listener, boost::asio's TLS): see
// external_metrics_server.h.
#include "controller/outputs/external_metrics_server.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ssl.hpp>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/free_port.h"

namespace twinscale::outputs {
namespace {

namespace listener = web::http::experimental::listener;
namespace ssl = boost::asio::ssl;
using web::http::http_request;

// The PEM texts (and client names) a connection's TLS context is built from.
struct Pems {
  std::string cert, key, client_ca;
  std::vector<std::string> allowed_names;
  // Whether clients must present a certificate (decided by the options, never by whether the CA
  // text happens to be empty: an empty CA must fail, not open the door).
  bool verify_clients = false;
};

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("external metrics server: ", what, " \"", path, "\" can't be read"));
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The subject CN of a certificate ("" when it has none).
std::string CommonName(X509* cert) {
  if (cert == nullptr) return "";
  char buf[256] = {0};
  const int n =
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Configures a connection's (or a check's) TLS context. Throws boost::system::system_error for
// PEM that doesn't load.
void Configure(ssl::context& ctx, const Pems& pems) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  ctx.use_certificate_chain(boost::asio::buffer(pems.cert));
  ctx.use_private_key(boost::asio::buffer(pems.key), ssl::context::pem);
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    throw std::runtime_error("the private key does not match the certificate");
  }
  if (!pems.verify_clients) {
    ctx.set_verify_mode(ssl::verify_none);
    return;
  }
  ctx.add_certificate_authority(boost::asio::buffer(pems.client_ca));
  ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  if (!pems.allowed_names.empty()) {
    ctx.set_verify_callback(
        [allowed_names = pems.allowed_names](bool preverified, ssl::verify_context& vc) {
          if (!preverified) return false;
          X509_STORE_CTX* store = vc.native_handle();
          if (X509_STORE_CTX_get_error_depth(store) != 0) return true;  // a CA of the chain
          const std::string cn = CommonName(X509_STORE_CTX_get_current_cert(store));
          return std::find(allowed_names.begin(), allowed_names.end(), cn) != allowed_names.end();
        });
  }
}

// Reads and checks the files: every one present and PEM, the key matching the certificate.
absl::StatusOr<Pems> LoadPems(const ExternalMetricsServerOptions& o) {
  Pems pems;
  absl::StatusOr<std::string> cert = ReadFile(o.tls_cert_file, "TLS certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(o.tls_key_file, "TLS key");
  if (!key.ok()) return key.status();
  pems.cert = *std::move(cert);
  pems.key = *std::move(key);
  std::string ca_origin = o.client_ca_file;
  if (o.client_trust) {
    absl::StatusOr<ClientTrust> trust = o.client_trust();
    if (!trust.ok()) {
      return absl::Status(
          trust.status().code(),
          absl::StrCat("external metrics server: client trust: ", trust.status().message()));
    }
    pems.client_ca = std::move(trust->ca_pem);
    pems.allowed_names = std::move(trust->allowed_names);
    pems.verify_clients = true;
    ca_origin = "from the cluster";
  } else if (!o.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(o.client_ca_file, "client CA");
    if (!ca.ok()) return ca.status();
    pems.client_ca = *std::move(ca);
    pems.allowed_names = o.allowed_client_names;
    pems.verify_clients = true;
  }
  if (pems.verify_clients &&
      pems.client_ca.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("external metrics server: client CA \"",
                                                   ca_origin, "\": no PEM certificate in it"));
  }
  // Each part alone first, so the message names the file at fault.
  const auto check = [&](const char* what, const std::string& path,
                         const std::function<void(ssl::context&)>& load) -> absl::Status {
    try {
      ssl::context ctx(ssl::context::tls_server);
      load(ctx);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("external metrics server: ", what, " \"", path, "\": ", e.what()));
    }
    return absl::OkStatus();
  };
  absl::Status s = check("TLS certificate", o.tls_cert_file, [&](ssl::context& ctx) {
    ctx.use_certificate_chain(boost::asio::buffer(pems.cert));
  });
  if (s.ok()) {
    s = check("TLS key", o.tls_key_file, [&](ssl::context& ctx) {
      ctx.use_private_key(boost::asio::buffer(pems.key), ssl::context::pem);
    });
  }
  if (s.ok() && pems.verify_clients) {
    s = check("client CA", ca_origin, [&](ssl::context& ctx) {
      ctx.add_certificate_authority(boost::asio::buffer(pems.client_ca));
    });
  }
  if (s.ok()) {
    s = check("TLS key", o.tls_key_file, [&](ssl::context& ctx) { Configure(ctx, pems); });
  }
  if (!s.ok()) return s;
  return pems;
}

// Answers in progress: Stop waits for them before it closes the listener.
struct InFlight {
  absl::Mutex mu;
  int answers ABSL_GUARDED_BY(mu) = 0;
};

// Replies with `Connection: close`, so the listener closes the connection itself once the answer
// is written, and observes the reply's task (a client that went away must not leave an
// unobserved exception behind); `in_flight` counts the answer until it is written or has failed.
//
// Why close: cpprestsdk's listener keeps an idle connection reading, and when a client drops it
// without a TLS close_notify (cpprestsdk's own client does) the read fails as a truncated stream,
// which the listener answers with a 400 written from a task thread. http_listener::close() closes
// the sockets from the caller's thread without synchronising with that write, and the two
// together crash inside boost::asio (epoll_reactor::start_op on a socket being closed). With no
// idle connection left open there is no such write; the aggregator opens a connection per query
// (one every 15 s per HPA), which costs a TLS handshake and nothing else.
void Reply(http_request& request, const HttpAnswer& answer,
           const std::shared_ptr<InFlight>& in_flight) {
  web::http::http_response response(static_cast<web::http::status_code>(answer.code));
  response.set_body(answer.body, "application/json");
  response.headers().add("Cache-Control", "no-store");
  response.headers().add("Connection", "close");
  auto done = [in_flight] {
    absl::MutexLock lock(&in_flight->mu);
    --in_flight->answers;
  };
  {
    absl::MutexLock lock(&in_flight->mu);
    ++in_flight->answers;
  }
  try {
    request.reply(response).then([done](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
      done();
    });
  } catch (...) {
    done();
  }
}

}  // namespace

class ExternalMetricsServer::Impl {
 public:
  static constexpr absl::Duration kAnswerGrace = absl::Seconds(5);

  Impl(const ExternalMetricsApi* api, ExternalMetricsServerOptions options, const Clock* clock)
      : api_(api), options_(std::move(options)), clock_(clock) {}

  absl::Status Start() {
    if (listener_ != nullptr) {
      return absl::FailedPreconditionError("external metrics server already started");
    }
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "external metrics server: a TLS certificate and key are required (the aggregator "
          "speaks only HTTPS)");
    }
    const int trust_sources = int{!options_.client_ca_file.empty()} +
                              int{options_.client_trust != nullptr} +
                              int{options_.insecure_skip_client_verify};
    if (trust_sources == 0) {
      return absl::InvalidArgumentError(
          "external metrics server: a client CA is required to check the aggregator's client "
          "certificate (the cluster's requestheader CA), or insecure_skip_client_verify to "
          "accept any client");
    }
    if (trust_sources > 1) {
      return absl::InvalidArgumentError(
          "external metrics server: a client CA file, a client trust source and "
          "insecure_skip_client_verify contradict each other: give one");
    }
    if (!options_.allowed_client_names.empty() && options_.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "external metrics server: allowed client names need a client CA file");
    }
    const size_t colon = options_.address.rfind(':');
    int requested_port = -1;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(options_.address.substr(colon + 1), &requested_port) ||
        requested_port < 0 || requested_port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("external metrics server: address \"",
                                                     options_.address,
                                                     "\" is not host:port (e.g. 0.0.0.0:6443)"));
    }
    host_ = options_.address.substr(0, colon);
    absl::StatusOr<Pems> pems = LoadPems(options_);
    if (!pems.ok()) return pems.status();
    {
      absl::MutexLock lock(&mu_);
      pems_ = *std::move(pems);
      loaded_at_ = clock_->Now();
    }

    listener::http_listener_config config;
    config.set_ssl_context_callback([this](ssl::context& ctx) { ConfigureConnection(ctx); });
    std::string last_error;
    // A port picked by FreeTcpPort can be taken before the listener binds it: retry.
    for (int attempt = 0; attempt < 8; ++attempt) {
      const int port = requested_port != 0 ? requested_port : FreeTcpPort(host_);
      if (port == 0) {
        last_error = "no free port";
        continue;
      }
      const std::string url = absl::StrCat("https://", host_, ":", port);
      try {
        auto l = std::make_unique<listener::http_listener>(web::uri(url + "/"), config);
        l->support([this](http_request request) { Handle(request); });
        l->open().wait();
        listener_ = std::move(l);
        port_ = port;
        break;
      } catch (const web::uri_exception& e) {
        return absl::InvalidArgumentError(
            absl::StrCat("external metrics server: bad address ", url, ": ", e.what()));
      } catch (const std::exception& e) {
        last_error = e.what();
        if (requested_port != 0) break;
      }
    }
    if (listener_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("external metrics server: can't listen on ",
                                                 options_.address, ": ", last_error));
    }
    return absl::OkStatus();
  }

  void Stop() {
    if (listener_ == nullptr) return;
    // Answers still being written would race the close (see Reply); a client that stopped
    // reading cannot hold the shutdown longer than kAnswerGrace.
    {
      absl::MutexLock lock(&in_flight_->mu);
      in_flight_->mu.AwaitWithTimeout(
          absl::Condition(
              +[](int* answers) { return *answers == 0; }, &in_flight_->answers),
          kAnswerGrace);
    }
    try {
      listener_->close().wait();
    } catch (...) {
    }
    listener_.reset();
  }

  int port() const { return port_; }
  std::string Url() const { return absl::StrCat("https://", host_, ":", port_); }
  absl::Status last_reload_error() const {
    absl::MutexLock lock(&mu_);
    return reload_error_;
  }

 private:
  // Runs for every new connection (cpprestsdk builds a TLS context per connection). Never
  // throws: a context left without a certificate fails that connection's handshake.
  void ConfigureConnection(ssl::context& ctx) {
    Pems pems;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time now = clock_->Now();
      if (now - loaded_at_ >= options_.cert_refresh_interval) {
        loaded_at_ = now;
        absl::StatusOr<Pems> fresh = LoadPems(options_);
        if (fresh.ok()) {
          pems_ = *std::move(fresh);
          reload_error_ = absl::OkStatus();
        } else {
          reload_error_ = fresh.status();
        }
      }
      pems = pems_;
    }
    try {
      Configure(ctx, pems);
    } catch (...) {
    }
  }

  void Handle(http_request& request) {
    try {
      const web::uri uri = request.relative_uri();
      Reply(request, api_->Handle(request.method(), uri.path(), uri.query()), in_flight_);
    } catch (const std::exception& e) {
      Reply(request,
            KubernetesStatusAnswer(absl::InternalError(absl::StrCat("internal error: ", e.what()))),
            in_flight_);
    }
  }

  const ExternalMetricsApi* const api_;
  const ExternalMetricsServerOptions options_;
  const Clock* const clock_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<listener::http_listener> listener_;
  // Shared with the reply tasks, which may finish after a Stop that gave up waiting.
  const std::shared_ptr<InFlight> in_flight_ = std::make_shared<InFlight>();

  mutable absl::Mutex mu_;
  Pems pems_ ABSL_GUARDED_BY(mu_);
  absl::Time loaded_at_ ABSL_GUARDED_BY(mu_);
  absl::Status reload_error_ ABSL_GUARDED_BY(mu_);
};

ExternalMetricsServer::ExternalMetricsServer(const ExternalMetricsApi* api,
                                             ExternalMetricsServerOptions options,
                                             const Clock* clock)
    : impl_(std::make_unique<Impl>(api, std::move(options), clock)) {}

ExternalMetricsServer::~ExternalMetricsServer() { Stop(); }

absl::Status ExternalMetricsServer::Start() { return impl_->Start(); }
void ExternalMetricsServer::Stop() { impl_->Stop(); }
int ExternalMetricsServer::port() const { return impl_->port(); }
std::string ExternalMetricsServer::url() const { return impl_->Url(); }
absl::Status ExternalMetricsServer::last_reload_error() const { return impl_->last_reload_error(); }

}  // namespace twinscale::outputs
