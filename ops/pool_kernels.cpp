// Pooling's plane kernels and their per-dtype drivers: see ops/pool_kernels.h.
#include "ops/pool_kernels.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/kernels.h"

namespace aclgrad::pool {

namespace {

// ---- plane kernels ----
// x, y, idx, g point at one plane: x/g_in [D, H, W], y/g_out/idx [D_out, H_out, W_out].

// Calls f(o, a, b, c) for every output position o of a plane with its three axis windows, and
// tap(pos) visits the input positions of a window in row-major order.
template <typename F>
void for_each_window(const PoolPlan& p, F f) {
  int64_t o = 0;
  for (const Window& a : p.windows[0]) {
    for (const Window& b : p.windows[1]) {
      for (const Window& c : p.windows[2]) f(o++, a, b, c);
    }
  }
}

template <typename F>
void for_each_tap(const PoolPlan& p, const Window& a, const Window& b, const Window& c, F tap) {
  const int64_t H = p.in[1], W = p.in[2];
  for (int64_t i = 0; i < a.count; ++i) {
    const int64_t id = a.start + i * a.step;
    for (int64_t j = 0; j < b.count; ++j) {
      const int64_t row = (id * H + b.start + j * b.step) * W + c.start;
      for (int64_t k = 0; k < c.count; ++k) tap(row + k * c.step);
    }
  }
}

// Runs plane_fn(plane) for every plane; oneTBB splits the planes when there is enough work.
template <typename F>
void for_each_plane(const PoolPlan& p, F plane_fn) {
  constexpr int64_t kGrainWork = 1 << 15;  // ~elements touched per task
  const int64_t work = std::max<int64_t>(1, p.in_plane() + p.out_plane());
  const int64_t grain = std::max<int64_t>(1, kGrainWork / work);
  if (p.planes <= grain) {
    for (int64_t i = 0; i < p.planes; ++i) plane_fn(i);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, p.planes, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t i = r.begin(); i != r.end(); ++i) plane_fn(i);
                    });
}

// y = max over the window (NaN wins: the last NaN), idx = its flat plane position (-1 and -inf
// for a window without input positions).
template <typename T>
void max_forward_plane(const PoolPlan& p, const T* x, T* y, int64_t* idx) {
  using C = kernels::compute_t<T>;
  for_each_window(p, [&](int64_t o, const Window& a, const Window& b, const Window& c) {
    // PyTorch's scan: start from -inf at the first input position (so an all -inf window
    // reports it), replace on a strictly larger value or any NaN.
    const bool empty = a.count == 0 || b.count == 0 || c.count == 0;
    C best = -std::numeric_limits<C>::infinity();
    int64_t bi = empty ? -1 : (a.start * p.in[1] + b.start) * p.in[2] + c.start;
    for_each_tap(p, a, b, c, [&](int64_t pos) {
      const C v = convert<C>(x[pos]);
      if (v > best || std::isnan(v)) best = v, bi = pos;
    });
    y[o] = convert<T>(best);
    idx[o] = bi;
  });
}

// max_forward_plane for a dense plan with a trivial depth axis and a KH x KW kernel: the same
// scan (from -inf at the window's first position, take a strictly larger value or any NaN, taps
// in row-major order), branch-free (max pooling inputs are random: branches would mispredict).
// Starting the scan at the first tap's value is the same: the first tap wins over -inf exactly
// when it is larger or NaN, and otherwise best stays -inf (its value) at its position. The scan
// keeps the winning tap's number; its position is first + offset[tap].
template <typename T, int64_t KH, int64_t KW>
struct DenseMax {
  using C = kernels::compute_t<T>;
  const T* x;  // the plane
  int64_t W, sw;
  std::array<int64_t, KH * KW> offset;  // of tap k from the window's first position

  DenseMax(const T* x, int64_t W, int64_t sw) : x(x), W(W), sw(sw) {
    for (int64_t k = 0; k < KH * KW; ++k) offset[k] = k / KW * W + k % KW;
  }

