// KV-cache block accounting for one replica: a fixed pool of fixed-size blocks (vLLM's paged
// attention). A sequence holding `tokens` tokens of KV holds ceil(tokens / block_size) blocks. The
// pool only counts; which sequence holds what is the engine's business (replica.h), so allocation
// and release are O(1).
//
// Every block is in one of three states:
//   used       referenced by at least one running sequence;
//   evictable  holds a cached prompt prefix no sequence references (only with the prefix cache,
//              prefix_cache.h, which knows which blocks these are and moves blocks in and out);
//   empty      holds nothing.
// The scheduler sees free = empty + evictable, as vLLM's BlockPool.get_num_free_blocks() does (its
// free queue holds both), and KV usage counts used blocks only, as vllm:kv_cache_usage_perc does.
// Without a prefix cache nothing is ever evictable and the pool is a plain counter.
// Not thread-safe.
#ifndef TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_
#define TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_

#include <cassert>
#include <cstdint>

namespace twinscale::sim {

class KvBlockPool {
 public:
  KvBlockPool(int64_t total_blocks, int32_t block_size)
      : total_(total_blocks), empty_(total_blocks), block_size_(block_size) {}

  int64_t total_blocks() const { return total_; }
  // Blocks an allocation may take: empty ones, then cached ones nobody references (evicted).
  int64_t free_blocks() const { return empty_ + evictable_; }
  int64_t empty_blocks() const { return empty_; }
  int64_t evictable_blocks() const { return evictable_; }
  // Blocks referenced by running sequences.
  int64_t used_blocks() const { return total_ - empty_ - evictable_; }
  int32_t block_size() const { return block_size_; }
  int64_t capacity_tokens() const { return total_ * block_size_; }
  // Share of blocks in use, 0..1: what vllm:kv_cache_usage_perc reports (evictable ones are free).
  double Usage() const {
    return total_ == 0 ? 0.0 : static_cast<double>(used_blocks()) / static_cast<double>(total_);
  }

  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Takes n empty blocks if that many are empty; otherwise takes none and returns false. Evictable
  // blocks are reclaimed only through PrefixCache::Allocate, which knows which ones to evict.
  bool TryAllocate(int64_t n) {
    if (n > empty_) return false;
    empty_ -= n;
    return true;
  }
  // n used blocks become empty.
  void Release(int64_t n) {
    empty_ += n;
    assert(empty_ + evictable_ <= total_);
  }

  // Prefix-cache transitions (prefix_cache.h). A used block whose last reference went away stays
  // cached: used -> evictable.
  void MarkEvictable(int64_t n) {
    evictable_ += n;
    assert(empty_ + evictable_ <= total_);
  }
  // A cache hit on an evictable block: evictable -> used.
  void Reclaim(int64_t n) {
    evictable_ -= n;
    assert(evictable_ >= 0);
  }
  // Cached contents dropped: evictable -> empty.
  void Evict(int64_t n) {
    evictable_ -= n;
    empty_ += n;
    assert(evictable_ >= 0);
  }

 private:
  int64_t total_;
  int64_t empty_;
  int64_t evictable_ = 0;
  int32_t block_size_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_
