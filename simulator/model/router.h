// Spreads a fleet's requests over its Ready replicas, as the thing in front of the pods would:
// - Random: a plain Service through kube-proxy, per request.
// - RandomPerConnection: kube-proxy balances connections, not requests: clients hold keep-alive
//   connections, each pinned to a random replica until it has carried `requests_per_connection`
//   requests or its replica stops being Ready. New replicas get traffic only as connections churn.
// - RoundRobin: a gateway rotating over Ready replicas.
// - LeastRequests: a gateway picking the replica with the fewest requests in flight (ties go to
//   the next replica after the last one picked, so equal replicas share the load).
// Deterministic for a given seed. Not thread-safe.
#ifndef TWINSCALE_SIMULATOR_MODEL_ROUTER_H_
#define TWINSCALE_SIMULATOR_MODEL_ROUTER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/core/rng.h"
#include "simulator/model/replica.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

enum class RouterKind { kRandom, kRandomPerConnection, kRoundRobin, kLeastRequests };

absl::StatusOr<RouterKind> ParseRouterKind(std::string_view name);
std::string_view RouterKindName(RouterKind kind);

struct RouterOptions {
  RouterKind kind = RouterKind::kRandom;
  int32_t connections = 64;               // RandomPerConnection: client connections
  int32_t requests_per_connection = 100;  // RandomPerConnection: requests before a reconnect
};

class Router {
 public:
  Router(RouterOptions options, uint64_t seed, uint64_t run);

  // Picks one of `ready` (non-empty; every element is Ready). Returns its position in `ready`.
  size_t Pick(const RequestSpec& request, const std::vector<Replica*>& ready);
  const RouterOptions& options() const { return options_; }

 private:
  struct Connection {
    int32_t replica = -1;  // Replica::index() it is pinned to
    int32_t remaining = 0;
  };
  RouterOptions options_;
  Rng rng_;
  size_t next_ = 0;  // round-robin / tie-break cursor
  std::vector<Connection> connections_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_ROUTER_H_
