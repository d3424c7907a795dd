// The prefix cache (vLLM's automatic prefix caching) and the PrefixAware router: the cache's own
// bookkeeping (keys, references, LRU eviction, the pool's counts), then the engine with caching on,
// each expected value worked by hand with a linear step model (b0 + b1 x prefill tokens), then the
// router's choices.
#include "simulator/model/prefix_cache.h"

#include <gtest/gtest.h>

#include <list>
#include <map>
#include <string>
#include <vector>

#include "simulator/model/fleet.h"
#include "simulator/model/replica.h"
#include "tests/util/engine_test_util.h"

namespace twinscale::sim {
namespace {

using testing::HandDeployment;
using testing::Harness;
using testing::Req;

RequestSpec WithIds(RequestSpec r, std::vector<uint64_t> ids) {
  r.prefix_hashes = std::move(ids);
  return r;
}

DeploymentSpec Caching(DeploymentSpec d) {
  d.engine.enable_prefix_caching = true;
  return d;
}

// ---------------------------------------------------------------------------------------------
// The cache on its own.

TEST(PrefixCacheTest, KeyedBlocksAreTheFullPromptBlocksTheIdsCover) {
  struct Case {
    std::string name;
    int64_t prompt;
    size_t ids;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"600 tokens, 2 ids: floor(600 / 16) = 37 full blocks", 600, 2, 37},
      {"512 tokens, 1 id: 32 blocks, the whole span", 512, 1, 32},
      {"600 tokens, 1 id: only the first 512 tokens have an id", 600, 1, 32},
      {"15 tokens: no full block", 15, 1, 0},
      {"no ids: nothing keyed", 1024, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PrefixCache::KeyedBlocks(c.prompt, c.ids, 16), c.want);
  }
}

TEST(PrefixCacheTest, KeysAreChainedSoOnlyASharedPrefixSharesKeys) {
  const std::vector<uint64_t> a = {7, 8}, b = {7, 9}, c = {6, 8};
  auto keys = [](const std::vector<uint64_t>& ids) {
    std::vector<uint64_t> k;
    uint64_t parent = PrefixCache::kRootKey;
    for (int64_t blk = 0; blk < 64; ++blk) {
      parent = PrefixCache::BlockKey(parent, ids, blk, 16);
      k.push_back(parent);
    }
    return k;
  };
  const auto ka = keys(a), kb = keys(b), kc = keys(c);
  // Blocks 0..31 lie in id 7's span: a and b share them; block 32 is the first of the second id.
  for (int blk = 0; blk < 32; ++blk) EXPECT_EQ(ka[blk], kb[blk]) << blk;
  for (int blk = 32; blk < 64; ++blk) EXPECT_NE(ka[blk], kb[blk]) << blk;
  // Same second id after a different first one: nothing shared (the chain carries the prefix).
  for (int blk = 0; blk < 64; ++blk) EXPECT_NE(ka[blk], kc[blk]) << blk;
  // Within one span every sub-block has its own key.
  EXPECT_NE(ka[0], ka[1]);
}

TEST(PrefixCacheTest, ReferencedBlocksAreUsedUnreferencedOnesEvictableInLruOrder) {
  KvBlockPool pool(8, 16);
  PrefixCache cache(pool);
  // A sequence takes 4 blocks and registers them under keys 1..4.
  ASSERT_TRUE(cache.Allocate(4));
  std::vector<int32_t> held;
  for (uint64_t k = 1; k <= 4; ++k) held.push_back(cache.Insert(k));
  EXPECT_EQ(cache.Insert(2), -1);  // already cached: a second copy stays private
  EXPECT_EQ(pool.used_blocks(), 4);
  EXPECT_DOUBLE_EQ(pool.Usage(), 0.5);
  // It finishes: the blocks stay cached but nobody references them: free, and usage 0.
  cache.Release(held);
  EXPECT_EQ(pool.used_blocks(), 0);
  EXPECT_EQ(pool.evictable_blocks(), 4);
  EXPECT_EQ(pool.free_blocks(), 8);
  EXPECT_DOUBLE_EQ(pool.Usage(), 0.0);
  EXPECT_EQ(cache.RefCount(1), 0);
  // A hit on keys 1 and 2 takes them back out of the free count.
  std::vector<int32_t> hit = {held[0], held[1]};
  cache.Acquire(hit);
  EXPECT_EQ(pool.used_blocks(), 2);
  EXPECT_EQ(pool.free_blocks(), 6);
  EXPECT_EQ(cache.RefCount(1), 1);
  // 6 blocks: 4 empty first, then the 2 evictable ones, least recently released first. Release
  // went last block first, so the LRU order is 4, 3 (keys 2 and 1 are referenced, not evictable).
  ASSERT_TRUE(cache.Allocate(5));
  EXPECT_FALSE(cache.Contains(4));
  EXPECT_TRUE(cache.Contains(3));
  ASSERT_TRUE(cache.Allocate(1));
  EXPECT_FALSE(cache.Contains(3));
  EXPECT_TRUE(cache.Contains(1));
  EXPECT_TRUE(cache.Contains(2));
  EXPECT_EQ(pool.free_blocks(), 0);
  EXPECT_FALSE(cache.Allocate(1));  // nothing left: the referenced blocks are never evicted
  EXPECT_EQ(cache.cached_blocks(), 2);
}

TEST(PrefixCacheTest, IndexAgreesWithAReferenceModelUnderChurn) {
  // Many inserts, hits and evictions on a small table (16 blocks, 32 slots) with keys that share
  // low bits, so probe runs wrap and deletions shift entries back, and hits that take evictable
  // blocks back leave dead items in the eviction queue; a std::map and std::list model say what
  // must be cached.
  KvBlockPool pool(16, 16);
  PrefixCache cache(pool);
  std::map<uint64_t, int32_t> ref_count;  // model: cached key -> references
  std::list<uint64_t> lru;                // model: evictable keys, least recent first
  std::map<uint64_t, int32_t> entry_of;
  std::vector<std::vector<uint64_t>> holders;  // keys each live "sequence" references
  uint64_t x = 12345;
  auto next = [&x]() {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x >> 33;
  };
  for (int round = 0; round < 20000; ++round) {
    const uint64_t r = next();
    if (r % 3 != 0 || holders.empty()) {
      // A new sequence of 1-3 blocks: hit what is cached, allocate and insert the rest.
      std::vector<uint64_t> keys;
      const int n = 1 + static_cast<int>(r % 3);
      for (int i = 0; i < n; ++i) keys.push_back(((next() % 40) << 5) | 7);  // same low 5 bits
      std::vector<int32_t> hits;
      std::vector<uint64_t> misses;
      for (uint64_t k : keys) {
        bool dup = false;
        for (uint64_t m : misses) dup = dup || m == k;
        if (dup) continue;
        if (ref_count.count(k) != 0) {
          hits.push_back(entry_of[k]);
        } else {
          misses.push_back(k);
        }
      }
      int64_t hit_evictable = 0;
      for (int32_t e : hits) {
        for (const auto& [k, id] : entry_of) {
          if (id == e && ref_count[k] == 0) ++hit_evictable;
        }
      }
      if (static_cast<int64_t>(misses.size()) + hit_evictable > pool.free_blocks()) continue;
      cache.Acquire(hits);
      std::vector<uint64_t> held;
      for (const auto& [k, id] : entry_of) {
        for (int32_t e : hits) {
          if (id == e) {
            if (ref_count[k]++ == 0) lru.remove(k);
            held.push_back(k);
          }
        }
      }
      ASSERT_TRUE(cache.Allocate(static_cast<int64_t>(misses.size())));
      // The model evicts from the LRU front what the empty blocks could not cover.
      while (static_cast<int64_t>(ref_count.size()) + static_cast<int64_t>(misses.size()) > 16) {
        ASSERT_FALSE(lru.empty());
        ref_count.erase(lru.front());
        entry_of.erase(lru.front());
        lru.pop_front();
      }
      // Half the rounds insert the run at once, as an engine step does (InsertAll).
      std::vector<int32_t> inserted;
      if (round % 2 == 0) {
        for (uint64_t k : misses) inserted.push_back(cache.Insert(k));
      } else {
        cache.InsertAll(misses, inserted);
      }
      ASSERT_EQ(inserted.size(), misses.size());
      for (size_t j = 0; j < misses.size(); ++j) {
        ASSERT_GE(inserted[j], 0);
        ref_count[misses[j]] = 1;
        entry_of[misses[j]] = inserted[j];
        held.push_back(misses[j]);
      }
      holders.push_back(held);
    } else {
      // A sequence finishes: its references go, last first.
      const size_t i = r % holders.size();
      std::vector<int32_t> entries;
      for (uint64_t k : holders[i]) entries.push_back(entry_of[k]);
      cache.Release(entries);
      for (auto it = holders[i].rbegin(); it != holders[i].rend(); ++it) {
        if (--ref_count[*it] == 0) lru.push_back(*it);
      }
      holders.erase(holders.begin() + static_cast<std::ptrdiff_t>(i));
    }
    ASSERT_EQ(cache.cached_blocks(), static_cast<int64_t>(ref_count.size())) << round;
    ASSERT_EQ(cache.evictable_blocks(), static_cast<int64_t>(lru.size())) << round;
    ASSERT_EQ(pool.evictable_blocks(), static_cast<int64_t>(lru.size())) << round;
    for (uint64_t k = 0; k < 40; ++k) {
      const uint64_t key = (k << 5) | 7;
      const auto it = ref_count.find(key);
      ASSERT_EQ(cache.RefCount(key), it == ref_count.end() ? -1 : it->second) << round;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The engine with caching on. b0 = 1000 us per step, b1 = 10 us per prefill token, no decode cost.

TEST(PrefixCachingEngineTest, ASecondRequestSharingTheFirstIdPrefillsOnlyTheRest) {
  // A: 600 tokens, ids [7, 8], one output token: one step of 1000 + 10 x 600 = 7000 us. Its full
  //   blocks 0..36 (floor(600 / 16) = 37) are cached, 0..31 under id 7, 32..36 under id 8.
  // B at 10 ms: 600 tokens, ids [7, 9]: blocks 0..31 hit (512 tokens); block 32 is keyed by id 9:
  //   a miss. It prefills 600 - 512 = 88 tokens: 1000 + 10 x 88 = 1880 us.
  Harness h(Caching(HandDeployment(256, 2048, 100000, 1000, 10)));
  h.Run({WithIds(Req(1, 0, 600, 1), {7, 8}), WithIds(Req(2, 10, 600, 1), {7, 9})});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 7'000'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 1'880'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.prompt_tokens_computed, 600 + 88);
  EXPECT_EQ(s.prefix_cache_queried_tokens, 1200);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 512);
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit_rate, 512.0 / 1200.0);
  const Replica& r = h.fleet->replica(0);
  EXPECT_EQ(r.metrics().prefix_cache_queries(), 1200);
  EXPECT_EQ(r.metrics().prefix_cache_hits(), 512);
  // Left behind: A's 37 blocks plus B's blocks 32..36 under [7, 9], all unreferenced: KV usage 0.
  ASSERT_NE(r.prefix_cache(), nullptr);
  EXPECT_EQ(r.prefix_cache()->cached_blocks(), 42);
  EXPECT_EQ(r.kv_pool().evictable_blocks(), 42);
  EXPECT_DOUBLE_EQ(r.kv_usage(), 0.0);
}

TEST(PrefixCachingEngineTest, AnIdenticalPromptStillComputesTheBlockHoldingItsLastToken) {
  // A: 512 tokens, id [7]: 1000 + 5120 = 6120 us; all 32 blocks cached.
  // B: the same prompt. The hit is capped at 512 - 1 tokens, floor(511 / 16) = 31 blocks = 496
  //   tokens; it prefills the last block, 16 tokens: 1000 + 160 = 1160 us.
  Harness h(Caching(HandDeployment(256, 2048, 100000, 1000, 10)));
  h.Run({WithIds(Req(1, 0, 512, 1), {7}), WithIds(Req(2, 10, 512, 1), {7})});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 6'120'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 1'160'000);
  EXPECT_EQ(h.Summary().prefix_cache_hit_tokens, 496);
  EXPECT_EQ(h.Summary().prompt_tokens_computed, 512 + 16);
}

