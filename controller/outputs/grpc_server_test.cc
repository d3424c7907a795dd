// The gRPC server's transport security (TLS and mutual TLS with certificates made by the openssl
// CLI at test time, as KEDA's enableTLS / caCert / tlsClientCert expect them), certificate
// rotation without a restart, option checks, the health service and leadership, and a shutdown
// that returns promptly while streams are open.
#include "controller/outputs/grpc_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "controller/outputs/admission_service.h"
#include "controller/outputs/keda_scaler.h"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/twinscale/v1alpha1/admission.grpc.pb.h"
#include "tests/util/eventually.h"
#include "tests/util/grpc_test_util.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale::outputs {
namespace {

using ::testing::HasSubstr;
using testutil::ReadWholeFile;
using testutil::StreamReader;

PublishedDecision KedaDecision(int32_t desired, int32_t current) {
  PublishedDecision d;
  d.mode = api::Mode::kKeda;
  d.desired_replicas = desired;
  d.current_replicas = current;
  return d;
}

externalscaler::ScaledObjectRef Ref() {
  externalscaler::ScaledObjectRef ref;
  ref.set_name("vllm");
  ref.set_namespace_("llm");
  (*ref.mutable_scalermetadata())["name"] = "llama";
  return ref;
}

// A GetMetrics call over `channel`: OK with the value, or the error.
grpc::Status CallGetMetrics(const std::shared_ptr<grpc::Channel>& channel, int64_t* value) {
  auto stub = externalscaler::ExternalScaler::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  externalscaler::GetMetricsRequest req;
  *req.mutable_scaledobjectref() = Ref();
  externalscaler::GetMetricsResponse resp;
  grpc::Status s = stub->GetMetrics(&ctx, req, &resp);
  if (s.ok() && resp.metricvalues_size() == 1) *value = resp.metricvalues(0).metricvalue();
  return s;
}

// Replaces `to` with `from` in one rename, as a Secret volume's atomic symlink swap does.
void ReplaceFile(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".new";
  std::filesystem::copy_file(from, tmp, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(tmp, to);
}

class GrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    absl::StatusOr<testutil::TestPki> pki = testutil::MakeTestPki(dir_.path());
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = *std::move(pki);
    board_.Publish("llm", "llama", KedaDecision(6, 4));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  GrpcServerOptions Tls(bool mutual) {
    GrpcServerOptions o;
    o.address = "127.0.0.1:0";
    // The server reads its own copies, so a test can rotate them.
    o.tls_cert_file = dir_.File("serving.crt");
    o.tls_key_file = dir_.File("serving.key");
    std::filesystem::copy_file(pki_.server_crt, o.tls_cert_file,
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(pki_.server_key, o.tls_key_file,
                               std::filesystem::copy_options::overwrite_existing);
    if (mutual) o.client_ca_file = pki_.ca_crt;
    o.shutdown_grace = absl::Seconds(1);
    return o;
  }
  absl::Status StartServer(GrpcServerOptions o) {
    server_ = std::make_unique<GrpcServer>(std::move(o), &clock_);
    server_->AddService(keda_.service(), KedaScaler::kServiceName);
    server_->AddService(admission_.service(), AdmissionService::kServiceName);
    return server_->Start();
  }
  std::string Pem(const std::string& path) { return ReadWholeFile(path); }

  testutil::TempDir dir_{"twinscale-grpc"};
  testutil::TestPki pki_;
  RealClock clock_;
  DecisionBoard board_;
  KedaScaler keda_{&board_};
  AdmissionService admission_{&board_};
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(GrpcServerTest, TlsServesClientsThatTrustItsCaOnly) {
  ASSERT_TRUE(StartServer(Tls(/*mutual=*/false)).ok());
  const int port = server_->port();
  int64_t value = 0;
  // KEDA with enableTLS and caCert = the CA that signed the server's certificate.
  ASSERT_TRUE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt)), &value).ok());
  EXPECT_EQ(value, 6);
  // A client certificate is not asked for, and doesn't hurt.
  EXPECT_TRUE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt), Pem(pki_.client_crt),
                                                  Pem(pki_.client_key)),
                             &value)
                  .ok());
  // A client trusting another CA, and a plaintext client, get nothing.
  EXPECT_EQ(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.other_ca_crt)), &value).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(CallGetMetrics(testutil::PlaintextChannel(port), &value).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(GrpcServerTest, MutualTlsRequiresAClientCertificateFromTheClientCa) {
  ASSERT_TRUE(StartServer(Tls(/*mutual=*/true)).ok());
  const int port = server_->port();
  int64_t value = 0;
  // KEDA's TriggerAuthentication: caCert, tlsClientCert, tlsClientKey.
  ASSERT_TRUE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt), Pem(pki_.client_crt),
                                                  Pem(pki_.client_key)),
                             &value)
                  .ok());
  EXPECT_EQ(value, 6);
  // No client certificate: the handshake fails.
  EXPECT_FALSE(testutil::Connects(testutil::TlsChannel(port, Pem(pki_.ca_crt)), absl::Seconds(3)));
  EXPECT_NE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt)), &value).error_code(),
            grpc::StatusCode::OK);
  // A client certificate from another CA: fails too.
  EXPECT_NE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt), Pem(pki_.other_client_crt),
                                                Pem(pki_.other_client_key)),
                           &value)
                .error_code(),
            grpc::StatusCode::OK);
}

