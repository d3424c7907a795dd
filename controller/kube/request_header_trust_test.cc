// The aggregator's client trust as the kube-apiserver publishes it in
// kube-system/extension-apiserver-authentication (the keys and the JSON-list form of the allowed
// names as a kubeadm cluster writes them), read from the in-memory FakeKubeClient: parsing and
// its errors, the first read's errors (missing ConfigMap, no RBAC), and refreshes that pick up a
// rotated CA and keep the last good answer on failure.
#include "controller/kube/request_header_trust.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/strings/match.h"
#include "controller/kube/resource_ref.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/util/eventually.h"

namespace twinscale::kube {
namespace {

using fakes::FakeKubeClient;
using nlohmann::json;

constexpr char kCa1[] = "-----BEGIN CERTIFICATE-----\nMIIB1\n-----END CERTIFICATE-----\n";
constexpr char kCa2[] = "-----BEGIN CERTIFICATE-----\nMIIB2\n-----END CERTIFICATE-----\n";

json ConfigMap(json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "extension-apiserver-authentication"}}},
          {"data", std::move(data)}};
}

TEST(AggregatorClientTrustTest, ReadsTheCaAndTheAllowedNames) {
  // As kubeadm writes it (client-ca-file, the request header names and so on besides).
  auto t = AggregatorClientTrustFromConfigMap(
      ConfigMap({{"client-ca-file", kCa2},
                 {"requestheader-client-ca-file", kCa1},
                 {"requestheader-allowed-names", "[\"front-proxy-client\"]"},
                 {"requestheader-username-headers", "[\"X-Remote-User\"]"}}));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ca_pem, kCa1);
  EXPECT_EQ(t->allowed_names, std::vector<std::string>{"front-proxy-client"});

  auto any = AggregatorClientTrustFromConfigMap(
      ConfigMap({{"requestheader-client-ca-file", kCa1}, {"requestheader-allowed-names", "[]"}}));
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_TRUE(any->allowed_names.empty());
  auto absent =
      AggregatorClientTrustFromConfigMap(ConfigMap({{"requestheader-client-ca-file", kCa1}}));
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_TRUE(absent->allowed_names.empty());
}

TEST(AggregatorClientTrustTest, BadContentsNameTheKey) {
  struct Case {
    std::string name;
    json configmap;
    absl::StatusCode code;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no aggregation layer", ConfigMap({{"client-ca-file", kCa1}}),
       absl::StatusCode::kFailedPrecondition, "--external-metrics-client-ca"},
      {"no data at all",
       {{"kind", "ConfigMap"}},
       absl::StatusCode::kFailedPrecondition,
       "no data.requestheader-client-ca-file"},
      {"a CA that is not PEM", ConfigMap({{"requestheader-client-ca-file", "MIIB"}}),
       absl::StatusCode::kInvalidArgument, "data.requestheader-client-ca-file"},
      {"names that are not a JSON list",
       ConfigMap({{"requestheader-client-ca-file", kCa1},
                  {"requestheader-allowed-names", "front-proxy-client"}}),
       absl::StatusCode::kInvalidArgument, "data.requestheader-allowed-names"},
      {"a name that is not a string",
       ConfigMap({{"requestheader-client-ca-file", kCa1}, {"requestheader-allowed-names", "[1]"}}),
       absl::StatusCode::kInvalidArgument, "data.requestheader-allowed-names[0]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto t = AggregatorClientTrustFromConfigMap(c.configmap);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), c.code) << t.status();
    EXPECT_TRUE(absl::StrContains(t.status().message(), c.want)) << t.status();
  }
}

TEST(RequestHeaderTrustTest, StartFailsClearlyWithoutTheConfigMapOrItsRbac) {
  FakeKubeClient fake;
  RequestHeaderTrust missing(&fake, {});
  absl::Status s = missing.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "kube-system/extension-apiserver-authentication"))
      << s;

  ASSERT_TRUE(
      fake.Create(kConfigMaps, "kube-system", ConfigMap({{"requestheader-client-ca-file", kCa1}}))
          .ok());
  fake.SetInterceptor([](const FakeKubeClient::Request& r) -> absl::Status {
    return r.resource == kConfigMaps ? absl::PermissionDeniedError("configmaps is forbidden")
                                     : absl::OkStatus();
  });
  RequestHeaderTrust forbidden(&fake, {});
  s = forbidden.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
}

TEST(RequestHeaderTrustTest, RefreshesPickUpARotatedCaAndKeepTheLastGoodOne) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kConfigMaps, "kube-system",
                          ConfigMap({{"requestheader-client-ca-file", kCa1},
                                     {"requestheader-allowed-names", "[\"a\"]"}}))
                  .ok());
  std::atomic<int> errors{0};
  RequestHeaderTrust::Options o;
  o.refresh_interval = absl::Milliseconds(20);
  o.on_error = [&](const absl::Status&) { ++errors; };
  RequestHeaderTrust trust(&fake, o);
  ASSERT_TRUE(trust.Start().ok());
  EXPECT_EQ(trust.Current().ca_pem, kCa1);

  ASSERT_TRUE(fake.MergePatch(kConfigMaps, "kube-system", "extension-apiserver-authentication",
                              {{"data", {{"requestheader-client-ca-file", kCa2}}}})
                  .ok());
  const bool rotated =
      testutil::Eventually([&] { return trust.Current().ca_pem == kCa2; }, absl::Seconds(5));
  EXPECT_TRUE(rotated);
  EXPECT_EQ(trust.Current().allowed_names, std::vector<std::string>{"a"});

  // Broken now: the last good answer stays, and each failure is reported.
  ASSERT_TRUE(fake.MergePatch(kConfigMaps, "kube-system", "extension-apiserver-authentication",
                              {{"data", {{"requestheader-client-ca-file", "garbage"}}}})
                  .ok());
  (void)testutil::Eventually([&] { return errors.load() >= 2; }, absl::Seconds(5));
  EXPECT_GE(errors.load(), 2);
  EXPECT_EQ(trust.Current().ca_pem, kCa2);
  trust.Stop();
}

}  // namespace
}  // namespace twinscale::kube
