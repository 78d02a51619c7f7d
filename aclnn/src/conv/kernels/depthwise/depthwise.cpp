#include "conv/kernels/depthwise/depthwise.h"

#include <algorithm>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "conv/algorithms/algo_support.h"
#include "conv/kernels/grid/direct_grid.h"
#include "gemm/sgemm.h"
#include "meta.h"
#include "cpu/simd_variants.h"

namespace aclnn_cpu::conv {
namespace {

// The plane kernels are compiled three times (AVX-512, AVX2 and baseline x86-64) and picked by
// the tier in force (cpu/simd_variants.h), so the library runs on any x86-64 CPU. Their inner
// loops run along the output row (ow), which is contiguous in y/dy and, for stride 1, in x/dx too,
// so they vectorize.

using Tap = DepthwiseTap;

inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

// Calls f(tap) for every kernel tap of the geometry, in tap order.
template <typename F>
void for_taps(const ConvGeometry& g, F&& f) {
  Tap t;
  for (int d = 0; d < 3; ++d) t.in[d] = g.in[d], t.out[d] = g.out[d], t.stride[d] = g.stride[d];
  t.q = 0;
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw, ++t.q) {
        const int64_t kk[3] = {kd, kh, kw};
        for (int d = 0; d < 3; ++d) {
          t.off[d] = kk[d] * g.dil[d] - g.pad_before[d];
          t.lo[d] = clamp64(ceil_div(-t.off[d], g.stride[d]), 0, g.out[d]);
          t.hi[d] = clamp64(ceil_div(g.in[d] - t.off[d], g.stride[d]), t.lo[d], g.out[d]);
        }
        if (!t.empty()) f(t);
      }
}

// The per-tap plane kernels: loops over the valid output rows (od, oh) and along the row (ow),
// which is contiguous in y/dy and, for stride 1, in x/dx, so the ow loops vectorize (restrict
// pointers, no aliasing). y/dy planes are [out0, out1, out2], x/dx planes [in0, in1, in2].

// Forward tap: y[p] += a * x[p * s + off].
[[gnu::always_inline]] inline void tap_gather_body(float* __restrict y, const float* __restrict x,
                                                   float a, const Tap& t) {
  const int64_t sw = t.stride[2], n = t.hi[2] - t.lo[2];
  for (int64_t od = t.lo[0]; od < t.hi[0]; ++od)
    for (int64_t oh = t.lo[1]; oh < t.hi[1]; ++oh) {
      float* __restrict yr = y + (od * t.out[1] + oh) * t.out[2] + t.lo[2];
      const int64_t id = od * t.stride[0] + t.off[0], ih = oh * t.stride[1] + t.off[1];
      const float* __restrict xr = x + (id * t.in[1] + ih) * t.in[2] + t.lo[2] * sw + t.off[2];
      if (sw == 1) {
        for (int64_t i = 0; i < n; ++i) yr[i] += a * xr[i];
      } else {
        for (int64_t i = 0; i < n; ++i) yr[i] += a * xr[i * sw];
      }
    }
}

// Backward-data tap (the adjoint): x[p * s + off] += a * y[p].
[[gnu::always_inline]] inline void tap_scatter_body(float* __restrict x, const float* __restrict y,
                                                    float a, const Tap& t) {
  const int64_t sw = t.stride[2], n = t.hi[2] - t.lo[2];
  for (int64_t od = t.lo[0]; od < t.hi[0]; ++od)
    for (int64_t oh = t.lo[1]; oh < t.hi[1]; ++oh) {
      const float* __restrict yr = y + (od * t.out[1] + oh) * t.out[2] + t.lo[2];
      const int64_t id = od * t.stride[0] + t.off[0], ih = oh * t.stride[1] + t.off[1];
      float* __restrict xr = x + (id * t.in[1] + ih) * t.in[2] + t.lo[2] * sw + t.off[2];
      if (sw == 1) {
        for (int64_t i = 0; i < n; ++i) xr[i] += a * yr[i];
      } else {
        for (int64_t i = 0; i < n; ++i) xr[i * sw] += a * yr[i];
      }
    }
}

// Weight-gradient tap: sum_p y[p] * x[p * s + off], accumulated in 16 float lanes (one zmm)
// and reduced in a fixed order.
[[gnu::always_inline]] inline float tap_dot_body(const float* __restrict y,
                                                 const float* __restrict x, const Tap& t) {
  const int64_t sw = t.stride[2], n = t.hi[2] - t.lo[2];
  float acc[16] = {};
  for (int64_t od = t.lo[0]; od < t.hi[0]; ++od)
    for (int64_t oh = t.lo[1]; oh < t.hi[1]; ++oh) {
      const float* __restrict yr = y + (od * t.out[1] + oh) * t.out[2] + t.lo[2];
      const int64_t id = od * t.stride[0] + t.off[0], ih = oh * t.stride[1] + t.off[1];
      const float* __restrict xr = x + (id * t.in[1] + ih) * t.in[2] + t.lo[2] * sw + t.off[2];
      int64_t i = 0;
      if (sw == 1) {
        for (; i + 16 <= n; i += 16)
          for (int l = 0; l < 16; ++l) acc[l] += yr[i + l] * xr[i + l];
      } else {
        for (; i + 16 <= n; i += 16)
          for (int l = 0; l < 16; ++l) acc[l] += yr[i + l] * xr[(i + l) * sw];
      }
      for (int l = 0; i < n; ++i, ++l) acc[l] += yr[i] * xr[i * sw];
    }
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += acc[l];
  return s;
}

ACLNN_SIMD_VARIANTS(void, tap_gather, (float* y, const float* x, float a, const Tap& t),
                    (y, x, a, t))
ACLNN_SIMD_VARIANTS(void, tap_scatter, (float* x, const float* y, float a, const Tap& t),
                    (x, y, a, t))
ACLNN_SIMD_VARIANTS(float, tap_dot, (const float* y, const float* x, const Tap& t), (y, x, t))

// Unit W stride on AVX-512 CPUs: explicit masked-vector loops; otherwise the cloned C++ loops.
void tap_gather_any(float* y, const float* x, float a, const Tap& t) {
  if (t.stride[2] == 1 && gemm::have_avx512()) return dw_tap_gather_avx512(y, x, a, t);
  tap_gather(y, x, a, t);
}
void tap_scatter_any(float* x, const float* y, float a, const Tap& t) {
  if (t.stride[2] == 1 && gemm::have_avx512()) return dw_tap_scatter_avx512(x, y, a, t);
  tap_scatter(x, y, a, t);
}
float tap_dot_any(const float* y, const float* x, const Tap& t) {
  if (t.stride[2] == 1 && gemm::have_avx512()) return dw_tap_dot_avx512(y, x, t);
  return tap_dot(y, x, t);
}

// dx plane from its m dy planes with the register-accumulating AVX-512 or AVX2 kernel, where it
// applies (true: dx written).
bool data_plane_fast(const ConvGeometry& g, float* dx, const float* dy, const float* w, int64_t m) {
  if (gemm::have_avx512()) return dw_plane_backward_data_avx512(g, dx, dy, g.out_size(), w, m);
  return gemm::isa() >= gemm::Isa::kAvx2 &&
         dw_plane_backward_data_avx2(g, dx, dy, g.out_size(), w, m);
}

// A dense 16-bit dx plane straight from the AVX2 kernel, rounded as each row is stored, where it
// applies (true: dx written); the AVX-512 kernel stores fp32 rows only (false: the caller
// computes an fp32 plane and narrows it).
bool data_plane16_fast(const ConvGeometry& g, bool bf16, uint16_t* dx, const float* dy,
                       const float* w, int64_t m) {
  return gemm::isa() == gemm::Isa::kAvx2 &&
         dw_plane_backward_data16_avx2(g, bf16, dx, dy, g.out_size(), w, m);
}

// total[q] += every tap's weight-gradient sum over one plane pair with the AVX-512 or AVX2 kernel
// that shares dy loads between the taps of a kernel row, where it applies (true: added).
bool tap_sums_fast(const ConvGeometry& g, const float* dy, const float* x, double* total) {
  if (gemm::have_avx512()) return dw_plane_tap_sums_avx512(g, dy, x, total);
  return gemm::isa() >= gemm::Isa::kAvx2 && dw_plane_tap_sums_avx2(g, dy, x, total);
}

// y plane with the register-accumulating forward kernel, where it applies (true: y written).
bool forward_plane_fast(const ConvGeometry& g, float* y, const float* x, const float* w) {
  if (gemm::have_avx512()) return dw_plane_forward_avx512(g, y, x, w);
  return gemm::isa() >= gemm::Isa::kAvx2 && dw_plane_forward_avx2(g, y, x, w);
}

template <typename Body>
void parallel(int64_t count, Body&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t != r.end(); ++t) body(t);
                    });
}

}  // namespace

