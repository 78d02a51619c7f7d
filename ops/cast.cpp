#include "ops/cast.h"

#include <algorithm>

#include "autograd/function.h"
#include "ops/map16.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {
// y = x in another dtype: dL/dx = dL/dy in x's dtype.
struct CastBackward final : Node {
  CastBackward() : Node("CastBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {cast(grads[0], input_meta(0).dtype)}; }
};

// x.to(dtype) for float32 <-> float16 / bfloat16 (autocast's casts, both ways), converted a chunk
// at a time by ops/convert16: the same bits as Tensor::to's element-by-element conversion.
template <typename T>
Tensor convert_float32(const Tensor& x, Dtype dtype) {
  namespace m16 = kernels::map16_detail;
  Tensor out = empty(x.sizes(), dtype);
  const bool widen = x.dtype() != Dtype::Float32;
  for_each_strided(
      out, {x},
      [widen](int64_t n, char* o, const char* const* in, const int64_t* s) {
        alignas(64) float buf[m16::kChunk];
        for (int64_t at = 0; at < n; at += m16::kChunk) {
          const int64_t m = std::min(m16::kChunk, n - at);
          const char* src = in[0] + at * s[1];
          char* dst = o + at * s[0];
          constexpr int64_t kFloat = sizeof(float);
          if (widen && s[0] == kFloat) {
            m16::load<T>(src, s[1], m, reinterpret_cast<float*>(dst));
          } else if (widen) {
            m16::load<T>(src, s[1], m, buf);
            for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(dst + i * s[0]) = buf[i];
          } else if (s[1] == kFloat) {
            m16::store<T>(dst, s[0], m, reinterpret_cast<const float*>(src));
          } else {
            for (int64_t i = 0; i < m; ++i) {
              buf[i] = *reinterpret_cast<const float*>(src + i * s[1]);
            }
            m16::store<T>(dst, s[0], m, buf);
          }
        }
      },
      Parallel::Yes);
  return out;
}

Tensor convert(const Tensor& x, Dtype dtype) {
  const Dtype other = x.dtype() == Dtype::Float32 ? dtype : x.dtype();
  const bool float32_side = x.dtype() == Dtype::Float32 || dtype == Dtype::Float32;
  if (float32_side && other == Dtype::Float16) return convert_float32<Half>(x, dtype);
  if (float32_side && other == Dtype::BFloat16) return convert_float32<BFloat16>(x, dtype);
  return x.to(dtype);
}

}  // namespace

Tensor cast(const Tensor& x, Dtype dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = convert(x, dtype);
  if (!x.is_floating_point() || !is_floating_point(dtype)) return out;
  if (auto node = make_node<CastBackward>({x})) node->set_history(out);
  return out;
}

}  // namespace aclgrad
