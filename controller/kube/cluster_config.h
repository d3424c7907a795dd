// Where the API server is and how to authenticate to it: from kubeconfig files (local runs, as
// kubectl reads them) or from the pod's service account (in the cluster).
//
// Kubeconfig support (docs/architecture.md "Kubernetes plumbing"): several files (a KUBECONFIG
// list) merged by kubectl's rules; paths inside a file relative to that file's directory; clusters
// with certificate-authority(-data) and insecure-skip-tls-verify; users with token, tokenFile or
// client-certificate(-data) + client-key(-data); the context's namespace. Users that authenticate
// through an `exec` credential plugin, an `auth-provider`, a username/password or impersonation are
// refused with a message that names the user and says what to use instead: twinscale runs
// unattended in the cluster and does not run credential plugins.
//
// Errors: InvalidArgument "file:line: what" for a bad file (yaml-cpp's 0-based marks plus one),
// NotFound when no file could be read or a named context/cluster/user is missing,
// FailedPrecondition for a refused user or (in-cluster) a missing service account.
// The ClusterConfig holds secrets (the token, the key): nothing here logs or prints them.
#ifndef TWINSCALE_CONTROLLER_KUBE_CLUSTER_CONFIG_H_
#define TWINSCALE_CONTROLLER_KUBE_CLUSTER_CONFIG_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace twinscale::kube {

// Everything HttpKubeClient needs. For each of CA, client certificate and key, a file path or the
// PEM text itself (the text wins when both are set, as in kubectl).
struct ClusterConfig {
  std::string server;  // "https://10.0.0.1:443"; a path prefix is kept
  std::string ca_file;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;  // never verify the server (tests, kind clusters only)
  std::string bearer_token;               // a fixed token, or
  std::string token_file;  // a file re-read every minute (wins over bearer_token once read)
  std::string client_cert_file;
  std::string client_cert_pem;
  std::string client_key_file;
  std::string client_key_pem;
  std::string default_namespace = "default";  // the context's namespace / the pod's own
  std::string source;  // where this came from, for messages: "kubeconfig context \"kind\""
};

// ---- kubeconfig -----------------------------------------------------------------------------

// One file's entries. Paths are already resolved against the file's directory; -data fields are
// base64-decoded. `location` is "file:line" of the entry, for messages.
struct KubeconfigCluster {
  std::string server;
  std::string certificate_authority;
  std::string certificate_authority_data;
  bool insecure_skip_tls_verify = false;
  // Set when the cluster needs a connection option twinscale does not implement: "tls-server-name",
  // "proxy-url" (refused rather than ignored: the connection would fail in a confusing way).
  std::string unsupported;
  std::string location;
};
struct KubeconfigUser {
  std::string token;
  std::string token_file;
  std::string client_certificate;
  std::string client_certificate_data;
  std::string client_key;
  std::string client_key_data;
  // Set when the user authenticates in a way twinscale refuses: "an exec credential plugin
  // (command \"aws\")", "an auth-provider (\"gcp\")", "a username and password", "impersonation".
  std::string refused_auth;
  std::string location;
};
struct KubeconfigContext {
  std::string cluster;
  std::string user;
  std::string namespace_name;  // "" means "default"
  std::string location;
};
struct Kubeconfig {
  std::string current_context;
  std::string current_context_location;
  std::map<std::string, KubeconfigCluster> clusters;
  std::map<std::string, KubeconfigUser> users;
  std::map<std::string, KubeconfigContext> contexts;
};

// Parses one kubeconfig file's text. `path` names the file in messages and anchors relative
// paths. An empty file is an empty Kubeconfig (kubectl accepts it too). Never throws.
absl::StatusOr<Kubeconfig> ParseKubeconfig(std::string_view yaml, std::string_view path);

// Merges `later` into `into` by kubectl's rules for a KUBECONFIG list: the first file to define a
// cluster, user or context name wins; current-context comes from the first file that sets one.
void MergeKubeconfig(Kubeconfig& into, const Kubeconfig& later);

// The ClusterConfig of context `context_override` (or current-context when empty).
absl::StatusOr<ClusterConfig> ClusterConfigFromKubeconfig(const Kubeconfig& config,
                                                          std::string_view context_override);

// Reads and merges `paths` in order (files that don't exist are skipped, as kubectl does for
// KUBECONFIG; NotFound if none exists) and resolves the context.
absl::StatusOr<ClusterConfig> LoadKubeconfig(const std::vector<std::string>& paths,
                                             std::string_view context_override);

// The file list of a KUBECONFIG value ("a:b:c"; empty entries dropped). When the variable is
// unset, kubectl's default is $HOME/.kube/config: pass `home` to get it.
std::vector<std::string> KubeconfigPathsFromEnv(
    std::optional<std::string_view> kubeconfig_env,
    std::optional<std::string_view> home = std::nullopt);

// ---- in-cluster -----------------------------------------------------------------------------

// Reads an environment variable; nullopt when unset. Injected so tests don't touch the process.
using EnvGetter = std::function<std::optional<std::string>(std::string_view name)>;
// The process environment (std::getenv).
std::optional<std::string> ProcessEnv(std::string_view name);

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// The pod's service account: server from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (an
// IPv6 host in brackets), CA from <dir>/ca.crt, token from <dir>/token (re-read as it rotates),
// namespace from <dir>/namespace ("default" if that file is absent). FailedPrecondition naming
// what is missing when not running in a pod.
absl::StatusOr<ClusterConfig> LoadInClusterConfig(
    const EnvGetter& env = ProcessEnv, std::string_view service_account_dir = kServiceAccountDir);

// Reads a whole file; NotFound / PermissionDenied / Unavailable naming the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_CLUSTER_CONFIG_H_