const float* DwInput::get(int64_t at, int64_t n) const {
  if (f32) return f32 + at;
  float* buf = slots + current_slot(nslots) * slot_elems;
  src.at(at).convert(n, 1, buf);
  return buf;
}

const float* DwInput::get_summing(int64_t at, int64_t plane, int64_t planes, double* sums) const {
  if (f32)
    throw std::logic_error("DwInput::get_summing: an fp32 input is read in place, not converted");
  float* buf = slots + current_slot(nslots) * slot_elems;
  for (int64_t j = 0; j < planes; ++j)
    sums[j] += src.at(at + j * plane).convert_sum(plane, buf + j * plane);
  return buf;
}

int64_t depthwise_slot_elems(const ConvGeometry& g) {
  return std::max(g.cout_g() * g.out_size(), g.out_size() + g.in_size());
}

void depthwise_forward(const ConvGeometry& g, const DwInput& x, const float* w, float* y) {
  // y[n, o] = sum_q w[o, q] * shift_q(x[n, o / m]),  m = C_out / C_in output channels per input.
  const int64_t m = g.cout_g(), K = g.k_size(), S_in = g.in_size(), S_out = g.out_size();
  parallel(g.N * g.C_out, [&](int64_t t) {
    const int64_t n = t / g.C_out, o = t % g.C_out;
    const float* xc = x.get((n * g.C_in + o / m) * S_in, S_in);
    const float* wo = w + o * K;
    float* yo = y + t * S_out;
    if (forward_plane_fast(g, yo, xc, wo)) return;
    for (int64_t i = 0; i < S_out; ++i) yo[i] = 0.0f;
    for_taps(g, [&](const Tap& tap) { tap_gather_any(yo, xc, wo[tap.q], tap); });
  });
}

