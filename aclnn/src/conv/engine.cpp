#include "conv/engine.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>
#include <type_traits>
#include <utility>

#include <tbb/task_arena.h>

#include "conv/algo_support.h"
#include "conv/algorithm.h"
#include "conv/depthwise.h"
#include "conv/direct_grid.h"
#include "conv/tbc_gemm.h"
#include "error.h"
#include "gemm/sgemm.h"
#include "meta.h"
#include "runtime_options.h"

namespace aclnn_cpu::conv {
namespace {

constexpr uint64_t kAlign = 64;
constexpr uint64_t kNotInWorkspace = ~uint64_t{0};  // operand used in place, empty or not needed

// Workspace carving: byte offsets of 64-byte-aligned segments, overflow-checked in 128 bits.
struct Layout {
  unsigned __int128 total = 0;

  uint64_t add(unsigned __int128 bytes) {
    const uint64_t off = static_cast<uint64_t>(total);
    total += (bytes + kAlign - 1) / kAlign * kAlign;
    check(total <= kMaxWorkspaceBytes, ACLNN_ERR_PARAM_INVALID, "the computation needs more than ",
          kMaxWorkspaceBytes, " bytes (2^46) of workspace; the tensors are too large");
    return off;
  }
};

struct Plan {
  ConvJob job;
  std::shared_ptr<tbb::task_arena> arena;  // concurrency <= problem.slots
  Problem problem;
  std::optional<Choice> choice[kPrimitiveCount];  // forward, backward_data, backward_weight
  TbcMode tbc = TbcMode::kNone;  // time-major 1-d: per-tap GEMMs on the caller's rows
  TbcScratch tbc_scratch;        //   their scratch (shared + per slot)
  // Workspace offsets of the dense compute copies / results, and of the algorithms' scratch
  // (one region: the primitives run one after another).
  uint64_t x = kNotInWorkspace, w = kNotInWorkspace, y = kNotInWorkspace, bias = kNotInWorkspace;
  // Dense copies in the inputs' own dtype, for algorithms that read them as stored (bf16 dot
  // kernels, reads_sources), where the views are not dense already.
  uint64_t x_raw = kNotInWorkspace, w_raw = kNotInWorkspace, y_raw = kNotInWorkspace;
  uint64_t out_y = kNotInWorkspace, out_x = kNotInWorkspace, out_w = kNotInWorkspace;
  uint64_t out_bias = kNotInWorkspace, scratch = kNotInWorkspace;
  uint64_t bytes = 0;
  // Samples per run of forward / backward_data (0: all): an output computed in the workspace
  // (another dtype or layout) is computed and unpacked a few samples at a time.
  int64_t chunk[kPrimitiveCount] = {};
  bool dx16 = false;  // backward_data's bf16 kernel stores dx's dense bf16 view itself
};

// Whether `j` asks for the result of primitive `prim` (y, dx or dw).
bool requested(const ConvJob& j, int prim) {
  return (prim == 0 ? j.out_y : prim == 1 ? j.out_x : j.out_w).has_value();
}

// The problem one run of `prim` computes: N cut to the plan's chunk.
Problem run_problem(const Plan& p, Primitive prim) {
  Problem q = p.problem;
  if (p.chunk[static_cast<int>(prim)] > 0) q.g.N = p.chunk[static_cast<int>(prim)];
  return q;
}

void check_gemm_dim(const char* what, int64_t v) {
  check(v <= kMaxGemmDim, ACLNN_ERR_PARAM_INVALID,
        "the problem is too large for this CPU implementation: ", what, " = ", v, " exceeds ",
        kMaxGemmDim, " (32-bit BLAS dimension)");
}

// Reserves a dense compute copy of `v` unless it is absent, empty or usable in place.
template <typename T>
uint64_t reserve(Layout& layout, bool needed, const std::optional<View5>& v, Round round) {
  if (!needed || !v || v->numel() == 0 || usable_in_place<T>(*v, round)) return kNotInWorkspace;
  return layout.add(static_cast<unsigned __int128>(v->numel()) * sizeof(T));
}

// Bytes of an algorithm's scratch: slots x (packing + other), shared, partials.
template <typename T>
unsigned __int128 scratch_bytes(const Choice& c, int slots) {
  const Blocking& b = c.b;
  const unsigned __int128 elems = static_cast<unsigned __int128>(slot_stride<T>(b)) * slots +
                                  ceil_div(b.shared_elems, 16) * 16 +
                                  static_cast<unsigned __int128>(b.partial_elems) *
                                      static_cast<unsigned __int128>(b.ranges - 1);
  return elems * sizeof(T);
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream os;
  os << "N" << g.N << " C" << g.C_in << "->" << g.C_out << " g" << g.groups << " in" << g.in[0]
     << "x" << g.in[1] << "x" << g.in[2] << " k" << g.k[0] << "x" << g.k[1] << "x" << g.k[2] << " s"
     << g.stride[0] << "x" << g.stride[1] << "x" << g.stride[2] << " d" << g.dil[0] << "x"
     << g.dil[1] << "x" << g.dil[2] << " p" << g.pad_before[0] << "," << g.pad_before[1] << ","
     << g.pad_before[2] << "/" << g.pad_after[0] << "," << g.pad_after[1] << "," << g.pad_after[2];
  return os.str();
}

// The time-major forms (tbc_gemm.h) need only their scratch (and the gradBias buffer if not in
// place). One is taken unless ACLNN_CPU_CONV_ALGO names other algorithms only.
constexpr double kTbcOwnGemmMinMacs = double(1 << 22);
bool plan_tbc(Plan& p) {
  const ConvJob& j = p.job;
  if (j.use_double) return false;
  p.tbc = tbc_mode(j, p.problem);
  if (p.tbc == TbcMode::kNone) return false;
  const ConvGeometry& g = j.g;
  const double macs = static_cast<double>(g.N) * g.C_out * g.out[2] * g.C_in * g.k[2];
  const bool own_gemm =
      gemm::pack_elems() > 0 && (macs >= kTbcOwnGemmMinMacs || any_algorithm_forced());
  p.tbc_scratch = tbc_scratch(j, p.tbc, own_gemm, p.problem.slots);
  Layout layout;
  p.out_bias = reserve<float>(layout, true, j.out_bias, Round::kNone);
  const TbcScratch& s = p.tbc_scratch;
  const unsigned __int128 bytes =
      static_cast<unsigned __int128>(s.slot) * p.problem.slots + static_cast<uint64_t>(s.shared);
  if (bytes > 0) p.scratch = layout.add(bytes);
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
  return true;
}

// Reserves a dense copy of `v` in its own dtype unless it is dense already.
uint64_t reserve_raw(Layout& layout, bool needed, const std::optional<View5>& v) {
  if (!needed || !v || v->numel() == 0 || v->contiguous()) return kNotInWorkspace;
  return layout.add(static_cast<unsigned __int128>(v->numel()) * dtype_size(v->dtype));
}

// Whether a choice reads its inputs as stored (bf16 bits or Sources) rather than as T copies
// (fp64 runs read double copies: Sources are fp32 reads).
bool reads_raw(const Plan& p, const Choice& c) {
  return c.bf16 || (c.algo->reads_sources && !p.problem.fp64);
}

// Which inputs the chosen algorithms read as T copies (t) and as stored (raw): x, w, y.
struct InputUse {
  bool t[3] = {}, raw[3] = {};
};
InputUse input_use(const Plan& p) {
  // forward reads x and w, backward_data y and w, backward_weight x and y.
  static constexpr bool kReads[kPrimitiveCount][3] = {
      {true, true, false}, {false, true, true}, {true, false, true}};
  InputUse u;
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!p.choice[i]) continue;
    for (int k = 0; k < 3; ++k) (reads_raw(p, *p.choice[i]) ? u.raw[k] : u.t[k]) |= kReads[i][k];
  }
  return u;
}

