// batch_norm's kernels: see ops/batch_norm_kernels.h.
#include "ops/batch_norm_kernels.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "ops/kernels.h"
#include "ops/simd_variants.h"

namespace aclgrad::batch_norm_kernels {

ChannelGeometry geometry_of(const Tensor& x) {
  ChannelGeometry g{x.size(0), x.size(1), 1};
  for (int64_t d = 2; d < x.dim(); ++d) g.S *= x.size(d);
  return g;
}

namespace {

// Runs f(begin, end) over [0, count) in parallel chunks of about kGrainWork elements of work.
template <typename F>
void parallel_chunks(int64_t count, int64_t work_per_item, F f) {
  constexpr int64_t kGrainWork = 1 << 15;
  const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, work_per_item));
  if (count <= grain) {
    f(int64_t{0}, count);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

// Per-channel sums in kLanes independent double partial sums: element i of every row goes to
// lane i % kLanes, and the lanes are added in a fixed order at the end. The lanes let the loops
// vectorise (a single accumulator would serialise every add on its latency); the result depends
// only on the data, never on the thread count (a channel is summed by one task).
constexpr int64_t kLanes = 8;

struct Lanes {
  double v[kLanes] = {};
  double total() const { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
};

// Calls add(offset, lane) for every element of channel c (offset into x, lane = its index in
// the row % kLanes), in memory order.
template <typename F>
[[gnu::always_inline]] inline void for_channel_lanes(const ChannelGeometry& g, int64_t c, F add) {
  const int64_t full = g.S / kLanes * kLanes;
  for (int64_t n = 0; n < g.N; ++n) {
    const int64_t r = (n * g.C + c) * g.S;  // the row's offset
    for (int64_t i = 0; i < full; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) add(r + i + j, j);
    }
    for (int64_t i = full; i < g.S; ++i) add(r + i, i - full);
  }
}

// ---- float16 / bfloat16: the kernels below, overloaded for a 16-bit T (the more constrained
// template wins). Rows are widened a chunk at a time (ops/convert16) and computed with the same
// float and double arithmetic in the same order as the general templates, the results rounded
// in bulk: bit for bit what the general templates give, without their per-element conversions.

constexpr int64_t kChunk16 = kernels::map16_detail::kChunk;
static_assert(kChunk16 % kLanes == 0);  // element i of a row stays in lane i % kLanes

// Calls add(i, i % kLanes) for i < m in order, in blocks of kLanes (so the loops vectorise).
template <typename F>
[[gnu::always_inline]] inline void for_lanes(int64_t m, F add) {
  const int64_t full = m / kLanes * kLanes;
  for (int64_t i = 0; i < full; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) add(i + j, j);
  }
  for (int64_t i = full; i < m; ++i) add(i, i - full);
}

// s[i % kLanes] += v[i], i < m, in order.
template <typename T>
[[gnu::always_inline]] inline void add_lanes(const T* v, int64_t m, double* s) {
  for_lanes(m, [&](int64_t i, int64_t j) { s[j] += v[i]; });
}
ACLGRAD_SIMD_VARIANTS(void, add_lanes, (const float* v, int64_t m, double* s), (v, m, s))

// q[i % kLanes] += (v[i] - mu)^2.
template <typename T>
[[gnu::always_inline]] inline void add_square_lanes(const T* v, int64_t m, double mu, double* q) {
  for_lanes(m, [&](int64_t i, int64_t j) {
    const double d = static_cast<double>(v[i]) - mu;
    q[j] += d * d;
  });
}
ACLGRAD_SIMD_VARIANTS(void, add_square_lanes, (const float* v, int64_t m, double mu, double* q),
                      (v, m, mu, q))

// sg[i % kLanes] += g[i]; sgx[i % kLanes] += g[i] (x[i] - mu).
template <typename T>
[[gnu::always_inline]] inline void add_grad_lanes(const T* gv, const T* xv, int64_t m, double mu,
                                                  double* sg, double* sgx) {
  for_lanes(m, [&](int64_t i, int64_t j) {
    const double gd = static_cast<double>(gv[i]);
    sg[j] += gd;
    sgx[j] += gd * (static_cast<double>(xv[i]) - mu);
  });
}
ACLGRAD_SIMD_VARIANTS(void, add_grad_lanes,
                      (const float* gv, const float* xv, int64_t m, double mu, double* sg,
                       double* sgx),
                      (gv, xv, m, mu, sg, sgx))

// Calls f(offset, m) for the chunks of every row of channel c, in memory order.
template <typename F>
void for_channel_chunks(const ChannelGeometry& g, int64_t c, F f) {
  for (int64_t n = 0; n < g.N; ++n) {
    const int64_t r = (n * g.C + c) * g.S;
    for (int64_t at = 0; at < g.S; at += kChunk16) f(r + at, std::min(kChunk16, g.S - at));
  }
}

template <typename T>
requires kernels::is_16bit_v<T>
void stats_of_channel(const ChannelGeometry& g, const T* x, int64_t c, double* mean, double* var) {
  alignas(64) float v[kChunk16];
  Lanes s, q;
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(x + at, v, m);
    add_lanes(v, m, s.v);
  });
  const double mu = s.total() / static_cast<double>(g.per_channel());
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(x + at, v, m);
    add_square_lanes(v, m, mu, q.v);
  });
  *mean = mu;
  *var = q.total() / static_cast<double>(g.per_channel());
}

