// Router: see router.h.
#include "simulator/model/router.h"

#include <algorithm>

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
  if (n == "prefix-aware" || n == "prefixaware") return RouterKind::kPrefixAware;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown router \"", std::string(name),
                   "\" (want one of: random, random-per-connection, round-robin, least-requests, "
                   "prefix-aware)"));
}

std::string_view RouterKindName(RouterKind kind) {
  switch (kind) {
    case RouterKind::kRandom:
      return "random";
    case RouterKind::kRandomPerConnection:
      return "random-per-connection";
    case RouterKind::kRoundRobin:
      return "round-robin";
    case RouterKind::kLeastRequests:
      return "least-requests";
    case RouterKind::kPrefixAware:
      return "prefix-aware";
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
  if (options_.random_share > 0 && options_.kind != RouterKind::kRandom &&
      options_.kind != RouterKind::kRandomPerConnection &&
      rng_.Uniform01() < options_.random_share) {
    return static_cast<size_t>(rng_.UniformInt(n));
  }
  switch (options_.kind) {
    case RouterKind::kRandom:
      return static_cast<size_t>(rng_.UniformInt(n));
    case RouterKind::kRoundRobin:
      return next_++ % n;
    case RouterKind::kLeastRequests: {
      const size_t best = LeastLoaded(ready);
      next_ = best + 1;
      return best;
    }
    case RouterKind::kPrefixAware:
      return PickPrefixAware(request, ready);
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

size_t Router::LeastLoaded(const std::vector<Replica*>& ready) const {
  // Scans from the cursor so that equally loaded replicas take turns.
  const size_t n = ready.size();
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
  return best;
}

size_t Router::PickPrefixAware(const RequestSpec& request, const std::vector<Replica*>& ready) {
  const size_t n = ready.size();
  ++picks_;
  for (const Replica* r : ready) {
    const size_t index = static_cast<size_t>(r->index());
    if (index >= prefix_ids_.size()) {
      prefix_ids_.resize(index + 1);
      last_seen_.resize(index + 1, 0);
    }
    last_seen_[index] = picks_;
  }
  // Replicas leave Ready only to drain and go: now and then forget those not Ready any more.
  if (picks_ % 1024 == 0) {
    for (size_t index = 0; index < prefix_ids_.size(); ++index) {
      if (last_seen_[index] != picks_ && !prefix_ids_[index].empty()) prefix_ids_[index] = IdLru{};
    }
  }

  const size_t least = LeastLoaded(ready);
  size_t pick = least;
  const std::vector<uint64_t>& ids = request.prefix_hashes;
  if (!ids.empty()) {
    // Best score = most leading ids seen; ties to fewer in flight, then cursor order.
    size_t best = n;
    size_t best_score = 0;
    int64_t best_load = 0;
    const size_t start = next_ % n;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (start + k) % n;
      const IdLru& seen = prefix_ids_[static_cast<size_t>(ready[i]->index())];
      size_t score = 0;
      while (score < ids.size() && seen.Contains(ids[score])) ++score;
      if (score == 0) continue;
      const int64_t load = ready[i]->in_flight();
      if (score > best_score || (score == best_score && load < best_load)) {
        best = i;
        best_score = score;
        best_load = load;
      }
    }
    if (best < n && best_load - ready[least]->in_flight() <= options_.prefix_max_imbalance) {
      pick = best;
    }
  }
  next_ = pick + 1;
  // Remember the ids, the leading one last so it is the most recent: it is the most shared.
  IdLru& seen = prefix_ids_[static_cast<size_t>(ready[pick]->index())];
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    seen.Touch(*it, options_.prefix_ids_per_replica);
  }
  return pick;
}

void Router::IdLru::Unlink(int32_t n) {
  Node& x = nodes_[static_cast<size_t>(n)];
  if (x.prev >= 0) {
    nodes_[static_cast<size_t>(x.prev)].next = x.next;
  } else {
    head_ = x.next;
  }
  if (x.next >= 0) {
    nodes_[static_cast<size_t>(x.next)].prev = x.prev;
  } else {
    tail_ = x.prev;
  }
  x.prev = x.next = -1;
}

void Router::IdLru::PushBack(int32_t n) {
  Node& x = nodes_[static_cast<size_t>(n)];
  x.prev = tail_;
  x.next = -1;
  if (tail_ >= 0) {
    nodes_[static_cast<size_t>(tail_)].next = n;
  } else {
    head_ = n;
  }
  tail_ = n;
}

void Router::IdLru::Touch(uint64_t id, int32_t capacity) {
  const auto it = index_.find(id);
  if (it != index_.end()) {
    if (it->second != tail_) {
      Unlink(it->second);
      PushBack(it->second);
    }
    return;
  }
  int32_t node;
  if (static_cast<int64_t>(index_.size()) >= std::max<int64_t>(capacity, 1)) {
    node = head_;  // the least recently sent id makes room
    Unlink(node);
    index_.erase(nodes_[static_cast<size_t>(node)].id);
  } else {
    node = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[static_cast<size_t>(node)].id = id;
  PushBack(node);
  index_.emplace(id, node);
}

}  // namespace twinscale::sim
