// The convolution algorithm registry: for each primitive of a regular ConvGeometry, a list of
// named algorithms in order of preference, and the one planner that picks one per call in phase 1.
// (Algorithms of several primitives at once, planned on the call's views: job_algorithm.h.)
//
//   forward          y  [N, C_out, S_out] = conv(x [N, C_in, S_in], w [C_out, Cig*K])
//   backward_data    dx [N, C_in,  S_in]  = dL/dx given dy [N, C_out, S_out] and w
//   backward_weight  dw [C_out, Cig*K]    = dL/dw given x and dy
//
// An algorithm is one unit (oneDNN's one-primitive-per-implementation is the model): `plan` says
// whether it can compute a problem at all (correctness), whether its cost rules prefer it, and how
// it would split the work and how much scratch it needs; `run` computes it, inside the executor's
// task arena, using only that scratch. The planner takes the first applicable and preferred
// algorithm of the list; ACLNN_CPU_CONV_ALGO=name[,name...] forces the named ones wherever they
// apply (lifting cost rules, so every path can be tested on small problems), and
// ACLNN_CPU_VERBOSE=1 prints each choice, its reason, its blocking, its workspace and, in phase 2,
// its time (one line per primitive on stderr, like DNNL_VERBOSE).
//
// Threading (all algorithms): work is split into independent oneTBB tasks; each task indexes its
// scratch by tbb::this_task_arena::current_thread_index(), so `run` must execute inside an arena
// whose concurrency equals Problem::slots. Results are deterministic for a given plan: every
// output element is produced by one task in a fixed order, and weight-gradient partial sums over
// batch ranges are added in range order (as are the gradBias sums of a weight pass that makes
// them, Blocking::sums_bias).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "conv/engine/geometry.h"
#include "conv/engine/source.h"
#include "cpu/cpu.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

enum class Primitive { kForward = 0, kBackwardData = 1, kBackwardWeight = 2 };
inline constexpr int kPrimitiveCount = 3;
const char* primitive_name(Primitive p);

// What an algorithm is asked to compute.
struct Problem {
  ConvGeometry g;     // the regular geometry (backward_data: the conv whose dx it is)
  bool fp64 = false;  // compute in double (else float)
  int slots = 1;      // threads of the executor's arena = scratch slots
  gemm::Isa isa = gemm::Isa::kNone;  // the widest of our kernels that may run (gemm::isa())
  bool forced = false;    // chosen by ACLNN_CPU_CONV_ALGO: cost rules and size thresholds lifted
  bool bf16 = false;      // the inputs are bf16 and may be read as such (run_bf16)
  bool bf16_dot = false;  // ... by the AVX512_BF16 dot kernels (the bf16_dot policy)
  bool bf16_amx = false;  // ... on the AMX tiles (gemm::amx_tiles(): the bf16_amx policy)
  bool converts = false;  // some input is not fp32 as computed (another dtype, or rounded)

  // Multiply-adds of one pass (every primitive has the same count).
  double macs() const {
    return static_cast<double>(g.N) * g.C_out * g.out_size() * g.cin_g() * g.k_size();
  }
  // Our AVX-512 kernels may run (the direct ones need it).
  bool avx512() const { return isa >= gemm::Isa::kAvx512; }
  // Our packed fp32 GEMM may run (AVX2 + FMA or AVX-512).
  bool packed_gemm() const { return isa >= gemm::Isa::kAvx2; }
  // Our packed fp32 GEMM (its packing scratch pays off above ~4M multiply-adds; forced: always).
  bool own_gemm() const { return !fp64 && packed_gemm() && (forced || macs() >= double(1 << 22)); }
};

// How an algorithm splits one problem, decided in phase 1. The fields an algorithm does not use
// keep their defaults.
struct Blocking {
  int64_t cols = 1;           // output positions per task, or per GEMM step
  int64_t cblock = 1;         // channels per task
  int64_t rows = 0;           // padded-grid rows per task / per reduction chunk
  int64_t ranges = 1;         // backward_weight: batch ranges summed through partials
  int64_t pack_elems = 0;     // per slot: GEMM packing scratch (gemm/sgemm.h), 0 = OpenBLAS
  int64_t slot_elems = 0;     // per slot: other scratch (column chunks, grid bands, tiles)
  int64_t shared_elems = 0;   // shared by all tasks: packed or flipped weights
  int64_t partial_elems = 0;  // one weight-gradient partial (ranges - 1 of them)
  // backward_weight: the run can also sum gradBias (dy over samples and positions, per output
  // channel) from the dy it reads, into Operands::bias where the engine sets it; the engine then
  // skips its own pass over dy (channel_sum). Its per-range sums live in the shared scratch.
  bool sums_bias = false;
  // ... from dy as stored, before operand rounding (USE_FP16, HF32): the engine takes those sums
  // under any cubeMathType; without it only where the kernels read dy unrounded.
  bool sums_unrounded = false;
  // forward: the run adds Operands::add_bias to its outputs, each task to the block it has just
  // stored (in cache), where the engine would otherwise pass over the whole output once more
  // (add_channel_bias). The same float additions in the same order: the results are identical.
  bool adds_bias = false;
  // forward / backward_data of a converting run_f32 (reads_sources): the run can also store its
  // output as fp16 or bf16 into Operands::out16, rounded once as the engine's narrowing would, so
  // a 16-bit output needs no fp32 buffer, no runs of a few samples and no narrowing pass over
  // them (the engine passes out16 where the output is a dense fp16 / bf16 view).
  bool stores16 = false;
};

