// The router, pick by pick, against replicas whose load the test sets: each request a replica
// accepts stays in its front end (the sim never runs), so in_flight() is exactly what the test put
// there. Expected picks are worked out from each policy's rule in router.h: the round-robin
// cursor, the least-loaded scan from the cursor, connections pinned for a number of requests, the
// prefix-aware score (leading ids seen), its imbalance limit and its LRU memory; random choices
// against binomial noise.
#include "simulator/model/router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "simulator/core/simulation.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/replica.h"
#include "simulator/model/run_stats.h"

namespace twinscale::sim {
namespace {

// `n` replicas (indices 0..n-1) whose requests wait in a 1 ms front end for a run that never comes.
class Pool {
 public:
  explicit Pool(int n) {
    deployment_.latency_model = LatencyModelKind::kLinear;
    deployment_.linear = LinearCoefficients{1000, 0, 0, /*a0_us=*/1000, 0, 0};
    deployment_.engine.max_num_seqs = 8;
    deployment_.engine.max_num_batched_tokens = 2048;
    deployment_.engine.kv_capacity_tokens_override = 100000;
    latency_ = MakeLatencyModel(deployment_);
    for (int i = 0; i < n; ++i) {
      ReplicaOptions o;
      o.index = i;
      o.deployment = &deployment_;
      o.latency = latency_.get();
      o.stats = &stats_;
      o.vllm_metrics = false;
      replicas_.push_back(std::make_unique<Replica>(sim_, o));
    }
  }
  // Adds `n` requests in flight at replica `i`.
  void Load(int i, int n) {
    for (int k = 0; k < n; ++k) {
      RequestSpec r;
      r.id = next_id_++;
      r.prompt_tokens = 16;
      r.output_tokens = 4;
      replicas_[static_cast<size_t>(i)]->Accept(r, SimTime());
    }
  }
  // The Ready set as the fleet would pass it: the replicas with these indices, in this order.
  std::vector<Replica*> Ready(const std::vector<int>& indices) const {
    std::vector<Replica*> out;
    for (int i : indices) out.push_back(replicas_[static_cast<size_t>(i)].get());
    return out;
  }
  std::vector<Replica*> All() const {
    std::vector<Replica*> out;
    for (const auto& r : replicas_) out.push_back(r.get());
    return out;
  }

