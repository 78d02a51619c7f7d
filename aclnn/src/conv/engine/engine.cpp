#include "conv/engine/engine.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#include <tbb/task_arena.h>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithm.h"
#include "conv/engine/engine_plan.h"
#include "conv/engine/job_algorithm.h"
#include "conv/kernels/grid/direct_grid.h"
#include "error.h"
#include "gemm/amx_gemm.h"
#include "gemm/sgemm.h"
#include "meta.h"
#include "runtime_options.h"

namespace aclnn_cpu::conv {
namespace {

void check_gemm_dim(const char* what, int64_t v) {
  check(v <= kMaxGemmDim, ACLNN_ERR_PARAM_INVALID,
        "the problem is too large for this CPU implementation: ", what, " = ", v, " exceeds ",
        kMaxGemmDim, " (32-bit BLAS dimension)");
}

// The product a * b * c of a geometry's extents, refused where it overflows int64. No tensor's
// element count bounds it in an empty problem: x [0, C, 0, H, W] padded in D has an output of
// D_out x H x W per sample, beyond int64 for H * W near 2^62, though every tensor is empty.
int64_t checked_product(const char* what, int64_t a, int64_t b, int64_t c) {
  int64_t v = 0;
  const bool overflow = __builtin_mul_overflow(a, b, &v) || __builtin_mul_overflow(v, c, &v);
  check(!overflow, ACLNN_ERR_PARAM_INVALID, "the problem is too large: its ", what, " ", a, " x ",
        b, " x ", c, " overflows int64");
  return v;
}

// Every product ConvGeometry forms (in_size, out_size, k_size, col_rows) fits int64 and the 32-bit
// BLAS dimensions, checked before any of them is used.
void check_geometry(const ConvGeometry& g) {
  const auto& in = g.in;
  const auto& out = g.out;
  const auto& k = g.k;
  check_gemm_dim("input spatial size", checked_product("input spatial size", in[0], in[1], in[2]));
  check_gemm_dim("output spatial size",
                 checked_product("output spatial size", out[0], out[1], out[2]));
  const int64_t taps = checked_product("kernel size", k[0], k[1], k[2]);
  check_gemm_dim("input channels per group x kernel size",
                 checked_product("input channels per group x kernel size", g.cin_g(), taps, 1));
  check_gemm_dim("output channels per group", g.cout_g());
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

// Phase 2 of a plan whose JobAlgorithm computes the whole call (scope kAll: the time-major forms
// of ConvTbc): the operands are read in place, only its scratch (and gradBias, if not in place) is
// in the workspace. Inside the executor's arena. fp32 only (its plan refuses fp64).
void execute_whole_job(const char* api, const Plan& p, char* ws) {
  const ConvJob& j = p.job;
  const JobChoice& c = *p.combined;
  JobOperands o;
  o.scratch = p.scratch != kNotInWorkspace ? ws + p.scratch : nullptr;
  float* bias_out = j.out_bias ? buffer<float>(j.out_bias, p.out_bias, ws) : nullptr;
  o.bias = bias_out;
  bool bias_summed = false;  // by the weight tasks, as they read dy
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!requested(j, i)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    bias_summed |= c.algo->run(j, p.problem, c.fit, static_cast<Primitive>(i), o);
    if (verbose()) print_exec(api, static_cast<Primitive>(i), c.algo->name, ms_since(t0));
  }
  if (bias_out && !bias_summed)
    channel_sum(*(j.bias_sum_of == ConvJob::BiasOf::kX ? j.x : j.y), bias_out);
  if (bias_out && p.out_bias != kNotInWorkspace) unpack(bias_out, *j.out_bias);
}

// Phase 2 of a regular plan, inside the executor's arena. Allocates nothing: every buffer is the
// caller's tensor memory or the workspace. The inputs are packed (converted, gathered from
// strides, Cube operands rounded) where not usable in place, then the requested primitives run
// one after another, their outputs unpacked where computed in the workspace.
template <typename T>
class Execution {
 public:
  Execution(const char* api, const Plan& p, char* ws) : api_(api), p_(p), j_(p.job), ws_(ws) {}

