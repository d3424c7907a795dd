// The controller's gRPC server: credentials, health, shutdown with a deadline. See grpc_server.h.
#include "controller/outputs/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace twinscale::outputs {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": cannot be read"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;

Bio MemBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The files FileWatcherCertificateProvider will load, checked now: it only logs when they are bad,
// and every handshake would then fail with nothing but "handshake failed" on the client.
absl::Status CheckCertificateFiles(const GrpcServerOptions& o) {
  auto cert_text = ReadFile(o.tls_cert_file, "TLS certificate");
  if (!cert_text.ok()) return cert_text.status();
  auto key_text = ReadFile(o.tls_key_file, "TLS private key");
  if (!key_text.ok()) return key_text.status();
  Bio cert_bio = MemBio(*cert_text);
  std::unique_ptr<X509, X509Deleter> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS certificate ", o.tls_cert_file, ": no PEM certificate in it"));
  }
  Bio key_bio = MemBio(*key_text);
  std::unique_ptr<EVP_PKEY, KeyDeleter> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS private key ", o.tls_key_file, ": no unencrypted PEM private key in it"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TLS private key ", o.tls_key_file, " does not match the certificate ", o.tls_cert_file));
  }
  if (!o.client_ca_file.empty()) {
    auto ca_text = ReadFile(o.client_ca_file, "client CA");
    if (!ca_text.ok()) return ca_text.status();
    Bio ca_bio = MemBio(*ca_text);
    std::unique_ptr<X509, X509Deleter> ca(
        PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr));
    if (ca == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("client CA ", o.client_ca_file, ": no PEM certificate in it"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const GrpcServerOptions& o) {
  const bool any_file =
      !o.tls_cert_file.empty() || !o.tls_key_file.empty() || !o.client_ca_file.empty();
  if (o.plaintext) {
    if (any_file) {
      return absl::InvalidArgumentError(
          "plaintext was asked for together with TLS files: choose one");
    }
    return grpc::InsecureServerCredentials();
  }
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate and a key file (or ask for plaintext explicitly)");
  }
  if (o.cert_refresh_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError("the certificate refresh interval must be at least 1s");
  }
  if (absl::Status s = CheckCertificateFiles(o); !s.ok()) return s;
  const auto refresh = static_cast<unsigned int>(
      std::min<int64_t>(absl::ToInt64Seconds(o.cert_refresh_interval), 24 * 3600));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      o.tls_key_file, o.tls_cert_file, o.client_ca_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (!o.client_ca_file.empty()) {
    tls.watch_root_certs();
    tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::experimental::TlsServerCredentials(tls);
  if (creds == nullptr) return absl::InvalidArgumentError("cannot build the TLS credentials");
  return creds;
}

}  // namespace

class GrpcServer::Impl {
 public:
  Impl(GrpcServerOptions options, const Clock* clock)
      : options_(std::move(options)), clock_(clock) {}

  void AddService(grpc::Service* service, std::string name) {
    absl::MutexLock lock(&mu_);
    services_.emplace_back(service, std::move(name));
  }

  absl::Status Start() {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("the gRPC server was already started");
    auto creds = Credentials(options_);
    if (!creds.ok()) return creds.status();
    // Process-wide in gRPC: every server built from here on gets grpc.health.v1.Health.
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    // A port in use is an error, not a port shared with another process (gRPC's default on Linux
    // is SO_REUSEPORT).
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(options_.address, *creds, &port_);
    for (auto& [service, name] : services_) builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      server_.reset();
      port_ = 0;
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.address,
                                                 " (a bad address, or the port is taken)"));
    }
    started_ = true;
    ApplyHealth();
    return absl::OkStatus();
  }

  void SetServing(bool serving) {
    absl::MutexLock lock(&mu_);
    serving_ = serving;
    if (server_ != nullptr) ApplyHealth();
  }

  void Shutdown() {
    std::unique_ptr<grpc::Server> server;
    {
      absl::MutexLock lock(&mu_);
      server = std::move(server_);
    }
    if (server == nullptr) return;
    // The deadline on the controller's Clock (the only reader of wall time), as gRPC's realtime.
    const absl::Time deadline = clock_->Now() + options_.shutdown_grace;
    const int64_t nanos = absl::ToUnixNanos(deadline);
    gpr_timespec ts;
    ts.tv_sec = nanos / 1000000000;
    ts.tv_nsec = static_cast<int32_t>(nanos % 1000000000);
    ts.clock_type = GPR_CLOCK_REALTIME;
    // Cancels what is still running at the deadline; our streams finish on cancel (OnCancel), so
    // this returns by then.
    server->Shutdown(ts);
    server->Wait();
  }

  int port() const {
    absl::MutexLock lock(&mu_);
    return port_;
  }

 private:
  void ApplyHealth() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
    if (health == nullptr) return;
    health->SetServingStatus("", true);
    for (const auto& [service, name] : services_) health->SetServingStatus(name, serving_);
  }

  const GrpcServerOptions options_;
  const Clock* const clock_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<grpc::Service*, std::string>> services_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool serving_ ABSL_GUARDED_BY(mu_) = true;
  int port_ ABSL_GUARDED_BY(mu_) = 0;
};

GrpcServer::GrpcServer(GrpcServerOptions options, const Clock* clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}
GrpcServer::~GrpcServer() { Shutdown(); }
void GrpcServer::AddService(grpc::Service* service, std::string name) {
  impl_->AddService(service, std::move(name));
}
absl::Status GrpcServer::Start() { return impl_->Start(); }
void GrpcServer::SetServing(bool serving) { impl_->SetServing(serving); }
void GrpcServer::Shutdown() { impl_->Shutdown(); }
int GrpcServer::port() const { return impl_->port(); }

}  // namespace twinscale::outputs
