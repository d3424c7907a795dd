// KV-cache block accounting for one replica: a fixed pool of fixed-size blocks (vLLM's paged
// attention). A sequence holding `tokens` tokens of KV holds ceil(tokens / block_size) blocks. The
// pool only counts; which sequence holds what is the engine's business (replica.h), so allocation and
// release are O(1). Not thread-safe.
#ifndef TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_
#define TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_

#include <cassert>
#include <cstdint>

namespace twinscale::sim {

class KvBlockPool {
 public:
  KvBlockPool(int64_t total_blocks, int32_t block_size)
      : total_(total_blocks), free_(total_blocks), block_size_(block_size) {}

  int64_t total_blocks() const { return total_; }
  int64_t free_blocks() const { return free_; }
  int64_t used_blocks() const { return total_ - free_; }
  int32_t block_size() const { return block_size_; }
  int64_t capacity_tokens() const { return total_ * block_size_; }
  // Share of blocks in use, 0..1: what vllm:kv_cache_usage_perc reports.
  double Usage() const { return total_ == 0 ? 0.0 : static_cast<double>(total_ - free_) / total_; }

  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Takes n blocks if that many are free; otherwise takes none and returns false.
  bool TryAllocate(int64_t n) {
    if (n > free_) return false;
    free_ -= n;
    return true;
  }
  void Release(int64_t n) {
    free_ += n;
    assert(free_ <= total_);
  }

 private:
  int64_t total_;
  int64_t free_;
  int32_t block_size_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_MODEL_KV_CACHE_H_
