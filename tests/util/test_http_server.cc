// The test HTTP(S) server; see test_http_server.h.
#include "tests/util/test_http_server.h"

#include <arpa/inet.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ssl.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/common/free_port.h"
#include "gtest/gtest.h"

namespace twinscale::testutil {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

class BufferLineWriter : public LineWriter {
 public:
  BufferLineWriter(concurrency::streams::producer_consumer_buffer<uint8_t> buffer, absl::Mutex* mu,
                   const bool* stopping)
      : buffer_(std::move(buffer)), mu_(mu), stopping_(stopping) {}

  void Send(const std::string& line) override {
    const std::string data = line + "\n";
    buffer_.putn_nocopy(reinterpret_cast<const uint8_t*>(data.data()), data.size()).wait();
    buffer_.sync().wait();
  }

  bool Wait(absl::Duration d, const std::function<bool()>& done) override {
    // `done` reads state other threads change without this mutex: poll it in 5 ms slices (about
    // d in all; counting slices keeps wall-clock reads out of the library code, hack/lint.sh).
    const int64_t slices = std::max<int64_t>(1, absl::ToInt64Milliseconds(d) / 5);
    absl::MutexLock lock(mu_);
    for (int64_t i = 0; i < slices && !*stopping_ && !(done && done()); ++i) {
      mu_->AwaitWithTimeout(absl::Condition(stopping_), absl::Milliseconds(5));
    }
    return !*stopping_;
  }

 private:
  concurrency::streams::producer_consumer_buffer<uint8_t> buffer_;
  absl::Mutex* mu_;
  const bool* stopping_;
};

}  // namespace

std::unique_ptr<TestHttpServer> TestHttpServer::Start(Handler handler,
                                                      std::optional<ServerTls> tls) {
  std::unique_ptr<TestHttpServer> server(new TestHttpServer());
  TestHttpServer* self = server.get();
  http_listener_config config;
  if (tls.has_value()) {
    config.set_ssl_context_callback([tls = *tls, self](boost::asio::ssl::context& ctx) {
      ctx.set_options(boost::asio::ssl::context::default_workarounds);
      ctx.use_certificate_chain_file(tls.cert_file);
      ctx.use_private_key_file(tls.key_file, boost::asio::ssl::context::pem);
      if (!tls.client_ca_file.empty()) {
        ctx.load_verify_file(tls.client_ca_file);
        ctx.set_verify_mode(boost::asio::ssl::verify_peer |
                            boost::asio::ssl::verify_fail_if_no_peer_cert);
        // A handler can't see the peer certificate: remember the leaf's subject here.
        ctx.set_verify_callback([self](bool preverified, boost::asio::ssl::verify_context& vc) {
          X509_STORE_CTX* store = vc.native_handle();
          if (preverified && X509_STORE_CTX_get_error_depth(store) == 0) {
            char subject[256] = {0};
            X509_NAME_oneline(X509_get_subject_name(X509_STORE_CTX_get_current_cert(store)),
                              subject, sizeof(subject));
            absl::MutexLock lock(&self->mu_);
            self->client_subject_ = subject;
          }
          return preverified;
        });
      }
    });
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    self->url_ =
        absl::StrCat(tls.has_value() ? "https" : "http", "://127.0.0.1:", FreeTcpPort("127.0.0.1"));
    self->listener_ = std::make_unique<http_listener>(self->url_, config);
    self->listener_->support([self, handler](http::http_request request) {
      RecordedRequest r;
      r.method = request.method();
      r.path = web::uri::decode(request.relative_uri().path());
      for (const auto& [k, v] : web::uri::split_query(request.relative_uri().query())) {
        r.query[web::uri::decode(k)] = web::uri::decode(v);
      }
      for (const auto& [k, v] : request.headers()) r.headers[k] = v;
      r.body = request.extract_utf8string(true).get();
      {
        absl::MutexLock lock(&self->mu_);
        self->requests_.push_back(r);
      }
      handler(request, r);
    });
    try {
      self->listener_->open().wait();
      return server;
    } catch (const std::exception& e) {
      self->listener_.reset();  // the port was taken meanwhile: try another
    }
  }
  ADD_FAILURE() << "could not open a test listener";
  return nullptr;
}

TestHttpServer::~TestHttpServer() {
  std::vector<std::thread> producers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    producers.swap(producers_);
  }
  for (std::thread& t : producers) t.join();
  if (listener_ != nullptr) {
    try {
      listener_->close().wait();
    } catch (const std::exception&) {
    }
  }
}

std::string TestHttpServer::url() const { return url_; }

std::vector<RecordedRequest> TestHttpServer::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::string TestHttpServer::client_subject() const {
  absl::MutexLock lock(&mu_);
  return client_subject_;
}

void TestHttpServer::StreamLines(http::http_request request,
                                 std::function<void(LineWriter& writer)> producer) {
  concurrency::streams::producer_consumer_buffer<uint8_t> buffer;
  http::http_response response(http::status_codes::OK);
  response.headers().add("Content-Type", "application/json");
  response.headers().add("Connection", "close");  // see ReplyJson
  response.set_body(buffer.create_istream());     // no length: sent chunked as it is written
  request.reply(response);
  absl::MutexLock lock(&mu_);
  producers_.emplace_back([this, buffer, producer = std::move(producer)]() mutable {
    BufferLineWriter writer(buffer, &mu_, &stopping_);
    producer(writer);
    buffer.close(std::ios_base::out).wait();
  });
}

void TestHttpServer::ReplyJson(http::http_request request, int status, const std::string& body,
                               const std::map<std::string, std::string>& headers) {
  http::http_response response(static_cast<http::status_code>(status));
  for (const auto& [k, v] : headers) response.headers().add(k, v);
  // The server closes each connection after its answer. Left open, a kept-alive TLS connection
  // that the client closes as the test ends wakes the listener's read with an error, and the
  // listener answers it while close() tears the connection down: a use-after-free inside
  // cpprestsdk's asio listener (microsoft/cpprestsdk#1480, open upstream), about one test in 300
  // (HttpKubeClientTlsTest under --gtest_repeat, in ~TestHttpServer). No connection, no race.
  if (!response.headers().has("Connection")) response.headers().add("Connection", "close");
  response.set_body(body, "application/json");
  request.reply(response);
}

}  // namespace twinscale::testutil
