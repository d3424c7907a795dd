// vLLM's automatic prefix cache (the V1 KVCacheManager and BlockPool) for one replica: which KV
// blocks hold a known prompt prefix, how many running sequences reference each, and which to evict
// first when an allocation needs room.
//
// Keys. A workload describes prompts by Mooncake-style prefix ids, one per 512-token span of the
// prompt, prefix-chained (RequestSpec::prefix_hashes). A full block b of the prompt (tokens
// [b x block_size, (b + 1) x block_size)) is keyed by mixing the key of block b - 1 (kRootKey for
// block 0) with the id of the span holding the block's last token and b. With 16-token blocks one
// id covers 32 blocks, so (id, b) is (id, sub-block 0..31) plus the span's place, which the chain
// already fixes. As with vLLM's chained block hashes, two prompts share a block's key only if they
// share every block up to it. Only full blocks inside the span the ids cover are keyed; the last,
// partial block and blocks of generated tokens are never cached (KeyedBlocks).
//
// States. The pool (kv_cache.h) counts blocks; the cache names only the cached ones:
//   referenced (ref > 0): held by running sequences, counted as used (KV usage);
//   evictable (ref == 0): still cached, so a later request can hit it, but free to the scheduler:
//     an allocation that finds no empty block evicts them, least recently released first.
// vLLM keeps one free queue of empty and evictable blocks in release order and pops its head, so
// cached blocks sit at its tail until the empty ones in front are used. Here empty blocks are
// always taken first, then evictable ones in LRU order; the difference is only that vLLM may evict
// a cached block while an empty block released after it still waits in its queue. A sequence
// releases its blocks last block first (as vLLM frees in reverse), so a prompt's tail is evicted
// before its head.
//
// Cost: Match does one hash lookup per block matched; Insert, Acquire, Release and each eviction
// are O(1) per block (InsertAll overlaps the memory latency of a run's inserts). The key index is
// an open-addressing table sized once (at most one entry per pool block), so nothing allocates
// after construction. Deterministic: order lives in an intrusive queue, never in hash-table
// iteration. Not thread-safe.
#ifndef TWINSCALE_SIMULATOR_MODEL_PREFIX_CACHE_H_
#define TWINSCALE_SIMULATOR_MODEL_PREFIX_CACHE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "simulator/model/kv_cache.h"

namespace twinscale::sim {

// Tokens covered by one prefix id (Mooncake's hash_ids are per 512-token block).
inline constexpr int32_t kPrefixIdTokens = 512;

class PrefixCache {
 public:
  static constexpr uint64_t kRootKey = 0x6a09e667f3bcc908ULL;

  // Key of prompt block `block` whose predecessor's key is `parent` (kRootKey for block 0);
  // `prefix_ids` are the request's ids and must cover the block (block < KeyedBlocks(...)).
  static uint64_t BlockKey(uint64_t parent, std::span<const uint64_t> prefix_ids, int64_t block,
                           int32_t block_size);
  // Number of leading prompt blocks that can be keyed: full blocks (floor(prompt / block_size))
  // whose tokens all lie in the spans the ids cover (floor(ids x 512 / block_size)).
  static int64_t KeyedBlocks(int64_t prompt_tokens, size_t num_prefix_ids, int32_t block_size);

  // `pool` outlives the cache; the cache moves its blocks between used, evictable and empty.
  explicit PrefixCache(KvBlockPool& pool);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  struct Match {
    int64_t blocks = 0;            // leading blocks found cached
    int64_t evictable = 0;         // of them, referenced by nobody: taking them uses free blocks
    uint64_t last_key = kRootKey;  // key of the last block found (kRootKey when none)
  };
  // The longest run of the prompt's leading blocks that is cached, at most `max_blocks` (which
  // must not exceed KeyedBlocks). Appends their entry ids to `entries`; changes nothing.
  Match Lookup(std::span<const uint64_t> prefix_ids, int64_t max_blocks, int32_t block_size,
               std::vector<int32_t>& entries) const;
  // Takes a reference on each entry (a hit); evictable ones become used.
  void Acquire(std::span<const int32_t> entries);
  // Registers a block a sequence has just filled (already counted as used) under `key` with one
  // reference, and returns its entry id; returns -1 when the key is already cached (another
  // sequence computed the same block): the caller keeps its block as a private one.
  int32_t Insert(uint64_t key);
  // Insert for each of `keys` in order (a sequence's run of newly filled prompt blocks), appending
  // the entry ids of the keys it cached to `cached`. The same as calling Insert on each, but the
  // index slots of the keys a few ahead are prefetched: the index spans megabytes per replica, so
  // each insert of a long prompt's blocks is otherwise a cache miss waited for in turn.
  void InsertAll(std::span<const uint64_t> keys, std::vector<int32_t>& cached);
  // Drops one reference on each entry, last entry first; an entry left unreferenced becomes
  // evictable at the most recently used end.
  void Release(std::span<const int32_t> entries);
  // Takes n blocks for a sequence: empty ones first, then evicts least recently released cached
  // blocks. Returns false (and takes nothing) when fewer than n are free.
  bool Allocate(int64_t n);

  int64_t cached_blocks() const { return static_cast<int64_t>(entries_.size() - spare_.size()); }
  int64_t evictable_blocks() const { return lru_size_; }
  bool Contains(uint64_t key) const { return Find(key) >= 0; }
  // References held on the entry for `key`; -1 when it is not cached.
  int32_t RefCount(uint64_t key) const;

 private:
  struct Entry {
    uint64_t key = 0;
    int32_t ref = 0;
    // Bumped whenever the entry enters or leaves the evictable queue, or is reused for another
    // key: a queue item is live only while it carries its entry's current stamp.
    uint32_t stamp = 0;
  };
  struct QueueItem {
    int32_t entry;
    uint32_t stamp;
  };
  struct Slot {
    uint64_t key = 0;
    int32_t entry = -1;  // -1: empty slot
  };

  int32_t Find(uint64_t key) const;  // entry id or -1
  void IndexInsert(uint64_t key, int32_t entry);
  void IndexErase(uint64_t key);
  void LruPushBack(int32_t e);
  void LruUnlink(int32_t e);
  void EvictOne();
  void CompactQueue();

  KvBlockPool& pool_;
  std::vector<Entry> entries_;  // slab, one per pool block at most
  std::vector<int32_t> spare_;  // unused entry ids
  std::vector<Slot> slots_;     // linear-probing index, power-of-two size, load <= 1/2
  uint64_t mask_ = 0;
  // The evictable entries in LRU order, as a queue with lazy deletion: releasing an entry appends
  // it; taking it back (a hit) only bumps its stamp, leaving a dead item that eviction skips. So
  // evictions read the queue in order (prefetchable) instead of chasing list links through the
  // slab. Dead items are dropped when they outnumber the live ones (CompactQueue).
  std::vector<QueueItem> lru_;
  size_t lru_head_ = 0;   // items before it are consumed
  int64_t lru_size_ = 0;  // live items
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_PREFIX_CACHE_H_