// Scratch and operands of one run. Inputs are dense (contiguous) T buffers.
template <typename T>
struct Operands {
  const T* x = nullptr;   // forward, backward_weight
  const T* w = nullptr;   // forward, backward_data
  const T* y = nullptr;   // dy: backward_data, backward_weight
  T* out = nullptr;       // y, dx or dw
  T* slots = nullptr;     // slots * (pack_elems + slot_elems): slot s at s * slot_stride()
  T* shared = nullptr;    // shared_elems
  T* partials = nullptr;  // (ranges - 1) * partial_elems
  // backward_weight with Blocking::sums_bias: gradBias [C_out] = sum of dy over n and space,
  // written by the run when set (null: the engine sums it itself, or it is not asked for).
  T* bias = nullptr;
  // forward with Blocking::adds_bias: bias [C_out] to add to every output of its channel (null:
  // none, or the engine adds it).
  const T* add_bias = nullptr;
  // bf16 runs: the inputs as dense bf16 bits (x, w, y above are then null).
  const uint16_t* x16 = nullptr;
  const uint16_t* w16 = nullptr;
  const uint16_t* y16 = nullptr;
  // Algorithms with reads_sources: the inputs as stored (dense, any of fp32/fp16/bf16, with the
  // cubeMathType rounding to apply), converted as they read them (x, w, y above are then null).
  Source xsrc, wsrc, ysrc;
  // run_bf16 of an algorithm with writes_bf16, or run_f32 of a plan with Blocking::stores16: the
  // output's dense 16-bit view, written rounded to nearest even instead of `out` (then null); its
  // format: fp16 where out16_fp16, else bf16 (run_bf16: always bf16).
  uint16_t* out16 = nullptr;
  bool out16_fp16 = false;
};

// An algorithm's answer in phase 1.
struct Fit {
  bool applies = false;    // it computes this problem exactly (false: `reason` says why not)
  bool preferred = false;  // its cost rules choose it (ignored when forced)
  std::string reason;      // why it does not apply, or why it is (not) preferred
  Blocking b;
};

// What reads an algorithm's bf16 inputs natively (run_bf16): the planner offers it bf16 problems
// only where that engine runs (Problem::bf16_dot, Problem::bf16_amx).
enum class Bf16Engine { kDot, kAmx };

struct Algorithm {
  const char* name;
  Primitive primitive;
  Fit (*plan)(const Problem&);
  // null: bf16 inputs only (run_bf16; its plan refuses other problems), where the dot kernels run
  void (*run_f32)(const Problem&, const Blocking&, const Operands<float>&);
  void (*run_f64)(const Problem&, const Blocking&, const Operands<double>&);  // null: fp32 only
  // Reads bf16 inputs natively (fp32 accumulation into `out`); null: bf16 inputs are converted
  // to fp32 first.
  void (*run_bf16)(const Problem&, const Blocking&, const Operands<float>&) = nullptr;
  // run_f32 reads Operands::xsrc/wsrc/ysrc (any float dtype, rounded as it reads them) instead of
  // fp32 copies: no separate conversion pass.
  bool reads_sources = false;
  // The CPU features its kernels need (cpu/cpu.h); its plan refuses problems whose Problem::isa
  // is narrower, and aclnnCpuConvAlgorithmRunsHere reports it.
  cpu::FeatureSet needs = {};
  // run_bf16 can store its output as bf16 (Operands::out16): the engine passes a dense bf16
  // output view there, without an fp32 buffer or a narrowing pass.
  bool writes_bf16 = false;
  Bf16Engine bf16_engine = Bf16Engine::kDot;  // what run_bf16 runs on
};

// Whether `a` reads the bf16 inputs of `p` natively (p.bf16, and a's engine runs).
inline bool reads_bf16(const Algorithm& a, const Problem& p) {
  return p.bf16 && a.run_bf16 && (a.bf16_engine == Bf16Engine::kAmx ? p.bf16_amx : p.bf16_dot);
}

// Every registered algorithm of `p`, in order of preference.
std::span<const Algorithm* const> algorithms(Primitive p);
// Every registered algorithm (all primitives).
std::span<const Algorithm* const> all_algorithms();

// The planner's pick for one primitive.
struct Choice {
  const Algorithm* algo = nullptr;
  Blocking b;
  std::string why;    // for ACLNN_CPU_VERBOSE: why this one (and why not the ones before it)
  bool bf16 = false;  // runs run_bf16 on the bf16 inputs
};

// Picks the algorithm for primitive `prim` of `problem` (problem.forced is set when the choice
// comes from ACLNN_CPU_CONV_ALGO). With problem.bf16, an algorithm that reads bf16 natively is
// taken where one applies (forced or preferred); otherwise the inputs are to be converted. Never
// fails: the last algorithm of every list applies to every geometry and dtype.
Choice choose_algorithm(Primitive prim, Problem problem);

// Whether ACLNN_CPU_CONV_ALGO names `name` (read at every phase 1).
bool algorithm_forced(const char* name);
// Whether ACLNN_CPU_CONV_ALGO is set (to anything).
bool any_algorithm_forced();
// Whether ACLNN_CPU_VERBOSE asks for the plan and time lines.
bool verbose();

// Scratch stride of one slot (pack_elems + slot_elems, rounded to a 64-byte multiple).
template <typename T>
inline int64_t slot_stride(const Blocking& b) {
  const int64_t per_line = 64 / static_cast<int64_t>(sizeof(T));
  return (b.pack_elems + b.slot_elems + per_line - 1) / per_line * per_line;
}

}  // namespace aclnn_cpu::conv