// ---------------------------------------------------------------------------------------------
// An assumed hit (RequestSpec::assumed_cached_tokens) on an engine without a prefix cache: the
// twin's stand-in for reuse it knows only as a share. It must prefill what the same real hit does.

RequestSpec Assuming(RequestSpec r, int32_t cached) {
  r.assumed_cached_tokens = cached;
  return r;
}

DeploymentSpec NoCaching(DeploymentSpec d) {
  d.engine.enable_prefix_caching = false;
  return d;
}

TEST(AssumedPrefixHitTest, AnAssumedHitPrefillsWhatTheSameRealHitDoes) {
  // The two tests above with the hits assumed instead of found, caching off:
  //   A: 600 tokens, nothing assumed: 7000 us. B at 10 ms: 600 tokens, 512 assumed: it prefills
  //   88: 1880 us, as B's real 512-token hit. C at 20 ms: 512 tokens, all 512 assumed: capped
  //   below the last token, floor(511 / 16) = 31 blocks, 496 tokens; it prefills 16: 1160 us, as
  //   the identical prompt's real hit. D at 30 ms: 600 tokens, 500 assumed: whole blocks only,
  //   31 blocks = 496 tokens; it prefills 104: 1000 + 1040 = 2040 us.
  Harness h(NoCaching(HandDeployment(256, 2048, 100000, 1000, 10)));
  h.Run({Req(1, 0, 600, 1), Assuming(Req(2, 10, 600, 1), 512), Assuming(Req(3, 20, 512, 1), 512),
         Assuming(Req(4, 30, 600, 1), 500)});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 7'000'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 1'880'000);
  EXPECT_EQ(h.records.at(3).ttft.nanos(), 1'160'000);
  EXPECT_EQ(h.records.at(4).ttft.nanos(), 2'040'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.prompt_tokens_computed, 600 + 88 + 16 + 104);
  // Counted where a hit is assumed (an engine without a cache looks nothing up otherwise).
  EXPECT_EQ(s.prefix_cache_queried_tokens, 600 + 512 + 600);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 512 + 496 + 496);
  // The hit's blocks are the request's own: nothing is left cached, and none is evictable.
  EXPECT_EQ(h.fleet->replica(0).prefix_cache(), nullptr);
  EXPECT_EQ(h.fleet->replica(0).kv_pool().evictable_blocks(), 0);
}