  void run() {
    pack_inputs();
    const ConvGeometry& g = j_.g;
    if (j_.out_y)
      per_sample(Primitive::kForward, j_.out_y, p_.out_y, g.C_out, g.out_size(), g.C_in,
                 g.in_size());
    T* ow = j_.out_w ? buffer<T>(j_.out_w, p_.out_w, ws_) : nullptr;
    T* ob = j_.out_bias ? buffer<T>(j_.out_bias, p_.out_bias, ws_) : nullptr;
    bool fused = false, fused_bias = false;
    if constexpr (std::is_same_v<T, float>) fused = fused_backward(ow, ob, &fused_bias);
    if (j_.out_x && !fused)
      per_sample(Primitive::kBackwardData, j_.out_x, p_.out_x, g.C_in, g.in_size(), g.C_out,
                 g.out_size());
    if (ow && !fused) {
      Operands<T> o = ops(Primitive::kBackwardWeight, ow);
      if (ob && weight_sums_bias(p_)) o.bias = ob, fused_bias = true;  // summed as dy is read
      run_primitive<T>(api_, p_, Primitive::kBackwardWeight, o, ws_);
    }
    if (j_.out_w) finish(j_.out_w, p_.out_w, ow);
    if (j_.out_bias) {
      if (ob && !fused_bias)
        channel_sum(*(j_.bias_sum_of == ConvJob::BiasOf::kX ? j_.x : j_.y), ob);
      finish(j_.out_bias, p_.out_bias, ob);
    }
  }

 private:
  // T copies where a chosen algorithm computes in T; as stored (the view itself when dense, else
  // its elements copied densely) for the bf16 kernels and the algorithms that read sources.
  void pack_inputs() {
    auto input = [&](const std::optional<View5>& v, uint64_t off, Round round) -> const T* {
      T* buf = buffer<T>(v, off, ws_);
      if (buf && off != kNotInWorkspace) pack(*v, buf, round);
      return buf;
    };
    auto raw = [&](bool needed, const std::optional<View5>& v, uint64_t off) -> const void* {
      if (!needed || !v || v->numel() == 0) return nullptr;
      if (off == kNotInWorkspace) return v->origin();
      pack_raw(*v, ws_ + off);
      return ws_ + off;
    };
    const InputUse use = input_use(p_);
    x_ = use.t[0] ? input(j_.x, p_.x, j_.round) : nullptr;
    w_ = use.t[1] ? input(j_.w, p_.w, j_.round) : nullptr;
    y_ = use.t[2] ? input(j_.y, p_.y, j_.round) : nullptr;
    x_raw_ = raw(use.raw[0], j_.x, p_.x_raw);
    w_raw_ = raw(use.raw[1], j_.w, p_.w_raw);
    y_raw_ = raw(use.raw[2], j_.y, p_.y_raw);
    bias_ = j_.out_y || j_.out_x ? input(j_.bias, p_.bias, Round::kNone) : nullptr;
  }

  Source source(const void* data, const std::optional<View5>& v) const {
    Source s{data, SrcKind::kF32};
    if (data) src_kind_of(v->dtype, j_.round, &s.kind);
    return s;
  }

  // The operands of `prim` in the form its chosen algorithm reads.
  Operands<T> ops(Primitive prim, T* out) const {
    const Choice& c = *p_.choice[static_cast<int>(prim)];
    Operands<T> o;
    o.x = x_, o.w = w_, o.y = y_, o.out = out;
    if (c.b.adds_bias) o.add_bias = bias_;
    if (!reads_raw(p_, c)) return o;
    o.x = o.w = o.y = nullptr;
    if (c.bf16) {
      o.x16 = static_cast<const uint16_t*>(x_raw_), o.w16 = static_cast<const uint16_t*>(w_raw_);
      o.y16 = static_cast<const uint16_t*>(y_raw_);
    } else {
      o.xsrc = source(x_raw_, j_.x), o.wsrc = source(w_raw_, j_.w);
      o.ysrc = source(y_raw_, j_.y);
    }
    return o;
  }

  // An output computed in the workspace goes to its view.
  void finish(const std::optional<View5>& v, uint64_t off, T* buf) const {
    if (buf && off != kNotInWorkspace) unpack(buf, *v);
  }