template <typename T>
requires kernels::is_16bit_v<T>
void affine_rows(const ChannelGeometry& g, const T* x, T* y, const double* scale,
                 const double* shift, int64_t r0, int64_t r1) {
  alignas(64) float v[kChunk16];
  for (int64_t r = r0; r < r1; ++r) {
    const float a = static_cast<float>(scale[r % g.C]), b = static_cast<float>(shift[r % g.C]);
    for (int64_t at = r * g.S; at < (r + 1) * g.S; at += kChunk16) {
      const int64_t m = std::min(kChunk16, (r + 1) * g.S - at);
      ops::convert16::widen(x + at, v, m);
      for (int64_t i = 0; i < m; ++i) v[i] = v[i] * a + b;
      ops::convert16::narrow(v, y + at, m);
    }
  }
}

template <typename T>
requires kernels::is_16bit_v<T>
void grad_sums_of_channel(const ChannelGeometry& g, const T* x, const T* gp, int64_t c, double mu,
                          double* sum_g, double* sum_gxc) {
  alignas(64) float gv[kChunk16], xv[kChunk16];
  Lanes sg, sgx;
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(gp + at, gv, m);
    ops::convert16::widen(x + at, xv, m);
    add_grad_lanes(gv, xv, m, mu, sg.v, sgx.v);
  });
  *sum_g = sg.total();
  *sum_gxc = sgx.total();
}

// dp may be gp (each chunk is read before it is written).
template <typename T>
requires kernels::is_16bit_v<T>
void grad_input_rows(const ChannelGeometry& g, const T* x, const T* gp, T* dp, const double* k,
                     const double* a, const double* b, const double* mean, int64_t r0, int64_t r1) {
  alignas(64) float gv[kChunk16], xv[kChunk16];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r % g.C;
    const float kc = float(k[c]), ac = float(a[c]), bc = float(b[c]), mc = float(mean[c]);
    for (int64_t at = r * g.S; at < (r + 1) * g.S; at += kChunk16) {
      const int64_t m = std::min(kChunk16, (r + 1) * g.S - at);
      ops::convert16::widen(gp + at, gv, m);
      ops::convert16::widen(x + at, xv, m);
      for (int64_t i = 0; i < m; ++i) gv[i] = kc * (gv[i] - ac - (xv[i] - mc) * bc);
      ops::convert16::narrow(gv, dp + at, m);
    }
  }
}

// Each kernel below is a template forced inline, plus a plain float overload of the same name
// compiled for AVX-512, AVX2 and baseline x86-64 (simd_variants.h) that instantiates it, so each
// variant compiles the loop for its own target: their double sums run 4 or 8 lanes a vector instead
// of SSE2's 2, the same lanes in the same order, which made a training step faster (measured:
// bench/RESULTS.md, design batch_norm.simd-variants). Callers name no type: overload resolution
// prefers the plain function for float and takes the template for every other type.

// Batch mean and biased variance of channel c (two passes: mean, then squared deviations).
template <typename T>
[[gnu::always_inline]] inline void stats_of_channel(const ChannelGeometry& g, const T* x, int64_t c,
                                                    double* mean, double* var) {
  const double M = static_cast<double>(g.per_channel());
  Lanes s, q;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) { s.v[j] += convert<double>(x[i]); });
  const double mu = s.total() / M;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) {
    const double d = convert<double>(x[i]) - mu;
    q.v[j] += d * d;
  });
  *mean = mu;
  *var = q.total() / M;
}
ACLGRAD_SIMD_VARIANTS(void, stats_of_channel,
                      (const ChannelGeometry& g, const float* x, int64_t c, double* mean,
                       double* var),
                      (g, x, c, mean, var))

template <typename T>
void channel_stats_of(const ChannelGeometry& g, const T* x, std::vector<double>& mean,
                      std::vector<double>& var) {
  parallel_chunks(g.C, g.per_channel(), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      stats_of_channel(g, x, c, &mean[c], &var[c]);
    }
  });
}