TEST(AssumedPrefixHitTest, AnEngineWithACacheIgnoresTheAssumption) {
  // Caching on, no ids: B's assumption is ignored and it prefills its whole prompt.
  Harness h(Caching(HandDeployment(256, 2048, 100000, 1000, 10)));
  h.Run({Req(1, 0, 600, 1), Assuming(Req(2, 10, 600, 1), 512)});
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 7'000'000);
  EXPECT_EQ(h.Summary().prefix_cache_hit_tokens, 0);
}

TEST(AssumedPrefixHitTest, APreemptedRequestRecomputesItsWholePrompt) {
  // The preemption case above, caching off, B (32 tokens, 10 outputs) assuming 32 cached: capped
  // at floor(31 / 16) = 1 block, 16 tokens.
  //   step 0 [0, 1640 us): A (48) and B (16 of 32 prefilled) admitted: 5 blocks, 1 empty;
  //     1000 + 10 x 64 = 1640 us. Both emit their first token.
  //   step 1 [1640, 2640): both open a block: need 2, free 1 -> B is preempted (2 blocks freed,
  //     free 3); it will recompute 32 + 1 = 33 tokens with nothing assumed. A decodes.
  //   step 2 [2640, 3640): B needs 3 blocks for 33 tokens, 2 are free (A holds 4): admission
  //     stops. A emits its last token and frees its 4 blocks.
  //   step 3 [3640, 4970): B prefills 33: 1000 + 330 = 1330 us; steps 4..11 at 1000 us each: its
  //     last token at 4970 + 8000 = 12970 us. (Had the assumption held after the preemption, step
  //     3 would have prefilled 17 tokens: 1170 us.)
  Harness h(NoCaching(HandDeployment(256, 2048, 96, 1000, 10)));
  h.Run({Req(1, 0, 48, 3), Assuming(Req(2, 0, 32, 10), 32)});
  const RequestRecord& a = h.records.at(1);
  const RequestRecord& b = h.records.at(2);
  EXPECT_EQ(a.e2e.nanos(), 3'640'000);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.ttft.nanos(), 1'640'000);
  EXPECT_EQ(b.e2e.nanos(), 12'970'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.prompt_tokens_computed, 48 + 16 + 33);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 16);
}