void depthwise_backward_data(const ConvGeometry& g, const DwInput& dy_in, const float* w,
                             float* dx) {
  // dx[n, c] = sum_{o in group c} sum_q w[o, q] * shift_q^T(dy[n, o]): each tap's contribution
  // scattered back to the input positions it read (padding positions dropped).
  const int64_t m = g.cout_g(), K = g.k_size(), S_in = g.in_size(), S_out = g.out_size();
  parallel(g.N * g.C_in, [&](int64_t t) {
    const int64_t n = t / g.C_in, c = t % g.C_in;
    float* dxc = dx + t * S_in;
    const float* dy = dy_in.get((n * g.C_out + c * m) * S_out, m * S_out);  // the group's m planes
    if (data_plane_fast(g, dxc, dy, w + c * m * K, m)) return;
    for (int64_t i = 0; i < S_in; ++i) dxc[i] = 0.0f;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t o = c * m + j;
      const float* dyo = dy + j * S_out;
      const float* wo = w + o * K;
      for_taps(g, [&](const Tap& tap) { tap_scatter_any(dxc, dyo, wo[tap.q], tap); });
    }
  });
}

void depthwise_backward_weight(const ConvGeometry& g, const DwInput& x, const DwInput& dy,
                               float* dw) {
  // dw[o, q] = sum_n sum_p dy[n, o, p] * x[n, o / m, p * s - pad + q * dil]: each plane's sum in
  // float (16 lanes), the planes added in batch order in double, straight into dw.
  const int64_t m = g.cout_g(), K = g.k_size(), S_in = g.in_size(), S_out = g.out_size();
  // Batch outer, taps inner, so each plane pair is read from memory once while it sits in L1/L2;
  // the taps' running sums live on the stack, in groups of kTapGroup for very large kernels.
  constexpr int64_t kTapGroup = kDepthwiseTapGroup;
  parallel(g.C_out, [&](int64_t o) {
    float* dwo = dw + o * K;
    for (int64_t q = 0; q < K; ++q) dwo[q] = 0.0f;
    double total[kTapGroup];
    for (int64_t q0 = 0; q0 < K; q0 += kTapGroup) {
      const int64_t q1 = std::min(K, q0 + kTapGroup);
      std::fill(total, total + (q1 - q0), 0.0);
      for (int64_t n = 0; n < g.N; ++n) {
        const float* dyo = dy.get((n * g.C_out + o) * S_out, S_out);
        const float* xc = x.get((n * g.C_in + o / m) * S_in, S_in);
        if (q0 == 0 && q1 == K && tap_sums_fast(g, dyo, xc, total)) continue;
        for_taps(g, [&](const Tap& tap) {
          if (tap.q >= q0 && tap.q < q1) total[tap.q - q0] += tap_dot_any(dyo, xc, tap);
        });
      }
      for (int64_t q = q0; q < q1; ++q) dwo[q] = static_cast<float>(total[q - q0]);
    }
  });
}

