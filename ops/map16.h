// Elementwise maps and reductions over float16 / bfloat16 tensors a chunk at a time: each input
// chunk is widened to a float32 buffer by ops/convert16 (vector instructions where the CPU has
// them), f runs on the floats, and the results are rounded back in bulk. Per element this is
// exactly what the scalar path computes (f of the exactly widened inputs, rounded once to nearest
// even), so the results are bit-identical; only the conversions are faster.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/convert16.h"
#include "tensor/iter.h"

namespace aclgrad::kernels {

/// Whether T is one of the 16-bit storage types.
template <typename T>
inline constexpr bool is_16bit_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

namespace map16_detail {

// Elements per chunk: the buffers (up to four of 1 KiB) stay in L1.
inline constexpr int64_t kChunk = 256;

// buf[i] = float(element i of the run at p with byte stride s), i < n <= kChunk.
template <typename T>
inline void load(const char* p, int64_t s, int64_t n, float* buf) {
  if (s == static_cast<int64_t>(sizeof(T))) {
    ops::convert16::widen(reinterpret_cast<const T*>(p), buf, n);
  } else if (s == 0) {  // broadcast
    std::fill_n(buf, n, static_cast<float>(*reinterpret_cast<const T*>(p)));
  } else {
    std::array<T, kChunk> gathered;
    for (int64_t i = 0; i < n; ++i) gathered[i] = *reinterpret_cast<const T*>(p + i * s);
    ops::convert16::widen(gathered.data(), buf, n);
  }
}

// Element i of the run at p (byte stride s) = T(buf[i]) rounded to nearest even, i < n <= kChunk.
template <typename T>
inline void store(char* p, int64_t s, int64_t n, const float* buf) {
  if (s == static_cast<int64_t>(sizeof(T))) {
    ops::convert16::narrow(buf, reinterpret_cast<T*>(p), n);
  } else {
    std::array<T, kChunk> rounded;
    ops::convert16::narrow(buf, rounded.data(), n);
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p + i * s) = rounded[i];
  }
}

template <typename Out, typename T, typename F, size_t... K>
void map16(const Tensor& out, std::span<const Tensor> ins, F& f, std::index_sequence<K...>) {
  using R = std::invoke_result_t<F&, decltype(static_cast<void>(K), 0.0f)...>;
  const std::array<Dtype, 1 + sizeof...(K)> dtypes{dtype_of<Out>(),
                                                   (static_cast<void>(K), dtype_of<T>())...};
  aclgrad::detail::check_operand_dtypes("map16", out, ins, dtypes);
  for_each_strided(
      out, ins,
      [&](int64_t n, char* o, const char* const* in, const int64_t* s) {
        alignas(64) float args[sizeof...(K)][kChunk];
        alignas(64) float results[kChunk];
        for (int64_t at = 0; at < n; at += kChunk) {
          const int64_t m = std::min(kChunk, n - at);
          (load<T>(in[K] + at * s[1 + K], s[1 + K], m, args[K]), ...);
          char* dst = o + at * s[0];
          if constexpr (std::is_same_v<Out, T> && std::is_same_v<R, float>) {
            for (int64_t i = 0; i < m; ++i) results[i] = f(args[K][i]...);
            store<T>(dst, s[0], m, results);
          } else {  // a bool result, or f computes in double: convert each as the scalar path
            for (int64_t i = 0; i < m; ++i) {
              *reinterpret_cast<Out*>(dst + i * s[0]) = convert<Out>(f(args[K][i]...));
            }
          }
        }
      },
      Parallel::Yes);
}

}  // namespace map16_detail

/// out = x converted between float32 and a 16-bit T, either way (x broadcast to out's shape), a
/// chunk at a time: the same bits as Tensor::to's element-by-element conversion. No autograd.
template <typename T>
void convert16_into(const Tensor& out, const Tensor& x) {
  static_assert(is_16bit_v<T>);
  namespace m16 = map16_detail;
  const bool widen = x.dtype() == dtype_of<T>();
  const std::array<Dtype, 2> dtypes{widen ? Dtype::Float32 : dtype_of<T>(),
                                    widen ? dtype_of<T>() : Dtype::Float32};
  aclgrad::detail::check_operand_dtypes("convert16_into", out, std::span<const Tensor>(&x, 1),
                                        dtypes);
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
}

/// reduce_elements<Acc, T> for a 16-bit T with f(Acc, float): each run of the input is widened a
/// chunk at a time and folded in the order reduce_elements folds it (element by element along the
/// run), so with f doing what the element-by-element f does on the widened value, every
/// accumulator gets the same bits.
template <typename Acc, typename T, typename F>
void reduce16(const Tensor& out, const Tensor& in, const Shape& dims, F f) {
  static_assert(is_16bit_v<T>);
  namespace m16 = map16_detail;
  const std::array<Dtype, 2> dtypes{dtype_of<Acc>(), dtype_of<T>()};
  aclgrad::detail::check_operand_dtypes("reduce16", out, std::span<const Tensor>(&in, 1), dtypes);
  for_each_reduce(out, in, dims, [&](int64_t n, char* o, const char* const* x, const int64_t* s) {
    alignas(64) float buf[m16::kChunk];
    for (int64_t at = 0; at < n; at += m16::kChunk) {
      const int64_t m = std::min(m16::kChunk, n - at);
      m16::load<T>(x[0] + at * s[1], s[1], m, buf);
      if (s[0] == 0) {  // the whole run folds into one output element
        Acc acc = *reinterpret_cast<Acc*>(o);
        for (int64_t i = 0; i < m; ++i) acc = f(acc, buf[i]);
        *reinterpret_cast<Acc*>(o) = acc;
      } else {
        char* dst = o + at * s[0];
        for (int64_t i = 0; i < m; ++i) {
          Acc& acc = *reinterpret_cast<Acc*>(dst + i * s[0]);
          acc = f(acc, buf[i]);
        }
      }
    }
  });
}

/// out[i] = f(float(ins[0][i]), ..., float(ins[N-1][i])) with broadcasting, for a 16-bit T; Out
/// is T (each result rounded once) or bool. f must be pure (large maps run in parallel).
template <typename Out, typename T, size_t N, typename F>
void map16(const Tensor& out, std::initializer_list<Tensor> ins, F f) {
  static_assert(is_16bit_v<T>);
  check(ins.size() == N, "map16: got ", ins.size(), " inputs, expected ", N);
  map16_detail::map16<Out, T>(out, std::span<const Tensor>(ins.begin(), ins.size()), f,
                              std::make_index_sequence<N>{});
}

/// For a 16-bit T: f(src32, dst32) with src32 = src[0, n_src) widened to float32 in bulk and
/// dst32 = n_dst zeros, then dst = dst32 rounded back in bulk. With f a float kernel doing the
/// float arithmetic the 16-bit one does per element, the results are the same bits, provided
/// each output is rounded once (an accumulation that rounds after every addition is not).
/// The buffers are per thread; f must not call via_float32 itself.
template <typename T, typename F>
void via_float32(const T* src, int64_t n_src, T* dst, int64_t n_dst, F f) {
  static_assert(is_16bit_v<T>);
  thread_local std::vector<float> src32, dst32;
  src32.resize(static_cast<size_t>(n_src));
  dst32.assign(static_cast<size_t>(n_dst), 0.0f);
  ops::convert16::widen(src, src32.data(), n_src);
  f(static_cast<const float*>(src32.data()), dst32.data());
  ops::convert16::narrow(dst32.data(), dst, n_dst);
}

}  // namespace aclgrad::kernels
