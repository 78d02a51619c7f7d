// Single-threaded fp32 GEMM for the convolution kernels:
//
//   C[M, N] = A[M, K] * B[K, N]   (+ C when `accumulate`)
//
// with A and B given as arbitrary strided views (element (r, c) at p[r * rs + c * cs]), so the
// transposes of the conv primitives (w^T, col^T, dy^T) are views, not copies. It runs our own
// packed kernels, chosen once at runtime by the CPU module (cpu/cpu.h): 8 x 48 on AVX-512
// (sgemm_avx512.cpp), 4 x 24 sub-tiles of the same packed panels on AVX2 + FMA (sgemm_avx2.cpp);
// on older CPUs it calls OpenBLAS (one unit stride per operand is required there, which every
// caller satisfies). Both kernels read and write the same packed formats (Ap[k][8], Bp[k][48]),
// so a BPanels source serves either.
//
// Why our own kernel: OpenBLAS picks its kernels at load time from OPENBLAS_CORETYPE, which this
// machine's environment pins to Haswell (AVX2: about half the AVX-512 throughput); we cannot undo
// that from inside the library, and a packed kernel lets the convolution feed it im2col chunks
// and transposed views without extra copies. Parallelism is the caller's (one call per oneTBB
// task); the call allocates nothing: packing buffers are `scratch` (pack_elems() floats,
// 64-byte aligned), carved from the conv workspace per thread slot.
#pragma once

#include <cstdint>

namespace aclnn_cpu::gemm {

struct Mat {
  const float* p = nullptr;
  int64_t rs = 0;  // stride between rows
  int64_t cs = 1;  // stride between columns
  // Each element rounded to fp16 (to nearest even, as half.h's round_to_half) as it is packed:
  // cubeMathType USE_FP16 on fp32 operands read in place. Only where packs_fp16() (our packed
  // kernels); elsewhere (OpenBLAS) sgemm and sgemm_packed reject such an operand.
  bool fp16 = false;
  // Or 16-bit elements: `p16` (then `p` is null) holds fp16 bits, bf16 bits when `bf16`, each
  // widened exactly to fp32 as it is packed, so a 16-bit input is read in place instead of through
  // a converted fp32 copy. Only where packs_16bit(); elsewhere sgemm and sgemm_packed reject it.
  const uint16_t* p16 = nullptr;
  bool bf16 = false;
};

// A source of packed B panels, for operands that are never materialised as a matrix (the
// implicit im2col of a convolution): pack() writes Bp[panel][k][48] = B(k0 + k, j0 + panel*48 + c)
// for k < kc and c < 48, zero where j0 + panel*48 + c >= j0 + n.
class BPanels {
 public:
  virtual void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const = 0;

