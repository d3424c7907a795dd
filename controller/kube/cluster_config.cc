// Kubeconfig and in-cluster configuration; see cluster_config.h.
#include "controller/kube/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace twinscale::kube {
namespace {

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Reads one kubeconfig file's YAML tree into a Kubeconfig, stopping at the first problem.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string_view path) : path_(path) {
    const size_t slash = path_.rfind('/');
    if (slash != std::string::npos) dir_ = path_.substr(0, slash + 1);
  }

  // "path:line" of a node (yaml-cpp's lines count from 0; people count from 1).
  std::string Where(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.line < 0) return path_;
    return absl::StrCat(path_, ":", mark.line + 1);
  }

  absl::Status Error(const YAML::Node& at, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(at.Mark()), ": ", Sv(what)));
  }

  absl::StatusOr<Kubeconfig> Read(const YAML::Node& root) {
    Kubeconfig out;
    if (!root.IsDefined() || root.IsNull()) return out;
    if (!root.IsMap()) return Error(root, "a kubeconfig must be a YAML mapping (kind: Config)");
    if (const YAML::Node cc = root["current-context"]; cc.IsDefined() && !cc.IsNull()) {
      absl::StatusOr<std::string> name = String(cc, "current-context");
      if (!name.ok()) return name.status();
      out.current_context = *name;
      out.current_context_location = Where(cc.Mark());
    }
    absl::Status s =
        ReadNamed(root, "clusters", "cluster", [&](const std::string& name, const YAML::Node& n) {
          return ReadCluster(name, n, out.clusters);
        });
    if (!s.ok()) return s;
    s = ReadNamed(root, "users", "user", [&](const std::string& name, const YAML::Node& n) {
      return ReadUser(name, n, out.users);
    });
    if (!s.ok()) return s;
    s = ReadNamed(root, "contexts", "context", [&](const std::string& name, const YAML::Node& n) {
      return ReadContext(name, n, out.contexts);
    });
    if (!s.ok()) return s;
    return out;
  }

 private:
  absl::StatusOr<std::string> String(const YAML::Node& n, std::string_view field) const {
    if (!n.IsScalar()) return Error(n, absl::StrCat(Sv(field), ": must be a string"));
    return n.Scalar();
  }

  // An optional string field of map `m` (empty when absent or null).
  absl::StatusOr<std::string> OptionalString(const YAML::Node& m, const char* field) const {
    const YAML::Node n = m[field];
    if (!n.IsDefined() || n.IsNull()) return std::string();
    return String(n, field);
  }

  // A path field: relative paths are relative to the kubeconfig file's directory.
  absl::StatusOr<std::string> OptionalPath(const YAML::Node& m, const char* field) const {
    absl::StatusOr<std::string> p = OptionalString(m, field);
    if (!p.ok() || p->empty() || absl::StartsWith(*p, "/")) return p;
    return absl::StrCat(dir_, *p);
  }

  // A base64 field (certificate-authority-data and the like), decoded.
  absl::StatusOr<std::string> OptionalBase64(const YAML::Node& m, const char* field) const {
    absl::StatusOr<std::string> text = OptionalString(m, field);
    if (!text.ok() || text->empty()) return text;
    std::string decoded;
    if (!absl::Base64Unescape(*text, &decoded)) {
      return Error(m[field], absl::StrCat(field, ": not valid base64"));
    }
    return decoded;
  }

  absl::StatusOr<bool> OptionalBool(const YAML::Node& m, const char* field) const {
    const YAML::Node n = m[field];
    if (!n.IsDefined() || n.IsNull()) return false;
    bool value = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, value)) {
      return Error(n, absl::StrCat(field, ": must be true or false"));
    }
    return value;
  }

  // Walks the list `list_key` ("clusters") of {name: ..., <item_key>: {...}} entries.
  template <typename Fn>
  absl::Status ReadNamed(const YAML::Node& root, const char* list_key, const char* item_key,
                         Fn read_item) const {
    const YAML::Node list = root[list_key];
    if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
    if (!list.IsSequence()) return Error(list, absl::StrCat(list_key, ": must be a list"));
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node entry = list[i];
      const std::string at = absl::StrCat(list_key, "[", i, "]");
      if (!entry.IsMap()) return Error(entry, absl::StrCat(at, ": must be a mapping"));
      const YAML::Node name = entry["name"];
      if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty()) {
        return Error(entry, absl::StrCat(at, ": needs a name"));
      }
      const YAML::Node item = entry[item_key];
      if (!item.IsDefined() || item.IsNull()) {
        return Error(entry, absl::StrCat(at, " (\"", name.Scalar(), "\"): has no ", item_key));
      }
      if (!item.IsMap()) {
        return Error(item, absl::StrCat(at, ".", item_key, ": must be a mapping"));
      }
      if (absl::Status s = read_item(name.Scalar(), item); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status ReadCluster(const std::string& name, const YAML::Node& n,
                           std::map<std::string, KubeconfigCluster>& out) const {
    KubeconfigCluster c;
    c.location = Where(n.Mark());
    absl::StatusOr<std::string> server = OptionalString(n, "server");
    if (!server.ok()) return server.status();
    c.server = *server;
    absl::StatusOr<std::string> ca = OptionalPath(n, "certificate-authority");
    if (!ca.ok()) return ca.status();
    c.certificate_authority = *ca;
    absl::StatusOr<std::string> ca_data = OptionalBase64(n, "certificate-authority-data");
    if (!ca_data.ok()) return ca_data.status();
    c.certificate_authority_data = *ca_data;
    absl::StatusOr<bool> insecure = OptionalBool(n, "insecure-skip-tls-verify");
    if (!insecure.ok()) return insecure.status();
    c.insecure_skip_tls_verify = *insecure;
    for (const char* field : {"tls-server-name", "proxy-url"}) {
      if (n[field].IsDefined() && !n[field].IsNull()) {
        c.unsupported = field;
        break;
      }
    }
    out.emplace(name, std::move(c));  // within a file too, the first entry of a name wins
    return absl::OkStatus();
  }

  absl::Status ReadUser(const std::string& name, const YAML::Node& n,
                        std::map<std::string, KubeconfigUser>& out) const {
    KubeconfigUser u;
    u.location = Where(n.Mark());
    struct Field {
      const char* key;
      std::string* value;
      enum { kString, kPath, kBase64 } kind;
    };
    const Field fields[] = {
        {"token", &u.token, Field::kString},
        {"tokenFile", &u.token_file, Field::kPath},
        {"client-certificate", &u.client_certificate, Field::kPath},
        {"client-certificate-data", &u.client_certificate_data, Field::kBase64},
        {"client-key", &u.client_key, Field::kPath},
        {"client-key-data", &u.client_key_data, Field::kBase64},
    };
    for (const Field& f : fields) {
      absl::StatusOr<std::string> v = f.kind == Field::kString ? OptionalString(n, f.key)
                                      : f.kind == Field::kPath ? OptionalPath(n, f.key)
                                                               : OptionalBase64(n, f.key);
      if (!v.ok()) return v.status();
      *f.value = *std::move(v);
    }
    if (const YAML::Node exec = n["exec"]; exec.IsDefined() && !exec.IsNull()) {
      const YAML::Node command = exec.IsMap() ? exec["command"] : YAML::Node();
      u.refused_auth =
          command.IsDefined() && command.IsScalar()
              ? absl::StrCat("an exec credential plugin (command \"", command.Scalar(), "\")")
              : "an exec credential plugin";
    } else if (const YAML::Node ap = n["auth-provider"]; ap.IsDefined() && !ap.IsNull()) {
      const YAML::Node provider = ap.IsMap() ? ap["name"] : YAML::Node();
      u.refused_auth = provider.IsDefined() && provider.IsScalar()
                           ? absl::StrCat("an auth-provider (\"", provider.Scalar(), "\")")
                           : "an auth-provider";
    } else if (n["username"].IsDefined() || n["password"].IsDefined()) {
      u.refused_auth = "a username and password";
    } else if (n["as"].IsDefined() || n["as-groups"].IsDefined() || n["as-uid"].IsDefined()) {
      u.refused_auth = "impersonation (as / as-groups)";
    }
    out.emplace(name, std::move(u));
    return absl::OkStatus();
  }

  absl::Status ReadContext(const std::string& name, const YAML::Node& n,
                           std::map<std::string, KubeconfigContext>& out) const {
    KubeconfigContext c;
    c.location = Where(n.Mark());
    absl::StatusOr<std::string> cluster = OptionalString(n, "cluster");
    if (!cluster.ok()) return cluster.status();
    absl::StatusOr<std::string> user = OptionalString(n, "user");
    if (!user.ok()) return user.status();
    absl::StatusOr<std::string> ns = OptionalString(n, "namespace");
    if (!ns.ok()) return ns.status();
    c.cluster = *cluster;
    c.user = *user;
    c.namespace_name = *ns;
    out.emplace(name, std::move(c));
    return absl::OkStatus();
  }

  std::string path_;
  std::string dir_;  // with a trailing '/', or "" when the path has no directory part
};

