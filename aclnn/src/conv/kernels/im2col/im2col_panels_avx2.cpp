// The panel sources of im2col_panels.h, compiled for AVX2 (only reached through the AVX2 GEMM,
// which runs after the runtime CPU check): im2col_panels_kernels.h's walks with 8-lane vectors,
// plain loads where a vector is whole and AVX's maskload at the edges (masked-off lanes never
// fault and read as zero), and 8 x 8 transposes.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "conv/kernels/im2col/im2col_panels.h"

#include "gemm/target_avx2_begin.h"

// Inside the target region so for_each_row_run, instantiated here with our AVX2 lambdas, inlines
// them (its instantiations are unique to this file).
#include "conv/kernels/im2col/im2col.h"
#include "conv/kernels/im2col/im2col_row.h"
#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

struct V256 {
  using F = __m256;
  using Mask = __m256i;
  static constexpr int W = 8;

  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_load_ps(p); }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F load_range(const float* p, int64_t lo, int64_t hi) {
    if (lo <= 0 && hi >= 8) return _mm256_loadu_ps(p);
    return _mm256_maskload_ps(p, gemm::lane_range8(lo, hi));
  }
  static F load_first(const float* p, int64_t n) {
    return _mm256_maskload_ps(p, gemm::first_lanes8(n));
  }
  static Mask first_mask(int64_t n) { return gemm::first_lanes8(n); }
  static F load_first(const float* p, Mask m, int64_t n) {
    return n == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
  }
  static void transpose(F r[W]) { gemm::transpose8(r); }
};

}  // namespace
}  // namespace aclnn_cpu::conv

#include "conv/kernels/im2col/im2col_panels_kernels.h"

namespace aclnn_cpu::conv {

void Im2colPanels::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_im2col<V256>(g_, x_, col0_, k0, kc, j0, n, Bp);
}

void GridPanels::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_grid<V256>(src_, k0, kc, j0, n, Bp);
}

void GridPanelsT::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_grid_t<V256>(src_, k0, kc, j0, n, Bp);
}

void Im2colPanelsT::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  pack_im2col_t<V256>(g_, x_, col0_, tile_, k0, kc, j0, n, Bp);
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
