// The real `twinscale controller` binary in KEDA mode, end to end: two replicas against the fake
// API server (tests/fake_apiserver) with leader election on, both serving KEDA's external scaler
// and the admission API with mutual TLS (certificates made by the openssl CLI), and gRPC clients
// generated from the protos in the role of KEDA and of a gateway. The target's pods are Ready but
// their /metrics can't be read, so the inputs are stale and the leader publishes "hold" (the
// Deployment's 3 replicas). Checks: the leader serves the decision its reconcile pass published;
// the follower answers UNAVAILABLE and its health says NOT_SERVING; on SIGTERM the leader ends
// its open streams with UNAVAILABLE and exits 0 promptly; the follower takes over and serves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/twinscale/v1alpha1/admission.grpc.pb.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/util/controller_harness.h"
#include "tests/util/eventually.h"
#include "tests/util/grpc_test_util.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale {
namespace {

using fake_apiserver::FakeApiServer;
using ::testing::HasSubstr;
using testutil::ControllerProcess;
using testutil::ReadWholeFile;

externalscaler::ScaledObjectRef Ref() {
  externalscaler::ScaledObjectRef ref;
  ref.set_name("llama-3-1-8b");
  ref.set_namespace_("llm");
  (*ref.mutable_scalermetadata())["name"] = "llama-3-1-8b";
  return ref;
}

grpc::Status GetMetrics(externalscaler::ExternalScaler::Stub& stub,
                        externalscaler::GetMetricsResponse* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  externalscaler::GetMetricsRequest req;
  *req.mutable_scaledobjectref() = Ref();
  req.set_metricname("twinscale-desired-replicas");
  return stub.GetMetrics(&ctx, req, out);
}

// Polls until GetMetrics answers OK (the process leads and has decided), up to `timeout`.
grpc::Status WaitForMetrics(externalscaler::ExternalScaler::Stub& stub,
                            externalscaler::GetMetricsResponse* out, std::chrono::seconds timeout) {
  grpc::Status s;
  (void)testutil::Eventually(
      [&] {
        s = GetMetrics(stub, out);
        return s.ok();
      },
      absl::FromChrono(timeout), absl::Milliseconds(200));
  return s;
}

TEST(KedaControllerTest, TheLeaderServesItsDecisionAndTheFollowerTakesOver) {
  const testutil::TempDir tmp("twinscale-keda");
  ASSERT_TRUE(tmp.ok());
  const std::string dir = tmp.path();
  const absl::StatusOr<testutil::TestPki> made = testutil::MakeTestPki(dir);
  ASSERT_TRUE(made.ok()) << made.status();
  const testutil::TestPki& pki = *made;

  FakeApiServer::Options ao;
  ao.crd_files = {"deploy/crds/twinscale.io_inferenceautoscalers.yaml"};
  auto api = FakeApiServer::Start(ao);
  ASSERT_TRUE(api.ok()) << api.status();
  const int dead_port = testutil::FreeLoopbackPort();  // nothing listens: scrapes fail
  ASSERT_TRUE(testutil::SeedStaleFleet(**api, "KEDA", dead_port, /*admission=*/true).ok());
  const std::string kubeconfig = dir + "/kubeconfig";
  testutil::WriteFakeKubeconfig(kubeconfig, (*api)->url());

  auto args_for = [&](int grpc_port) {
    const std::string addr = absl::StrCat("127.0.0.1:", grpc_port);
    return std::vector<std::string>{"--kubeconfig=" + kubeconfig,
                                    "--leader-elect=true",
                                    "--retry-period=500ms",
                                    "--ops-address=127.0.0.1",
                                    absl::StrCat("--ops-port=", testutil::FreeLoopbackPort()),
                                    "--keda-addr=" + addr,
                                    "--admission-addr=" + addr,
                                    "--grpc-tls-cert=" + pki.server_crt,
                                    "--grpc-tls-key=" + pki.server_key,
                                    "--grpc-client-ca=" + pki.ca_crt};
  };
  const std::string ca = ReadWholeFile(pki.ca_crt), cert = ReadWholeFile(pki.client_crt),
                    key = ReadWholeFile(pki.client_key);
  const int port_a = testutil::FreeLoopbackPort();
  auto a = std::make_unique<ControllerProcess>(TWINSCALE_BINARY, dir, "a", args_for(port_a));
  // Connect only once it listens: a client retrying a loopback port nobody listens on yet can
  // connect to itself (TCP simultaneous open, when its ephemeral source port equals the port).
  ASSERT_TRUE(a->WaitForLog("serving gRPC", std::chrono::seconds(20))) << a->Log();
  auto channel_a = testutil::TlsChannel(port_a, ca, cert, key);
  auto keda_a = externalscaler::ExternalScaler::NewStub(channel_a);

  // A leads (the only candidate) and publishes: stale inputs hold at the Deployment's 3.
  externalscaler::GetMetricsResponse m;
  grpc::Status s = WaitForMetrics(*keda_a, &m, std::chrono::seconds(40));
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << a->Log();
  ASSERT_EQ(m.metricvalues_size(), 1);
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 3);
  EXPECT_DOUBLE_EQ(m.metricvalues(0).metricvaluefloat(), 3.0);
  auto adm_a = twinscale::v1alpha1::AdmissionService::NewStub(channel_a);
  {
    grpc::ClientContext ctx;
    twinscale::v1alpha1::GetAdmissionLimitsRequest req;
    req.mutable_target()->set_namespace_("llm");
    req.mutable_target()->set_name("llama-3-1-8b");
    twinscale::v1alpha1::AdmissionLimits limits;
    ASSERT_TRUE(adm_a->GetAdmissionLimits(&ctx, req, &limits).ok());
    EXPECT_TRUE(limits.inputs_stale());
  }
  EXPECT_EQ(testutil::HealthStatus(channel_a, "externalscaler.ExternalScaler"), "SERVING");