template <typename Map>
std::string Names(const Map& m) {
  if (m.empty()) return "none";
  std::vector<std::string> names;
  for (const auto& [name, entry] : m) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<Kubeconfig> ParseKubeconfig(std::string_view yaml, std::string_view path) {
  KubeconfigReader reader(path);
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return reader.Read(root);
  } catch (const YAML::Exception& e) {
    // Syntax errors (and yaml-cpp's own conversion errors): 0-based marks, plus one.
    if (e.mark.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(Sv(path), ": YAML error: ", e.msg));
    }
    return absl::InvalidArgumentError(absl::StrCat(Sv(path), ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": YAML error: ", e.msg));
  }
}

void MergeKubeconfig(Kubeconfig& into, const Kubeconfig& later) {
  if (into.current_context.empty()) {
    into.current_context = later.current_context;
    into.current_context_location = later.current_context_location;
  }
  // map::insert keeps the entry already there: the first file to define a name wins.
  into.clusters.insert(later.clusters.begin(), later.clusters.end());
  into.users.insert(later.users.begin(), later.users.end());
  into.contexts.insert(later.contexts.begin(), later.contexts.end());
}

absl::StatusOr<ClusterConfig> ClusterConfigFromKubeconfig(const Kubeconfig& config,
                                                          std::string_view context_override) {
  const std::string context_name =
      context_override.empty() ? config.current_context : std::string(context_override);
  if (context_name.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "kubeconfig sets no current-context; name one (contexts: ", Names(config.contexts), ")"));
  }
  auto context = config.contexts.find(context_name);
  if (context == config.contexts.end()) {
    return absl::NotFoundError(absl::StrCat("kubeconfig has no context \"", context_name,
                                            "\" (contexts: ", Names(config.contexts), ")"));
  }
  const KubeconfigContext& ctx = context->second;
  auto cluster = config.clusters.find(ctx.cluster);
  if (cluster == config.clusters.end()) {
    return absl::NotFoundError(absl::StrCat(ctx.location, ": context \"", context_name,
                                            "\" names cluster \"", ctx.cluster,
                                            "\", which no kubeconfig file defines"));
  }
  const KubeconfigCluster& c = cluster->second;
  if (c.server.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(c.location, ": cluster \"", ctx.cluster, "\" has no server"));
  }
  if (!absl::StartsWith(c.server, "https://") && !absl::StartsWith(c.server, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat(c.location, ": cluster \"", ctx.cluster,
                                                   "\": server \"", c.server,
                                                   "\" must start with https:// (or http://)"));
  }
  if (!c.unsupported.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(c.location, ": cluster \"", ctx.cluster, "\" sets ", c.unsupported,
                     ", which twinscale does not support; connect to the server's own address"));
  }
  ClusterConfig out;
  out.server = c.server;
  out.ca_file = c.certificate_authority;
  out.ca_pem = c.certificate_authority_data;
  out.insecure_skip_tls_verify = c.insecure_skip_tls_verify;
  out.default_namespace = ctx.namespace_name.empty() ? "default" : ctx.namespace_name;
  out.source = absl::StrCat("kubeconfig context \"", context_name, "\"");
  if (!ctx.user.empty()) {
    auto user = config.users.find(ctx.user);
    if (user == config.users.end()) {
      return absl::NotFoundError(absl::StrCat(ctx.location, ": context \"", context_name,
                                              "\" names user \"", ctx.user,
                                              "\", which no kubeconfig file defines"));
    }
    const KubeconfigUser& u = user->second;
    if (!u.refused_auth.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          u.location, ": user \"", ctx.user, "\" authenticates with ", u.refused_auth,
          ", which twinscale does not support (it runs unattended and runs no credential "
          "plugins); use a user with a bearer token (token or tokenFile, e.g. a ServiceAccount "
          "token from `kubectl create token`) or a client certificate (client-certificate and "
          "client-key)"));
    }
    const bool has_cert = !u.client_certificate.empty() || !u.client_certificate_data.empty();
    const bool has_key = !u.client_key.empty() || !u.client_key_data.empty();
    if (has_cert != has_key) {
      return absl::InvalidArgumentError(
          absl::StrCat(u.location, ": user \"", ctx.user, "\" has a client ",
                       has_cert ? "certificate but no key" : "key but no certificate"));
    }
    out.bearer_token = u.token;
    out.token_file = u.token_file;
    out.client_cert_file = u.client_certificate;
    out.client_cert_pem = u.client_certificate_data;
    out.client_key_file = u.client_key;
    out.client_key_pem = u.client_key_data;
  }
  return out;
}

