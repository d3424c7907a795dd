// Router: see router.h.
#include "simulator/model/router.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace twinscale::sim {

absl::StatusOr<RouterKind> ParseRouterKind(std::string_view name) {
  const std::string n = absl::AsciiStrToLower(std::string(name));
  if (n == "random") return RouterKind::kRandom;
  if (n == "random-per-connection" || n == "randomperconnection") {
    return RouterKind::kRandomPerConnection;
  }
  if (n == "round-robin" || n == "roundrobin") return RouterKind::kRoundRobin;
  if (n == "least-requests" || n == "leastrequests") return RouterKind::kLeastRequests;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown router \"", std::string(name),
      "\" (want one of: random, random-per-connection, round-robin, least-requests)"));
}

std::string_view RouterKindName(RouterKind kind) {
  switch (kind) {
    case RouterKind::kRandom: return "random";
    case RouterKind::kRandomPerConnection: return "random-per-connection";
    case RouterKind::kRoundRobin: return "round-robin";
    case RouterKind::kLeastRequests: return "least-requests";
  }
  return "?";
}

Router::Router(RouterOptions options, uint64_t seed, uint64_t run)
    : options_(options), rng_(seed, run, Stream::kRouter) {
  if (options_.kind == RouterKind::kRandomPerConnection) {
    connections_.resize(static_cast<size_t>(options_.connections > 0 ? options_.connections : 1));
  }
}

size_t Router::Pick(const RequestSpec& request, const std::vector<Replica*>& ready) {
  const size_t n = ready.size();
  switch (options_.kind) {
    case RouterKind::kRandom:
      return static_cast<size_t>(rng_.UniformInt(n));
    case RouterKind::kRoundRobin:
      return next_++ % n;
    case RouterKind::kLeastRequests: {
      const size_t start = next_ % n;
      size_t best = start;
      int64_t best_load = ready[start]->in_flight();
      for (size_t k = 1; k < n && best_load > 0; ++k) {
        const size_t i = (start + k) % n;
        const int64_t load = ready[i]->in_flight();
        if (load < best_load) {
          best = i;
          best_load = load;
        }
      }
      next_ = best + 1;
      return best;
    }
    case RouterKind::kRandomPerConnection: {
      Connection& c = connections_[rng_.UniformInt(connections_.size())];
      size_t pos = n;
      if (c.remaining > 0) {
        for (size_t i = 0; i < n; ++i) {
          if (ready[i]->index() == c.replica) {
            pos = i;
            break;
          }
        }
      }
      if (pos == n) {  // new connection, or its replica is no longer Ready
        pos = static_cast<size_t>(rng_.UniformInt(n));
        c.replica = ready[pos]->index();
        c.remaining = options_.requests_per_connection;
      }
      --c.remaining;
      return pos;
    }
  }
  return 0;
}

}  // namespace twinscale::sim
