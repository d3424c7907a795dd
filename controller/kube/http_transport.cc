// HTTP(S) to the API server over cpprestsdk; see http_transport.h.
#include "controller/kube/http_transport.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <exception>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/common/status_macros.h"
#include "controller/kube/token_source.h"

namespace twinscale::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// The PEM texts the TLS context is built from (files already read).
struct TlsMaterial {
  std::string ca_pem;    // empty: the system's trust store
  std::string cert_pem;  // empty: no client certificate
  std::string key_pem;
};

// Configures a TLS context: trust exactly the configured CA (not the system store: a cluster CA
// signs the server; a public CA must not be able to impersonate it), present the client
// certificate. Throws boost::system::system_error on bad PEM (checked once by CheckTls).
void ApplyTls(const TlsMaterial& m, boost::asio::ssl::context& ctx) {
  if (!m.ca_pem.empty()) {
    SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
    ctx.add_certificate_authority(boost::asio::buffer(m.ca_pem));
  }
  if (!m.cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(m.cert_pem));
    ctx.use_private_key(boost::asio::buffer(m.key_pem), boost::asio::ssl::context::pem);
  }
}

absl::Status CheckTls(const TlsMaterial& m, const ClusterConfig& c) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23);
  const auto bad = [](std::string_view what, const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(what), ": ", e.what()));
  };
  if (!m.ca_pem.empty()) {
    try {
      SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
      ctx.add_certificate_authority(boost::asio::buffer(m.ca_pem));
    } catch (const std::exception& e) {
      return bad(absl::StrCat("CA ", c.ca_pem.empty() ? c.ca_file : "certificate-authority-data",
                              " is not a PEM certificate"),
                 e);
    }
  }
  if (!m.cert_pem.empty()) {
    try {
      ctx.use_certificate_chain(boost::asio::buffer(m.cert_pem));
    } catch (const std::exception& e) {
      return bad(
          absl::StrCat("client certificate ",
                       c.client_cert_pem.empty() ? c.client_cert_file : "client-certificate-data",
                       " is not a PEM certificate"),
          e);
    }
    const std::string key_name = c.client_key_pem.empty() ? c.client_key_file : "client-key-data";
    try {
      // OpenSSL also refuses here a key that does not belong to the certificate.
      ctx.use_private_key(boost::asio::buffer(m.key_pem), boost::asio::ssl::context::pem);
    } catch (const std::exception&) {
      // Which of the two it was: does the key load on its own? (OpenSSL's own text is not
      // quoted: say only where the key came from.)
      boost::asio::ssl::context alone(boost::asio::ssl::context::sslv23);
      try {
        alone.use_private_key(boost::asio::buffer(m.key_pem), boost::asio::ssl::context::pem);
      } catch (const std::exception&) {
        return absl::InvalidArgumentError(
            absl::StrCat("client key ", key_name, " is not a PEM private key"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("client key ", key_name, " does not match the client certificate"));
    }
    if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("client key ", key_name, " does not match the client certificate"));
    }
  }
  return absl::OkStatus();
}

// PEM text from a field or, failing that, a file.
absl::StatusOr<std::string> PemFrom(const std::string& pem, const std::string& file) {
  if (!pem.empty() || file.empty()) return pem;
  return ReadFileToString(file);
}

bool IsTimeout(const std::error_code& ec) {
  return ec == std::errc::timed_out || ec.value() == static_cast<int>(std::errc::timed_out);
}

// The status for the exception being handled (call only inside a catch block).
absl::Status CurrentFailure(std::string_view context, bool cancelled, absl::Duration timeout) {
  if (cancelled) return absl::CancelledError(absl::StrCat(Sv(context), ": cancelled"));
  try {
    throw;
  } catch (const http::http_exception& e) {
    if (IsTimeout(e.error_code())) {
      return absl::DeadlineExceededError(absl::StrCat(
          Sv(context), ": no answer within ", absl::FormatDuration(timeout), " (", e.what(), ")"));
    }
    return absl::UnavailableError(absl::StrCat(Sv(context), ": ", e.what()));
  } catch (const pplx::task_canceled&) {
    return absl::CancelledError(absl::StrCat(Sv(context), ": cancelled"));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(Sv(context), ": ", e.what()));
  } catch (...) {
    return absl::UnknownError(absl::StrCat(Sv(context), ": unknown failure"));
  }
}

bool IsTimeoutException() {
  try {
    throw;
  } catch (const http::http_exception& e) {
    return IsTimeout(e.error_code());
  } catch (...) {
    return false;
  }
}

std::chrono::milliseconds Millis(absl::Duration d) {
  return std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

}  // namespace

struct HttpTransport::Impl {
  Impl(const ClusterConfig& c, const Clock* clock, HttpTransportOptions o)
      : server(c.server),
        tokens(c.bearer_token, c.token_file, clock, o.token_refresh),
        options(std::move(o)) {}

  // A request with the standard headers and the current token.
  absl::StatusOr<http::http_request> Build(std::string_view method, const std::string& path,
                                           const std::string* body, std::string_view content_type) {
    TS_ASSIGN_OR_RETURN(const std::string token, tokens.Token());
    http::http_request req{std::string(method)};
    req.set_request_uri(web::uri(path));
    req.headers().add("Accept", "application/json");
    req.headers().add("User-Agent", options.user_agent);
    if (!token.empty()) req.headers().add("Authorization", absl::StrCat("Bearer ", token));
    if (body != nullptr) req.set_body(*body, std::string(content_type));
    return req;
  }