absl::StatusOr<ClusterConfig> LoadKubeconfig(const std::vector<std::string>& paths,
                                             std::string_view context_override) {
  Kubeconfig merged;
  bool any = false;
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    absl::StatusOr<std::string> text = ReadFileToString(path);
    if (absl::IsNotFound(text.status())) continue;
    if (!text.ok()) return text.status();
    absl::StatusOr<Kubeconfig> one = ParseKubeconfig(*text, path);
    if (!one.ok()) return one.status();
    MergeKubeconfig(merged, *one);
    any = true;
  }
  if (!any) {
    return absl::NotFoundError(
        absl::StrCat("no kubeconfig file found (looked for: ", absl::StrJoin(paths, ", "), ")"));
  }
  return ClusterConfigFromKubeconfig(merged, context_override);
}

std::vector<std::string> KubeconfigPathsFromEnv(std::optional<std::string_view> kubeconfig_env,
                                                std::optional<std::string_view> home) {
  std::vector<std::string> paths;
  if (kubeconfig_env.has_value() && !kubeconfig_env->empty()) {
    for (absl::string_view p : absl::StrSplit(Sv(*kubeconfig_env), ':', absl::SkipEmpty())) {
      paths.emplace_back(p);
    }
    return paths;
  }
  if (home.has_value() && !home->empty()) {
    paths.push_back(absl::StrCat(Sv(*home), "/.kube/config"));
  }
  return paths;
}

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) {
    const int err = errno;
    const std::string msg = absl::StrCat(path, ": ", std::strerror(err));
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  std::string out;
  char buf[8192];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) out.append(buf, n);
  if (std::ferror(f.get())) {
    return absl::UnavailableError(absl::StrCat(path, ": read failed: ", std::strerror(errno)));
  }
  return out;
}

