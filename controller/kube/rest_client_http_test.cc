// HttpKubeClient over real HTTP and HTTPS against a small cpprestsdk server on loopback: what goes
// on the wire (paths, queries, methods, content types, the bearer token), how failed answers map
// to statuses (Kubernetes Status bodies, 409s, Retry-After), timeouts and cancellation, and TLS:
// verification with the right CA succeeds and with a wrong one fails, insecure skips it, a client
// certificate is presented to a server that demands one.
#include <atomic>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/rest_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/prometheus_server.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_http_server.h"
#include "tests/util/test_pki.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testutil::RecordedRequest;
using testutil::ServerTls;
using testutil::TempDir;
using testutil::TestHttpServer;
using testutil::TestPki;

constexpr char kPodJson[] =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"vllm-0","namespace":"ml","resourceVersion":"42"}})";

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
              {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

std::unique_ptr<HttpKubeClient> Client(const ClusterConfig& config, const Clock* clock,
                                       HttpKubeClientOptions options = {}) {
  absl::StatusOr<std::unique_ptr<HttpKubeClient>> c =
      HttpKubeClient::FromConfig(config, clock, options);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

ClusterConfig PlainConfig(const TestHttpServer& server) {
  ClusterConfig c;
  c.server = server.url();
  return c;
}

TEST(HttpKubeClientTest, GetSendsTheTokenAndParsesTheObject) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest&) {
    TestHttpServer::ReplyJson(req, 200, kPodJson);
  });
  ASSERT_NE(server, nullptr);
  ClusterConfig config = PlainConfig(*server);
  config.bearer_token = "s3cret-token";
  ManualClock clock;
  auto client = Client(config, &clock);
  absl::StatusOr<json> pod = client->Get(kPods, "ml", "vllm-0");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ((*pod)["metadata"]["resourceVersion"], "42");
  const std::vector<RecordedRequest> reqs = server->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml/pods/vllm-0");
  EXPECT_EQ(reqs[0].headers.at("Authorization"), "Bearer s3cret-token");
  EXPECT_EQ(reqs[0].headers.at("Accept"), "application/json");
  EXPECT_EQ(reqs[0].headers.at("User-Agent"), "twinscale");
}

TEST(HttpKubeClientTest, ARotatedTokenFileIsSentAfterAMinute) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest&) {
    TestHttpServer::ReplyJson(req, 200, kPodJson);
  });
  ASSERT_NE(server, nullptr);
  TempDir dir("twinscale-kube");
  ClusterConfig config = PlainConfig(*server);
  config.token_file = dir.Write("token", "token-1\n");
  ManualClock clock(absl::FromUnixSeconds(1000));
  auto client = Client(config, &clock);
  ASSERT_TRUE(client->Get(kPods, "ml", "a").ok());
  dir.Write("token", "token-2\n");
  ASSERT_TRUE(client->Get(kPods, "ml", "a").ok());
  clock.Advance(absl::Minutes(1));
  ASSERT_TRUE(client->Get(kPods, "ml", "a").ok());
  const std::vector<RecordedRequest> reqs = server->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].headers.at("Authorization"), "Bearer token-1");
  EXPECT_EQ(reqs[1].headers.at("Authorization"), "Bearer token-1");
  EXPECT_EQ(reqs[2].headers.at("Authorization"), "Bearer token-2");
}

TEST(HttpKubeClientTest, A401RereadsTheTokenFileAndRetriesOnce) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest& r) {
    if (r.headers.at("Authorization") == "Bearer new") {
      TestHttpServer::ReplyJson(req, 200, kPodJson);
    } else {
      TestHttpServer::ReplyJson(req, 401, StatusBody(401, "Unauthorized", "Unauthorized"));
    }
  });
  ASSERT_NE(server, nullptr);
  TempDir dir("twinscale-kube");
  ClusterConfig config = PlainConfig(*server);
  config.token_file = dir.Write("token", "old");
  ManualClock clock;
  auto client = Client(config, &clock);
  EXPECT_EQ(client->Get(kPods, "ml", "a").status().code(), absl::StatusCode::kUnauthenticated);
  dir.Write("token", "new");  // rotated; the clock has not moved
  EXPECT_TRUE(client->Get(kPods, "ml", "a").ok());
}