  // One window from position first.
  void one(int64_t first, T* y, int64_t* idx) const {
    const T* r = x + first;
    C best = convert<C>(r[0]);
    int32_t tap = 0;
    for (int64_t k = 1; k < KH * KW; ++k) {
      const C v = convert<C>(r[offset[k]]);
      const bool take = (v > best) | (v != v);  // v != v: NaN
      best = kernels::select(take, v, best);
      tap = kernels::select(take, static_cast<int32_t>(k), tap);
    }
    *y = convert<T>(best);
    *idx = first + offset[tap];
  }

#if defined(__SSE2__)
  // Four windows along a row, from first, first + sw, ...: the same scan on 4 float lanes.
  void four(int64_t first, float* y, int64_t* idx) const requires std::is_same_v<T, float> {
    const float* r = x + first;
    const int64_t s = sw;
    // Tap k of the four windows: their values in one register. Windows two columns apart with
    // two columns each (2x2 pooling) read 8 contiguous values per kernel row, column 0 in the
    // even lanes and column 1 in the odd ones: 2 loads and a shuffle instead of 4 scalar loads.
    auto load = [&](int64_t k) {
      const float* q = r + offset[k];
      if (KW == 2 && s == 2) {
        const float* row = q - k % 2;
        const __m128 lo = _mm_loadu_ps(row), hi = _mm_loadu_ps(row + 4);
        return k % 2 == 0 ? _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))
                          : _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
      }
      return _mm_setr_ps(q[0], q[s], q[2 * s], q[3 * s]);
    };
    __m128 best = load(0);
    __m128i tap = _mm_setzero_si128();
    for (int64_t k = 1; k < KH * KW; ++k) {
      const __m128 v = load(k);
      const __m128 take = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));
      best = _mm_or_ps(_mm_and_ps(take, v), _mm_andnot_ps(take, best));
      const __m128i t = _mm_castps_si128(take);
      tap = _mm_or_si128(_mm_and_si128(t, _mm_set1_epi32(static_cast<int>(k))),
                         _mm_andnot_si128(t, tap));
    }
    _mm_storeu_ps(y, best);
    alignas(16) int32_t taps[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(taps), tap);
    for (int64_t o = 0; o < 4; ++o) idx[o] = first + o * s + offset[taps[o]];
  }
#endif

  // Output row oh of Wo outputs, windows stepping sh rows and sw columns.
  void row(int64_t oh, int64_t sh, int64_t Wo, T* y, int64_t* idx) const {
    const int64_t first = oh * sh * W;
    int64_t o = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>) {
      // Blocks of 4; a row that is not a multiple of 4 ends with a block overlapping the
      // previous one (the same outputs written twice).
      if (Wo >= 4) {
        for (; o + 4 <= Wo; o += 4) four(first + o * sw, y + o, idx + o);
        if (o < Wo) four(first + (Wo - 4) * sw, y + Wo - 4, idx + Wo - 4);
        return;
      }
    }
#endif
    for (; o < Wo; ++o) one(first + o * sw, y + o, idx + o);
  }
};

template <typename T, int64_t KH, int64_t KW>
void max_forward_dense(const PoolPlan& p, const T* x, T* y, int64_t* idx) {
  const DenseMax<T, KH, KW> plane(x, p.in[2], p.stride[2]);
  const int64_t Wo = p.out[2];
  for (int64_t oh = 0; oh < p.out[1]; ++oh) {
    plane.row(oh, p.stride[1], Wo, y + oh * Wo, idx + oh * Wo);
  }
}

template <typename T>
void max_forward_any(const PoolPlan& p, const T* x, T* y, int64_t* idx) {
  const bool dense2d = p.dense && p.in[0] == 1;
  if (dense2d && p.kernel[1] == 2 && p.kernel[2] == 2) {
    return max_forward_dense<T, 2, 2>(p, x, y, idx);
  }
  if (dense2d && p.kernel[1] == 3 && p.kernel[2] == 3) {
    return max_forward_dense<T, 3, 3>(p, x, y, idx);
  }
  max_forward_plane<T>(p, x, y, idx);
}

// y = sum over the window / divisor.
template <typename T>
void avg_forward_plane(const PoolPlan& p, const T* x, T* y) {
  using C = kernels::compute_t<T>;
  for_each_window(p, [&](int64_t o, const Window& a, const Window& b, const Window& c) {
    C acc = 0;
    for_each_tap(p, a, b, c, [&](int64_t pos) { acc += convert<C>(x[pos]); });
    y[o] = convert<T>(acc / static_cast<C>(p.divisor(a, b, c)));
  });
}

// Adjoint of avg_forward_plane: gi[pos] += go[o] / divisor for every tap (gi zeroed).
template <typename T>
void avg_adjoint_plane(const PoolPlan& p, const T* go, T* gi) {
  using C = kernels::compute_t<T>;
  for_each_window(p, [&](int64_t o, const Window& a, const Window& b, const Window& c) {
    const C share = convert<C>(go[o]) / static_cast<C>(p.divisor(a, b, c));
    for_each_tap(p, a, b, c,
                 [&](int64_t pos) { gi[pos] = convert<T>(convert<C>(gi[pos]) + share); });
  });
}

// gi[idx[o]] += go[o] for every output with an input position (gi zeroed), in output order.
template <typename T>
void max_scatter_plane(const PoolPlan& p, const T* go, const int64_t* idx, T* gi) {
  for (int64_t o = 0; o < p.out_plane(); ++o) {
    if (idx[o] >= 0) gi[idx[o]] += go[o];
  }
}

}  // namespace

