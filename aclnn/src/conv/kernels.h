// The three convolution primitives on a regular ConvGeometry, for dense compute buffers of T
// (float or double):
//
//   forward          y  [N, C_out, S_out] = conv(x [N, C_in, S_in], w [C_out, Cig*K])
//   backward_data    dx [N, C_in,  S_in]  = dL/dx given dy [N, C_out, S_out] and w
//   backward_weight  dw [C_out, Cig*K]    = dL/dw given x and dy
//
// fp32 problems with one input channel per group run direct kernels (depthwise.h). Otherwise
// each is im2col/col2im + GEMM (fp32: our AVX-512 kernel, gemm/sgemm.h; fp64: OpenBLAS) per
// (sample, group), with the column matrix built in
// chunks of columns (or of input channels) so the per-thread buffer stays a couple of MB, and a
// direct GEMM without im2col for pointwise (1x1, stride 1, no padding) geometries.
//
// Threading: the work is split into independent tasks run by oneTBB; OpenBLAS is set to one thread
// (process-wide, once, see kernels.cpp) so each task's GEMM runs on the thread that runs the task
// and the two libraries never oversubscribe the cores. Tasks index their scratch by
// tbb::this_task_arena::current_thread_index(), so callers run these inside a task_arena whose
// concurrency equals KernelPlan::slots. Results are deterministic for a given plan: every output
// element is produced by one task in a fixed order, and the grad-weight partial sums over batch
// ranges are added in range order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conv/geometry.h"

namespace aclnn_cpu::conv {

// How the primitives split the work; decided in phase 1 (it sizes the workspace).
struct KernelPlan {
  int slots = 1;              // scratch slots = threads that may run tasks concurrently
  bool pointwise = false;     // no im2col needed
  bool depthwise = false;     // fp32 with one input channel per group: direct kernels
  int64_t fwd_cols = 1;       // forward: columns (output positions) per task
  int64_t bd_cblock = 1;      // backward data: input channels per task
  int64_t bd_cols = 1;        //   columns per GEMM + col2im step within a task
  bool bd_packed_w = false;   //   w^T packed once per call (fp32 AVX-512, one channel block)
  bool bd_flip = false;       // backward data as a forward conv with flipped weights (fp32,
  int64_t bd_fwd_cols = 1;    //   unit stride): columns per task, and
  int64_t wflip_elems = 0;    //   elements of the flipped weight w' [C_in, Cog, K]
  int64_t bw_cblock = 1;      // backward weight: input channels per task
  int64_t bw_cols = 1;        //   columns per im2col + GEMM step
  int64_t bw_ranges = 1;      //   batch ranges reduced through partial buffers (1 = none)
  int64_t col_elems = 0;      // column buffer elements per slot
  int64_t partial_elems = 0;  // elements of one grad-weight partial (bw_ranges - 1 of them)
  int64_t pack_elems = 0;     // fp32 GEMM packing scratch per slot (gemm/sgemm.h), 0 for double
  bool implicit = false;      // fp32 AVX-512 forward-form GEMMs: implicit im2col (im2col_panels.h)
  int64_t wpack_elems = 0;    //   with the weights packed once per call (all groups)
  bool bw_implicit = false;   // fp32 AVX-512 weight gradient with transposed implicit panels
  int64_t fwd_grid_rows = 0;  // implicit unit-stride forward on the padded grid (padded_grid.h):
  int64_t bd_grid_rows = 0;   //   grid rows per task (0: not used), forward / flipped data grad
  int64_t bw_grid_rows = 0;   //   weight gradient: grid rows per GEMM (its reduction chunk)
};

// Which primitives a plan must serve.
struct KernelUse {
  bool forward = false;
  bool backward_data = false;
  bool backward_weight = false;
};

KernelPlan plan_kernels(const ConvGeometry& g, int slots, size_t elem_bytes, KernelUse use);

// With unit stride, the data gradient of g is the forward conv of dy by the flipped geometry
// (tap-reversed weights [C_in, Cog, K], padding dil*(k-1) - pad), see kernel_plan.cpp.
ConvGeometry flipped_for_data(const ConvGeometry& g);

// Largest value a GEMM dimension or leading dimension may take (OpenBLAS blasint is 32-bit).
inline constexpr int64_t kMaxGemmDim = 2147483647;

// Scratch carved from the workspace: slots * col_elems column elements,
// (bw_ranges - 1) * partial_elems grad-weight partials and slots * pack_elems GEMM packing
// elements (64-byte aligned per slot).
template <typename T>
struct Scratch {
  T* col = nullptr;
  T* partials = nullptr;
  T* pack = nullptr;
  T* wflip = nullptr;  // KernelPlan::wflip_elems
  T* wpack = nullptr;  // KernelPlan::wpack_elems
};

template <typename T>
void forward(const ConvGeometry& g, const KernelPlan& p, const T* x, const T* w, T* y,
             const Scratch<T>& s);
template <typename T>
void backward_data(const ConvGeometry& g, const KernelPlan& p, const T* dy, const T* w, T* dx,
                   const Scratch<T>& s);
template <typename T>
void backward_weight(const ConvGeometry& g, const KernelPlan& p, const T* x, const T* dy, T* dw,
                     const Scratch<T>& s);

// Sets OpenBLAS to a single thread, once per process (see the threading note above).
void init_blas_threads();

}  // namespace aclnn_cpu::conv