  // B starts while A holds the Lease: it serves gRPC, but only to say it is not the leader.
  const int port_b = testutil::FreeLoopbackPort();
  auto b = std::make_unique<ControllerProcess>(TWINSCALE_BINARY, dir, "b", args_for(port_b));
  ASSERT_TRUE(b->WaitForLog("serving gRPC", std::chrono::seconds(20))) << b->Log();
  auto channel_b = testutil::TlsChannel(port_b, ca, cert, key);
  auto keda_b = externalscaler::ExternalScaler::NewStub(channel_b);
  ASSERT_TRUE(testutil::Connects(channel_b, absl::Seconds(20))) << b->Log();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // several election attempts
  s = GetMetrics(*keda_b, &m);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("not the leader"));
  EXPECT_EQ(testutil::HealthStatus(channel_b, "externalscaler.ExternalScaler"), "NOT_SERVING");
  EXPECT_EQ(testutil::HealthStatus(channel_b, ""), "SERVING");

  // KEDA's push scaler has a stream open on A; A gets SIGTERM.
  testutil::StreamReader<externalscaler::IsActiveResponse> stream(
      [&](grpc::ClientContext* ctx) { return keda_a->StreamIsActive(ctx, Ref()); });
  auto first = stream.Next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->result());
  EXPECT_EQ(a->Terminate(std::chrono::seconds(20)), 0) << a->Log();
  auto end = stream.Finished(absl::Seconds(5));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << end->error_message();

  // A released the Lease: B takes over and serves the same answer.
  s = WaitForMetrics(*keda_b, &m, std::chrono::seconds(40));
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << b->Log();
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 3);
  EXPECT_EQ(testutil::HealthStatus(channel_b, "externalscaler.ExternalScaler"), "SERVING");
  EXPECT_EQ(b->Terminate(std::chrono::seconds(20)), 0) << b->Log();
}

}  // namespace
}  // namespace twinscale