namespace {

// The per-slot floats of the fused pass: the group's m dy planes, an x plane, a dx plane.
int64_t fused_slot_stride(const ConvGeometry& g) {
  return (g.cout_g() * g.out_size() + 2 * g.in_size() + 15) / 16 * 16;
}
bool dx_in_place(const View5& dx) {
  return usable_in_place<float>(dx, Round::kNone);
}

// Asks for bytes [p, p + n) to be brought into L2 (for writing, if `write`), a line at a time.
void prefetch_l2(const void* p, int64_t n, bool write) {
  const char* c = static_cast<const char*>(p);
  for (int64_t i = 0; i < n; i += 64) {
    if (write) {
      __builtin_prefetch(c + i, 1, 2);
    } else {
      __builtin_prefetch(c + i, 0, 2);
    }
  }
}

// The bytes of a plane's start asked for ahead (prefetch_bytes) where the whole planes are not:
// a stream the hardware prefetcher has not seen yet, fetched while other work runs: this sample's
// x before its data gradient and the next sample's dy before the weight sums (measured:
// bench/RESULTS.md, design depthwise.head-bytes). The whole planes ahead evicted the current ones
// (see FusedPass::ahead).
constexpr int64_t kHeadBytes = 1024;

}  // namespace

int64_t depthwise_fused_scratch(const ConvGeometry& g, int slots, bool converts, const View5& dx) {
  if (!converts && dx_in_place(dx)) return 0;
  return (g.C_out * g.k_size() + 15) / 16 * 16 + fused_slot_stride(g) * slots;
}

namespace {

// One task's work of depthwise_backward: group c of sample n (its m dy planes, x and dx planes),
// reading the inputs as stored.
struct FusedPass {
  const ConvGeometry& g;
  const DwBackward& b;
  int64_t m, K, S_in, S_out, stride;  // stride: floats per slot
  const float* w = nullptr;           // [C_out, K] fp32
  float* slot0 = nullptr;             // slot s at slot0 + s * stride
  DwInput dy = {}, x = {};            // as fp32 planes (the slot's first two parts)
  bool bf16_dot = false;              // bf16 x and dy: the tap sums take them as stored
  float* dx_dense = nullptr;          // dx as a dense fp32 tensor, or null
  int64_t dx_bytes = 0;               // a dense dx written from the slot: its element bytes