// Whether backward_data's bf16 kernel can store dx's bf16 view itself (Algorithm::writes_bf16):
// a dense view, and no bias to add to it (a transposed conv's forward).
bool stores_dx16(const Plan& p) {
  const ConvJob& j = p.job;
  const std::optional<Choice>& c = p.choice[1];
  return !p.problem.fp64 && c && c->bf16 && c->algo->writes_bf16 && j.out_x &&
         j.out_x->dtype == ACL_BF16 && j.out_x->contiguous() && !(j.bias && j.bias->numel() > 0);
}

// Whether both gradients run as one fused depthwise pass (depthwise.h) on the inputs as stored
// (without a bias gradient to add to dx).
bool fuses_depthwise(const Plan& p) {
  const ConvJob& j = p.job;
  auto depthwise = [&](int i) {
    return p.choice[i] && p.choice[i]->algo->name == std::string_view("depthwise_direct");
  };
  return !p.problem.fp64 && j.out_x && j.out_w && depthwise(1) && depthwise(2) &&
         depthwise_fuses(j.g) && !(j.bias && j.bias->numel() > 0);
}

// Samples per run of a per-sample primitive whose output `v` is computed in the workspace: at
// most kOutputChunkBytes of T per run, and no more than the output's own bytes where that still
// leaves runs of kMinRunSamples (a 16-bit output's fp32 runs then take at most its size, keeping
// the workspace within twice the largest tensor; ct3d's 2 samples cut into 1-sample runs lost
// ~10% at 2 threads), at least one sample, N split into equal runs; 0 when the output is used in
// place (or is small).
constexpr int64_t kOutputChunkBytes = int64_t{8} << 20;
constexpr int64_t kMinRunSamples = 4;
template <typename T>
int64_t output_chunk(const std::optional<View5>& v, int64_t N) {
  if (!v || v->numel() == 0 || N <= 1 || usable_in_place<T>(*v, Round::kNone)) return 0;
  const int64_t sample = v->numel() / N * static_cast<int64_t>(sizeof(T));
  const int64_t own = v->numel() * static_cast<int64_t>(dtype_size(v->dtype));
  const int64_t budget =
      own / sample >= kMinRunSamples ? std::min(kOutputChunkBytes, own) : kOutputChunkBytes;
  if (sample * N <= budget) return 0;
  int64_t runs = std::min(N, ceil_div(sample * N, budget));
  while (N % runs != 0) ++runs;  // every run plans and computes the same N (runs <= N)
  return N / runs;
}

