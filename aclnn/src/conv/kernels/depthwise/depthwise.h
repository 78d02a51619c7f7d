// Direct fp32 kernels for convolutions with one input channel per group (C_in / groups == 1:
// depthwise, depthwise with a channel multiplier, and single-channel first layers such as MNIST's).
// There the im2col matrix of a group has only K rows, so a GEMM would run with a reduction depth
// of K (<= 27 or so) and be bound by packing; the direct loops instead stream each [D, H, W]
// plane once per kernel tap while it sits in L1/L2, and are memory-bound as they should be.
//
// Work split (oneTBB, deterministic, no partial buffers):
//   forward          one task per (sample, output channel) plane;
//   backward_data    one task per (sample, input channel) plane, summing its output channels;
//   backward_weight  one task per output channel, summing over the batch in order.
#pragma once

#include "conv/engine/geometry.h"
#include "conv/engine/source.h"
#include "conv/engine/strided.h"

namespace aclnn_cpu::conv {

// One kernel tap over a plane: input index along a dim = out * stride + off; [lo, hi) are the
// output indices whose input index lies inside the input (outside is padding: no contribution).
struct DepthwiseTap {
  int64_t q;                     // tap index (kd * kH + kh) * kW + kw
  int64_t off[3], lo[3], hi[3];  // per spatial dim (D, H, W)
  int64_t in[3], out[3], stride[3];
  bool empty() const { return hi[0] <= lo[0] || hi[1] <= lo[1] || hi[2] <= lo[2]; }
};

// AVX-512 versions of the per-tap plane loops for unit W stride (depthwise_avx512.cpp; call only
// when gemm::have_avx512()). Planes: y/dy [out0, out1, out2], x/dx [in0, in1, in2].
void dw_tap_gather_avx512(float* y, const float* x, float a, const DepthwiseTap& t);
void dw_tap_scatter_avx512(float* x, const float* y, float a, const DepthwiseTap& t);
float dw_tap_dot_avx512(const float* y, const float* x, const DepthwiseTap& t);
// dx plane = the data gradient from the m dy planes (dy + j * dy_stride) and their weights
// (w + j * K), for every stride 1 and rows of at most 64: summed per dx row in registers and
// stored once (no zeroing needed). Returns false, writing nothing, for other shapes.
// total[q] += the weight-gradient sum of tap q over one (dy plane, x plane) pair, for every tap,
// when the W stride is 1, output rows have at most 64 columns and the kernel at most 7 along W
// (one float sum per tap and plane pair, like tap_dot); returns false, adding nothing, otherwise.
bool dw_plane_tap_sums_avx512(const ConvGeometry& g, const float* dy, const float* x,
                              double* total);
// y plane = the forward of one x plane with one output channel's weights w (K taps), for every
// stride 1 and output rows of at most 64, summed per row in registers; false (nothing written)
// for other shapes.
bool dw_plane_forward_avx512(const ConvGeometry& g, float* y, const float* x, const float* w);
bool dw_plane_backward_data_avx512(const ConvGeometry& g, float* dx, const float* dy,
                                   int64_t dy_stride, const float* w, int64_t m);
// total[q] += the weight-gradient sum of tap q over one (dy plane, x plane) pair of bf16 values
// as stored, for the shapes of dw_plane_tap_sums_avx512, with vdpbf16ps on pairs of adjacent
// output positions (depthwise_bf16_avx512.cpp; call only where bf16_dot_kernels()).
bool dw_plane_tap_sums_bf16_avx512(const ConvGeometry& g, const uint16_t* dy, const uint16_t* x,
                                   double* total);
// The same three plane kernels for AVX2 + FMA CPUs (depthwise_avx2.cpp; call only when
// gemm::isa() is at least kAvx2), for the same shapes.
bool dw_plane_tap_sums_avx2(const ConvGeometry& g, const float* dy, const float* x, double* total);
bool dw_plane_forward_avx2(const ConvGeometry& g, float* y, const float* x, const float* w);
bool dw_plane_backward_data_avx2(const ConvGeometry& g, float* dx, const float* dy,
                                 int64_t dy_stride, const float* w, int64_t m);
// dw_plane_backward_data_avx2 with each dx row rounded to fp16 (`bf16` false) or bf16 as it is
// stored, bit for bit what narrow16 of the fp32 plane gives: a 16-bit dx written in place.
bool dw_plane_backward_data16_avx2(const ConvGeometry& g, bool bf16, uint16_t* dx, const float* dy,
                                   int64_t dy_stride, const float* w, int64_t m);

// Whether the direct kernels apply (every input channel is its own group's only channel).
inline bool use_depthwise(const ConvGeometry& g) {
  return g.groups >= 1 && g.C_in == g.groups && g.N > 0 && g.C_out > 0;
}
// Whether depthwise_direct's cost rule prefers them: up to 8 output channels per group (with
// more, GEMMs and the grid kernels win).
inline constexpr int64_t kDepthwiseMaxMultiplier = 8;
inline bool depthwise_preferred(const ConvGeometry& g) {
  return use_depthwise(g) && g.cout_g() <= kDepthwiseMaxMultiplier;
}

// An input of the kernels below: dense fp32 read in place, or elements of another kind (or
// rounded) converted a plane at a time into the calling task's buffer, so that no fp32 copy of
// the whole tensor is needed.
struct DwInput {
  const float* f32 = nullptr;  // dense fp32, or null: `src`
  Source src;
  float* slots = nullptr;  // per-thread buffers, `slot_elems` apart (for `src`)
  int64_t slot_elems = 0;
  int nslots = 1;
  // Elements [at, at + n) as fp32 (n <= slot_elems for a converted input).
  const float* get(int64_t at, int64_t n) const;
  // get(at, planes * plane) of a converted input (`src`), adding the sum of plane j's values as
  // stored (before rounding) to sums[j] in the same pass. An fp32 input is summed by the caller
  // after the kernels instead, when it is hot (FusedPass::sample).
  const float* get_summing(int64_t at, int64_t plane, int64_t planes, double* sums) const;
};
inline DwInput dw_fp32(const float* data) {
  DwInput in;
  in.f32 = data;
  return in;
}
// The floats of a thread's buffer the kernels need: forward (x plane), backward_data (the m dy
// planes of a group) and backward_weight (a dy and an x plane).
int64_t depthwise_slot_elems(const ConvGeometry& g);

// y [N, C_out, S_out] = conv(x [N, C_in, S_in], w [C_out, K]).
void depthwise_forward(const ConvGeometry& g, const DwInput& x, const float* w, float* y);
// dx [N, C_in, S_in] from dy [N, C_out, S_out] and w.
void depthwise_backward_data(const ConvGeometry& g, const DwInput& dy, const float* w, float* dx);
// dw [C_out, K] from x and dy (their buffers are laid out [dy plane, x plane] in one slot: pass
// the same slots to both, x at offset S_out).
void depthwise_backward_weight(const ConvGeometry& g, const DwInput& x, const DwInput& dy,
                               float* dw);

// Both at once (dx and dw), reading each dy plane once: what the engine runs when both are
// requested, for the geometries depthwise_fuses accepts (a group's m * K weight-gradient sums
// fit on the stack). The inputs are read as stored: fp32 in place, other kinds (fp16, bf16,
// rounded fp32) converted a plane at a time into the calling thread's slot, so 16-bit inputs
// stream half the bytes of fp32 ones. dx is written into its view: in place when it is dense
// fp32, else each plane computed in the slot and stored in the view's dtype and strides.
// dw [C_out, K] is dense fp32; so is db [C_out], the bias gradient (the sum of dy over the batch
// and the plane, in double), summed only where asked (non-null) and depthwise_sums_bias(dy).
struct DwBackward {
  Source x, dy, w;
  const View5* dx = nullptr;
  float* dw = nullptr;
  float* db = nullptr;
  float* scratch = nullptr;  // depthwise_fused_scratch floats (null when that is 0)
  int slots = 1;             // threads of the arena running it
};
inline constexpr int64_t kDepthwiseTapGroup = 128;  // weight-gradient sums on a task's stack
inline bool depthwise_fuses(const ConvGeometry& g) {
  return use_depthwise(g) && g.cout_g() * g.k_size() <= kDepthwiseTapGroup;
}
// Floats of scratch depthwise_backward needs: the weights converted once, and per slot the m dy
// planes of a group, an x plane and a dx plane; 0 for dense fp32 in and out.
int64_t depthwise_fused_scratch(const ConvGeometry& g, int slots, bool converts, const View5& dx);
void depthwise_backward(const ConvGeometry& g, const DwBackward& b);
// Whether depthwise_backward can sum the bias gradient from dy's exact values (gradBias is not
// Cube work: no cubeMathType rounding): fp32 (the stored plane, rounded or not), fp16, bf16.
inline bool depthwise_sums_bias(const Source& dy) {
  return dy.kind == SrcKind::kF32 || dy.kind == SrcKind::kF32Hf32 || dy.kind == SrcKind::kF32Fp16 ||
         dy.kind == SrcKind::kF16 || dy.kind == SrcKind::kBF16;
}

}  // namespace aclnn_cpu::conv
