// The test PKI: see test_pki.h.
#include "tests/util/test_pki.h"

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/util/shell.h"

namespace twinscale::testutil {
namespace {

// Runs `script` through /bin/sh; returns its exit code and puts stdout and stderr in *output.
int RunShell(const std::string& script, std::string* output) {
  ShellResult r = testutil::RunShell(script);
  output->append(r.out);
  return r.exit_code;
}

}  // namespace

absl::StatusOr<TestPki> MakeTestPki(const std::string& dir, const TestPkiOptions& options) {
  std::string output;
  if (RunShell("command -v openssl >/dev/null", &output) != 0) {
    return absl::FailedPreconditionError("openssl is not installed");
  }
  const auto p = [&](const std::string& name) { return absl::StrCat(dir, "/", name); };
  std::string san = "IP:127.0.0.1,DNS:localhost";
  for (const std::string& dns : options.server_dns) absl::StrAppend(&san, ",DNS:", dns);
  std::ofstream(p("server.ext")) << "subjectAltName=" << san << "\n"
                                 << "extendedKeyUsage=serverAuth\n"
                                 << "keyUsage=critical,digitalSignature,keyEncipherment\n";
  std::ofstream(p("client.ext")) << "extendedKeyUsage=clientAuth\n"
                                 << "keyUsage=critical,digitalSignature,keyEncipherment\n";
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string ca_ext =
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign";
  const auto ca = [&](const std::string& name, const std::string& cn) {
    return absl::StrCat("openssl req -x509 ", ec, " ", ca_ext, " -keyout '", p(name),
                        ".key' -out '", p(name), ".crt' -days 2 -subj /CN=", cn);
  };
  const auto sign = [&](const std::string& name, const std::string& cn, const std::string& by,
                        const std::string& ext) {
    return absl::StrCat("openssl req ", ec, " -keyout '", p(name), ".key' -out '", p(name),
                        ".csr' -subj /CN=", cn, " && openssl x509 -req -in '", p(name),
                        ".csr' -CA '", p(by), ".crt' -CAkey '", p(by), ".key' -CAcreateserial",
                        " -days 2 -out '", p(name), ".crt' -extfile '", p(ext), "'");
  };
  const std::string script = absl::StrCat(
      "set -e; ", ca("ca", "twinscale-test-ca"), "; ", ca("other-ca", "twinscale-test-other-ca"),
      "; ", sign("server", "localhost", "ca", "server.ext"), "; ",
      sign("client", "twinscale-test-client", "ca", "client.ext"), "; ",
      sign("other-server", "localhost", "other-ca", "server.ext"), "; ",
      sign("other-client", "twinscale-test-client", "other-ca", "client.ext"));
  output.clear();
  if (RunShell(absl::StrCat("(", script, ")"), &output) != 0) {
    return absl::InternalError(
        absl::StrCat("openssl failed to make the test PKI in ", dir, ":\n", output));
  }
  TestPki pki;
  pki.dir = dir;
  pki.ca_crt = p("ca.crt");
  pki.server_crt = p("server.crt");
  pki.server_key = p("server.key");
  pki.client_crt = p("client.crt");
  pki.client_key = p("client.key");
  pki.other_ca_crt = p("other-ca.crt");
  pki.other_server_crt = p("other-server.crt");
  pki.other_server_key = p("other-server.key");
  pki.other_client_crt = p("other-client.crt");
  pki.other_client_key = p("other-client.key");
  return pki;
}

}  // namespace twinscale::testutil
