// Test helpers: HTTP over cpprestsdk, watch reading, commands; see test_http.h.
#include "tests/fake_apiserver/test_http.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "tests/util/shell.h"

namespace twinscale::fake_apiserver::testing {
namespace {

namespace http = web::http;
using nlohmann::json;

http::client::http_client_config ClientConfig(const TlsClientConfig& tls, absl::Duration timeout) {
  http::client::http_client_config config;
  config.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
  if (!tls.ca_file.empty() || !tls.cert_file.empty()) {
    config.set_ssl_context_callback([tls](boost::asio::ssl::context& ctx) {
      if (!tls.ca_file.empty()) ctx.load_verify_file(tls.ca_file);
      if (!tls.cert_file.empty()) {
        ctx.use_certificate_chain_file(tls.cert_file);
        ctx.use_private_key_file(tls.key_file, boost::asio::ssl::context::pem);
      }
    });
  }
  return config;
}

}  // namespace

HttpResult Request(const std::string& base_url, const std::string& method,
                   const std::string& path_and_query, const std::string& body,
                   const std::string& content_type,
                   const std::map<std::string, std::string>& headers, const TlsClientConfig& tls,
                   absl::Duration timeout) {
  HttpResult out;
  try {
    http::client::http_client client(base_url, ClientConfig(tls, timeout));
    http::http_request request(method);
    request.set_request_uri(path_and_query);
    for (const auto& [name, value] : headers) request.headers().add(name, value);
    if (!body.empty()) request.set_body(body, content_type);
    http::http_response response = client.request(request).get();
    out.code = response.status_code();
    for (const auto& [name, value] : response.headers()) {
      out.headers[absl::AsciiStrToLower(name)] = value;
    }
    const std::vector<unsigned char> bytes = response.extract_vector().get();
    out.body.assign(bytes.begin(), bytes.end());
    out.json = json::parse(out.body, nullptr, false);
  } catch (const std::exception& e) {
    out.code = 0;
    out.error = e.what();
  }
  return out;
}

// ---- WatchReader ------------------------------------------------------------------------------

struct WatchReader::Cancel {
  pplx::cancellation_token_source source;
};

WatchReader::WatchReader(const std::string& base_url, const std::string& path_and_query,
                         const TlsClientConfig& tls)
    : cancel_(std::make_shared<Cancel>()) {
  thread_ =
      std::thread([this, base_url, path_and_query, tls] { Run(base_url, path_and_query, tls); });
}

WatchReader::~WatchReader() {
  cancel_->source.cancel();
  if (thread_.joinable()) thread_.join();
}

void WatchReader::Run(std::string base_url, std::string path, TlsClientConfig tls) {
  try {
    http::client::http_client client(base_url, ClientConfig(tls, absl::Seconds(60)));
    http::http_request request(http::methods::GET);
    request.set_request_uri(path);
    http::http_response response = client.request(request, cancel_->source.get_token()).get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      code_ = response.status_code();
      headers_ = true;
    }
    cv_.notify_all();
    if (response.status_code() != http::status_codes::OK) {
      const std::vector<unsigned char> bytes = response.extract_vector().get();
      std::lock_guard<std::mutex> lock(mu_);
      error_body_.assign(bytes.begin(), bytes.end());
      ended_ = true;
      cv_.notify_all();
      return;
    }
    concurrency::streams::istream stream = response.body();
    while (true) {
      concurrency::streams::container_buffer<std::string> line;
      const size_t n = stream.read_line(line).get();
      if (n == 0 && stream.is_eof()) break;
      const std::string text = line.collection();
      if (text.empty()) continue;
      json event = json::parse(text, nullptr, false);
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(event));
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  headers_ = true;
  cv_.notify_all();
}

int WatchReader::Code(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] { return headers_; });
  return code_;
}

std::optional<json> WatchReader::Next(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
               [&] { return !events_.empty() || ended_; });
  if (events_.empty()) return std::nullopt;
  json e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool WatchReader::WaitEnd(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] { return ended_; });
}

bool WatchReader::EndedWithError() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::string WatchReader::ErrorBody() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_body_;
}

// ---- Commands and files -------------------------------------------------------------------------

CommandResult Run(const std::string& command) {
  twinscale::testutil::ShellResult r = twinscale::testutil::RunShell(command);
  return {r.exit_code, std::move(r.out)};
}

bool HaveProgram(const std::string& program) {
  return Run(absl::StrCat("command -v ", program, " >/dev/null")).exit_code == 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace twinscale::fake_apiserver::testing
