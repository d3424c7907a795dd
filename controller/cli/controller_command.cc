// `twinscale controller`: flags and wiring of the operator (see controller_command.h).
#include "controller/cli/controller_command.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "controller/cli/flag_checks.h"
#include "controller/common/clock.h"
#include "controller/common/json_log.h"
#include "controller/common/metrics_registry.h"
#include "controller/common/status_macros.h"
#include "controller/kube/cluster_config.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/leader_pod_label.h"
#include "controller/kube/request_header_trust.h"
#include "controller/kube/rest_client.h"
#include "controller/metrics/pod_scraper.h"
#include "controller/metrics/promql_source.h"
#include "controller/outputs/admission_service.h"
#include "controller/outputs/decision_board.h"
#include "controller/outputs/external_metrics_api.h"
#include "controller/outputs/external_metrics_server.h"
#include "controller/outputs/grpc_server.h"
#include "controller/outputs/keda_scaler.h"
#include "controller/outputs/ops_server.h"
#include "controller/reconcile/controller.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/pod_informers.h"
#include "controller/reconcile/reconciler.h"
#include "controller/twin/target_decider.h"
#include "simulator/profiles/profile_loader.h"

ABSL_FLAG(std::string, kubeconfig, "",
          "Kubeconfig file(s), ':'-separated (default: $KUBECONFIG, else in-cluster config, else "
          "~/.kube/config).");
ABSL_FLAG(std::string, context, "", "Kubeconfig context (default: the current context).");
ABSL_FLAG(std::string, watch_namespace, "",
          "Only InferenceAutoscalers of this namespace (default: every namespace).");
ABSL_FLAG(int32_t, workers, 2, "Reconcile worker threads.");
ABSL_FLAG(std::string, ops_address, "0.0.0.0", "Address of /metrics, /healthz and /readyz.");
ABSL_FLAG(int32_t, ops_port, 8080, "Port of /metrics, /healthz and /readyz.");
ABSL_FLAG(bool, leader_elect, true,
          "Campaign for a coordination.k8s.io/v1 Lease; only the holder acts.");
ABSL_FLAG(std::string, lease_name, "twinscale-controller", "Name of the Lease.");
ABSL_FLAG(std::string, lease_namespace, "",
          "Namespace of the Lease (default: the pod's namespace, else \"default\").");
ABSL_FLAG(std::string, identity, "",
          "This replica's identity in the Lease (default: $POD_NAME, else the host name).");
ABSL_FLAG(absl::Duration, lease_duration, absl::Seconds(15), "How long a Lease stays valid.");
ABSL_FLAG(absl::Duration, renew_deadline, absl::Seconds(10),
          "The leader steps down when it could not renew for this long.");
ABSL_FLAG(absl::Duration, retry_period, absl::Seconds(2), "Time between election attempts.");
ABSL_FLAG(std::string, leader_label, "twinscale.io/leader",
          "Label the Lease holder sets to \"true\" on its own pod (and \"false\" when it steps "
          "down or stops), so the outputs' Services select only the leader. The pod is named by "
          "$POD_NAME and $POD_NAMESPACE (the downward API); without them, or with \"\", no pod "
          "is labelled.");
ABSL_FLAG(std::string, log_level, "info", "debug | info | warning | error.");
ABSL_FLAG(std::string, keda_addr, "",
          "Serve KEDA's external-scaler gRPC protocol (externalscaler.ExternalScaler) on this "
          "host:port, e.g. 0.0.0.0:9443 (empty: not served). Only the leader answers.");
ABSL_FLAG(std::string, admission_addr, "",
          "Serve the admission API (twinscale.v1alpha1.AdmissionService) on this host:port (empty: "
          "not served; the same address as --keda-addr: one server for both).");
ABSL_FLAG(std::string, grpc_tls_cert, "",
          "PEM certificate of the gRPC server(s); needs --grpc-tls-key. Re-read every "
          "--grpc-cert-refresh, so a rotated Secret takes effect without a restart.");
ABSL_FLAG(std::string, grpc_tls_key, "", "PEM private key of --grpc-tls-cert.");
ABSL_FLAG(std::string, grpc_client_ca, "",
          "PEM CA bundle: with it, gRPC clients (KEDA) must present a certificate it signed "
          "(mutual TLS; KEDA's tlsClientCert / tlsClientKey).");