TEST(HttpKubeClientTest, FailedAnswersMapToStatuses) {
  struct Case {
    std::string name;
    int http;
    std::string body;
    std::map<std::string, std::string> headers;
    absl::StatusCode want;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"not found",
       404,
       StatusBody(404, "NotFound", R"(pods "x" not found)"),
       {},
       absl::StatusCode::kNotFound,
       "NotFound"},
      {"stale write",
       409,
       StatusBody(409, "Conflict", "the object has been modified; please apply your changes"),
       {},
       absl::StatusCode::kAborted,
       "Conflict"},
      {"taken name",
       409,
       StatusBody(409, "AlreadyExists", R"(pods "x" already exists)"),
       {},
       absl::StatusCode::kAlreadyExists,
       "AlreadyExists"},
      {"invalid",
       422,
       StatusBody(422, "Invalid", "spec.replicas: Invalid value: -1"),
       {},
       absl::StatusCode::kInvalidArgument,
       "Invalid"},
      {"forbidden",
       403,
       StatusBody(403, "Forbidden", "cannot get pods"),
       {},
       absl::StatusCode::kPermissionDenied,
       "Forbidden"},
      {"throttled",
       429,
       StatusBody(429, "TooManyRequests", "slow down"),
       {{"Retry-After", "3"}},
       absl::StatusCode::kUnavailable,
       "TooManyRequests"},
      {"a proxy's page",
       503,
       "<html>Service Unavailable</html>",
       {},
       absl::StatusCode::kUnavailable,
       "ServiceUnavailable"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto server = TestHttpServer::Start([&](web::http::http_request req, const RecordedRequest&) {
      TestHttpServer::ReplyJson(req, c.http, c.body, c.headers);
    });
    ASSERT_NE(server, nullptr);
    ManualClock clock;
    auto client = Client(PlainConfig(*server), &clock);
    const absl::Status s = client->Get(kPods, "ml", "x").status();
    EXPECT_EQ(s.code(), c.want) << s;
    EXPECT_EQ(KubeReason(s), c.reason);
    EXPECT_THAT(std::string(s.message()), HasSubstr("/api/v1/namespaces/ml/pods/x"));
    if (c.http == 429) {
      ASSERT_TRUE(RetryAfter(s).has_value());
      EXPECT_EQ(*RetryAfter(s), absl::Seconds(3));
    }
  }
}

TEST(HttpKubeClientTest, ListSendsItsOptionsAndReadsThePage) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest&) {
    TestHttpServer::ReplyJson(
        req, 200,
        R"({"kind":"PodList","metadata":{"resourceVersion":"77","continue":"next-page"},)"
        R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = Client(PlainConfig(*server), &clock);
  ListOptions options;
  options.label_selector = "app=vllm,tier in (a,b)";
  options.field_selector = "status.phase=Running";
  options.limit = 2;
  options.continue_token = "tok/en=";
  absl::StatusOr<ObjectList> list = client->List(kPods, "ml", options);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[1]["metadata"]["name"], "b");
  EXPECT_EQ(list->resource_version, "77");
  EXPECT_EQ(list->continue_token, "next-page");
  const RecordedRequest r = server->requests().at(0);
  EXPECT_EQ(r.path, "/api/v1/namespaces/ml/pods");
  EXPECT_EQ(r.query.at("labelSelector"), "app=vllm,tier in (a,b)");
  EXPECT_EQ(r.query.at("fieldSelector"), "status.phase=Running");
  EXPECT_EQ(r.query.at("limit"), "2");
  EXPECT_EQ(r.query.at("continue"), "tok/en=");
  EXPECT_EQ(r.query.count("resourceVersion"), 0u);
}