TEST(PrefixCachingEngineTest, AFullCacheEvictsLeastRecentlyReleasedBlocksAndUsageCountsOnlyHeld) {
  // KV: 128 tokens = 8 blocks. Prompts of 64 tokens (4 blocks, all keyed), one output token, 10 ms
  // apart, so each runs alone: 1000 + 640 = 1640 us unless it hits.
  //   A [1]: 4 empty blocks; released last block first: LRU A3 A2 A1 A0.
  //   B [2]: the other 4 empty blocks; LRU A3 A2 A1 A0 B3 B2 B1 B0. No empty block is left, yet
  //     all 8 are free (evictable).
  //   C [3]: needs 4: evicts A3 A2 A1 A0 and is admitted: 1640 us.
  //   D [2]: B's blocks are still cached: hit capped at floor(63 / 16) = 3 blocks = 48 tokens;
  //     prefills 16: 1000 + 160 = 1160 us.
  //   E [1]: A's blocks are gone: no hit, 1640 us.
  // Usage counts referenced blocks only: at most 4 of 8 (0.5), though all 8 hold cached prefixes
  // from B on; at the end nothing is referenced (0) and 8 blocks are cached.
  Harness h(Caching(HandDeployment(256, 2048, 128, 1000, 10)));
  h.Run({WithIds(Req(1, 0, 64, 1), {1}), WithIds(Req(2, 10, 64, 1), {2}),
         WithIds(Req(3, 20, 64, 1), {3}), WithIds(Req(4, 30, 64, 1), {2}),
         WithIds(Req(5, 40, 64, 1), {1})});
  EXPECT_EQ(h.records.at(1).ttft.nanos(), 1'640'000);
  EXPECT_EQ(h.records.at(2).ttft.nanos(), 1'640'000);
  EXPECT_EQ(h.records.at(3).ttft.nanos(), 1'640'000);
  EXPECT_EQ(h.records.at(4).ttft.nanos(), 1'160'000);
  EXPECT_EQ(h.records.at(5).ttft.nanos(), 1'640'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.prefix_cache_queried_tokens, 5 * 64);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 48);
  EXPECT_EQ(s.prompt_tokens_computed, 4 * 64 + 16);
  EXPECT_DOUBLE_EQ(s.kv_peak_utilization, 0.5);
  const Replica& r = h.fleet->replica(0);
  EXPECT_DOUBLE_EQ(r.kv_usage(), 0.0);
  EXPECT_EQ(r.kv_pool().evictable_blocks(), 8);
  EXPECT_EQ(r.prefix_cache()->cached_blocks(), 8);
}