TEST_F(GrpcServerTest, ARotatedCertificateIsServedWithoutARestart) {
  GrpcServerOptions o = Tls(/*mutual=*/false);
  o.cert_refresh_interval = absl::Seconds(1);
  const std::string cert = o.tls_cert_file, key = o.tls_key_file;
  ASSERT_TRUE(StartServer(o).ok());
  const int port = server_->port();
  int64_t value = 0;
  ASSERT_TRUE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt)), &value).ok());
  ASSERT_FALSE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.other_ca_crt)), &value).ok());

  // cert-manager renews the Secret with a certificate from another CA.
  ReplaceFile(pki_.other_server_key, key);
  ReplaceFile(pki_.other_server_crt, cert);
  const bool rotated = testutil::Eventually(  // the provider re-reads every second
      [&] {
        return CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.other_ca_crt)), &value).ok();
      },
      absl::Seconds(10), absl::Milliseconds(250));
  EXPECT_TRUE(rotated) << "the new certificate was not served within 10 s";
  EXPECT_FALSE(CallGetMetrics(testutil::TlsChannel(port, Pem(pki_.ca_crt)), &value).ok());
}

TEST_F(GrpcServerTest, OptionsAndCertificateFilesAreCheckedAtStart) {
  struct Case {
    std::string why;
    std::function<void(GrpcServerOptions&)> change;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {"neither TLS files nor plaintext",
       [](GrpcServerOptions& o) { o.tls_cert_file = o.tls_key_file = ""; },
       absl::StatusCode::kInvalidArgument, "plaintext explicitly"},
      {"plaintext together with TLS files", [](GrpcServerOptions& o) { o.plaintext = true; },
       absl::StatusCode::kInvalidArgument, "choose one"},
      {"a certificate file that doesn't exist",
       [this](GrpcServerOptions& o) { o.tls_cert_file = dir_.File("missing.crt"); },
       absl::StatusCode::kInvalidArgument, "missing.crt: cannot be read"},
      {"a key that isn't the certificate's",
       [this](GrpcServerOptions& o) { o.tls_key_file = pki_.other_server_key; },
       absl::StatusCode::kInvalidArgument, "does not match the certificate"},
      {"a certificate file holding a key",
       [this](GrpcServerOptions& o) { o.tls_cert_file = pki_.server_key; },
       absl::StatusCode::kInvalidArgument, "no PEM certificate"},
      {"a client CA that isn't PEM",
       [this](GrpcServerOptions& o) {
         std::ofstream(dir_.File("garbage.crt")) << "not a certificate\n";
         o.client_ca_file = dir_.File("garbage.crt");
       },
       absl::StatusCode::kInvalidArgument, "garbage.crt: no PEM certificate"},
      {"a refresh interval under a second",
       [](GrpcServerOptions& o) { o.cert_refresh_interval = absl::Milliseconds(100); },
       absl::StatusCode::kInvalidArgument, "at least 1s"},
      {"an address that can't be bound",
       [](GrpcServerOptions& o) { o.address = "203.0.113.1:0"; },  // TEST-NET-3: not ours
       absl::StatusCode::kUnavailable, "cannot listen on 203.0.113.1:0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    GrpcServerOptions o = Tls(false);
    c.change(o);
    GrpcServer server(o, &clock_);
    const absl::Status s = server.Start();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST_F(GrpcServerTest, APortInUseIsRefusedNotShared) {
  GrpcServerOptions o;
  o.address = "127.0.0.1:0";
  o.plaintext = true;
  ASSERT_TRUE(StartServer(o).ok());
  GrpcServerOptions same = o;
  same.address = "127.0.0.1:" + std::to_string(server_->port());
  GrpcServer second(same, &clock_);
  const absl::Status s = second.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST_F(GrpcServerTest, HealthReportsTheServerAndEachServiceByLeadership) {
  GrpcServerOptions o;
  o.address = "127.0.0.1:0";
  o.plaintext = true;
  ASSERT_TRUE(StartServer(o).ok());
  auto channel = testutil::PlaintextChannel(server_->port());
  EXPECT_EQ(testutil::HealthStatus(channel, ""), "SERVING");
  EXPECT_EQ(testutil::HealthStatus(channel, "externalscaler.ExternalScaler"), "SERVING");
  EXPECT_EQ(testutil::HealthStatus(channel, "twinscale.v1alpha1.AdmissionService"), "SERVING");
  EXPECT_EQ(testutil::HealthStatus(channel, "no.such.Service"), "NOT_FOUND");
  server_->SetServing(false);                                 // a follower
  EXPECT_EQ(testutil::HealthStatus(channel, ""), "SERVING");  // alive all the same
  EXPECT_EQ(testutil::HealthStatus(channel, "externalscaler.ExternalScaler"), "NOT_SERVING");
  EXPECT_EQ(testutil::HealthStatus(channel, "twinscale.v1alpha1.AdmissionService"), "NOT_SERVING");
  server_->SetServing(true);
  EXPECT_EQ(testutil::HealthStatus(channel, "externalscaler.ExternalScaler"), "SERVING");
}

TEST_F(GrpcServerTest, ShutdownWithOpenStreamsReturnsPromptly) {
  GrpcServerOptions o = Tls(/*mutual=*/true);
  o.shutdown_grace = absl::Seconds(1);
  ASSERT_TRUE(StartServer(o).ok());
  auto channel = testutil::TlsChannel(server_->port(), Pem(pki_.ca_crt), Pem(pki_.client_crt),
                                      Pem(pki_.client_key));
  auto keda = externalscaler::ExternalScaler::NewStub(channel);
  auto adm = twinscale::v1alpha1::AdmissionService::NewStub(channel);
  std::vector<std::unique_ptr<StreamReader<externalscaler::IsActiveResponse>>> actives;
  for (int i = 0; i < 4; ++i) {
    actives.push_back(std::make_unique<StreamReader<externalscaler::IsActiveResponse>>(
        [&](grpc::ClientContext* ctx) { return keda->StreamIsActive(ctx, Ref()); }));
    ASSERT_TRUE(actives.back()->Next().has_value());
  }
  StreamReader<externalscaler::GetMetricSpecResponse> spec(
      [&](grpc::ClientContext* ctx) { return keda->StreamMetricSpec(ctx, Ref()); });
  ASSERT_TRUE(spec.Next().has_value());
  StreamReader<twinscale::v1alpha1::AdmissionLimitsEvent> watch([&](grpc::ClientContext* ctx) {
    return adm->WatchAdmissionLimits(ctx, twinscale::v1alpha1::WatchAdmissionLimitsRequest());
  });
  ASSERT_TRUE(watch.Next().has_value());

  // Shutdown cancels the streams at the 1 s deadline; a hang would block here forever, so wait
  // for it on another thread with a generous bound.
  auto done = std::async(std::launch::async, [this] { server_->Shutdown(); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "Shutdown hung with streams open";
  for (auto& a : actives) {
    auto end = a->Finished();
    ASSERT_TRUE(end.has_value());
    EXPECT_NE(end->error_code(), grpc::StatusCode::OK);
  }
  ASSERT_TRUE(watch.Finished().has_value());
  ASSERT_TRUE(spec.Finished().has_value());
  server_->Shutdown();  // idempotent
}

TEST_F(GrpcServerTest, LosingLeadershipFirstEndsStreamsAtOnceSoShutdownNeedsNoGrace) {
  GrpcServerOptions o;
  o.address = "127.0.0.1:0";
  o.plaintext = true;
  o.shutdown_grace = absl::Seconds(20);  // long: the streams must not be what ends at the deadline
  ASSERT_TRUE(StartServer(o).ok());
  auto keda = externalscaler::ExternalScaler::NewStub(testutil::PlaintextChannel(server_->port()));
  StreamReader<externalscaler::IsActiveResponse> active(
      [&](grpc::ClientContext* ctx) { return keda->StreamIsActive(ctx, Ref()); });
  ASSERT_TRUE(active.Next().has_value());
  // What `twinscale controller` does on SIGTERM: the controller stops leading, then the server
  // shuts down.
  board_.SetServing(false);
  auto end = active.Finished();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  auto done = std::async(std::launch::async, [this] { server_->Shutdown(); });
  EXPECT_EQ(done.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "Shutdown waited for its grace although no call was open";
}

}  // namespace
}  // namespace twinscale::outputs
