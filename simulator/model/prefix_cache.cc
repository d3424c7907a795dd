// Prefix cache: see prefix_cache.h.
#include "simulator/model/prefix_cache.h"

#include <algorithm>
#include <cassert>

#include "simulator/core/rng.h"

namespace twinscale::sim {

uint64_t PrefixCache::BlockKey(uint64_t parent, std::span<const uint64_t> prefix_ids, int64_t block,
                               int32_t block_size) {
  // The span holding the block's last token: with block sizes dividing 512 every token of the
  // block.
  const int64_t span = (block * block_size + block_size - 1) / kPrefixIdTokens;
  assert(span >= 0 && static_cast<size_t>(span) < prefix_ids.size());
  const uint64_t own = Mix64(prefix_ids[static_cast<size_t>(span)] +
                             static_cast<uint64_t>(block) * 0xd1b54a32d192ed03ULL);
  return Mix64(parent ^ own);
}

int64_t PrefixCache::KeyedBlocks(int64_t prompt_tokens, size_t num_prefix_ids, int32_t block_size) {
  const int64_t covered = static_cast<int64_t>(num_prefix_ids) * kPrefixIdTokens;
  return std::min(prompt_tokens, covered) / block_size;
}

PrefixCache::PrefixCache(KvBlockPool& pool) : pool_(pool) {
  const int64_t max_entries = std::max<int64_t>(pool.total_blocks(), 1);
  entries_.reserve(static_cast<size_t>(max_entries));
  spare_.reserve(static_cast<size_t>(max_entries));
  size_t size = 16;
  while (size < static_cast<size_t>(2 * max_entries)) size <<= 1;
  slots_.assign(size, Slot{});
  mask_ = size - 1;
}

int32_t PrefixCache::Find(uint64_t key) const {
  for (uint64_t i = key & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.entry < 0) return -1;
    if (s.key == key) return s.entry;
  }
}

void PrefixCache::IndexInsert(uint64_t key, int32_t entry) {
  uint64_t i = key & mask_;
  while (slots_[i].entry >= 0) i = (i + 1) & mask_;
  slots_[i] = Slot{key, entry};
}

void PrefixCache::IndexErase(uint64_t key) {
  uint64_t i = key & mask_;
  while (slots_[i].key != key || slots_[i].entry < 0) i = (i + 1) & mask_;
  // Backward-shift deletion: pull later members of the probe run into the hole, so lookups never
  // meet a gap before their key (no tombstones, so the table never degrades).
  for (;;) {
    slots_[i].entry = -1;
    uint64_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (slots_[j].entry < 0) return;
      const uint64_t home = slots_[j].key & mask_;
      // The member at j may move to i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) break;
    }
    slots_[i] = slots_[j];
    i = j;
  }
}

void PrefixCache::LruPushBack(int32_t e) {
  Entry& x = entries_[static_cast<size_t>(e)];
  lru_.push_back({e, ++x.stamp});
  ++lru_size_;
  CompactQueue();
}

void PrefixCache::LruUnlink(int32_t e) {
  ++entries_[static_cast<size_t>(e)].stamp;  // its queue item is dead
  --lru_size_;
}

void PrefixCache::CompactQueue() {
  // Amortized O(1) per push: each compaction removes at least half of what it reads.
  const size_t pending = lru_.size() - lru_head_;
  if (pending < 64 || pending <= 2 * static_cast<size_t>(lru_size_)) {
    if (lru_head_ >= 64 && 2 * lru_head_ >= lru_.size()) {
      lru_.erase(lru_.begin(), lru_.begin() + static_cast<std::ptrdiff_t>(lru_head_));
      lru_head_ = 0;
    }
    return;
  }
  size_t out = 0;
  for (size_t i = lru_head_; i < lru_.size(); ++i) {
    const QueueItem item = lru_[i];
    if (entries_[static_cast<size_t>(item.entry)].stamp == item.stamp) lru_[out++] = item;
  }
  lru_.resize(out);
  lru_head_ = 0;
}

PrefixCache::Match PrefixCache::Lookup(std::span<const uint64_t> prefix_ids, int64_t max_blocks,
                                       int32_t block_size, std::vector<int32_t>& entries) const {
  Match m;
  uint64_t key = kRootKey;
  for (int64_t b = 0; b < max_blocks; ++b) {
    key = BlockKey(key, prefix_ids, b, block_size);
    const int32_t e = Find(key);
    if (e < 0) break;
    entries.push_back(e);
    if (entries_[static_cast<size_t>(e)].ref == 0) ++m.evictable;
    ++m.blocks;
    m.last_key = key;
  }
  return m;
}

