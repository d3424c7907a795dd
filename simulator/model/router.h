// Spreads a fleet's requests over its Ready replicas, as the thing in front of the pods would:
// - Random: a plain Service through kube-proxy, per request.
// - RandomPerConnection: kube-proxy balances connections, not requests: clients hold keep-alive
//   connections, each pinned to a random replica until it has carried `requests_per_connection`
//   requests or its replica stops being Ready. New replicas get traffic only as connections churn.
// - RoundRobin: a gateway rotating over Ready replicas.
// - LeastRequests: a gateway picking the replica with the fewest requests in flight (ties go to
//   the next replica after the last one picked, so equal replicas share the load).
// - PrefixAware: a cache-aware gateway (in the manner of SGLang's cache-aware router, which also
//   falls back to the shortest queue when loads drift apart). It remembers, per replica, the
//   prefix ids (RequestSpec::prefix_hashes) of the requests it sent there, a bounded LRU set of
//   `prefix_ids_per_replica` ids, and scores each Ready replica by how many of the request's
//   leading ids it has sent there (the prompt prefix that replica most likely still caches). It
//   picks the best score (ties: fewer requests in flight, then the LeastRequests order) unless
//   that replica has more than `prefix_max_imbalance` requests in flight beyond the least loaded
//   one; then, as when no replica scores or the request has no ids, it picks the least loaded as
//   LeastRequests does. The replica picked remembers the request's ids, its leading id as the
//   most recent. A replica that leaves the Ready set never returns to it: its memory is dropped.
//   Cost per request: a hash lookup per replica plus one per id matched, and one per id recorded.
// A balancing router (RoundRobin, LeastRequests, PrefixAware) may send a share of requests,
// `random_share`, to a replica picked at random instead: the twin's stand-in for a gateway that
// balances less than it says (calibration fits the share to the queues the fleet shows).
// Deterministic for a given seed. Not thread-safe.
#ifndef TWINSCALE_SIMULATOR_MODEL_ROUTER_H_
#define TWINSCALE_SIMULATOR_MODEL_ROUTER_H_

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/core/rng.h"
#include "simulator/model/replica.h"
#include "simulator/workload/request.h"

namespace twinscale::sim {

enum class RouterKind { kRandom, kRandomPerConnection, kRoundRobin, kLeastRequests, kPrefixAware };

absl::StatusOr<RouterKind> ParseRouterKind(std::string_view name);
std::string_view RouterKindName(RouterKind kind);

struct RouterOptions {
  RouterKind kind = RouterKind::kRandom;
  int32_t connections = 64;                // RandomPerConnection: client connections
  int32_t requests_per_connection = 100;   // RandomPerConnection: requests before a reconnect
  int64_t prefix_max_imbalance = 8;        // PrefixAware: in-flight excess tolerated for a match
  int32_t prefix_ids_per_replica = 50000;  // PrefixAware: ids remembered per replica (LRU)
  double random_share = 0;  // balancing kinds: the share of requests routed at random instead
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
  // The prefix ids sent to one replica, most recently sent last (PrefixAware).
  class IdLru {
   public:
    bool Contains(uint64_t id) const { return index_.count(id) != 0; }
    // Marks `id` most recently sent, dropping the least recent beyond `capacity`.
    void Touch(uint64_t id, int32_t capacity);
    bool empty() const { return index_.empty(); }

   private:
    struct Node {
      uint64_t id = 0;
      int32_t prev = -1, next = -1;
    };
    void Unlink(int32_t n);
    void PushBack(int32_t n);
    std::unordered_map<uint64_t, int32_t> index_;  // lookups only, never iterated
    std::vector<Node> nodes_;
    int32_t head_ = -1, tail_ = -1;
  };

  size_t LeastLoaded(const std::vector<Replica*>& ready) const;
  size_t PickPrefixAware(const RequestSpec& request, const std::vector<Replica*>& ready);

  RouterOptions options_;
  Rng rng_;
  size_t next_ = 0;  // round-robin / tie-break cursor
  std::vector<Connection> connections_;
  // PrefixAware: by Replica::index(); the pick at which each was last seen Ready.
  std::vector<IdLru> prefix_ids_;
  std::vector<uint64_t> last_seen_;
  uint64_t picks_ = 0;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_ROUTER_H_
