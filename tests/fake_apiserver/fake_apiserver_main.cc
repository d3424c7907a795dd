// `fake_apiserver`: the twinscale fake Kubernetes API server (fake_apiserver.h) as a standalone
// process, so kubectl or a controller binary can be pointed at it by hand or from a script:
//
//   fake_apiserver --port 8080 [--crd deploy/crds/twinscale.io_inferenceautoscalers.yaml]
//   kubectl --server http://127.0.0.1:8080 get ias -A
//
// With --tls-cert/--tls-key it serves HTTPS (and with --client-ca requires client certificates);
// --token requires a bearer token. It prints "serving <url>" on stdout once it listens, and runs
// until SIGINT or SIGTERM. It is a test fake, not a Kubernetes API server: see fake_apiserver.h
// for what it does and does not implement.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "tests/fake_apiserver/fake_apiserver.h"

ABSL_FLAG(std::string, address, "127.0.0.1", "Address to listen on.");
ABSL_FLAG(int, port, 0, "Port to listen on (0: a free port, printed at start).");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve HTTPS (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert.");
ABSL_FLAG(std::string, client_ca, "",
          "PEM CA: require client certificates it signed (mutual TLS; needs --tls_cert).");
ABSL_FLAG(std::string, token, "", "Require `Authorization: Bearer <token>` on every request.");
ABSL_FLAG(std::vector<std::string>, crd, {},
          "CustomResourceDefinition files to serve (comma-separated or repeated).");
ABSL_FLAG(int, history, 10000, "Changes kept for watches (older resourceVersions get 410).");
ABSL_FLAG(absl::Duration, bookmark_interval, absl::Seconds(1),
          "BOOKMARK cadence for watches with allowWatchBookmarks=true.");

namespace {
volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "A FAKE Kubernetes API server for twinscale's tests (not Kubernetes). Example:\n"
      "  fake_apiserver --port 8080 --crd deploy/crds/twinscale.io_inferenceautoscalers.yaml");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 1) {
    std::cerr << "fake_apiserver: unexpected argument " << args[1] << "\n";
    return 2;
  }
  twinscale::fake_apiserver::FakeApiServer::Options options;
  options.address = absl::GetFlag(FLAGS_address);
  options.port = absl::GetFlag(FLAGS_port);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.client_ca_file = absl::GetFlag(FLAGS_client_ca);
  options.bearer_token = absl::GetFlag(FLAGS_token);
  options.crd_files = absl::GetFlag(FLAGS_crd);
  options.history_limit = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_history)));
  options.bookmark_interval = absl::GetFlag(FLAGS_bookmark_interval);
  auto server = twinscale::fake_apiserver::FakeApiServer::Start(options);
  if (!server.ok()) {
    std::cerr << "fake_apiserver: " << server.status() << "\n";
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::cout << "serving " << (*server)->url() << std::endl;
  while (!g_stop) absl::SleepFor(absl::Milliseconds(100));
  (*server)->Stop();
  return 0;
}