  // The next sample's planes lie C_in (C_out) planes further: each a short stream the hardware
  // prefetcher would only catch up with midway, so fetch them while this one runs. Only where
  // prefetcht1 stops at L2: on Zen 3 it fills L1 too (AMD: Zen 4 is the first to keep T1 in L2),
  // and the next sample's 25 KB evicted this one's planes, so it ran faster without (measured:
  // bench/RESULTS.md, design depthwise.next-sample). AVX-512 (Zen 4 on; gemm::isa()) stands for
  // that.
  bool ahead = false;
  void prefetch(int64_t n, int64_t c) const {
    const int64_t xn = (n * g.C_in + c) * S_in, dyn = (n * g.C_out + c * m) * S_out;
    prefetch_l2(b.x.at(xn).data, S_in * int64_t(b.x.elem_bytes()), false);
    prefetch_l2(b.dy.at(dyn).data, m * S_out * int64_t(b.dy.elem_bytes()), false);
    if (dx_bytes > 0) prefetch_l2(b.dx->origin() + xn * dx_bytes, S_in * dx_bytes, true);
  }

  // total[j, q] += sum_p dy[n, cm + j, p] * x[n, c, p * s - pad + q * dil] for the m planes:
  // with the bf16 dot kernel on the stored planes, else on fp32 ones (x converted here).
  void weight_sums(int64_t n, int64_t c, const float* dyc, double* total) const {
    const int64_t x_at = (n * g.C_in + c) * S_in, dy_at = (n * g.C_out + c * m) * S_out;
    if (bf16_dot) {
      const auto* x16 = static_cast<const uint16_t*>(b.x.data) + x_at;
      const auto* dy16 = static_cast<const uint16_t*>(b.dy.data) + dy_at;
      bool done = true;
      for (int64_t j = 0; j < m && done; ++j)
        done = dw_plane_tap_sums_bf16_avx512(g, dy16 + j * S_out, x16, total + j * K);
      if (done) return;  // (a shape it refuses is refused for j = 0: nothing added)
    }
    const float* xc = x.get(x_at, S_in);
    for (int64_t j = 0; j < m; ++j) {
      const float* dyo = dyc + j * S_out;
      if (tap_sums_fast(g, dyo, xc, total + j * K)) continue;
      for_taps(g, [&](const Tap& tap) { total[j * K + tap.q] += tap_dot_any(dyo, xc, tap); });
    }
  }

  // dx[n, c] from the group's m dy planes dyc [m, S_out], written into its view: straight from
  // the AVX2 kernel's rows into a dense 16-bit dx, else as an fp32 plane (in place, or in the
  // slot and then stored in the view's dtype and strides).
  void data_gradient(int64_t n, int64_t c, const float* dyc) const {
    const int64_t at = (n * g.C_in + c) * S_in;  // dx[n, c]'s first element, dense
    const float* wc = w + c * m * K;
    auto* dx16 = reinterpret_cast<uint16_t*>(b.dx->origin()) + at;  // (used where dx_bytes == 2)
    const bool bf16 = b.dx->dtype == ACL_BF16;
    if (dx_bytes == 2 && data_plane16_fast(g, bf16, dx16, dyc, wc, m)) return;
    float* dxc =
        dx_dense ? dx_dense + at : slot0 + current_slot(b.slots) * stride + m * S_out + S_in;
    if (!data_plane_fast(g, dxc, dyc, wc, m)) {
      for (int64_t i = 0; i < S_in; ++i) dxc[i] = 0.0f;
      for (int64_t j = 0; j < m; ++j) {
        const float* wo = wc + j * K;
        for_taps(g, [&](const Tap& t) { tap_scatter_any(dxc, dyc + j * S_out, wo[t.q], t); });
      }
    }
    if (dx_bytes == 2) {  // a dense fp16/bf16 dx: the plane rounded straight into it
      narrow16(bf16, dxc, S_in, dx16);
    } else if (!dx_dense) {  // dx[n, c] into its view (dtype, strides)
      View5 plane = *b.dx;
      plane.offset += n * plane.strides[0] + c * plane.strides[1];
      plane.dims[0] = plane.dims[1] = 1;
      unpack(dxc, plane);
    }
  }