// y = x * scale[c] + shift[c], rows [r0, r1) of S.
template <typename T>
[[gnu::always_inline]] inline void affine_rows(const ChannelGeometry& g, const T* x, T* y,
                                               const double* scale, const double* shift, int64_t r0,
                                               int64_t r1) {
  using C = kernels::compute_t<T>;
  for (int64_t r = r0; r < r1; ++r) {
    const C a = static_cast<C>(scale[r % g.C]), b = static_cast<C>(shift[r % g.C]);
    const T* xr = x + r * g.S;
    T* yr = y + r * g.S;
    for (int64_t i = 0; i < g.S; ++i) yr[i] = convert<T>(convert<C>(xr[i]) * a + b);
  }
}
ACLGRAD_SIMD_VARIANTS(void, affine_rows,
                      (const ChannelGeometry& g, const float* x, float* y, const double* scale,
                       const double* shift, int64_t r0, int64_t r1),
                      (g, x, y, scale, shift, r0, r1))

template <typename T>
void apply_affine_to(const ChannelGeometry& g, const T* x, T* y, const std::vector<double>& scale,
                     const std::vector<double>& shift) {
  parallel_chunks(g.N * g.C, g.S, [&](int64_t r0, int64_t r1) {
    affine_rows(g, x, y, scale.data(), shift.data(), r0, r1);
  });
}

// Σ g and Σ g (x - mean[c]) of channel c (x̂ = (x - mean) invstd: the caller scales the second).
template <typename T>
[[gnu::always_inline]] inline void grad_sums_of_channel(const ChannelGeometry& g, const T* x,
                                                        const T* gp, int64_t c, double mu,
                                                        double* sum_g, double* sum_gxc) {
  Lanes sg, sgx;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) {
    const double gv = convert<double>(gp[i]);
    sg.v[j] += gv;
    sgx.v[j] += gv * (convert<double>(x[i]) - mu);
  });
  *sum_g = sg.total();
  *sum_gxc = sgx.total();
}
ACLGRAD_SIMD_VARIANTS(void, grad_sums_of_channel,
                      (const ChannelGeometry& g, const float* x, const float* gp, int64_t c,
                       double mu, double* sum_g, double* sum_gxc),
                      (g, x, gp, c, mu, sum_g, sum_gxc))

// dx = k (g - a - (x - mean) b) per channel, rows [r0, r1) of S (the backward's second pass).
template <typename T>
[[gnu::always_inline]] inline void grad_input_rows(const ChannelGeometry& g, const T* x,
                                                   const T* gp, T* dp, const double* k,
                                                   const double* a, const double* b,
                                                   const double* mean, int64_t r0, int64_t r1) {
  using C = kernels::compute_t<T>;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r % g.C;
    const C kc = C(k[c]), ac = C(a[c]), bc = C(b[c]), mc = C(mean[c]);
    for (int64_t i = r * g.S; i < (r + 1) * g.S; ++i) {
      dp[i] = convert<T>(kc * (convert<C>(gp[i]) - ac - (convert<C>(x[i]) - mc) * bc));
    }
  }
}
ACLGRAD_SIMD_VARIANTS(void, grad_input_rows,
                      (const ChannelGeometry& g, const float* x, const float* gp, float* dp,
                       const double* k, const double* a, const double* b, const double* mean,
                       int64_t r0, int64_t r1),
                      (g, x, gp, dp, k, a, b, mean, r0, r1))

}  // namespace

void channel_stats(const Tensor& x, const ChannelGeometry& g, std::vector<double>& mean,
                   std::vector<double>& var) {
  dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
    channel_stats_of<T>(g, x.data_ptr<T>(), mean, var);
  });
}

void apply_affine(const Tensor& x, const Tensor& y, const ChannelGeometry& g,
                  const std::vector<double>& scale, const std::vector<double>& shift) {
  dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
    apply_affine_to<T>(g, x.data_ptr<T>(), y.data_ptr<T>(), scale, shift);
  });
}

void grad_sums(const Tensor& x, const Tensor& grad, const ChannelGeometry& g,
               const std::vector<double>& mean, const std::vector<double>& invstd,
               std::vector<double>& sum_g, std::vector<double>& sum_gx) {
  dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    const T* gp = grad.data_ptr<T>();
    parallel_chunks(g.C, g.per_channel(), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double sgx = 0;  // Σ g (x - mean); Σ g x̂ = sgx invstd
        grad_sums_of_channel(g, xp, gp, c, mean[c], &sum_g[c], &sgx);
        sum_gx[c] = sgx * invstd[c];
      }
    });
  });
}

void grad_input(const Tensor& x, const Tensor& grad, const Tensor& dx, const ChannelGeometry& g,
                const std::vector<double>& k, const std::vector<double>& a,
                const std::vector<double>& b, const std::vector<double>& mean) {
  dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    const T* gp = grad.data_ptr<T>();
    T* dp = dx.data_ptr<T>();
    parallel_chunks(g.N * g.C, g.S, [&](int64_t r0, int64_t r1) {
      grad_input_rows(g, xp, gp, dp, k.data(), a.data(), b.data(), mean.data(), r0, r1);
    });
  });
}

}  // namespace aclgrad::batch_norm_kernels
