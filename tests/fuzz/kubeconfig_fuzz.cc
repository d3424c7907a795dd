// Fuzzes the kubeconfig parser and the context resolution (controller/kube/cluster_config.h): any
// bytes must give a Kubeconfig or a clear error, never a crash or a hang. A configuration that
// resolves must name an http(s) server and come with both halves of a client certificate or
// neither.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/strings/match.h"
#include "controller/kube/cluster_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  const auto parsed = twinscale::kube::ParseKubeconfig(yaml, "/fuzz/dir/kubeconfig");
  if (!parsed.ok()) return 0;
  std::vector<std::string> contexts = {""};
  for (const auto& [name, context] : parsed->contexts) contexts.push_back(name);
  for (const std::string& name : contexts) {
    const auto config = twinscale::kube::ClusterConfigFromKubeconfig(*parsed, name);
    if (!config.ok()) continue;
    const bool has_cert = !config->client_cert_file.empty() || !config->client_cert_pem.empty();
    const bool has_key = !config->client_key_file.empty() || !config->client_key_pem.empty();
    if (!(absl::StartsWith(config->server, "https://") ||
          absl::StartsWith(config->server, "http://")) ||
        has_cert != has_key) {
      abort();  // resolution accepted a configuration that breaks its own contract
    }
  }
  return 0;
}