  // dx[n, c], the m planes' weight sums into total [m, K] and their bias sums into bias [m]:
  // db[o] = sum_n sum_p dy[n, o, p] of the values as stored (not rounded). A converted dy is
  // summed in the pass that converts it; fp32 read in place after the kernels, when it is in
  // L1/L2 (summed first, its stream from memory stalled the call; measured: bench/RESULTS.md,
  // design depthwise.bias-sums).
  void sample(int64_t n, int64_t c, double* total, double* bias) const {
    const int64_t dy_at = (n * g.C_out + c * m) * S_out;
    const bool sum_first = b.db && !dy.f32;
    if (!ahead) prefetch_bytes(b.x.at((n * g.C_in + c) * S_in).data, kHeadBytes);
    const float* dyc =  // [m, S_out]
        sum_first ? dy.get_summing(dy_at, S_out, m, bias) : dy.get(dy_at, m * S_out);
    data_gradient(n, c, dyc);
    if (!ahead && n + 1 < g.N) prefetch_bytes(b.dy.at(dy_at + g.C_out * S_out).data, kHeadBytes);
    weight_sums(n, c, dyc, total);
    if (b.db && !sum_first)
      for (int64_t j = 0; j < m; ++j) bias[j] += sum_run_f32(dyc + j * S_out, S_out);
  }
};

}  // namespace

void depthwise_backward(const ConvGeometry& g, const DwBackward& b) {
  // Both gradients in one pass: task c walks the batch; for each sample its dy planes (the m
  // output channels of group c) are read once, while hot in L1/L2, for the data gradient of
  // dx[n, c] and for the weight-gradient sums of those channels (batch order, double).
  if (!depthwise_fuses(g)) throw std::logic_error("depthwise_backward: tap sums exceed the stack");
  const int64_t m = g.cout_g(), K = g.k_size();
  FusedPass f{g, b, m, K, g.in_size(), g.out_size(), fused_slot_stride(g)};
  // Scratch: [weights as fp32 | slot 0 | slot 1 ...], a slot [m dy planes | x plane | dx plane].
  f.w = weights_f32(b.w, g.C_out * K, b.scratch);
  if (b.scratch) f.slot0 = b.scratch + (g.C_out * K + 15) / 16 * 16;  // (none: fp32 in and out)
  auto input = [&](const Source& s, int64_t at) {
    DwInput in;
    if (s.kind == SrcKind::kF32) return dw_fp32(static_cast<const float*>(s.data));
    in.src = s, in.slots = f.slot0 + at, in.slot_elems = f.stride, in.nslots = b.slots;
    return in;
  };
  f.dy = input(b.dy, 0), f.x = input(b.x, m * f.S_out);
  f.bf16_dot = b.x.kind == SrcKind::kBF16 && b.dy.kind == SrcKind::kBF16 && bf16_dot_kernels();
  f.dx_dense = dx_in_place(*b.dx) ? reinterpret_cast<float*>(b.dx->origin()) : nullptr;
  // (fetching an fp32 dx written in place ahead measured no gain)
  f.dx_bytes = !f.dx_dense && b.dx->contiguous() ? int64_t(dtype_size(b.dx->dtype)) : 0;
  f.ahead = gemm::isa() >= gemm::Isa::kAvx512;
  parallel(g.C_in, [&](int64_t c) {
    double total[kDepthwiseTapGroup], bias[kDepthwiseTapGroup];
    std::fill(total, total + m * K, 0.0);
    std::fill(bias, bias + m, 0.0);
    for (int64_t n = 0; n < g.N; ++n) {
      if (f.ahead && n + 1 < g.N) f.prefetch(n + 1, c);
      f.sample(n, c, total, bias);
    }
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t q = 0; q < K; ++q)
        b.dw[(c * m + j) * K + q] = static_cast<float>(total[j * K + q]);
      if (b.db) b.db[c * m + j] = static_cast<float>(bias[j]);
    }
  });
}

}  // namespace aclnn_cpu::conv