TEST(PrefixCachingEngineTest, APreemptedRequestHitsItsOwnCachedPromptWhenReadmitted) {
  // KV: 96 tokens = 6 blocks. A: 48 tokens (3 blocks), no ids, 3 output tokens. B: 32 tokens,
  // id [5] (2 keyed blocks), 10 output tokens. Both at 0, A first.
  //   step 0 [0, 1800 us): both admitted (5 blocks; 1 empty), 1000 + 10 x 80 = 1800 us. B's two
  //     blocks are registered. Both emit their first token.
  //   step 1 [1800, 2800): A (48 tokens of KV) and B (32) both open a block: need 2, free 1 ->
  //     preempt B: its 2 blocks stay cached, unreferenced (free 3). A takes the empty block.
  //     B will recompute 32 + 1 = 33 tokens.
  //   step 2 [2800, 3800): B's hit is 2 blocks (cap floor(32 / 16) = 2), both unreferenced; with
  //     the one block its 33rd token needs that is 3 blocks, but only 2 are free (A holds 4):
  //     admission stops. A emits its 3rd and last token and frees 4 blocks.
  //   step 3 [3800, 4810): B is admitted: 2 blocks hit, 1 token prefilled: 1000 + 10 = 1010 us
  //     (without the cache it would prefill 33: 1330 us).
  //   steps 4..11: B's tokens 3..10 at 1000 us each: last token at 4810 + 8000 = 12810 us.
  Harness h(Caching(HandDeployment(256, 2048, 96, 1000, 10)));
  h.Run({Req(1, 0, 48, 3), WithIds(Req(2, 0, 32, 10), {5})});
  const RequestRecord& a = h.records.at(1);
  const RequestRecord& b = h.records.at(2);
  EXPECT_EQ(a.e2e.nanos(), 3'800'000);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.ttft.nanos(), 1'800'000);
  EXPECT_EQ(b.e2e.nanos(), 12'810'000);
  const RunSummary s = h.Summary();
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.prompt_tokens_computed, 48 + 32 + 1);
  // Counted once per request at its first admission, as vLLM's counters do: 48 + 32 queried, no
  // hit (the re-admission's 32-token hit goes to vLLM's separate preempted counters).
  EXPECT_EQ(s.prefix_cache_queried_tokens, 80);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 0);
}

