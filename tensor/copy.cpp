// Data movement of Tensor: copy_, fill_, contiguous, clone, to. All go through for_each_strided
// (in parallel for large tensors: every element is written once, from its own source element).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tensor/bulk16.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad {

namespace {

// dst[i] = To(src[i]) for a contiguous run of n, through bulk16.h's conversions where the pair
// of types is float32 and a 16-bit type; false: another pair.
template <typename To, typename From>
bool bulk_convert(int64_t n, To* dst, const From* src) {
  constexpr bool kWiden =
      std::is_same_v<To, float> && (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>);
  constexpr bool kNarrow =
      std::is_same_v<From, float> && (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>);
  if constexpr (kWiden) {
    widen16(src, dst, n);
  } else if constexpr (kNarrow) {
    narrow16(src, dst, n);
  }
  return kWiden || kNarrow;
}

// Same-dtype copy by element width: memcpy for contiguous runs, a broadcast store for a
// stride-0 source, a strided loop otherwise.
template <typename U>
void copy_bits(int64_t n, char* o, const char* in, const int64_t* s) {
  if (s[0] == sizeof(U) && s[1] == sizeof(U)) {
    std::memcpy(o, in, static_cast<size_t>(n) * sizeof(U));
  } else if (s[1] == 0) {
    U v;
    std::memcpy(&v, in, sizeof(U));
    for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * s[0], &v, sizeof(U));
  } else {
    for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * s[0], in + i * s[1], sizeof(U));
  }
}

template <typename To, typename From>
void copy_convert(int64_t n, char* o, const char* in, const int64_t* s) {
  if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
    To* op = reinterpret_cast<To*>(o);
    const From* ip = reinterpret_cast<const From*>(in);
    if (bulk_convert(n, op, ip)) return;
    for (int64_t i = 0; i < n; ++i) op[i] = convert<To>(ip[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<To*>(o + i * s[0]) =
          convert<To>(*reinterpret_cast<const From*>(in + i * s[1]));
    }
  }
}

// Byte range [first, last) of storage the tensor can touch.
std::pair<int64_t, int64_t> byte_range(const Tensor& t) {
  const int64_t es = t.element_size();
  return {t.storage_offset() * es, t.layout().storage_extent() * es};
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.shares_storage(b) || a.numel() == 0 || b.numel() == 0) return false;
  const auto [a0, a1] = byte_range(a);
  const auto [b0, b1] = byte_range(b);
  return a0 < b1 && b0 < a1;
}

// copy_ without the version bump (for freshly made tensors).
void copy_into(const Tensor& dst, Tensor src) {
  check(dst.defined() && src.defined(), "copy_: undefined ",
        dst.defined() ? "source" : "destination");
  Shape target = dst.sizes();
  bool ok = src.dim() <= dst.dim();
  for (int64_t i = 1; ok && i <= src.dim(); ++i) {
    const int64_t s = src.sizes()[src.dim() - i];
    ok = s == 1 || s == target[target.size() - i];
  }
  check<ShapeError>(ok, "copy_: source of shape ", src.sizes(),
                    " cannot be broadcast to the destination shape ", dst.sizes());
  check(!dst.layout().has_internal_overlap(), "copy_: the destination (shape ", dst.sizes(),
        ", strides ", dst.strides(),
        ") has several elements at one memory location (stride 0); clone() it first");
  if (may_overlap(dst, src)) {
    if (dst.dtype() == src.dtype() && dst.layout().sizes() == src.layout().sizes() &&
        dst.strides() == src.strides() && dst.storage_offset() == src.storage_offset()) {
      return;  // copying a tensor onto itself
    }
    src = src.clone();  // read everything before writing
  }
  if (dst.dtype() == src.dtype()) {
    const int64_t es = dst.element_size();
    for_each_strided(
        dst, {src},
        [es](int64_t n, char* o, const char* const* in, const int64_t* s) {
          switch (es) {
            case 1:
              return copy_bits<uint8_t>(n, o, in[0], s);
            case 2:
              return copy_bits<uint16_t>(n, o, in[0], s);
            case 4:
              return copy_bits<uint32_t>(n, o, in[0], s);
            default:
              return copy_bits<uint64_t>(n, o, in[0], s);
          }
        },
        Parallel::Yes);
    return;
  }
  dispatch_dtype(dst.dtype(), [&]<typename To>() {
    dispatch_dtype(src.dtype(), [&]<typename From>() {
      for_each_strided(
          dst, {src},
          [](int64_t n, char* o, const char* const* in, const int64_t* s) {
            copy_convert<To, From>(n, o, in[0], s);
          },
          Parallel::Yes);
    });
  });
}

}  // namespace

const Tensor& Tensor::copy_(const Tensor& src) const {
  copy_into(*this, src);
  bump_version();
  return *this;
}

const Tensor& Tensor::fill_(Scalar value) const {
  dispatch_dtype(dtype(), [&]<typename T>() {
    const T v = value.to<T>();
    for_each_strided(
        *this, {},
        [v](int64_t n, char* o, const char* const*, const int64_t* s) {
          if (s[0] == sizeof(T)) {
            std::fill_n(reinterpret_cast<T*>(o), n, v);
          } else {
            for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(o + i * s[0]) = v;
          }
        },
        Parallel::Yes);
  });
  bump_version();
  return *this;
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), dtype());
  copy_into(out, *this);
  return out;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::to(Dtype dtype) const {
  if (dtype == this->dtype()) return *this;
  Tensor out = empty(sizes(), dtype);
  copy_into(out, *this);
  return out;
}

}  // namespace aclgrad
