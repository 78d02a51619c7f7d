#include "tensor/storage.h"

#include <new>

#include "tensor/error.h"

namespace aclgrad {

Storage Storage::allocate(size_t nbytes) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  if (nbytes == 0) return s;
  // Round up to a whole number of cache lines so vector loops may read the tail line safely.
  const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  check(rounded >= nbytes, "Storage::allocate: ", nbytes, " bytes is too large");
  void* p = ::operator new (rounded, std::align_val_t{kAlignment}, std::nothrow);
  check(p != nullptr, "Storage::allocate: out of memory allocating ", nbytes, " bytes");
  s.impl_->data = p;
  s.impl_->nbytes = nbytes;
  s.impl_->deleter = [](void* q) { ::operator delete (q, std::align_val_t{kAlignment}); };
  return s;
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