 private:
  Simulation sim_;
  DeploymentSpec deployment_;
  std::unique_ptr<LatencyModel> latency_;
  RunStats stats_{TtftSlo{}};
  std::vector<std::unique_ptr<Replica>> replicas_;
  uint64_t next_id_ = 1;
};

RequestSpec WithIds(std::vector<uint64_t> ids) {
  RequestSpec r;
  r.prompt_tokens = 512 * static_cast<int32_t>(std::max<size_t>(1, ids.size()));
  r.prefix_hashes = std::move(ids);
  return r;
}

Router Make(RouterKind kind, uint64_t seed = 1) {
  RouterOptions o;
  o.kind = kind;
  return Router(o, seed, 0);
}

TEST(RouterKindTest, ParsesEveryNameAndItsAliasInAnyCase) {
  struct Case {
    std::string name;
    RouterKind want;
  };
  const std::vector<Case> cases = {
      {"random", RouterKind::kRandom},
      {"random-per-connection", RouterKind::kRandomPerConnection},
      {"RandomPerConnection", RouterKind::kRandomPerConnection},
      {"round-robin", RouterKind::kRoundRobin},
      {"RoundRobin", RouterKind::kRoundRobin},
      {"least-requests", RouterKind::kLeastRequests},
      {"LEASTREQUESTS", RouterKind::kLeastRequests},
      {"prefix-aware", RouterKind::kPrefixAware},
      {"PrefixAware", RouterKind::kPrefixAware},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<RouterKind> got = ParseRouterKind(c.name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want);
    // The canonical name parses back to the same kind.
    EXPECT_EQ(*ParseRouterKind(RouterKindName(c.want)), c.want);
  }
  EXPECT_EQ(RouterKindName(RouterKind::kLeastRequests), "least-requests");
}

TEST(RouterKindTest, RefusesUnknownNamesListingTheKnownOnes) {
  struct Case {
    std::string name;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"round_robin", "underscore: not one of the spellings"},
      {"least", "a prefix of a name is not the name"},
      {"consistent-hash", "a policy the twin does not model"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const absl::StatusOr<RouterKind> got = ParseRouterKind(c.name);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("want one of: random, random-per-connection, "
                                          "round-robin, least-requests, prefix-aware"),
              std::string::npos)
        << got.status();
  }
}

TEST(RouterTest, RoundRobinRotatesOverTheReadySetByPosition) {
  Pool pool(3);
  Router router = Make(RouterKind::kRoundRobin);
  const RequestSpec r;
  std::vector<size_t> picks;
  for (int i = 0; i < 7; ++i) picks.push_back(router.Pick(r, pool.All()));
  EXPECT_EQ(picks, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
  // Replica 1 leaves Ready: the cursor (now 7) goes on over the two positions left, 7 % 2 = 1.
  const std::vector<Replica*> two = pool.Ready({0, 2});
  EXPECT_EQ(router.Pick(r, two), 1u);
  EXPECT_EQ(router.Pick(r, two), 0u);
  EXPECT_EQ(router.Pick(r, two), 1u);
}

TEST(RouterTest, LeastRequestsPicksTheFewestInFlightAndTakesTurnsOnTies) {
  struct Case {
    std::string name;
    std::vector<int> loads;
    int picks_before;  // picks made first (over idle replicas), which move the cursor
    size_t want;
  };
  const std::vector<Case> cases = {
      {"the one idle replica", {2, 0, 1}, 0, 1},
      {"the least loaded wherever it is", {3, 4, 1, 2}, 0, 2},
      {"all equal: the cursor's replica", {1, 1, 1}, 0, 0},
      // Two picks over idle replicas (0, then 1) leave the cursor at 2.
      {"all equal after two picks: the third", {1, 1, 1}, 2, 2},
      // The scan starts at the cursor (2) and keeps the first of the least: 3 before 0.
      {"a tie for least: the first after the cursor", {0, 5, 5, 0}, 2, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pool pool(static_cast<int>(c.loads.size()));
    Router router = Make(RouterKind::kLeastRequests);
    for (int i = 0; i < c.picks_before; ++i) (void)router.Pick(RequestSpec(), pool.All());
    for (size_t i = 0; i < c.loads.size(); ++i) pool.Load(static_cast<int>(i), c.loads[i]);
    EXPECT_EQ(router.Pick(RequestSpec(), pool.All()), c.want);
  }
}

TEST(RouterTest, LeastRequestsSpreadsABurstEvenly) {
  // A gateway in front of 3 idle replicas, each pick accepted where it went: the loads go
  // 1-0-0, 1-1-0, 1-1-1, then around again: 9 requests, 3 each, in the order 0 1 2 0 1 2 0 1 2.
  Pool pool(3);
  Router router = Make(RouterKind::kLeastRequests);
  std::vector<size_t> picks;
  for (int i = 0; i < 9; ++i) {
    const size_t p = router.Pick(RequestSpec(), pool.All());
    picks.push_back(p);
    pool.Load(static_cast<int>(p), 1);
  }
  EXPECT_EQ(picks, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(RouterTest, RandomSpreadsWithinBinomialNoiseAndRepeatsForASeed) {
  // 30000 picks over 3 replicas: each count is Binomial(30000, 1/3), mean 10000, standard
  // deviation sqrt(30000 x 1/3 x 2/3) = 81.6; allow 5 of them.
  Pool pool(3);
  Router a = Make(RouterKind::kRandom, 42);
  Router b = Make(RouterKind::kRandom, 42);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 30000; ++i) {
    const size_t p = a.Pick(RequestSpec(), pool.All());
    ASSERT_LT(p, 3u);
    ++counts[p];
    ASSERT_EQ(b.Pick(RequestSpec(), pool.All()), p) << "same seed, same picks (pick " << i << ")";
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 5 * 81.6);
}

TEST(RouterTest, ARandomShareOfABalancingRouterGoesAnywhere) {
  // Least-requests in front of replica 0, idle, and replica 1 with 1000 requests in flight (loads
  // not changed by the picks): the balancing picks all go to 0, the random ones to either with
  // probability 1/2. With a random share of 0.4, replica 1 gets 0.4 x 1/2 = 0.2 of 20000 picks:
  // Binomial(20000, 0.2), mean 4000, standard deviation sqrt(20000 x 0.2 x 0.8) = 56.6; allow 5.
  Pool pool(2);
  pool.Load(1, 1000);
  RouterOptions o;
  o.kind = RouterKind::kLeastRequests;
  o.random_share = 0.4;
  Router router(o, 7, 0);
  int to_loaded = 0;
  for (int i = 0; i < 20000; ++i) to_loaded += router.Pick(RequestSpec(), pool.All()) == 1;
  EXPECT_NEAR(to_loaded, 4000, 5 * 56.6);
  // A share of 0 draws nothing and never strays.
  o.random_share = 0;
  Router balancing(o, 7, 0);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(balancing.Pick(RequestSpec(), pool.All()), 0u);
}

TEST(RouterTest, RandomPerConnectionKeepsAConnectionOnItsReplicaForItsRequests) {
  // One client connection carrying 3 requests before it reconnects: the picks come in runs of
  // three on one replica, each run starting where a random new connection lands.
  Pool pool(4);
  RouterOptions o;
  o.kind = RouterKind::kRandomPerConnection;
  o.connections = 1;
  o.requests_per_connection = 3;
  Router router(o, 7, 0);
  std::vector<size_t> picks;
  for (int i = 0; i < 30; ++i) picks.push_back(router.Pick(RequestSpec(), pool.All()));
  for (size_t run = 0; run < 10; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    EXPECT_EQ(picks[3 * run + 1], picks[3 * run]);
    EXPECT_EQ(picks[3 * run + 2], picks[3 * run]);
  }
  // Ten random landings over four replicas do not all hit one (probability 4 x 4^-10).
  bool moved = false;
  for (size_t run = 1; run < 10; ++run) moved = moved || picks[3 * run] != picks[0];
  EXPECT_TRUE(moved);
}

TEST(RouterTest, RandomPerConnectionReconnectsWhenItsReplicaLeavesReady) {
  Pool pool(3);
  RouterOptions o;
  o.kind = RouterKind::kRandomPerConnection;
  o.connections = 1;
  o.requests_per_connection = 100;
  Router router(o, 3, 0);
  const std::vector<Replica*> all = pool.All();
  const size_t first = router.Pick(RequestSpec(), all);
  // Its replica goes (draining): the connection breaks and the next request lands on one of the
  // two left, where the new connection then stays.
  std::vector<int> left;
  for (int i = 0; i < 3; ++i) {
    if (static_cast<size_t>(i) != first) left.push_back(i);
  }
  const std::vector<Replica*> ready = pool.Ready(left);
  const size_t next = router.Pick(RequestSpec(), ready);
  ASSERT_LT(next, 2u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(router.Pick(RequestSpec(), ready), next);
}

TEST(RouterTest, PrefixAwareFollowsTheLongestLeadingMatchWithinTheImbalanceLimit) {
  struct Case {
    std::string name;
    std::vector<int> loads;  // added after the history below
    std::vector<uint64_t> request;
    size_t want;
  };
  // History: ids {1, 2} go to idle replica 0 (the cursor's). Replica 0 then gets 9 requests in
  // flight, more than prefix_max_imbalance (8) beyond the idle ones, so {1, 2, 3, 4} goes to the
  // least loaded after the cursor, replica 1, though replica 0 saw its first two ids. After it:
  // in flight 9, 0, 0; the cursor at 2; replica 0 saw {1, 2}, replica 1 {1, 2, 3, 4}.
  const std::vector<Case> cases = {
      // Scores 2 (replica 0) and 3 (replica 1): the longer match, with 0 more than the least.
      {"the replica that saw more of the prompt's leading ids", {0, 0, 0}, {1, 2, 3, 9}, 1},
      // Both score 2: replica 1 has fewer in flight (2 against 9), and 2 more than the least.
      {"an equal match: the fewer in flight", {0, 2, 0}, {1, 2, 9}, 1},
      // Both score 2 with 9 in flight: the first from the cursor (2, 0, 1) is replica 0; the least
      // loaded has 5, so 4 more is within the limit.
      {"an equal match and load: the first from the cursor", {0, 9, 5}, {1, 2}, 0},
      {"a leading id no replica saw: least loaded, whatever follows", {0, 3, 0}, {9, 1, 2}, 2},
      {"no ids at all: least loaded", {0, 2, 1}, {}, 2},
      // Replica 1 (score 3) has 8 more in flight than the least loaded: the limit, still followed.
      {"8 more in flight than the least: still the match", {0, 8, 0}, {1, 2, 3}, 1},
      // 9 more: beyond the limit, the least loaded instead (replica 0's score 2 is 9 over too).
      {"9 more in flight: the least loaded instead", {0, 9, 0}, {1, 2, 3}, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pool pool(3);
    Router router = Make(RouterKind::kPrefixAware);
    ASSERT_EQ(router.options().prefix_max_imbalance, 8);
    ASSERT_EQ(router.Pick(WithIds({1, 2}), pool.All()), 0u);
    pool.Load(0, 9);
    ASSERT_EQ(router.Pick(WithIds({1, 2, 3, 4}), pool.All()), 1u);
    for (size_t i = 0; i < c.loads.size(); ++i) pool.Load(static_cast<int>(i), c.loads[i]);
    EXPECT_EQ(router.Pick(WithIds(c.request), pool.All()), c.want);
  }
}

TEST(RouterTest, PrefixAwareForgetsTheLeastRecentlySentIdsBeyondItsMemory) {
  // Two ids remembered per replica. Replica 0 is the least loaded while 5, 6 and 7 go there one
  // by one, so it keeps {6, 7}: 5, sent first, is forgotten.
  Pool pool(3);
  RouterOptions o;
  o.kind = RouterKind::kPrefixAware;
  o.prefix_ids_per_replica = 2;
  Router router(o, 1, 0);
  pool.Load(1, 1);
  pool.Load(2, 1);
  for (uint64_t id : {5, 6, 7}) ASSERT_EQ(router.Pick(WithIds({id}), pool.All()), 0u) << id;
  // Now replica 0 is the busiest (3 against 1, 1): a remembered id still draws its request
  // there; the forgotten one goes to the least loaded after the cursor (1).
  pool.Load(0, 3);
  EXPECT_EQ(router.Pick(WithIds({7}), pool.All()), 0u);
  EXPECT_EQ(router.Pick(WithIds({6}), pool.All()), 0u);
  EXPECT_EQ(router.Pick(WithIds({5}), pool.All()), 1u);
}

TEST(RouterTest, PrefixAwareRemembersEveryIdOfTheRequestWhereItWent) {
  // Where a request goes, all its ids are remembered, not only the leading one nor only those that
  // matched; a prompt must match from its first id to score.
  Pool pool(2);
  Router router = Make(RouterKind::kPrefixAware);
  ASSERT_EQ(router.Pick(WithIds({10, 11, 12, 13}), pool.All()), 0u);
  pool.Load(0, 2);  // busier than replica 1, within the limit: only a match draws requests there
  EXPECT_EQ(router.Pick(WithIds({12}), pool.All()), 0u) << "a later id of the first request";
  EXPECT_EQ(router.Pick(WithIds({10, 11, 99}), pool.All()), 0u) << "two leading ids match";
  EXPECT_EQ(router.Pick(WithIds({99}), pool.All()), 0u) << "99 went there with the last request";
  EXPECT_EQ(router.Pick(WithIds({77, 10, 11}), pool.All()), 1u) << "no leading match: least loaded";
}

}  // namespace
}  // namespace twinscale::sim