 protected:
  ~BPanels() = default;
};

// Panel width of the packed kernels (BPanels implementations write this format; kc <= 256).
inline constexpr int64_t kPanelCols = 48;
inline constexpr int64_t kMaxPanelDepth = 256;

// The vector widths our fp32 kernels are written for, in order (kAvx2: AVX2, FMA and F16C). isa()
// is the widest the tier in force allows (cpu::tier(): the CPU, the OS and ACLNN_CPU_MAX_ISA).
enum class Isa : int { kNone = 0, kAvx2 = 1, kAvx512 = 2 };
Isa isa();
const char* isa_name(Isa i);

// Whether the AVX-512 kernels run (the GEMM's and the direct ones).
inline bool have_avx512() {
  return isa() >= Isa::kAvx512;
}
// Whether sgemm / sgemm_packed run our packed kernels (AVX2 + FMA or AVX-512).
inline bool have_packed_gemm() {
  return isa() >= Isa::kAvx2;
}
// Whether the packed kernels round Mat::fp16 operands as they pack them (AVX-512, AVX2 + F16C).
inline bool packs_fp16() {
  return have_packed_gemm();
}

// Whether the packed kernels read Mat::p16 operands (AVX-512; the AVX2 kernels' callers convert).
inline bool packs_16bit() {
  return have_avx512();
}

// Floats of packing scratch the packed kernel needs (0 when there is none: OpenBLAS). sgemm with
// a null `scratch` always uses OpenBLAS.
int64_t pack_elems();

void sgemm(int64_t M, int64_t N, int64_t K, Mat A, Mat B, bool accumulate, float* C, int64_t ldc,
           float* scratch);

// The empty cases (M or N <= 0: nothing; K <= 0: C = 0 unless accumulating); true when handled.
bool sgemm_empty(int64_t M, int64_t N, int64_t K, bool accumulate, float* C, int64_t ldc);

// A operand packed once and reused by many GEMMs (a convolution's weights serve every sample):
// packed_a_elems(M, K) floats, written by pack_a_once (only when have_packed_gemm(); the layout
// follows the K blocking of isa()'s kernel).
int64_t packed_a_elems(int64_t M, int64_t K);
void pack_a_once(int64_t M, int64_t K, Mat A, float* packed);
// The K blocking of isa()'s packed kernel, so that other packers can write pack_a_once's layout:
// K block pc (a multiple of it) starts at pc * roundup(M, 8) and holds [roundup(M, 8) / 8][kc][8]
// with kc = min(panel_depth(), K - pc). Only when have_packed_gemm().
int64_t panel_depth();

// C[M, N] (+)= A * B with A either pre-packed by pack_a_once (`packed_a`) or a strided view
// (`a_mat`), and B either a strided view (`b_mat`) or a panel source (`b_panels`); exactly one of
// each pair non-null. Only when have_packed_gemm(); `scratch` holds pack_elems() floats.
void sgemm_packed(int64_t M, int64_t N, int64_t K, const float* packed_a, const Mat* a_mat,
                  const Mat* b_mat, const BPanels* b_panels, bool accumulate, float* C, int64_t ldc,
                  float* scratch);

// C[M, N] (+)= A[row0 .. row0 + M) * B with A [rows, K] packed whole by pack_a_once (row0 a
// multiple of 8, row0 + M <= rows) and B a panel source: GEMMs on overlapping row ranges of one
// matrix share one packing (ConvTbc's taps read the same rows shifted by whole time steps). Only
// when have_packed_gemm(); `scratch` holds pack_elems() floats.
void sgemm_packed_rows(int64_t M, int64_t N, int64_t K, const float* packed_a, int64_t rows,
                       int64_t row0, const BPanels* b_panels, bool accumulate, float* C,
                       int64_t ldc, float* scratch);

// C16[M, N] = A * B narrowed to 16 bits (bf16 where `bf16`, else fp16; to nearest even, bit for bit
// conv::narrow16 of the fp32 product), with A pre-packed by pack_a_once and B a strided view or a
// panel source (exactly one non-null): a 16-bit output stored by the micro-kernel, with no fp32
// copy of it written and read back. K at most panel_depth() (one K block: the product is final
// when stored). Only where packs_16bit().
void sgemm_packed_narrow(int64_t M, int64_t N, int64_t K, const float* packed_a, const Mat* b_mat,
                         const BPanels* b_panels, bool bf16, uint16_t* C16, int64_t ldc,
                         float* scratch);

// One GEMM as the per-ISA packed kernels take it: C[M, N] (+)= A * B with A pre-packed or a view
// and B a view or a panel source (exactly one of each pair non-null).
struct PackedCall {
  int64_t M = 0, N = 0, K = 0;
  const float* packed_a = nullptr;    // rows [a_row0, a_row0 + M) of an a_rows-row matrix in
  int64_t a_rows = 0, a_row0 = 0;     // pack_a_once's layout (a_row0 a multiple of 8)
  const Mat* a_mat = nullptr;         // A [M, K] as a strided view
  const Mat* b_mat = nullptr;         // B [K, N] as a strided view
  const BPanels* b_panels = nullptr;  // B [K, N] as a panel source
  bool accumulate = false;            // C += A * B (else C = A * B)
  float* C = nullptr;                 // [M][ldc]
  int64_t ldc = 0;
  uint16_t* C16 = nullptr;   // instead of C: [M][ldc] narrowed (sgemm_packed_narrow)
  bool c16_bf16 = false;     // C16's format: bf16, else fp16
  float* scratch = nullptr;  // pack_elems floats, 64-byte aligned, private to the thread
};

// The implementations behind the dispatch above, one per ISA (sgemm_avx512.cpp, sgemm_avx2.cpp;
// call only when isa() allows them).
struct PackedKernel {
  int64_t pack_elems;   // floats of scratch a call needs
  int64_t panel_depth;  // the K block of its pack_a_once layout
  void (*pack_a_once)(int64_t M, int64_t K, const Mat& A, float* packed);
  void (*run)(const PackedCall& call);
};
extern const PackedKernel kAvx512Kernel;
extern const PackedKernel kAvx2Kernel;

}  // namespace aclnn_cpu::gemm