void PrefixCache::Acquire(std::span<const int32_t> entries) {
  for (int32_t e : entries) {
    Entry& x = entries_[static_cast<size_t>(e)];
    if (x.ref == 0) {
      LruUnlink(e);
      pool_.Reclaim(1);
    }
    ++x.ref;
  }
}

int32_t PrefixCache::Insert(uint64_t key) {
  if (Find(key) >= 0) return -1;
  int32_t e;
  if (!spare_.empty()) {
    e = spare_.back();
    spare_.pop_back();
  } else {
    e = static_cast<int32_t>(entries_.size());
    entries_.emplace_back();
  }
  // One entry per pool block at most: the index never fills past half.
  assert(cached_blocks() <= std::max<int64_t>(pool_.total_blocks(), 1));
  Entry& x = entries_[static_cast<size_t>(e)];
  x.key = key;
  x.ref = 1;
  ++x.stamp;  // any queue item of the entry's former key is dead
  IndexInsert(key, e);
  return e;
}

void PrefixCache::InsertAll(std::span<const uint64_t> keys, std::vector<int32_t>& cached) {
  // Far enough ahead to cover a miss's latency with the work of the inserts in between.
  constexpr size_t kAhead = 8;
  auto prefetch = [&](uint64_t key) { __builtin_prefetch(&slots_[key & mask_], 1); };
  for (size_t i = 0; i < std::min(kAhead, keys.size()); ++i) prefetch(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) prefetch(keys[i + kAhead]);
    const int32_t e = Insert(keys[i]);
    if (e >= 0) cached.push_back(e);
  }
}

void PrefixCache::Release(std::span<const int32_t> entries) {
  // Last entry first; the entries kAhead further on are fetched while this one is released.
  constexpr size_t kAhead = 8;
  auto prefetch = [&](size_t i) {
    __builtin_prefetch(&entries_[static_cast<size_t>(entries[i])], 1);
  };
  for (size_t i = entries.size(); i-- > 0 && i + kAhead >= entries.size();) prefetch(i);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const size_t i = static_cast<size_t>(entries.rend() - it) - 1;  // *it is entries[i]
    if (i >= kAhead) prefetch(i - kAhead);
    Entry& x = entries_[static_cast<size_t>(*it)];
    assert(x.ref > 0);
    if (--x.ref == 0) {
      LruPushBack(*it);
      pool_.MarkEvictable(1);
    }
  }
}

void PrefixCache::EvictOne() {
  int32_t e = -1;
  while (e < 0) {
    assert(lru_head_ < lru_.size());
    const QueueItem item = lru_[lru_head_++];
    if (entries_[static_cast<size_t>(item.entry)].stamp == item.stamp) e = item.entry;
  }
  LruUnlink(e);
  IndexErase(entries_[static_cast<size_t>(e)].key);
  spare_.push_back(e);
  pool_.Evict(1);
}

bool PrefixCache::Allocate(int64_t n) {
  if (n > pool_.free_blocks()) return false;
  // Evictions read the queue in order. Long prompts evict hundreds of blocks per step, each a
  // cache miss on the slab and another on the index, so the entries of the items kEntryAhead
  // ahead are prefetched, and the index slots of those kSlotAhead ahead (whose entries have had
  // time to arrive): the misses overlap instead of each waiting for the last.
  constexpr size_t kEntryAhead = 16, kSlotAhead = 8;
  size_t fetched = lru_head_;
  while (pool_.empty_blocks() < n) {
    const size_t end = lru_.size();
    fetched = std::max(fetched, lru_head_);
    for (; fetched < std::min(end, lru_head_ + kEntryAhead); ++fetched) {
      __builtin_prefetch(&entries_[static_cast<size_t>(lru_[fetched].entry)], 1);
    }
    if (lru_head_ + kSlotAhead < end) {
      const Entry& x = entries_[static_cast<size_t>(lru_[lru_head_ + kSlotAhead].entry)];
      __builtin_prefetch(&slots_[x.key & mask_], 1);
    }
    EvictOne();
  }
  return pool_.TryAllocate(n);
}

int32_t PrefixCache::RefCount(uint64_t key) const {
  const int32_t e = Find(key);
  return e < 0 ? -1 : entries_[static_cast<size_t>(e)].ref;
}

}  // namespace twinscale::sim