// A mixed workload that preempts: lengths from a fixed LCG; ids shared by every third request.
std::vector<RequestSpec> MixedWorkload(bool with_ids) {
  std::vector<RequestSpec> v;
  uint64_t x = 99;
  auto next = [&x](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  for (uint64_t i = 0; i < 400; ++i) {
    const int32_t prompt = 20 + static_cast<int32_t>(next(1200));
    const int32_t output = 1 + static_cast<int32_t>(next(150));
    RequestSpec r = Req(i, 0.4 * static_cast<double>(i), prompt, output);
    if (with_ids) {
      const size_t n = static_cast<size_t>((prompt + 511) / 512);
      for (size_t k = 0; k < n; ++k) r.prefix_hashes.push_back(k == 0 ? i % 3 : 1000 * i + k);
    }
    v.push_back(r);
  }
  return v;
}

TEST(PrefixCachingEngineTest, WithoutIdsOrWithCachingOffTheEngineIsUnchanged) {
  // 400 requests into 6000 tokens of KV: plenty of preemption. Caching off (with or without ids)
  // and caching on without ids must schedule identically; caching on with ids must not.
  auto run = [](bool caching, bool ids) {
    DeploymentSpec d = HandDeployment(64, 512, 6000, 1000, 2, 20);
    d.engine.enable_prefix_caching = caching;
    auto h = std::make_unique<Harness>(d);
    h->Run(MixedWorkload(ids));
    return h;
  };
  const auto base = run(false, false);
  const RunSummary bs = base->Summary();
  ASSERT_EQ(base->records.size(), 400u);
  ASSERT_GT(bs.preemptions, 0);
  struct Variant {
    std::string name;
    bool caching, ids;
  };
  for (const Variant& v : {Variant{"caching off, ids ignored", false, true},
                           Variant{"caching on, requests without ids", true, false}}) {
    SCOPED_TRACE(v.name);
    const auto other = run(v.caching, v.ids);
    ASSERT_EQ(other->records.size(), base->records.size());
    for (const auto& [id, want] : base->records) {
      const RequestRecord& got = other->records.at(id);
      EXPECT_EQ(got.ttft.nanos(), want.ttft.nanos()) << id;
      EXPECT_EQ(got.e2e.nanos(), want.e2e.nanos()) << id;
      EXPECT_EQ(got.scheduling_delay.nanos(), want.scheduling_delay.nanos()) << id;
      EXPECT_EQ(got.preemptions, want.preemptions) << id;
      EXPECT_EQ(got.outcome, want.outcome) << id;
    }
    const RunSummary os = other->Summary();
    EXPECT_EQ(os.engine_steps, bs.engine_steps);
    EXPECT_EQ(os.sequence_steps, bs.sequence_steps);
    EXPECT_EQ(os.preemptions, bs.preemptions);
    EXPECT_EQ(os.prompt_tokens_computed, bs.prompt_tokens_computed);
    EXPECT_EQ(os.kv_peak_utilization, bs.kv_peak_utilization);
    EXPECT_EQ(os.prefix_cache_hit_tokens, 0);
  }
  const auto cached = run(true, true);
  const RunSummary cs = cached->Summary();
  EXPECT_GT(cs.prefix_cache_hit_tokens, 0);
  EXPECT_LT(cs.prompt_tokens_computed, bs.prompt_tokens_computed);
  EXPECT_EQ(cached->records.size(), 400u);
}

// ---------------------------------------------------------------------------------------------
// The PrefixAware router. Every request arrives at t = 0 with 50 output tokens, so nothing
// finishes while they are routed and in-flight counts are simply the requests sent so far.

std::map<uint64_t, int32_t> RouteAll(RouterOptions router, int32_t replicas,
                                     std::vector<RequestSpec> requests) {
  FleetOptions o;
  o.deployment = HandDeployment(256, 2048, 1000000, 1000);
  o.initial_replicas = replicas;
  o.router = router;
  Simulation sim;
  RunStats stats({});
  std::map<uint64_t, int32_t> where;
  stats.set_record_sink([&](const RequestRecord& r) { where[r.id] = r.replica; });
  Fleet fleet(sim, o, &stats);
  testing::VectorSource src(std::move(requests));
  fleet.AttachSource(&src);
  sim.Run();
  return where;
}

TEST(PrefixAwareRouterTest, RequestsSharingALeadingIdStayTogetherWhileLoadsAreBalanced) {
  // 3 replicas; no replica knows an id at first, so a request goes to the least loaded (ties to
  // the one after the last pick, as LeastRequests does).
  //   1 [10]      -> none scores: least loaded, replica 0.
  //   2 [10, 11]  -> replica 0 scores 1 (load 1, least load 0: within 8) -> 0.
  //   3 [20]      -> none scores: least loaded after replica 0 -> 1.
  //   4 [10]      -> replica 0 (load 2) -> 0.
  //   5 [20]      -> replica 1 -> 1.
  //   6 [30]      -> none scores: least loaded after replica 1 -> 2.
  //   7 [10, 11]  -> replica 0 scores 2 -> 0.
  RouterOptions ro;
  ro.kind = RouterKind::kPrefixAware;
  const auto where =
      RouteAll(ro, 3,
               {WithIds(Req(1, 0, 100, 50), {10}), WithIds(Req(2, 0, 100, 50), {10, 11}),
                WithIds(Req(3, 0, 100, 50), {20}), WithIds(Req(4, 0, 100, 50), {10}),
                WithIds(Req(5, 0, 100, 50), {20}), WithIds(Req(6, 0, 100, 50), {30}),
                WithIds(Req(7, 0, 100, 50), {10, 11})});
  const std::map<uint64_t, int32_t> want = {{1, 0}, {2, 0}, {3, 1}, {4, 0}, {5, 1}, {6, 2}, {7, 0}};
  EXPECT_EQ(where, want);
}

TEST(PrefixAwareRouterTest, AnOverloadedMatchFallsBackToTheLeastLoaded) {
  // 12 requests with id [10] and one without, 3 replicas, imbalance 8.
  //   1        -> least loaded: replica 0.
  //   2..9     -> replica 0 matches with 1..8 in flight vs 0 on the others: within 8 -> 0.
  //   10       -> replica 0 has 9 in flight, 9 more than replica 1: least loaded after 0 -> 1.
  //   11, 12   -> both 0 and 1 score 1; ties go to fewer in flight: replica 1 (1, then 2).
  //   13 (no ids) -> least loaded: replica 2.
  RouterOptions ro;
  ro.kind = RouterKind::kPrefixAware;
  std::vector<RequestSpec> v;
  for (uint64_t i = 1; i <= 12; ++i) v.push_back(WithIds(Req(i, 0, 100, 50), {10}));
  v.push_back(Req(13, 0, 100, 50));
  const auto where = RouteAll(ro, 3, v);
  for (uint64_t i = 1; i <= 9; ++i) EXPECT_EQ(where.at(i), 0) << i;
  EXPECT_EQ(where.at(10), 1);
  EXPECT_EQ(where.at(11), 1);
  EXPECT_EQ(where.at(12), 1);
  EXPECT_EQ(where.at(13), 2);

  // The imbalance is configurable: with 2, request 4 (replica 0 at 3 in flight) falls back.
  ro.prefix_max_imbalance = 2;
  const auto tight = RouteAll(ro, 3, v);
  for (uint64_t i = 1; i <= 3; ++i) EXPECT_EQ(tight.at(i), 0) << i;
  EXPECT_EQ(tight.at(4), 1);
}

TEST(PrefixAwareRouterTest, ParsesAndNamesTheKind) {
  const auto k = ParseRouterKind("prefix-aware");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, RouterKind::kPrefixAware);
  EXPECT_EQ(RouterKindName(RouterKind::kPrefixAware), "prefix-aware");
}

}  // namespace
}  // namespace twinscale::sim
