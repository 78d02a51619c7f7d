// The panel sources of im2col_panels.h, compiled for AVX-512 (only reached through the AVX-512
// GEMM, which runs after the runtime CPU check): im2col_panels_kernels.h's walks with 16-lane
// vectors, masked loads for every partial vector and 16 x 16 transposes.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "conv/kernels/im2col/im2col_panels.h"

// The whole file is compiled for AVX-512.
#include "gemm/target_avx512_begin.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Inside the target region so for_each_row_run, instantiated here with our AVX-512 lambdas,
// inlines them (its instantiations are unique to this file; geometry.h and <algorithm> are
// already included above, outside the region).
#include "conv/kernels/im2col/im2col.h"
#include "conv/kernels/im2col/im2col_row.h"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {
namespace {

struct V512 {
  using F = __m512;
  using Mask = __mmask16;
  static constexpr int W = 16;

  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_load_ps(p); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
  static void storeu(float* p, F v) { _mm512_storeu_ps(p, v); }
  // Lanes [lo, hi) of 16.
  static Mask lane_range(int64_t lo, int64_t hi) {
    return static_cast<Mask>(gemm::first_lanes(hi) & ~gemm::first_lanes(lo));
  }
  static F load_range(const float* p, int64_t lo, int64_t hi) {
    return _mm512_maskz_loadu_ps(lane_range(std::max(lo, int64_t{0}), hi), p);
  }
  static F load_first(const float* p, int64_t n) {
    return _mm512_maskz_loadu_ps(gemm::first_lanes(n), p);
  }
  static Mask first_mask(int64_t n) { return gemm::first_lanes(n); }
  static F load_first(const float* p, Mask m, int64_t) { return _mm512_maskz_loadu_ps(m, p); }
  static void transpose(F r[W]) { gemm::transpose16(r); }
};

}  // namespace
}  // namespace aclnn_cpu::conv

#include "conv/kernels/im2col/im2col_panels_kernels.h"

namespace aclnn_cpu::conv {

void Im2colPanels::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_im2col<V512>(g_, x_, col0_, k0, kc, j0, n, Bp);
}

void GridPanels::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_grid<V512>(src_, k0, kc, j0, n, Bp);
}

void GridPanelsT::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_grid_t<V512>(src_, k0, kc, j0, n, Bp);
}

void Im2colPanelsT::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_im2col_t<V512>(g_, x_, col0_, tile_, k0, kc, j0, n, Bp);
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