// Reserves the T buffer of an output computed `chunk` samples at a time (0: whole).
template <typename T>
uint64_t reserve_output(Layout& layout, const std::optional<View5>& v, int64_t chunk) {
  if (chunk == 0) return reserve<T>(layout, true, v, Round::kNone);
  return layout.add(static_cast<unsigned __int128>(v->numel() / v->dims[0] * chunk) * sizeof(T));
}

template <typename T>
void plan_workspace(Plan& p) {
  if (plan_tbc(p)) return;
  const ConvJob& j = p.job;
  p.chunk[0] = output_chunk<T>(j.out_y, j.g.N);
  p.chunk[1] = output_chunk<T>(j.out_x, j.g.N);
  unsigned __int128 scratch = 0;
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!requested(j, i)) continue;
    p.choice[i] = choose_algorithm(static_cast<Primitive>(i), run_problem(p, Primitive(i)));
    scratch = std::max(scratch, scratch_bytes<T>(*p.choice[i], p.problem.slots));
  }
  // A bf16 dx stored by its kernel needs no fp32 buffer, so no runs of a few samples either:
  // planned again for the whole batch (and kept only if the kernel is chosen again).
  if (p.chunk[1] > 0 && stores_dx16(p)) {
    const int64_t chunk = std::exchange(p.chunk[1], 0);
    p.choice[1] = choose_algorithm(Primitive::kBackwardData, run_problem(p, Primitive(1)));
    if (!stores_dx16(p)) {
      p.chunk[1] = chunk;
      p.choice[1] = choose_algorithm(Primitive::kBackwardData, run_problem(p, Primitive(1)));
    }
    scratch = std::max(scratch, scratch_bytes<T>(*p.choice[1], p.problem.slots));
  }
  p.dx16 = stores_dx16(p);
  // The fused depthwise pass writes dx plane by plane into its view: no dx buffer.
  const bool fused = fuses_depthwise(p);
  if (fused) {
    p.chunk[1] = 0;
    const int64_t elems =
        depthwise_fused_scratch(j.g, p.problem.slots, p.problem.converts, *j.out_x);
    scratch = std::max(scratch, static_cast<unsigned __int128>(elems) * sizeof(T));
  }
  const InputUse use = input_use(p);
  Layout layout;
  p.x = reserve<T>(layout, use.t[0], j.x, j.round);
  p.w = reserve<T>(layout, use.t[1], j.w, j.round);
  p.y = reserve<T>(layout, use.t[2], j.y, j.round);
  p.x_raw = reserve_raw(layout, use.raw[0], j.x);
  p.w_raw = reserve_raw(layout, use.raw[1], j.w);
  p.y_raw = reserve_raw(layout, use.raw[2], j.y);
  p.bias = reserve<T>(layout, requested(j, 0) || requested(j, 1), j.bias, Round::kNone);
  p.out_y = reserve_output<T>(layout, j.out_y, p.chunk[0]);
  p.out_x = fused || p.dx16 ? kNotInWorkspace : reserve_output<T>(layout, j.out_x, p.chunk[1]);
  p.out_w = reserve<T>(layout, true, j.out_w, Round::kNone);
  p.out_bias = reserve<T>(layout, true, j.out_bias, Round::kNone);
  if (scratch > 0) p.scratch = layout.add(scratch);
  // + kAlign of slack so a workspace that is not 64-byte aligned can be aligned in place.
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
}

