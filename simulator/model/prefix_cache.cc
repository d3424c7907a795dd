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
  x.prev = lru_tail_;
  x.next = -1;
  if (lru_tail_ >= 0) {
    entries_[static_cast<size_t>(lru_tail_)].next = e;
  } else {
    lru_head_ = e;
  }
  lru_tail_ = e;
  ++lru_size_;
}

void PrefixCache::LruUnlink(int32_t e) {
  Entry& x = entries_[static_cast<size_t>(e)];
  if (x.prev >= 0) {
    entries_[static_cast<size_t>(x.prev)].next = x.next;
  } else {
    lru_head_ = x.next;
  }
  if (x.next >= 0) {
    entries_[static_cast<size_t>(x.next)].prev = x.prev;
  } else {
    lru_tail_ = x.prev;
  }
  x.prev = x.next = -1;
  --lru_size_;
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
  x = Entry{key, 1, -1, -1};
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
  constexpr size_t kAhead = 8;  // entries a few ahead are fetched while this one is released
  const size_t n = entries.size();
  for (size_t i = 0; i < std::min(kAhead, n); ++i) {
    __builtin_prefetch(&entries_[static_cast<size_t>(entries[n - 1 - i])], 1);
  }
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const size_t done = static_cast<size_t>(it - entries.rbegin());
    if (done + kAhead < n) {
      __builtin_prefetch(&entries_[static_cast<size_t>(entries[n - 1 - done - kAhead])], 1);
    }
    Entry& x = entries_[static_cast<size_t>(*it)];
    assert(x.ref > 0);
    if (--x.ref == 0) {
      LruPushBack(*it);
      pool_.MarkEvictable(1);
    }
  }
}

void PrefixCache::EvictOne() {
  const int32_t e = lru_head_;
  assert(e >= 0);
  LruUnlink(e);
  IndexErase(entries_[static_cast<size_t>(e)].key);
  spare_.push_back(e);
  pool_.Evict(1);
}

bool PrefixCache::Allocate(int64_t n) {
  if (n > pool_.free_blocks()) return false;
  // Evictions take the LRU list's head, in order. They go in batches: walk the list to the batch's
  // last victim, prefetching each victim's index slot on the way, then erase them; the slots'
  // misses then overlap instead of each erase waiting for its own (long prompts evict hundreds of
  // blocks per step, and with the inserts prefetched the erases were the cache's cost).
  constexpr int kBatch = 16;
  while (pool_.empty_blocks() < n) {
    const int64_t batch = std::min<int64_t>(kBatch, n - pool_.empty_blocks());
    int32_t e = lru_head_;
    for (int64_t i = 0; i < batch && e >= 0; ++i) {
      const Entry& x = entries_[static_cast<size_t>(e)];
      __builtin_prefetch(&slots_[x.key & mask_], 1);
      e = x.next;
    }
    for (int64_t i = 0; i < batch; ++i) EvictOne();
  }
  return pool_.TryAllocate(n);
}

int32_t PrefixCache::RefCount(uint64_t key) const {
  const int32_t e = Find(key);
  return e < 0 ? -1 : entries_[static_cast<size_t>(e)].ref;
}

}  // namespace twinscale::sim
