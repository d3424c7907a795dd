// Channels, the stream reader and the health client: see grpc_test_util.h.
#include "tests/util/grpc_test_util.h"

#include <grpcpp/security/credentials.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace twinscale::testutil {
namespace {

gpr_timespec DeadlineIn(absl::Duration d) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(absl::ToInt64Milliseconds(d), GPR_TIMESPAN));
}

}  // namespace

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// Tests start servers and clients together: retry a refused connection quickly, not with gRPC's
// default backoff (1 s growing to 2 min). The "min" backoff is also the time a connection attempt
// (TCP and TLS handshake) may take, so it stays generous.
grpc::ChannelArguments QuickReconnect() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return args;
}

}  // namespace

std::shared_ptr<grpc::Channel> PlaintextChannel(int port) {
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), QuickReconnect());
}

std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& ca_pem,
                                          const std::string& client_cert_pem,
                                          const std::string& client_key_pem) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ca_pem;
  o.pem_cert_chain = client_cert_pem;
  o.pem_private_key = client_key_pem;
  // A fresh channel per call (no subchannel sharing), so a test that rotates certificates sees a
  // new handshake.
  grpc::ChannelArguments args = QuickReconnect();
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port), grpc::SslCredentials(o), args);
}

bool Connects(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout) {
  return channel->WaitForConnected(DeadlineIn(timeout));
}

std::string HealthStatus(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(DeadlineIn(absl::Seconds(10)));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) {
    switch (s.error_code()) {
      case grpc::StatusCode::NOT_FOUND:
        return "NOT_FOUND";
      case grpc::StatusCode::UNAVAILABLE:
        return "UNAVAILABLE";
      default:
        return absl::StrCat("error ", s.error_code(), ": ", s.error_message());
    }
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
}

}  // namespace twinscale::testutil