// How a choice splits its work (Blocking's fields; chunk: samples per run, 0 = all), e.g.
// "cblock:64 rows:16 cols:1 ranges:2 chunk:0".
std::string describe_blocking(const Blocking& b, int64_t chunk) {
  return "cblock:" + std::to_string(b.cblock) + " rows:" + std::to_string(b.rows) +
         " cols:" + std::to_string(b.cols) + " ranges:" + std::to_string(b.ranges) +
         " chunk:" + std::to_string(chunk);
}

void print_plan(const char* api, const Plan& p) {
  const std::string geo = describe(p.job.g);
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!requested(p.job, i)) continue;
    const bool tbc = p.tbc != TbcMode::kNone;
    const char* name = tbc ? tbc_name(p.tbc) : p.choice[i]->algo->name;
    const std::string why = tbc ? "time-major 1-d views" : p.choice[i]->why;
    // ConvTbc's per-tap GEMMs split time steps by their own rule (tbc_gemm.h).
    const std::string blocking =
        tbc ? "per-tap-gemms" : describe_blocking(p.choice[i]->b, p.chunk[i]);
    // What the products are computed on: double, bf16 pairs (the dot kernels), or fp32.
    const bool bf16 = tbc ? p.tbc == TbcMode::kBf16 : p.choice[i]->bf16;
    const char* math = p.problem.fp64 ? "f64" : bf16 ? "bf16" : "f32";
    std::fprintf(stderr,
                 "aclnn_cpu_verbose,plan,%s,%s,%s,%s %s,threads=%d,workspace=%llu,isa=%s,"
                 "blocking=%s,%s\n",
                 api, primitive_name(static_cast<Primitive>(i)), name, geo.c_str(), math,
                 p.problem.slots, static_cast<unsigned long long>(p.bytes),
                 gemm::isa_name(p.problem.isa), blocking.c_str(), why.c_str());
  }
}

// The dense compute buffer of a view: its own memory when usable in place, else the workspace.
template <typename T>
T* buffer(const std::optional<View5>& v, uint64_t off, char* ws) {
  if (!v || v->numel() == 0) return nullptr;
  if (off == kNotInWorkspace) return reinterpret_cast<T*>(v->origin());
  return reinterpret_cast<T*>(ws + off);
}

