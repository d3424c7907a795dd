// A throw-away PKI for TLS tests, made with the openssl CLI (EC P-256, valid two days): the one
// certificate helper of the tests. In `dir`, each as <name>.crt and <name>.key:
//   ca            a CA (CN twinscale-test-ca);
//   server        signed by ca, serverAuth, for IP:127.0.0.1 and DNS:localhost (and any
//                 TestPkiOptions::server_dns names);
//   client        signed by ca, clientAuth, CN twinscale-test-client (as KEDA's or the
//                 aggregator's client certificate would be);
//   other-ca      an unrelated CA (CN twinscale-test-other-ca), with other-server and
//                 other-client signed by it, named as server and client are: certificates a peer
//                 trusting ca must refuse for their signer alone.
#ifndef TWINSCALE_TESTS_UTIL_TEST_PKI_H_
#define TWINSCALE_TESTS_UTIL_TEST_PKI_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace twinscale::testutil {

struct TestPki {
  std::string dir;
  std::string ca_crt, server_crt, server_key, client_crt, client_key;
  std::string other_ca_crt, other_server_crt, other_server_key, other_client_crt, other_client_key;
};

struct TestPkiOptions {
  // Extra DNS names for the server certificates (e.g. the <service>.<namespace>.svc name an
  // aggregating API server dials).
  std::vector<std::string> server_dns;
};

// Makes the PKI in `dir` (which must exist). FailedPrecondition when openssl is not installed (a
// test may skip on it); Internal, with openssl's output, when it fails.
absl::StatusOr<TestPki> MakeTestPki(const std::string& dir, const TestPkiOptions& options = {});

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_TEST_PKI_H_
