#include "tensor/storage.h"

#include <bit>
#include <cstdint>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "tensor/error.h"

namespace aclgrad {

namespace {

void* new_block(size_t bytes) {
  return ::operator new (bytes, std::align_val_t{Storage::kAlignment}, std::nothrow);
}
void delete_block(void* p) {
  ::operator delete (p, std::align_val_t{Storage::kAlignment});
}

// Freed large buffers, kept by size class for the next allocation of that class. A training
// step allocates and frees the same large activations and gradients every step; the system
// allocator returns such memory to the kernel (glibc trims the heap top and unmaps mmap'ed
// chunks), so every step faulted it in again, zero-filled page by page (~15% of a step of the
// example CNN). At most kCacheMaxBytes are kept: the blocks freed longest ago go first. Under
// AddressSanitizer nothing is cached, so use-after-free stays detectable.
class BlockCache {
 public:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kEnabled = false;
#else
  static constexpr bool kEnabled = true;
#endif

  // The block size an allocation of bytes (> 0) gets: for large sizes the next of 8 classes per
  // power of two (at most 1/8 more), so slightly different sizes share blocks.
  static size_t block_size(size_t bytes) {
    size_t step = Storage::kAlignment;
    if (kEnabled && bytes >= Storage::kCacheMinBytes) step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
  }

  // A cached block of exactly block_size bytes (the most recently freed one), or nullptr.
  void* take(size_t block_size) {
    if (!kEnabled || block_size < Storage::kCacheMinBytes) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_size_.find(block_size);
    if (it == by_size_.end() || it->second.empty()) return nullptr;
    const auto entry = it->second.back();
    it->second.pop_back();
    void* p = entry->data;
    cached_ -= block_size;
    freed_.erase(entry);
    return p;
  }

  // Keeps a large block, evicting the longest-kept blocks beyond kCacheMaxBytes; frees the others.
  void give(void* p, size_t block_size) {
    if (!kEnabled || block_size < Storage::kCacheMinBytes || block_size > Storage::kCacheMaxBytes) {
      delete_block(p);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    freed_.push_front({p, block_size});
    by_size_[block_size].push_back(freed_.begin());
    cached_ += block_size;
    while (cached_ > Storage::kCacheMaxBytes) {
      const Block oldest = freed_.back();
      auto& same = by_size_[oldest.size];  // oldest first
      same.erase(same.begin());
      freed_.pop_back();
      cached_ -= oldest.size;
      delete_block(oldest.data);
    }
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Block& b : freed_) delete_block(b.data);
    freed_.clear();
    by_size_.clear();
    cached_ = 0;
  }

 private:
  struct Block {
    void* data;
    size_t size;
  };
  std::mutex mutex_;
  std::list<Block> freed_;  // most recently freed first
  std::unordered_map<size_t, std::vector<std::list<Block>::iterator>> by_size_;  // oldest first
  size_t cached_ = 0;
};

// Never destroyed: storages may be freed during static destruction (the blocks it holds at exit
// go back to the system with the process).
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

}  // namespace

Storage Storage::allocate(size_t nbytes) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->allocated = true;
  if (nbytes == 0) return s;
  // At least a whole number of cache lines so vector loops may read the tail line safely.
  check(nbytes <= SIZE_MAX / 2, "Storage::allocate: ", nbytes, " bytes is too large");
  const size_t block = BlockCache::block_size(nbytes);
  void* p = block_cache().take(block);
  if (p == nullptr) p = new_block(block);
  check(p != nullptr, "Storage::allocate: out of memory allocating ", nbytes, " bytes");
  s.impl_->data = p;
  s.impl_->nbytes = nbytes;
  s.impl_->deleter = [block](void* q) { block_cache().give(q, block); };
  return s;
}

size_t Storage::cached_bytes() {
  return block_cache().cached_bytes();
}

void Storage::release_cached() {
  block_cache().release();
}

Storage Storage::wrap(void* data, size_t nbytes, std::function<void(void*)> deleter) {
  check(data != nullptr || nbytes == 0, "Storage::wrap: null data with ", nbytes, " bytes");
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->deleter = std::move(deleter);
  return s;
}

Storage Storage::wrap(void* data, size_t nbytes, std::shared_ptr<const void> keep_alive) {
  Storage s = wrap(data, nbytes, std::function<void(void*)>{});
  s.impl_->keep_alive = std::move(keep_alive);
  return s;
}

}  // namespace aclgrad