// ACLNN_CPU_VERBOSE's time line of one primitive that ran `algo` for `ms` milliseconds.
void print_exec(const char* api, Primitive prim, const char* algo, double ms) {
  std::fprintf(stderr, "aclnn_cpu_verbose,exec,%s,%s,%s,%.3f ms\n", api, primitive_name(prim), algo,
               ms);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs the chosen algorithm of one primitive on `ops` (scratch carved from the workspace); with
// ACLNN_CPU_VERBOSE, returns its time in ms and prints it if `print`.
template <typename T>
double run_primitive(const char* api, const Plan& p, Primitive prim, Operands<T> ops, char* ws,
                     bool print = true) {
  const Choice& c = *p.choice[static_cast<int>(prim)];
  if (p.scratch != kNotInWorkspace) {
    T* base = reinterpret_cast<T*>(ws + p.scratch);
    ops.slots = base;
    ops.shared = base + slot_stride<T>(c.b) * p.problem.slots;
    ops.partials = ops.shared + ceil_div(c.b.shared_elems, 16) * 16;
  }
  const bool timed = verbose();
  const auto t0 = std::chrono::steady_clock::now();
  Problem q = run_problem(p, prim);
  if constexpr (std::is_same_v<T, float>) {
    q.bf16 = c.bf16;
    if (c.bf16) {
      c.algo->run_bf16(q, c.b, ops);
    } else {
      c.algo->run_f32(q, c.b, ops);
    }
  } else {
    c.algo->run_f64(q, c.b, ops);
  }
  if (!timed) return 0;
  const double ms = ms_since(t0);
  if (print) print_exec(api, prim, c.algo->name, ms);
  return ms;
}

// Phase 2 of a time-major plan (tbc_gemm.h): the operands are read in place, only the forms'
// scratch (and gradBias, if not in place) is in the workspace. Inside the executor's arena.
template <typename T>
void execute_tbc(const char* api, const Plan& p, char* ws) {
  const ConvJob& j = p.job;
  char* scratch = p.scratch != kNotInWorkspace ? ws + p.scratch : nullptr;
  T* bias_out = j.out_bias ? buffer<T>(j.out_bias, p.out_bias, ws) : nullptr;
  const bool fused = bias_out && tbc_fuses_bias(j, p.tbc);  // summed by the weight tasks
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!requested(j, i)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    float* fused_out = nullptr;
    if constexpr (std::is_same_v<T, float>) fused_out = fused ? bias_out : nullptr;
    tbc_run(j, p.tbc, p.tbc_scratch, static_cast<Primitive>(i), p.problem.slots, scratch,
            fused_out);
    if (verbose()) print_exec(api, static_cast<Primitive>(i), tbc_name(p.tbc), ms_since(t0));
  }
  if (bias_out && !fused)
    channel_sum(*(j.bias_sum_of == ConvJob::BiasOf::kX ? j.x : j.y), bias_out);
  if (bias_out && p.out_bias != kNotInWorkspace) unpack(bias_out, *j.out_bias);
}