  absl::StatusOr<HttpAnswer> SendOnce(std::string_view method, const std::string& path,
                                      const std::string* body, std::string_view content_type,
                                      Cancellation* cancel) {
    const std::string context = absl::StrCat(Sv(method), " ", server, path);
    pplx::cancellation_token_source cts;
    ScopedCancelCallback on_cancel(options.shutdown, cancel, [cts] { cts.cancel(); });
    try {
      TS_ASSIGN_OR_RETURN(http::http_request req, Build(method, path, body, content_type));
      http::http_response r = client->request(req, cts.get_token()).get();
      HttpAnswer answer;
      answer.status_code = r.status_code();
      answer.body = r.extract_utf8string(/*ignore_content_type=*/true).get();
      if (auto h = r.headers().find("Retry-After"); h != r.headers().end()) {
        answer.retry_after = h->second;
      }
      return answer;
    } catch (...) {
      return CurrentFailure(context, cts.get_token().is_canceled(), options.request_timeout);
    }
  }

  std::string server;
  web::uri base_uri;
  client::http_client_config config;
  std::unique_ptr<client::http_client> client;
  TokenSource tokens;
  HttpTransportOptions options;
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpTransport::~HttpTransport() = default;

const std::string& HttpTransport::server() const { return impl_->server; }

absl::StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Create(const ClusterConfig& config,
                                                                     const Clock* clock,
                                                                     HttpTransportOptions options) {
  TlsMaterial tls;
  TS_ASSIGN_OR_RETURN(tls.ca_pem, PemFrom(config.ca_pem, config.ca_file));
  TS_ASSIGN_OR_RETURN(tls.cert_pem, PemFrom(config.client_cert_pem, config.client_cert_file));
  TS_ASSIGN_OR_RETURN(tls.key_pem, PemFrom(config.client_key_pem, config.client_key_file));
  if (tls.cert_pem.empty() != tls.key_pem.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key (and a key its certificate)");
  }
  TS_RETURN_IF_ERROR(CheckTls(tls, config));

  auto impl = std::make_unique<Impl>(config, clock, std::move(options));
  try {
    impl->base_uri = web::uri(config.server);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("API server address \"", config.server, "\" is not a URL: ", e.what()));
  }
  if (impl->base_uri.scheme() != "https" && impl->base_uri.scheme() != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("API server address \"", config.server, "\" is not http(s)"));
  }
  impl->config.set_timeout(Millis(impl->options.request_timeout));
  impl->config.set_validate_certificates(!config.insecure_skip_tls_verify);
  impl->config.set_ssl_context_callback(
      [tls](boost::asio::ssl::context& ctx) { ApplyTls(tls, ctx); });
  try {
    impl->client = std::make_unique<client::http_client>(impl->base_uri, impl->config);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make an HTTP client for ", config.server, ": ", e.what()));
  }
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

absl::StatusOr<HttpAnswer> HttpTransport::Send(std::string_view method,
                                               const std::string& path_and_query,
                                               const std::string* body,
                                               std::string_view content_type,
                                               Cancellation* cancel) {
  TS_ASSIGN_OR_RETURN(HttpAnswer answer,
                      impl_->SendOnce(method, path_and_query, body, content_type, cancel));
  if (answer.status_code == 401 && impl_->tokens.HasFile()) {
    impl_->tokens.Invalidate();
    return impl_->SendOnce(method, path_and_query, body, content_type, cancel);
  }
  return answer;
}

absl::StatusOr<HttpAnswer> HttpTransport::StreamLines(
    const std::string& path_and_query, absl::Duration idle_timeout,
    const std::function<bool(std::string_view)>& on_line, Cancellation* cancel) {
  const std::string context = absl::StrCat("GET ", impl_->server, path_and_query);
  pplx::cancellation_token_source cts;
  ScopedCancelCallback on_cancel(impl_->options.shutdown, cancel, [cts] { cts.cancel(); });
  bool streaming = false;  // the 200 header arrived: failures from here on end the stream
  bool stopped = false;    // on_line asked to stop
  try {
    // Its own client: the timeout is per client configuration, and a watch needs a long one.
    client::http_client_config config = impl_->config;
    config.set_timeout(Millis(idle_timeout));
    client::http_client stream_client(impl_->base_uri, config);
    TS_ASSIGN_OR_RETURN(http::http_request req, impl_->Build("GET", path_and_query, nullptr, ""));
    http::http_response r = stream_client.request(req, cts.get_token()).get();
    if (r.status_code() != 200) {
      if (r.status_code() == 401 && impl_->tokens.HasFile()) impl_->tokens.Invalidate();
      HttpAnswer answer;
      answer.status_code = r.status_code();
      answer.body = r.extract_utf8string(/*ignore_content_type=*/true).get();
      if (auto h = r.headers().find("Retry-After"); h != r.headers().end()) {
        answer.retry_after = h->second;
      }
      return answer;
    }
    streaming = true;
    concurrency::streams::istream in = r.body();
    while (true) {
      concurrency::streams::container_buffer<std::vector<uint8_t>> buf;
      in.read_line(buf).get();
      const std::vector<uint8_t>& bytes = buf.collection();
      if (bytes.empty()) {
        if (in.is_eof()) break;
        continue;  // a blank line
      }
      const std::string_view line(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (!on_line(line)) {
        stopped = true;
        cts.cancel();  // close the connection rather than drain it
        break;
      }
    }
    return HttpAnswer{200, "", ""};
  } catch (...) {
    const bool cancelled = cts.get_token().is_canceled() && !stopped;
    if (streaming && !cancelled && (stopped || IsTimeoutException())) {
      // Silent for longer than the inactivity timeout: the normal end of an idle watch.
      return HttpAnswer{200, "", ""};
    }
    return CurrentFailure(context, cancelled, idle_timeout);
  }
}

}  // namespace twinscale::kube