ABSL_FLAG(bool, grpc_plaintext, false,
          "Serve gRPC without TLS (only for tests or a mesh that encrypts; TLS is required "
          "otherwise).");
ABSL_FLAG(absl::Duration, grpc_cert_refresh, absl::Minutes(1),
          "How often the gRPC certificate files are re-read.");
ABSL_FLAG(std::string, external_metrics_addr, "",
          "Serve the Kubernetes external metrics API (external.metrics.k8s.io/v1beta1, for an HPA "
          "following an InferenceAutoscaler in spec.mode HPA) over HTTPS on this host:port, e.g. "
          "0.0.0.0:6443 (empty: not served). Only the leader answers values.");
ABSL_FLAG(std::string, external_metrics_tls_cert, "",
          "PEM certificate of the external metrics server (required with "
          "--external-metrics-addr; the APIService's caBundle must trust it).");
ABSL_FLAG(
    std::string, external_metrics_tls_key, "",
    "PEM private key of --external-metrics-tls-cert (required with --external-metrics-addr).");
ABSL_FLAG(std::string, external_metrics_client_ca, "",
          "PEM CA the aggregator's client certificate must chain to: the cluster's requestheader "
          "CA (data.requestheader-client-ca-file of the ConfigMap "
          "kube-system/extension-apiserver-authentication). With --external-metrics-addr, give "
          "this, --external-metrics-client-ca-from-cluster or "
          "--external-metrics-insecure-skip-client-verify.");
ABSL_FLAG(bool, external_metrics_client_ca_from_cluster, false,
          "Read the aggregator's client CA and allowed names from the ConfigMap "
          "kube-system/extension-apiserver-authentication (requestheader-client-ca-file, "
          "requestheader-allowed-names; RBAC: extension-apiserver-authentication-reader) at start "
          "and every --external-metrics-cert-refresh, instead of --external-metrics-client-ca.");
ABSL_FLAG(std::vector<std::string>, external_metrics_allowed_names, {},
          "Comma-separated common names accepted in client certificates (the cluster's "
          "requestheader-allowed-names, e.g. front-proxy-client); empty: any certificate the "
          "client CA signed.");
ABSL_FLAG(bool, external_metrics_insecure_skip_client_verify, false,
          "Serve the external metrics API without checking client certificates (anyone who "
          "reaches the port reads the metrics). Only for trying it out.");
ABSL_FLAG(absl::Duration, external_metrics_cert_refresh, absl::Minutes(1),
          "How often the external metrics server's certificate files are re-read.");