// Phase 2. Allocates nothing: every buffer is the caller's tensor memory or the workspace.
template <typename T>
void execute(const char* api, const Plan& p, char* ws) {
  if (ws) ws += (kAlign - reinterpret_cast<uintptr_t>(ws) % kAlign) % kAlign;
  const ConvJob& j = p.job;
  const ConvGeometry& g = j.g;
  p.arena->execute([&] {
    if (p.tbc != TbcMode::kNone) return execute_tbc<T>(api, p, ws);
    // Inputs: pack (convert, gather strides, round Cube operands) where not usable in place.
    auto input = [&](const std::optional<View5>& v, uint64_t off, Round round) -> const T* {
      T* buf = buffer<T>(v, off, ws);
      if (buf && off != kNotInWorkspace) pack(*v, buf, round);
      return buf;
    };
    const bool fwd = j.out_y.has_value(), bwd_data = j.out_x.has_value(),
               bwd_weight = j.out_w.has_value();
    // fp32/fp64 copies where a chosen algorithm computes in T, bf16 ones for the bf16 kernels.
    const InputUse use = input_use(p);
    const T* x = use.t[0] ? input(j.x, p.x, j.round) : nullptr;
    const T* w = use.t[1] ? input(j.w, p.w, j.round) : nullptr;
    const T* y = use.t[2] ? input(j.y, p.y, j.round) : nullptr;
    // As stored: the view itself when dense, else its elements copied densely.
    auto raw = [&](bool needed, const std::optional<View5>& v, uint64_t off) -> const void* {
      if (!needed || !v || v->numel() == 0) return nullptr;
      if (off == kNotInWorkspace) return v->origin();
      pack_raw(*v, ws + off);
      return ws + off;
    };
    const void* x_raw = raw(use.raw[0], j.x, p.x_raw);
    const void* w_raw = raw(use.raw[1], j.w, p.w_raw);
    const void* y_raw = raw(use.raw[2], j.y, p.y_raw);
    auto source = [&](const void* data, const std::optional<View5>& v) {
      Source s{data, SrcKind::kF32};
      if (data) src_kind_of(v->dtype, j.round, &s.kind);
      return s;
    };
    const T* bias = fwd || bwd_data ? input(j.bias, p.bias, Round::kNone) : nullptr;
    auto ops = [&](Primitive prim, T* out) {
      const Choice& c = *p.choice[static_cast<int>(prim)];
      Operands<T> o;
      o.x = x, o.w = w, o.y = y, o.out = out;
      if (!reads_raw(p, c)) return o;
      o.x = o.w = o.y = nullptr;
      if (c.bf16) {
        o.x16 = static_cast<const uint16_t*>(x_raw), o.w16 = static_cast<const uint16_t*>(w_raw);
        o.y16 = static_cast<const uint16_t*>(y_raw);
      } else {
        o.xsrc = source(x_raw, j.x), o.wsrc = source(w_raw, j.w), o.ysrc = source(y_raw, j.y);
      }
      return o;
    };

    // Outputs: computed into their own memory or the workspace, then unpacked if needed.
    auto finish = [&](const std::optional<View5>& v, uint64_t off, T* buf) {
      if (buf && off != kNotInWorkspace) unpack(buf, *v);
    };
    // forward / backward_data in runs of p.chunk samples: in = x / dy, out = y / dx.
    auto per_sample = [&](Primitive prim, const std::optional<View5>& out_view, uint64_t off,
                          int64_t C_out, int64_t S_out, int64_t C_in, int64_t S_in) {
      T* out = buffer<T>(out_view, off, ws);
      if (!out) return finish(out_view, off, out);
      const int64_t chunk = p.chunk[static_cast<int>(prim)];
      if (chunk == 0) {
        run_primitive<T>(api, p, prim, ops(prim, out), ws);
        if (bias) add_channel_bias(out, bias, g.N, C_out, S_out);
        return finish(out_view, off, out);
      }
      double ms = 0;  // the runs' time (without the unpacks, like an unchunked run)
      for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
        const int64_t cnt = std::min(chunk, g.N - n0), in_off = n0 * C_in * S_in;
        Operands<T> o = ops(prim, out);
        // Only the per-sample input moves: x for forward, dy for backward_data.
        const bool fw = prim == Primitive::kForward;
        if (o.x && fw) o.x += in_off;
        if (o.y && !fw) o.y += in_off;
        if (o.x16 && fw) o.x16 += in_off;
        if (o.y16 && !fw) o.y16 += in_off;
        if (fw && o.xsrc.data) o.xsrc = o.xsrc.at(in_off);
        if (!fw && o.ysrc.data) o.ysrc = o.ysrc.at(in_off);
        ms += run_primitive<T>(api, p, prim, o, ws, false);
        if (bias) add_channel_bias(out, bias, cnt, C_out, S_out);
        View5 part = *out_view;
        part.offset += n0 * part.strides[0];
        part.dims[0] = cnt;
        unpack(out, part);
      }
      if (verbose()) print_exec(api, prim, p.choice[static_cast<int>(prim)]->algo->name, ms);
    };
    if (fwd)
      per_sample(Primitive::kForward, j.out_y, p.out_y, g.C_out, g.out_size(), g.C_in, g.in_size());
    T* ox = bwd_data && p.chunk[1] == 0 && !p.dx16 ? buffer<T>(j.out_x, p.out_x, ws) : nullptr;
    T* ow = bwd_weight ? buffer<T>(j.out_w, p.out_w, ws) : nullptr;
    T* ob = j.out_bias ? buffer<T>(j.out_bias, p.out_bias, ws) : nullptr;
    bool fused = false, fused_bias = false;
    if constexpr (std::is_same_v<T, float>) {
      // Both gradients of a one-channel-per-group conv: one fused pass over dy (depthwise.h),
      // on the inputs as stored (depthwise_direct reads sources), dx stored into its view, and
      // gradBias summed from the dy planes it reads where they are exact.
      fused = ox && ow && fuses_depthwise(p);
      if (fused) {
        float* scratch =
            p.scratch != kNotInWorkspace ? reinterpret_cast<float*>(ws + p.scratch) : nullptr;
        const Source dy = source(y_raw, j.y);
        float* db =
            ob && j.bias_sum_of == ConvJob::BiasOf::kY && depthwise_sums_bias(dy) ? ob : nullptr;
        fused_bias = db != nullptr;
        const auto t0 = std::chrono::steady_clock::now();
        depthwise_backward(g, {source(x_raw, j.x), dy, source(w_raw, j.w), &*j.out_x, ow, db,
                               scratch, p.problem.slots});
        if (verbose()) print_exec(api, Primitive::kBackwardData, "depthwise_direct", ms_since(t0));
      }
    }
    if (bwd_data && p.dx16) {
      Operands<T> o = ops(Primitive::kBackwardData, nullptr);
      o.out16 = reinterpret_cast<uint16_t*>(j.out_x->origin());
      run_primitive<T>(api, p, Primitive::kBackwardData, o, ws);
    } else if (bwd_data && !fused) {
      per_sample(Primitive::kBackwardData, j.out_x, p.out_x, g.C_in, g.in_size(), g.C_out,
                 g.out_size());
    }
    if (ow && !fused)
      run_primitive<T>(api, p, Primitive::kBackwardWeight, ops(Primitive::kBackwardWeight, ow), ws);
    if (bwd_weight) finish(j.out_w, p.out_w, ow);
    if (j.out_bias) {
      if (ob && !fused_bias) channel_sum(*(j.bias_sum_of == ConvJob::BiasOf::kX ? j.x : j.y), ob);
      finish(j.out_bias, p.out_bias, ob);
    }
  });
}

}  // namespace