TEST(HttpKubeClientTest, WritesUseTheRightMethodsPathsAndContentTypes) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest& r) {
    TestHttpServer::ReplyJson(req, r.method == "POST" ? 201 : 200,
                              r.method == "DELETE" ? StatusBody(200, "", "") : kPodJson);
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = Client(PlainConfig(*server), &clock);
  const json ias = {{"metadata", {{"name", "llama"}, {"resourceVersion", "9"}}},
                    {"status", {{"desiredReplicas", 4}}}};
  ASSERT_TRUE(client->Create(kPods, "ml", json::parse(kPodJson)).ok());
  ASSERT_TRUE(client->Update(kInferenceAutoscalers, "ml", ias, "status").ok());
  ASSERT_TRUE(
      client->MergePatch(kDeployments, "ml", "llama", {{"spec", {{"replicas", 5}}}}, "scale").ok());
  ASSERT_TRUE(client->Delete(kPods, "ml", "vllm-0").ok());
  const std::vector<RecordedRequest> reqs = server->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml/pods");
  EXPECT_EQ(reqs[0].headers.at("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(reqs[0].body), json::parse(kPodJson));
  EXPECT_EQ(reqs[1].method, "PUT");
  EXPECT_EQ(reqs[1].path,
            "/apis/twinscale.io/v1alpha1/namespaces/ml/inferenceautoscalers/llama/status");
  EXPECT_EQ(json::parse(reqs[1].body), ias);  // resourceVersion travels for the precondition
  EXPECT_EQ(reqs[2].method, "PATCH");
  EXPECT_EQ(reqs[2].path, "/apis/apps/v1/namespaces/ml/deployments/llama/scale");
  EXPECT_EQ(reqs[2].headers.at("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(json::parse(reqs[2].body), (json{{"spec", {{"replicas", 5}}}}));
  EXPECT_EQ(reqs[3].method, "DELETE");
  EXPECT_EQ(reqs[3].path, "/api/v1/namespaces/ml/pods/vllm-0");
}

TEST(HttpKubeClientTest, ASuccessThatIsNotJsonIsUnavailable) {
  auto server = TestHttpServer::Start([](web::http::http_request req, const RecordedRequest&) {
    TestHttpServer::ReplyJson(req, 200, "<html>login page</html>");
  });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  auto client = Client(PlainConfig(*server), &clock);
  EXPECT_EQ(client->Get(kPods, "ml", "a").status().code(), absl::StatusCode::kUnavailable);
}

// An answer held back for up to 5 s, or until Release(). The client has given up on it by then
// (a timeout, a shutdown) and closed its connection, so the answer goes to a closed connection;
// Release() waits until it has been written, because a listener closed while it is still being
// written touches the freed connection (cpprestsdk's listener: microsoft/cpprestsdk#1480).
class LateAnswer {
 public:
  void Answer(web::http::http_request req) {
    arrived_ = true;
    for (int i = 0; i < 500 && !release_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    TestHttpServer::ReplyJson(req, 200, kPodJson);
    answered_ = true;
  }
  bool arrived() const { return arrived_; }
  void Release() {
    release_ = true;
    if (!arrived_) return;
    for (int i = 0; i < 500 && !answered_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reply's write
  }

 private:
  std::atomic<bool> arrived_{false}, release_{false}, answered_{false};
};

TEST(HttpKubeClientTest, NoAnswerWithinTheTimeoutIsDeadlineExceeded) {
  LateAnswer late;
  auto server = TestHttpServer::Start(
      [&](web::http::http_request req, const RecordedRequest&) { late.Answer(req); });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  HttpKubeClientOptions options;
  options.request_timeout = absl::Seconds(1);
  auto client = Client(PlainConfig(*server), &clock, options);
  const absl::Status s = client->Get(kPods, "ml", "slow").status();
  late.Release();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(HttpKubeClientTest, ShutdownCancelsARequestInFlight) {
  LateAnswer late;
  auto server = TestHttpServer::Start(
      [&](web::http::http_request req, const RecordedRequest&) { late.Answer(req); });
  ASSERT_NE(server, nullptr);
  ManualClock clock;
  Cancellation shutdown;
  HttpKubeClientOptions options;
  options.shutdown = &shutdown;
  auto client = Client(PlainConfig(*server), &clock, options);
  std::thread canceller([&] {
    while (!late.arrived()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    shutdown.Cancel();
  });
  const absl::Status s = client->Get(kPods, "ml", "a").status();
  canceller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  // And later requests fail at once.
  EXPECT_EQ(client->Get(kPods, "ml", "a").status().code(), absl::StatusCode::kCancelled);
  late.Release();
}

TEST(HttpKubeClientTest, NothingListeningIsUnavailable) {
  ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(testutil::FreePort());
  ManualClock clock;
  auto client = Client(config, &clock);
  EXPECT_EQ(client->Get(kPods, "ml", "a").status().code(), absl::StatusCode::kUnavailable);
}

// ---- TLS ------------------------------------------------------------------------------------

class HttpKubeClientTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("twinscale-kube");
    absl::StatusOr<TestPki> pki = testutil::MakeTestPki(dir_->path());
    pki_error_ = new std::string(pki.ok() ? "" : pki.status().ToString());
    if (pki.ok()) certs_ = new TestPki(*std::move(pki));
  }
  static void TearDownTestSuite() {
    delete certs_;
    delete pki_error_;
    delete dir_;
    certs_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(certs_, nullptr) << *pki_error_; }

  std::unique_ptr<TestHttpServer> Serve(bool require_client_cert) {
    ServerTls tls{certs_->server_crt, certs_->server_key,
                  require_client_cert ? certs_->ca_crt : ""};
    return TestHttpServer::Start(
        [](web::http::http_request req, const RecordedRequest&) {
          TestHttpServer::ReplyJson(req, 200, kPodJson);
        },
        tls);
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  static TempDir* dir_;
  static TestPki* certs_;
  static std::string* pki_error_;
  ManualClock clock_;
};
TempDir* HttpKubeClientTlsTest::dir_ = nullptr;
TestPki* HttpKubeClientTlsTest::certs_ = nullptr;
std::string* HttpKubeClientTlsTest::pki_error_ = nullptr;

TEST_F(HttpKubeClientTlsTest, TheRightCaVerifiesTheServer) {
  auto server = Serve(false);
  ASSERT_NE(server, nullptr);
  ClusterConfig config;
  config.server = server->url();
  config.ca_file = certs_->ca_crt;
  auto client = Client(config, &clock_);
  absl::StatusOr<json> pod = client->Get(kPods, "ml", "vllm-0");
  EXPECT_TRUE(pod.ok()) << pod.status();
  // The same CA given as PEM data (certificate-authority-data).
  config.ca_file.clear();
  config.ca_pem = Read(certs_->ca_crt);
  auto client2 = Client(config, &clock_);
  EXPECT_TRUE(client2->Get(kPods, "ml", "vllm-0").ok());
}

TEST_F(HttpKubeClientTlsTest, AWrongCaFailsAndNoRequestReachesTheServer) {
  auto server = Serve(false);
  ASSERT_NE(server, nullptr);
  ClusterConfig config;
  config.server = server->url();
  config.ca_file = certs_->other_ca_crt;
  auto client = Client(config, &clock_);
  const absl::Status s = client->Get(kPods, "ml", "vllm-0").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(server->requests().empty());
  // insecure-skip-tls-verify accepts the same server.
  config.insecure_skip_tls_verify = true;
  auto insecure = Client(config, &clock_);
  EXPECT_TRUE(insecure->Get(kPods, "ml", "vllm-0").ok());
}

TEST_F(HttpKubeClientTlsTest, AClientCertificateIsPresented) {
  auto server = Serve(true);
  ASSERT_NE(server, nullptr);
  ClusterConfig config;
  config.server = server->url();
  config.ca_file = certs_->ca_crt;
  config.client_cert_file = certs_->client_crt;
  config.client_key_pem = Read(certs_->client_key);  // a file and PEM data, mixed
  auto client = Client(config, &clock_);
  absl::StatusOr<json> pod = client->Get(kPods, "ml", "vllm-0");
  EXPECT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(server->client_subject(), "/CN=twinscale-test-client");
  // Without one, the server refuses the handshake.
  ClusterConfig anonymous;
  anonymous.server = server->url();
  anonymous.ca_file = certs_->ca_crt;
  auto refused = Client(anonymous, &clock_);
  EXPECT_EQ(refused->Get(kPods, "ml", "vllm-0").status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(HttpKubeClientTlsTest, BadTlsMaterialFailsAtCreation) {
  ClusterConfig config;
  config.server = "https://127.0.0.1:1";
  config.ca_file = dir_->Write("not-a-cert.pem", "hello");
  absl::StatusOr<std::unique_ptr<HttpKubeClient>> c = HttpKubeClient::FromConfig(config, &clock_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("not-a-cert.pem"));

  config.ca_file = dir_->path() + "/missing.pem";
  EXPECT_EQ(HttpKubeClient::FromConfig(config, &clock_).status().code(),
            absl::StatusCode::kNotFound);

  // A key that does not belong to the certificate (the server's key with the client's cert).
  config.ca_file = certs_->ca_crt;
  config.client_cert_file = certs_->client_crt;
  config.client_key_file = certs_->server_key;
  c = HttpKubeClient::FromConfig(config, &clock_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("does not match"));
  EXPECT_THAT(std::string(c.status().message()), ::testing::Not(HasSubstr("PRIVATE KEY")));
}

}  // namespace
}  // namespace twinscale::kube