void avg_forward_kernel(const PoolPlan& p, const Tensor& x, const Tensor& y) {
  dispatch_floating_dtype(x.dtype(), p.op, [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    for_each_plane(p, [&](int64_t i) {
      if constexpr (kernels::is_16bit_v<T>) {  // float sums, each output rounded once
        kernels::via_float32(xp + i * p.in_plane(), p.in_plane(), yp + i * p.out_plane(),
                             p.out_plane(),
                             [&](const float* x32, float* y32) { avg_forward_plane(p, x32, y32); });
      } else {
        avg_forward_plane<T>(p, xp + i * p.in_plane(), yp + i * p.out_plane());
      }
    });
  });
}

void avg_adjoint_kernel(const PoolPlan& p, const Tensor& g, const Tensor& gi) {
  dispatch_floating_dtype(g.dtype(), p.op, [&]<typename T>() {
    const T* gp = g.data_ptr<T>();
    T* gip = gi.data_ptr<T>();
    for_each_plane(p, [&](int64_t i) {
      T* plane = gip + i * p.in_plane();
      if constexpr (kernels::is_16bit_v<T>) {
        // The plane's gradient summed in float32 and each position rounded once, also where
        // windows overlap and several shares add onto a position (rounding after each addition
        // would lose up to a 16-bit ulp per share).
        kernels::via_float32(
            gp + i * p.out_plane(), p.out_plane(), plane, p.in_plane(),
            [&](const float* g32, float* gi32) { avg_adjoint_plane(p, g32, gi32); });
      } else {
        std::fill_n(plane, p.in_plane(), T(0));  // zeroed by the task that adds into it
        avg_adjoint_plane<T>(p, gp + i * p.out_plane(), plane);
      }
    });
  });
}

void max_forward_kernel(const PoolPlan& p, const Tensor& x, const Tensor& y, const Tensor& idx) {
  dispatch_floating_dtype(x.dtype(), p.op, [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    int64_t* ip = idx.data_ptr<int64_t>();
    for_each_plane(p, [&](int64_t i) {
      if constexpr (kernels::is_16bit_v<T>) {
        // The same comparisons of the same values; the winner rounded back is its own bits (a
        // NaN made quiet, as convert<T> does). Likewise the other 16-bit kernels below.
        kernels::via_float32(xp + i * p.in_plane(), p.in_plane(), yp + i * p.out_plane(),
                             p.out_plane(), [&](const float* x32, float* y32) {
                               max_forward_any<float>(p, x32, y32, ip + i * p.out_plane());
                             });
      } else {
        max_forward_any<T>(p, xp + i * p.in_plane(), yp + i * p.out_plane(),
                           ip + i * p.out_plane());
      }
    });
  });
}

void max_scatter_kernel(const PoolPlan& p, const Tensor& g, const Tensor& idx, const Tensor& gi) {
  dispatch_floating_dtype(g.dtype(), p.op, [&]<typename T>() {
    const T* gp = g.data_ptr<T>();
    const int64_t* ip = idx.data_ptr<int64_t>();
    T* gip = gi.data_ptr<T>();
    for_each_plane(p, [&](int64_t i) {
      const T* go = gp + i * p.out_plane();
      const int64_t* ix = ip + i * p.out_plane();
      T* dst = gip + i * p.in_plane();
      if constexpr (kernels::is_16bit_v<T>) {
        // Summed in float32, each position rounded once (overlapping windows may route several
        // gradients to one position).
        kernels::via_float32(
            go, p.out_plane(), dst, p.in_plane(),
            [&](const float* g32, float* sum) { max_scatter_plane(p, g32, ix, sum); });
      } else {
        std::fill_n(dst, p.in_plane(), T(0));  // zeroed by the task that scatters
        max_scatter_plane(p, go, ix, dst);
      }
    });
  });
}

void max_gather_kernel(const PoolPlan& p, const Tensor& gg, const Tensor& idx, const Tensor& z) {
  dispatch_floating_dtype(gg.dtype(), p.op, [&]<typename T>() {
    const T* src = gg.data_ptr<T>();
    const int64_t* ip = idx.data_ptr<int64_t>();
    T* zp = z.data_ptr<T>();
    for_each_plane(p, [&](int64_t i) {
      const T* plane = src + i * p.in_plane();
      for (int64_t o = i * p.out_plane(); o < (i + 1) * p.out_plane(); ++o) {
        zp[o] = ip[o] >= 0 ? plane[ip[o]] : convert<T>(0.0);
      }
    });
  });
}

}  // namespace aclgrad::pool