// Threads for one convolution. Below ~2^21 multiply-adds per pass the whole job takes tens of
// microseconds, less than waking a second thread and handing it work; with several processes
// sharing the cores (ctest -j, data-parallel jobs) such tiny jobs spent far more time spinning and
// hopping threads than computing (measured: 14 us/call serial vs 60-550 us/call with 2 threads on
// a loaded machine). A one-slot arena runs every task on the calling thread.
//
// Work is split for `slots` threads. With ACL_OPT_DETERMINISTIC (aclrtCtxSetSysParamOpt) the
// split is made for the machine's hardware threads whatever the caller's thread count, so the
// reduction order, and every bit of the result, is the same for any number of threads; the
// arena then runs at most that many (fewer when the caller's arena is smaller).
struct Threads {
  int slots = 1;  // threads the blocking is planned for
  int arena = 1;  // concurrency of the task arena that runs it (<= slots)
};
static Threads conv_threads(const ConvGeometry& g) {
  constexpr double kParallelMinMacs = double(1 << 21);
  const double macs = double(g.N) * double(g.C_out) * double(g.out_size()) * double(g.col_rows());
  if (macs < kParallelMinMacs) return {};
  const int available = tbb::this_task_arena::max_concurrency();
  if (!deterministic_requested()) return {available, available};
  const int fixed = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return {fixed, std::min(available, fixed)};
}

aclOpExecutor* make_executor(const char* api, ConvJob job, uint64_t* workspace_size) {
  const ConvGeometry& g = job.g;
  check_gemm_dim("input spatial size", g.in_size());
  check_gemm_dim("output spatial size", g.out_size());
  check_gemm_dim("input channels per group x kernel size", g.col_rows());
  check_gemm_dim("output channels per group", g.cout_g());
  init_blas_threads();

  auto plan = std::make_shared<Plan>();
  plan->job = std::move(job);
  if (plan->job.use_double) plan->job.round = Round::kNone;  // double is always exact
  const Threads threads = conv_threads(plan->job.g);
  plan->arena = std::make_shared<tbb::task_arena>(threads.arena);
  plan->problem.g = plan->job.g;
  plan->problem.fp64 = plan->job.use_double;
  plan->problem.slots = threads.slots;
  plan->problem.isa = gemm::isa();
  // bf16 inputs throughout: the bf16 kernels may read them as they are (HF32 rounding leaves bf16
  // values unchanged; fp16 rounding does not).
  const ConvJob& jb = plan->job;
  auto is_bf16 = [](const std::optional<View5>& v) { return !v || v->dtype == ACL_BF16; };
  plan->problem.bf16 = !jb.use_double && jb.round != Round::kFp16 && bf16_dot_kernels() &&
                       is_bf16(jb.x) && is_bf16(jb.w) && is_bf16(jb.y);
  auto as_is = [&](const std::optional<View5>& v) {
    SrcKind kind = SrcKind::kF32;
    return !v || (src_kind_of(v->dtype, jb.round, &kind) && kind == SrcKind::kF32);
  };
  plan->problem.converts = !jb.use_double && !(as_is(jb.x) && as_is(jb.w) && as_is(jb.y));
  if (plan->job.use_double) {
    plan_workspace<double>(*plan);
  } else {
    plan_workspace<float>(*plan);
  }
  if (verbose()) print_plan(api, *plan);

  auto executor = std::make_unique<aclOpExecutor>();
  executor->api = api;
  executor->workspace_bytes = plan->bytes;
  std::shared_ptr<const Plan> shared = std::move(plan);
  executor->run = [shared, api](void* workspace) {
    char* ws = static_cast<char*>(workspace);
    if (shared->job.use_double) {
      execute<double>(api, *shared, ws);
    } else {
      execute<float>(api, *shared, ws);
    }
  };
  *workspace_size = executor->workspace_bytes;
  return register_executor(executor.release());
}

}  // namespace aclnn_cpu::conv