absl::StatusOr<ClusterConfig> LoadInClusterConfig(const EnvGetter& env,
                                                  std::string_view service_account_dir) {
  const std::optional<std::string> host = env("KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = env("KUBERNETES_SERVICE_PORT");
  if (!host.has_value() || host->empty() || !port.has_value() || port->empty()) {
    return absl::FailedPreconditionError(
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
        "are not both set (outside a cluster, use a kubeconfig)");
  }
  ClusterConfig out;
  const bool ipv6 = absl::StrContains(*host, ':');
  out.server = absl::StrCat("https://", ipv6 ? "[" : "", *host, ipv6 ? "]" : "", ":", *port);
  const std::string dir(service_account_dir);
  out.token_file = absl::StrCat(dir, "/token");
  absl::StatusOr<std::string> token = ReadFileToString(out.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster config: cannot read the service-account token (", token.status().message(),
        "); is automountServiceAccountToken false for this pod?"));
  }
  // Kept as the fallback should a later re-read fail; the file wins once it reads.
  out.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
  if (out.bearer_token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster config: the service-account token file ", out.token_file, " is empty"));
  }
  out.ca_file = absl::StrCat(dir, "/ca.crt");
  absl::StatusOr<std::string> ca = ReadFileToString(out.ca_file);
  if (!ca.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster config: cannot read the cluster CA (", ca.status().message(), ")"));
  }
  absl::StatusOr<std::string> ns = ReadFileToString(absl::StrCat(dir, "/namespace"));
  if (ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    out.default_namespace = std::string(absl::StripAsciiWhitespace(*ns));
  } else if (!ns.ok() && !absl::IsNotFound(ns.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: ", ns.status().message()));
  }
  out.source = "in-cluster service account";
  return out;
}

}  // namespace twinscale::kube
