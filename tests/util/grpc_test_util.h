// Helpers for tests of twinscale's gRPC servers: client channels (plaintext, TLS, mutual TLS; the
// certificates from test_pki.h), a server-stream reader that waits with a timeout, and the
// standard health-check client (grpc/health/v1/health.proto, generated for tests).
#ifndef TWINSCALE_TESTS_UTIL_GRPC_TEST_UTIL_H_
#define TWINSCALE_TESTS_UTIL_GRPC_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace twinscale::testutil {

// A TCP port on 127.0.0.1 that was free a moment ago (for a child process that must be told its
// port; in-process servers should listen on port 0 instead).
int FreeLoopbackPort();

std::string ReadWholeFile(const std::string& path);

// Channels to 127.0.0.1:port.
std::shared_ptr<grpc::Channel> PlaintextChannel(int port);
// TLS, trusting `ca_pem` (contents, not a path); with a client certificate when both are set.
std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& ca_pem,
                                          const std::string& client_cert_pem = "",
                                          const std::string& client_key_pem = "");

// Whether the channel connects within `timeout` (the TLS handshake included).
bool Connects(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout);

// The health service's answer for `service` ("" = the server), e.g. "SERVING", "NOT_SERVING",
// or the error's code name ("NOT_FOUND" for an unknown service, "UNAVAILABLE" ...).
std::string HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service);

// Reads a server stream on its own thread so a test can wait for the next message with a
// timeout. Construct with a started call: StreamReader<Resp> r([&](grpc::ClientContext* ctx) {
// return stub->StreamX(ctx, request); }).
template <typename Response>
class StreamReader {
 public:
  using Starter =
      std::function<std::unique_ptr<grpc::ClientReader<Response>>(grpc::ClientContext*)>;
  explicit StreamReader(Starter start) {
    reader_ = start(&ctx_);
    thread_ = std::thread([this] {
      Response r;
      while (reader_->Read(&r)) {
        absl::MutexLock lock(&mu_);
        messages_.push_back(r);
      }
      grpc::Status s = reader_->Finish();
      absl::MutexLock lock(&mu_);
      status_ = s;
    });
  }
  ~StreamReader() {
    ctx_.TryCancel();
    thread_.join();
  }
  // The next message, or nullopt if none arrives within `timeout` (or the stream ended).
  std::optional<Response> Next(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !messages_.empty() || status_.has_value();
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    if (messages_.empty()) return std::nullopt;
    Response r = messages_.front();
    messages_.pop_front();
    return r;
  }
  // The stream's final status, once it ends within `timeout`.
  std::optional<grpc::Status> Finished(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return status_.has_value(); };
    mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
    return status_;
  }
  // Messages received and not yet taken.
  size_t Buffered() {
    absl::MutexLock lock(&mu_);
    return messages_.size();
  }
  void Cancel() { ctx_.TryCancel(); }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<Response>> reader_;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<Response> messages_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_GRPC_TEST_UTIL_H_