namespace twinscale::cli {

const char kControllerUsage[] =
    "twinscale controller: the Kubernetes operator. Watches InferenceAutoscalers, reads the\n"
    "fleet's vLLM metrics, consults the twin, and scales the target (Direct) or reports the\n"
    "decision in status (Recommend, KEDA, HPA).\n\n"
    "Examples:\n"
    "  twinscale controller                                   # in a pod (in-cluster config)\n"
    "  twinscale controller --kubeconfig ~/.kube/config --leader-elect=false --ops-port 9090\n"
    "  twinscale controller --keda-addr 0.0.0.0:9443 --admission-addr 0.0.0.0:9443 \\\n"
    "      --grpc-tls-cert /tls/tls.crt --grpc-tls-key /tls/tls.key --grpc-client-ca /tls/ca.crt\n"
    "  twinscale controller --external-metrics-addr 0.0.0.0:6443 \\\n"
    "      --external-metrics-tls-cert /extm/tls.crt --external-metrics-tls-key /extm/tls.key \\\n"
    "      --external-metrics-client-ca /requestheader/ca.crt\n";
const char kControllerFlagsFile[] = "controller_command.cc";

namespace {

absl::Notification* g_stop = nullptr;
extern "C" void OnSignal(int) {
  // Notify is async-signal-safe enough here: it takes no lock held by the interrupted thread
  // (the main thread only waits on it).
  if (g_stop != nullptr && !g_stop->HasBeenNotified()) g_stop->Notify();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

absl::StatusOr<kube::ClusterConfig> LoadConfig() {
  std::string paths = absl::GetFlag(FLAGS_kubeconfig);
  if (paths.empty()) paths = EnvOr("KUBECONFIG", "");
  if (paths.empty() && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    return kube::LoadInClusterConfig();
  }
  std::vector<std::string> files = kube::KubeconfigPathsFromEnv(
      paths.empty() ? std::nullopt : std::optional<std::string_view>(paths),
      EnvOr("HOME", "/root"));
  return kube::LoadKubeconfig(files, absl::GetFlag(FLAGS_context));
}

// The external metrics server's options from the flags, or an InvalidArgument saying which flag
// is missing.
absl::StatusOr<outputs::ExternalMetricsServerOptions> ExternalMetricsOptions() {
  outputs::ExternalMetricsServerOptions o;
  o.address = absl::GetFlag(FLAGS_external_metrics_addr);
  o.tls_cert_file = absl::GetFlag(FLAGS_external_metrics_tls_cert);
  o.tls_key_file = absl::GetFlag(FLAGS_external_metrics_tls_key);
  o.client_ca_file = absl::GetFlag(FLAGS_external_metrics_client_ca);
  const bool from_cluster = absl::GetFlag(FLAGS_external_metrics_client_ca_from_cluster);
  o.allowed_client_names = absl::GetFlag(FLAGS_external_metrics_allowed_names);
  o.insecure_skip_client_verify = absl::GetFlag(FLAGS_external_metrics_insecure_skip_client_verify);
  o.cert_refresh_interval = absl::GetFlag(FLAGS_external_metrics_cert_refresh);
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--external-metrics-addr needs --external-metrics-tls-cert and --external-metrics-tls-key "
        "(the aggregator speaks only HTTPS; the APIService's caBundle must trust the "
        "certificate)");
  }
  const int trust_flags =
      int{!o.client_ca_file.empty()} + int{from_cluster} + int{o.insecure_skip_client_verify};
  if (trust_flags == 0) {
    return absl::InvalidArgumentError(
        "--external-metrics-addr needs --external-metrics-client-ca: the CA of the aggregator's "
        "client certificate (the cluster's requestheader CA: data.requestheader-client-ca-file of "
        "the ConfigMap kube-system/extension-apiserver-authentication), or "
        "--external-metrics-client-ca-from-cluster to read it from there. To serve without "
        "checking client certificates, say so with --external-metrics-insecure-skip-client-verify");
  }
  if (trust_flags > 1) {
    return absl::InvalidArgumentError(
        "--external-metrics-client-ca, --external-metrics-client-ca-from-cluster and "
        "--external-metrics-insecure-skip-client-verify contradict each other: give one");
  }
  if (!o.allowed_client_names.empty() && o.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--external-metrics-allowed-names needs --external-metrics-client-ca (with "
        "--external-metrics-client-ca-from-cluster the names come from the cluster too)");
  }
  if (o.cert_refresh_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--external-metrics-cert-refresh must be at least 1s");
  }
  return o;
}

LogLevel ParseLevel(const std::string& s) {
  if (s == "debug") return LogLevel::kDebug;
  if (s == "warning") return LogLevel::kWarning;
  if (s == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

// Range checks of the controller's flags, before anything starts (flag_checks.h).
absl::Status CheckControllerFlags() {
  TS_RETURN_IF_ERROR(FirstError({
      Within(FLAGS_workers, 1, 64),
      Within(FLAGS_ops_port, 0, 65535, "0: any free port"),
      OneOf(FLAGS_log_level, {"debug", "info", "warning", "error"}),
      Above(FLAGS_lease_duration, absl::ZeroDuration()),
      Above(FLAGS_renew_deadline, absl::ZeroDuration()),
      Above(FLAGS_retry_period, absl::ZeroDuration()),
      Above(FLAGS_grpc_cert_refresh, absl::ZeroDuration()),
      Above(FLAGS_external_metrics_cert_refresh, absl::ZeroDuration()),
  }));
  if (absl::GetFlag(FLAGS_renew_deadline) >= absl::GetFlag(FLAGS_lease_duration)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--renew-deadline (", absl::FormatDuration(absl::GetFlag(FLAGS_renew_deadline)),
        ") must be shorter than --lease-duration (",
        absl::FormatDuration(absl::GetFlag(FLAGS_lease_duration)), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

int RunControllerCommand() {
  if (const absl::Status s = CheckControllerFlags(); !s.ok()) {
    std::cerr << "twinscale controller: " << s.message() << "\n";
    return 2;
  }
  RealClock clock;
  JsonLogger log(clock, std::cerr, ParseLevel(absl::GetFlag(FLAGS_log_level)));
  auto fail = [&](std::string_view what, const absl::Status& s) {
    log.Error(what, "", {{"error", s}});
    return 1;
  };

  // Flags first: a missing certificate is a usage error (exit 2), before any connection.
  std::optional<outputs::ExternalMetricsServerOptions> external_metrics_options;
  if (!absl::GetFlag(FLAGS_external_metrics_addr).empty()) {
    auto o = ExternalMetricsOptions();
    if (!o.ok()) {
      log.Error("bad flags", "", {{"error", o.status()}});
      return 2;
    }
    external_metrics_options = *std::move(o);
  }

  auto config = LoadConfig();
  if (!config.ok()) return fail("no cluster configuration", config.status());
  auto client = kube::HttpKubeClient::FromConfig(*config, &clock);
  if (!client.ok()) return fail("cannot build the Kubernetes client", client.status());
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  if (!profiles.ok()) return fail("cannot load the embedded profiles", profiles.status());

  MetricsRegistry registry;
  auto metrics = reconcile::ControllerMetrics::Register(registry);
  if (!metrics.ok()) return fail("cannot register metrics", metrics.status());

  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string identity = absl::GetFlag(FLAGS_identity).empty()
                                   ? EnvOr("POD_NAME", host)
                                   : absl::GetFlag(FLAGS_identity);
  kube::EventRecorderOptions eo;
  eo.instance = identity;
  kube::EventRecorder events(client->get(), &clock, eo);
  twin::TwinDeciderFactory deciders(&*profiles);

  // Decisions for the gRPC outputs; a follower serves nothing (the leadership hook below).
  const bool leader_elect = absl::GetFlag(FLAGS_leader_elect);
  outputs::DecisionBoard board;
  if (leader_elect) board.SetServing(false);
  // The targets' pods, watched (list then watch per namespace and selector), shared by the
  // reconciler (reads) and the controller (wake-ups).
  reconcile::PodInformersOptions po;
  po.informer.on_error = [&log](const absl::Status& s) {
    log.Warning("watch of pods failed", "", {{"error", s}});
  };
  reconcile::PodInformers pods(client->get(), po);

  reconcile::ReconcilerDeps deps;
  deps.board = &board;
  deps.client = client->get();
  deps.clock = &clock;
  deps.pods = &pods;
  deps.deciders = &deciders;
  deps.events = &events;
  deps.log = &log;
  deps.metrics = &*metrics;
  deps.metrics_sources = [&clock](const api::MetricsSpec& spec, const std::string& model)
      -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
    if (spec.source == api::MetricsSourceKind::kPrometheus) {
      if (!spec.prometheus.has_value()) {
        return absl::InvalidArgumentError(
            "spec.metrics.prometheus is required with source Prometheus");
      }
      metrics::PromqlSourceOptions o;
      o.url = spec.prometheus->url;
      o.label_matchers = spec.prometheus->label_matchers;
      o.lookback = spec.stale_after;
      o.model_name_filter = model;
      return std::make_unique<metrics::PromqlSource>(clock, o);
    }
    metrics::PodScraperOptions o;
    o.timeout = std::min(absl::Seconds(5), spec.interval / 2);
    o.model_name_filter = model;
    return std::make_unique<metrics::PodScraper>(clock, o);
  };
  // The seasonal forecast's history for a target that starts without one in its status.
  deps.prometheus_arrivals = [](const api::MetricsSpec& spec, absl::Time start, absl::Duration step,
                                int64_t steps) -> absl::StatusOr<metrics::ArrivalSeries> {
    if (!spec.prometheus.has_value()) {
      return absl::InvalidArgumentError(
          "spec.metrics.prometheus is required with source Prometheus");
    }
    return metrics::QueryPrometheusArrivals(spec.prometheus->url, spec.prometheus->label_matchers,
                                            start, step, steps);
  };
  reconcile::Reconciler reconciler(deps);

  // KEDA's external scaler and the admission API: one gRPC server per distinct address.
  outputs::KedaScaler keda(&board);
  outputs::AdmissionService admission(&board);
  std::vector<std::unique_ptr<outputs::GrpcServer>> grpc_servers;
  {
    struct Served {
      std::string address;
      std::vector<std::pair<grpc::Service*, std::string>> services;
    };
    std::vector<Served> served;
    auto serve = [&served](const std::string& address, grpc::Service* service, const char* name) {
      if (address.empty()) return;
      for (Served& s : served) {
        if (s.address == address) {
          s.services.emplace_back(service, name);
          return;
        }
      }
      served.push_back({address, {{service, name}}});
    };
    serve(absl::GetFlag(FLAGS_keda_addr), keda.service(), outputs::KedaScaler::kServiceName);
    serve(absl::GetFlag(FLAGS_admission_addr), admission.service(),
          outputs::AdmissionService::kServiceName);
    for (const Served& s : served) {
      outputs::GrpcServerOptions go;
      go.address = s.address;
      go.plaintext = absl::GetFlag(FLAGS_grpc_plaintext);
      go.tls_cert_file = absl::GetFlag(FLAGS_grpc_tls_cert);
      go.tls_key_file = absl::GetFlag(FLAGS_grpc_tls_key);
      go.client_ca_file = absl::GetFlag(FLAGS_grpc_client_ca);
      go.cert_refresh_interval = absl::GetFlag(FLAGS_grpc_cert_refresh);
      auto server = std::make_unique<outputs::GrpcServer>(go, &clock);
      for (const auto& [service, name] : s.services) server->AddService(service, name);
      server->SetServing(!leader_elect);
      if (absl::Status st = server->Start(); !st.ok()) {
        return fail(absl::StrCat("cannot serve gRPC on ", s.address), st);
      }
      const char* tls = go.plaintext ? "off" : go.client_ca_file.empty() ? "tls" : "mutual";
      log.Info("serving gRPC", "",
               {{"address", s.address}, {"port", server->port()}, {"tls", tls}});
      grpc_servers.push_back(std::move(server));
    }
  }

  // The external metrics API for HPAs (mode HPA): values from the board, so only the leader's.
  outputs::ExternalMetricsApi external_metrics_api(&board);
  // (The trust outlives the server that asks it: declared first, destroyed last.)
  std::unique_ptr<kube::RequestHeaderTrust> aggregator_trust;
  std::unique_ptr<outputs::ExternalMetricsServer> external_metrics;
  if (external_metrics_options.has_value() &&
      absl::GetFlag(FLAGS_external_metrics_client_ca_from_cluster)) {
    kube::RequestHeaderTrust::Options to;
    to.refresh_interval = external_metrics_options->cert_refresh_interval;
    to.on_error = [&log](const absl::Status& s) {
      log.Warning("cannot re-read the aggregator's client CA; keeping the last one", "",
                  {{"error", s}});
    };
    aggregator_trust = std::make_unique<kube::RequestHeaderTrust>(client->get(), to);
    if (absl::Status st = aggregator_trust->Start(); !st.ok()) {
      return fail("cannot read the aggregator's client CA from the cluster", st);
    }
    external_metrics_options->client_trust =
        [trust = aggregator_trust.get()]() -> absl::StatusOr<outputs::ClientTrust> {
      kube::AggregatorClientTrust t = trust->Current();
      return outputs::ClientTrust{std::move(t.ca_pem), std::move(t.allowed_names)};
    };
  }
  if (external_metrics_options.has_value()) {
    external_metrics = std::make_unique<outputs::ExternalMetricsServer>(
        &external_metrics_api, *external_metrics_options, &clock);
    if (absl::Status st = external_metrics->Start(); !st.ok()) {
      return fail(absl::StrCat("cannot serve the external metrics API on ",
                               external_metrics_options->address),
                  st);
    }
    const char* clients = external_metrics_options->insecure_skip_client_verify ? "unchecked"
                          : aggregator_trust != nullptr ? "the cluster's requestheader CA"
                          : external_metrics_options->allowed_client_names.empty()
                              ? "client CA"
                              : "client CA and names";
    log.Info("serving the external metrics API", "",
             {{"address", external_metrics_options->address},
              {"port", external_metrics->port()},
              {"client_certificates", clients}});
  }

  // The leader label on this pod, so the outputs' Services reach only the leader.
  std::unique_ptr<kube::LeaderPodLabel> leader_label;
  {
    kube::LeaderPodLabelOptions lo;
    lo.label = absl::GetFlag(FLAGS_leader_label);
    lo.pod_name = EnvOr("POD_NAME", "");
    lo.pod_namespace = EnvOr("POD_NAMESPACE", "");
    if (lo.label.empty()) {
      log.Info("not labelling the leader's pod (--leader-label is empty)");
    } else if (lo.pod_name.empty() || lo.pod_namespace.empty()) {
      log.Info(
          "not labelling the leader's pod: POD_NAME and POD_NAMESPACE are not set (the "
          "downward API sets them in a pod)");
    } else {
      const std::string pod = absl::StrCat(lo.pod_namespace, "/", lo.pod_name);
      // Said when the label lands on the pod, not at start: every replica starts as a follower
      // (the label's first write is "false"), and only the one that leads is labelled "true".
      leader_label = std::make_unique<kube::LeaderPodLabel>(
          client->get(), lo,
          [&log, pod](const absl::Status& s) {
            log.Warning("cannot write the leader label", pod, {{"error", s}});
          },
          [&log, pod, label = lo.label, labelled = false](bool leading) mutable {
            if (leading) {
              log.Info("labelled this pod as the leader", pod, {{"label", label + "=true"}});
            } else if (labelled) {
              log.Info("labelled this pod as no longer the leader", pod,
                       {{"label", label + "=false"}});
            }
            labelled = leading;
          });
      if (absl::Status st = leader_label->Start(); !st.ok()) {
        return fail("cannot label the leader's pod", st);
      }
    }
  }

  reconcile::ControllerOptions co;
  co.on_leadership_change = [&board, &grpc_servers, &leader_label](bool leading) {
    board.SetServing(leading);
    for (auto& server : grpc_servers) server->SetServing(leading);
    if (leader_label) leader_label->Set(leading);
  };
  co.watch_namespace = absl::GetFlag(FLAGS_watch_namespace);
  co.workers = absl::GetFlag(FLAGS_workers);
  co.leader_election = leader_elect;
  co.lease.lease_name = absl::GetFlag(FLAGS_lease_name);
  co.lease.lease_namespace = absl::GetFlag(FLAGS_lease_namespace);
  if (co.lease.lease_namespace.empty()) {
    co.lease.lease_namespace =
        config->default_namespace.empty() ? "default" : config->default_namespace;
  }
  co.lease.identity = identity;
  co.lease.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  co.lease.renew_deadline = absl::GetFlag(FLAGS_renew_deadline);
  co.lease.retry_period = absl::GetFlag(FLAGS_retry_period);
  reconcile::Controller controller(co, client->get(), &reconciler, &pods, &clock, &log, &*metrics);

  outputs::OpsServerOptions oo;
  oo.address = absl::GetFlag(FLAGS_ops_address);
  oo.port = absl::GetFlag(FLAGS_ops_port);
  outputs::OpsServer ops(
      registry,
      [&controller]() -> absl::Status {
        if (!controller.Synced())
          return absl::UnavailableError("InferenceAutoscalers not listed yet");
        // A replica that can't write its Lease can never lead: not ready, so it shows.
        return controller.LeaseHealth();
      },
      oo);
  if (absl::Status s = ops.Start(); !s.ok()) return fail("cannot serve /metrics", s);

  absl::Notification stop;
  g_stop = &stop;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  if (absl::Status s = controller.Start(); !s.ok()) return fail("cannot start", s);
  log.Info("started", "",
           {{"identity", identity},
            {"server", config->server},
            {"ops", ops.url()},
            {"leader_election", co.leader_election}});
  stop.WaitForNotification();
  log.Info("stopping");
  controller.Stop();  // tells the hook "not leading": open gRPC streams end with UNAVAILABLE
  if (leader_label) {
    // The hook set "false": wait a little for it to land, so the Services let go of this pod.
    if (absl::Status st = leader_label->Stop(absl::Seconds(5)); st.ok()) {
      log.Info("leader label removed");
    } else {
      log.Warning("could not remove the leader label", "", {{"error", st}});
    }
  }
  if (!grpc_servers.empty()) log.Info("controller stopped; shutting down gRPC");
  for (auto& server : grpc_servers) server->Shutdown();
  log.Info("gRPC stopped");
  if (external_metrics) external_metrics->Stop();
  if (aggregator_trust) aggregator_trust->Stop();
  ops.Stop();
  log.Info("stopped");
  g_stop = nullptr;
  return 0;
}

}  // namespace twinscale::cli
