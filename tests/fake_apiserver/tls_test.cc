// HTTPS, mutual TLS and bearer tokens (rule 9), so the operator's client can be tested for CA
// verification, client certificates and token auth. Certificates are made with the openssl CLI in
// a temporary directory (tests/util/test_pki.h); the tests skip when openssl is missing.
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/fake_apiserver/fake_apiserver.h"
#include "tests/fake_apiserver/test_http.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_pki.h"

namespace twinscale::fake_apiserver {
namespace {

using nlohmann::json;
using testing::HttpResult;
using testing::Request;
using testing::TlsClientConfig;

TlsClientConfig Trusting(const std::string& ca) {
  TlsClientConfig c;
  c.ca_file = ca;
  return c;
}

TlsClientConfig WithCertificate(const std::string& ca, const std::string& cert,
                                const std::string& key) {
  TlsClientConfig c = Trusting(ca);
  c.cert_file = cert;
  c.key_file = key;
  return c;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testutil::TestPki> pki = testutil::MakeTestPki(dir_.path());
    if (absl::IsFailedPrecondition(pki.status())) GTEST_SKIP() << pki.status();
    ASSERT_TRUE(pki.ok()) << pki.status();
    certs_ = *std::move(pki);
  }

  std::unique_ptr<FakeApiServer> Start(FakeApiServer::Options o) {
    auto s = FakeApiServer::Start(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  testutil::TempDir dir_{"ts_fake_apiserver"};
  testutil::TestPki certs_;
};

TEST_F(TlsTest, ServesHttpsThatVerifiesAgainstItsCa) {
  FakeApiServer::Options o;
  o.tls_cert_file = certs_.server_crt;
  o.tls_key_file = certs_.server_key;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(absl::StartsWith(server->url(), "https://127.0.0.1:")) << server->url();

  HttpResult trusted =
      Request(server->url(), "GET", "/version", "", "", {}, Trusting(certs_.ca_crt));
  EXPECT_EQ(trusted.code, 200) << trusted.error;
  // Without our CA the client's verification fails: the certificate really is checked.
  HttpResult untrusted = Request(server->url(), "GET", "/version");
  EXPECT_EQ(untrusted.code, 0);
  EXPECT_FALSE(untrusted.error.empty());
  // Plain HTTP to the TLS port gets no answer.
  HttpResult plain = Request("http://127.0.0.1:" + std::to_string(server->port()), "GET",
                             "/version", "", "", {}, {}, absl::Seconds(2));
  EXPECT_NE(plain.code, 200);
}

TEST_F(TlsTest, RequiresAClientCertificateSignedByTheClientCa) {
  FakeApiServer::Options o;
  o.tls_cert_file = certs_.server_crt;
  o.tls_key_file = certs_.server_key;
  o.client_ca_file = certs_.ca_crt;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);

  HttpResult with_cert =
      Request(server->url(), "GET", "/apis/apps/v1/namespaces/default/deployments", "", "", {},
              WithCertificate(certs_.ca_crt, certs_.client_crt, certs_.client_key));
  EXPECT_EQ(with_cert.code, 200) << with_cert.error;
  EXPECT_EQ(with_cert.json["kind"], "DeploymentList");

  HttpResult without_cert =
      Request(server->url(), "GET", "/version", "", "", {}, Trusting(certs_.ca_crt));
  EXPECT_EQ(without_cert.code, 0) << "the handshake must fail without a client certificate";

  HttpResult foreign_cert =
      Request(server->url(), "GET", "/version", "", "", {},
              WithCertificate(certs_.ca_crt, certs_.other_client_crt, certs_.other_client_key));
  EXPECT_EQ(foreign_cert.code, 0) << "a certificate from another CA must be refused";
}

TEST_F(TlsTest, WatchesStreamOverMutualTls) {
  FakeApiServer::Options o;
  o.tls_cert_file = certs_.server_crt;
  o.tls_key_file = certs_.server_key;
  o.client_ca_file = certs_.ca_crt;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  const TlsClientConfig tls = WithCertificate(certs_.ca_crt, certs_.client_crt, certs_.client_key);
  testing::WatchReader watch(server->url(), "/api/v1/namespaces/default/pods?watch=1", tls);
  ASSERT_EQ(watch.Code(), 200);
  ASSERT_TRUE(server->WaitForWatches(1, absl::Seconds(5)));
  ASSERT_TRUE(server->Put("/api/v1/namespaces/default/pods/p", json::object()).ok());
  auto e = watch.Next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)["type"], "ADDED");
}

TEST_F(TlsTest, RefusesUnreadableCertificateFiles) {
  FakeApiServer::Options o;
  o.tls_cert_file = dir_.File("missing.crt");
  o.tls_key_file = certs_.server_key;
  auto s = FakeApiServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.status().message(), "missing.crt")) << s.status();

  FakeApiServer::Options half;
  half.tls_cert_file = certs_.server_crt;
  EXPECT_EQ(FakeApiServer::Start(half).status().code(), absl::StatusCode::kInvalidArgument);
}

// Tokens need no certificates; this suite has no SetUp requirement.
TEST(BearerTokenTest, ChecksTheTokenOnEveryRequest) {
  FakeApiServer::Options o;
  o.bearer_token = "s3cret";
  auto s = FakeApiServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string url = (*s)->url();

  HttpResult none = Request(url, "GET", "/api/v1/namespaces/default/pods");
  EXPECT_EQ(none.code, 401);
  EXPECT_EQ(none.json, json({{"kind", "Status"},
                             {"apiVersion", "v1"},
                             {"metadata", json::object()},
                             {"status", "Failure"},
                             {"message", "Unauthorized"},
                             {"reason", "Unauthorized"},
                             {"code", 401}}));
  EXPECT_EQ(Request(url, "GET", "/version", "", "", {{"Authorization", "Bearer wrong"}}).code, 401);
  EXPECT_EQ(Request(url, "GET", "/version", "", "", {{"Authorization", "s3cret"}}).code, 401);
  EXPECT_EQ(Request(url, "GET", "/version", "", "", {{"Authorization", "Bearer s3cret"}}).code,
            200);

  // A rotated token (projected service-account tokens rotate): the old one stops working.
  (*s)->SetBearerToken("rotated");
  EXPECT_EQ(Request(url, "GET", "/version", "", "", {{"Authorization", "Bearer s3cret"}}).code,
            401);
  EXPECT_EQ(Request(url, "GET", "/version", "", "", {{"Authorization", "Bearer rotated"}}).code,
            200);
}

}  // namespace
}  // namespace twinscale::fake_apiserver
