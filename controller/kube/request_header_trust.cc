// The aggregator's client trust from kube-system/extension-apiserver-authentication: see
// request_header_trust.h.
#include "controller/kube/request_header_trust.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/resource_ref.h"

namespace twinscale::kube {

absl::StatusOr<AggregatorClientTrust> AggregatorClientTrustFromConfigMap(
    const nlohmann::json& configmap) {
  const nlohmann::json* data = nullptr;
  if (configmap.is_object() && configmap.contains("data") && configmap["data"].is_object()) {
    data = &configmap["data"];
  }
  if (data == nullptr || !data->contains("requestheader-client-ca-file")) {
    return absl::FailedPreconditionError(absl::StrCat(
        kAuthenticationConfigMapNamespace, "/", kAuthenticationConfigMapName,
        " has no data.requestheader-client-ca-file: the kube-apiserver runs without "
        "--requestheader-client-ca-file (no aggregation layer), so no aggregator can be checked; "
        "give the CA as a file (--external-metrics-client-ca)"));
  }
  AggregatorClientTrust trust;
  const nlohmann::json& ca = (*data)["requestheader-client-ca-file"];
  if (!ca.is_string() || !absl::StrContains(ca.get<std::string>(), "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(
        "data.requestheader-client-ca-file: not a PEM certificate bundle");
  }
  trust.ca_pem = ca.get<std::string>();
  if (data->contains("requestheader-allowed-names")) {
    const nlohmann::json& raw = (*data)["requestheader-allowed-names"];
    const nlohmann::json names =
        raw.is_string() ? nlohmann::json::parse(raw.get<std::string>(), nullptr, false) : raw;
    if (!names.is_array()) {
      return absl::InvalidArgumentError(
          "data.requestheader-allowed-names: not a JSON list of names (e.g. "
          "[\"front-proxy-client\"])");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (!names[i].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("data.requestheader-allowed-names[", i, "]: not a string"));
      }
      trust.allowed_names.push_back(names[i].get<std::string>());
    }
  }
  return trust;
}

RequestHeaderTrust::RequestHeaderTrust(KubeClient* client, Options options)
    : client_(client), options_(std::move(options)) {}

RequestHeaderTrust::~RequestHeaderTrust() { Stop(); }

absl::StatusOr<AggregatorClientTrust> RequestHeaderTrust::Read() {
  absl::StatusOr<nlohmann::json> cm =
      client_->Get(kConfigMaps, kAuthenticationConfigMapNamespace, kAuthenticationConfigMapName);
  if (!cm.ok()) {
    return absl::Status(cm.status().code(),
                        absl::StrCat("reading ConfigMap ", kAuthenticationConfigMapNamespace, "/",
                                     kAuthenticationConfigMapName, ": ", cm.status().message()));
  }
  return AggregatorClientTrustFromConfigMap(*cm);
}

absl::Status RequestHeaderTrust::Start() {
  if (refresher_.joinable()) return absl::FailedPreconditionError("already started");
  absl::StatusOr<AggregatorClientTrust> first = Read();
  if (!first.ok()) return first.status();
  {
    absl::MutexLock lock(&mu_);
    current_ = *std::move(first);
  }
  refresher_ = std::thread([this] {
    while (stop_.WaitFor(options_.refresh_interval)) {
      absl::StatusOr<AggregatorClientTrust> next = Read();
      if (!next.ok()) {
        if (options_.on_error) options_.on_error(next.status());
        continue;
      }
      absl::MutexLock lock(&mu_);
      current_ = *std::move(next);
    }
  });
  return absl::OkStatus();
}

void RequestHeaderTrust::Stop() {
  stop_.Cancel();
  if (refresher_.joinable()) refresher_.join();
}

AggregatorClientTrust RequestHeaderTrust::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

}  // namespace twinscale::kube