  // forward / backward_data in runs of p.chunk samples: in = x / dy, out = y / dx; or, where
  // the plan has its kernel store the output (Plan::out16), one run into the dense 16-bit view.
  void per_sample(Primitive prim, const std::optional<View5>& out_view, uint64_t off, int64_t C_out,
                  int64_t S_out, int64_t C_in, int64_t S_in) const {
    if (p_.out16[static_cast<int>(prim)]) {
      Operands<T> o = ops(prim, nullptr);
      o.out16 = reinterpret_cast<uint16_t*>(out_view->origin());
      o.out16_fp16 = out_view->dtype == ACL_FLOAT16;
      run_primitive<T>(api_, p_, prim, o, ws_);
      return;
    }
    const int64_t N = j_.g.N;
    T* out = buffer<T>(out_view, off, ws_);
    if (!out) return finish(out_view, off, out);
    const int64_t chunk = p_.chunk[static_cast<int>(prim)];
    const bool add_bias = bias_ && !p_.choice[static_cast<int>(prim)]->b.adds_bias;
    if (chunk == 0) {
      run_primitive<T>(api_, p_, prim, ops(prim, out), ws_);
      if (add_bias) add_channel_bias(out, bias_, N, C_out, S_out);
      return finish(out_view, off, out);
    }
    double ms = 0;  // the runs' time (without the unpacks, like an unchunked run)
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t cnt = std::min(chunk, N - n0), in_off = n0 * C_in * S_in;
      Operands<T> o = ops(prim, out);
      // Only the per-sample input moves: x for forward, dy for backward_data.
      const bool fw = prim == Primitive::kForward;
      if (o.x && fw) o.x += in_off;
      if (o.y && !fw) o.y += in_off;
      if (o.x16 && fw) o.x16 += in_off;
      if (o.y16 && !fw) o.y16 += in_off;
      if (fw && o.xsrc.data) o.xsrc = o.xsrc.at(in_off);
      if (!fw && o.ysrc.data) o.ysrc = o.ysrc.at(in_off);
      ms += run_primitive<T>(api_, p_, prim, o, ws_, false);
      if (add_bias) add_channel_bias(out, bias_, cnt, C_out, S_out);
      View5 part = *out_view;
      part.offset += n0 * part.strides[0];
      part.dims[0] = cnt;
      unpack(out, part);
    }
    if (verbose()) print_exec(api_, prim, p_.choice[static_cast<int>(prim)]->algo->name, ms);
  }

  // Both gradients as one pass (Plan::combined of scope kBackward, e.g. depthwise_fused) on the
  // inputs as stored, dx stored into its view, dw into `ow`, and gradBias (into ob) where the pass
  // sums it (*fused_bias). Returns whether it ran.
  bool fused_backward(float* ow, float* ob, bool* fused_bias) const {
    if (!p_.combined || p_.combined->algo->scope != JobScope::kBackward) return false;
    const JobChoice& c = *p_.combined;
    JobOperands o;
    o.scratch = p_.scratch != kNotInWorkspace ? ws_ + p_.scratch : nullptr;
    o.bias = ob;
    o.x = source(x_raw_, j_.x), o.w = source(w_raw_, j_.w), o.y = source(y_raw_, j_.y);
    o.dw = ow;
    const auto t0 = std::chrono::steady_clock::now();
    *fused_bias = c.algo->run(j_, p_.problem, c.fit, Primitive::kBackwardData, o);
    if (verbose()) print_exec(api_, Primitive::kBackwardData, c.algo->name, ms_since(t0));
    return true;
  }

  const char* api_;
  const Plan& p_;
  const ConvJob& j_;
  char* ws_;
  const T *x_ = nullptr, *w_ = nullptr, *y_ = nullptr, *bias_ = nullptr;
  const void *x_raw_ = nullptr, *w_raw_ = nullptr, *y_raw_ = nullptr;
};

template <typename T>
void execute(const char* api, const Plan& p, char* ws) {
  if (ws) ws += (kAlign - reinterpret_cast<uintptr_t>(ws) % kAlign) % kAlign;
  p.arena->execute([&] {
    if (p.combined && p.combined->algo->scope == JobScope::kAll) {
      if constexpr (std::is_same_v<T, float>) return execute_whole_job(api, p, ws);
    }
    Execution<T>(api, p, ws).run();
  });
}

}  // namespace

// Threads for one convolution. Below ~2^21 multiply-adds per pass the whole job takes tens of
// microseconds, less than waking a second thread and handing it work; with several processes
// sharing the cores (ctest -j, data-parallel jobs) such tiny jobs spent far more time spinning and
// hopping threads than computing (measured: bench/RESULTS.md, design engine.threads). A one-slot
// arena runs every task on the calling thread.
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
  check_geometry(job.g);
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
  plan->problem.bf16_dot = bf16_dot_kernels();
  plan->problem.bf16_amx = gemm::amx_tiles_run();
  plan->problem.bf16 = !jb.use_double && jb.round != Round::kFp16 &&
                       (plan->problem.bf16_dot || plan->problem.bf16_amx) && is_bf16(jb.x) &&
                       is_bf16(jb.w) && is_bf16(jb.y);
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
