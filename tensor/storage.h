// Storage: a shared, 64-byte-aligned byte buffer that tensors view.
//
// All tensors (views) over one Storage share its version counter, which in-place operations bump
// so that autograd can detect a saved tensor that was modified after it was saved.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace aclgrad {

class Storage {
 public:
  static constexpr size_t kAlignment = 64;

  /// An undefined storage (no buffer).
  Storage() = default;

  /// A new, uninitialised buffer of nbytes, 64-byte aligned (nullptr when nbytes is 0).
  /// Throws Error when the allocation fails.
  ///
  /// Buffers of at least kCacheMinBytes are recycled: when freed they are kept for the next
  /// allocation of the same size class (sizes rounded up to 8 classes per power of two), so a
  /// training loop's activations and gradients do not come back as fresh, zero-filled pages
  /// every step. At most kCacheMaxBytes are kept (the buffers freed longest ago are released
  /// first). Not under AddressSanitizer.
  static Storage allocate(size_t nbytes);

  static constexpr size_t kCacheMinBytes = size_t{1} << 20;  // 1 MiB
  static constexpr size_t kCacheMaxBytes = size_t{1} << 29;  // 512 MiB
  /// Bytes of freed buffers kept for reuse.
  static size_t cached_bytes();
  /// Returns every kept buffer to the system.
  static void release_cached();

  /// Wraps memory owned elsewhere. If a deleter is given, it is called with data when the last
  /// tensor using this storage goes away; otherwise the caller keeps data alive.
  static Storage wrap(void* data, size_t nbytes, std::function<void(void*)> deleter = {});

  /// Wraps memory whose lifetime is tied to keep_alive (held until the storage dies).
  static Storage wrap(void* data, size_t nbytes, std::shared_ptr<const void> keep_alive);

  bool defined() const { return impl_ != nullptr; }
  void* data() const { return impl_ ? impl_->data : nullptr; }
  size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }

  /// Number of in-place modifications seen by any view of this storage.
  uint64_t version() const { return impl_ ? impl_->version.load(std::memory_order_relaxed) : 0; }
  void bump_version() const {
    if (impl_) impl_->version.fetch_add(1, std::memory_order_relaxed);
  }

  /// True when both handles refer to the same buffer object.
  bool is_same(const Storage& other) const { return impl_ == other.impl_; }
  long use_count() const { return impl_.use_count(); }
  /// True when the buffer came from allocate() (false: memory wrapped from elsewhere, which its
  /// owner may still read or write).
  bool is_allocated() const { return impl_ && impl_->allocated; }

 private:
  struct Impl {
    void* data = nullptr;
    size_t nbytes = 0;
    std::function<void(void*)> deleter;
    std::shared_ptr<const void> keep_alive;
    std::atomic<uint64_t> version{0};
    bool allocated = false;  // by allocate()
    ~Impl() {
      if (deleter) deleter(data);
    }
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace aclgrad
