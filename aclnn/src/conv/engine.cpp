#include "conv/engine.h"

#include <memory>
#include <type_traits>

#include <tbb/task_arena.h>

#include "conv/depthwise.h"
#include "conv/kernels.h"
#include "conv/tbc_gemm.h"
#include "gemm/sgemm.h"
#include "error.h"
#include "meta.h"

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
  KernelPlan kernels;
  std::shared_ptr<tbb::task_arena> arena;  // concurrency == kernels.slots
  // Workspace offsets of the dense compute copies / results / scratch.
  uint64_t x = kNotInWorkspace, w = kNotInWorkspace, y = kNotInWorkspace, bias = kNotInWorkspace;
  uint64_t out_y = kNotInWorkspace, out_x = kNotInWorkspace, out_w = kNotInWorkspace;
  uint64_t out_bias = kNotInWorkspace, col = kNotInWorkspace, partials = kNotInWorkspace;
  uint64_t pack = kNotInWorkspace, wflip = kNotInWorkspace, wpack = kNotInWorkspace;
  bool tbc = false;  // time-major 1-d fp32: per-tap GEMMs on the caller's buffers (tbc_gemm.h)
  uint64_t bytes = 0;
};

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

// Smallest TBC problem (multiply-adds of one pass) worth the GEMM packing workspace; below it
// OpenBLAS runs the taps without any workspace.
constexpr double kTbcOwnGemmMinMacs = double(1 << 22);

// The TBC path needs only GEMM packing scratch (and the gradBias buffer if not in place).
void plan_tbc(Plan& p) {
  const ConvJob& j = p.job;
  p.tbc = true;
  p.kernels = KernelPlan{};
  p.kernels.slots = p.arena->max_concurrency();
  const ConvGeometry& g = j.g;
  const double macs = static_cast<double>(g.N) * g.C_out * g.out[2] * g.C_in * g.k[2];
  if (macs >= kTbcOwnGemmMinMacs) p.kernels.pack_elems = gemm::pack_elems();
  Layout layout;
  p.out_bias = reserve<float>(layout, true, j.out_bias, Round::kNone);
  if (p.kernels.pack_elems > 0)
    p.pack = layout.add(static_cast<unsigned __int128>(p.kernels.pack_elems) * p.kernels.slots *
                        sizeof(float));
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
}

template <typename T>
void plan_workspace(Plan& p) {
  const ConvJob& j = p.job;
  if (std::is_same_v<T, float> && tbc_applicable(j)) return plan_tbc(p);
  const bool fwd = j.out_y.has_value(), bwd_data = j.out_x.has_value(),
             bwd_weight = j.out_w.has_value();
  p.kernels = plan_kernels(j.g, p.arena->max_concurrency(), sizeof(T),
                           KernelUse{fwd, bwd_data, bwd_weight});
  Layout layout;
  p.x = reserve<T>(layout, fwd || bwd_weight, j.x, j.round);
  p.w = reserve<T>(layout, fwd || bwd_data, j.w, j.round);
  p.y = reserve<T>(layout, bwd_data || bwd_weight, j.y, j.round);
  p.bias = reserve<T>(layout, fwd || bwd_data, j.bias, Round::kNone);
  p.out_y = reserve<T>(layout, true, j.out_y, Round::kNone);
  p.out_x = reserve<T>(layout, true, j.out_x, Round::kNone);
  p.out_w = reserve<T>(layout, true, j.out_w, Round::kNone);
  p.out_bias = reserve<T>(layout, true, j.out_bias, Round::kNone);
  const KernelPlan& k = p.kernels;
  if ((fwd || bwd_data || bwd_weight) && k.col_elems > 0)
    p.col = layout.add(static_cast<unsigned __int128>(k.col_elems) * k.slots * sizeof(T));
  if (bwd_weight && k.bw_ranges > 1)
    p.partials =
        layout.add(static_cast<unsigned __int128>(k.partial_elems) * (k.bw_ranges - 1) * sizeof(T));
  if (bwd_data && k.wflip_elems > 0)
    p.wflip = layout.add(static_cast<unsigned __int128>(k.wflip_elems) * sizeof(T));
  if (k.wpack_elems > 0)
    p.wpack = layout.add(static_cast<unsigned __int128>(k.wpack_elems) * sizeof(T));
  if ((fwd || bwd_data || bwd_weight) && k.pack_elems > 0)
    p.pack = layout.add(static_cast<unsigned __int128>(k.pack_elems) * k.slots * sizeof(T));
  // + kAlign of slack so a workspace that is not 64-byte aligned can be aligned in place.
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
}

// The dense compute buffer of a view: its own memory when usable in place, else the workspace.
template <typename T>
T* buffer(const std::optional<View5>& v, uint64_t off, char* ws) {
  if (!v || v->numel() == 0) return nullptr;
  if (off == kNotInWorkspace) return reinterpret_cast<T*>(v->origin());
  return reinterpret_cast<T*>(ws + off);
}

// Phase 2. Allocates nothing: every buffer is the caller's tensor memory or the workspace.
template <typename T>
void execute(const Plan& p, char* ws) {
  if (ws) ws += (kAlign - reinterpret_cast<uintptr_t>(ws) % kAlign) % kAlign;
  const ConvJob& j = p.job;
  const ConvGeometry& g = j.g;
  p.arena->execute([&] {
    if (p.tbc) {  // operands used in place; only the packing scratch is in the workspace
      tbc_run(j, p.kernels.slots, p.kernels.pack_elems,
              p.pack != kNotInWorkspace ? reinterpret_cast<float*>(ws + p.pack) : nullptr);
      if (j.out_bias) {
        T* out = buffer<T>(j.out_bias, p.out_bias, ws);
        if (out) channel_sum(*(j.bias_sum_of == ConvJob::BiasOf::kX ? j.x : j.y), out);
        if (out && p.out_bias != kNotInWorkspace) unpack(out, *j.out_bias);
      }
      return;
    }
    // Inputs: pack (convert, gather strides, round Cube operands) where not usable in place.
    auto input = [&](const std::optional<View5>& v, uint64_t off, Round round) -> const T* {
      T* buf = buffer<T>(v, off, ws);
      if (buf && off != kNotInWorkspace) pack(*v, buf, round);
      return buf;
    };
    const bool fwd = j.out_y.has_value(), bwd_data = j.out_x.has_value(),
               bwd_weight = j.out_w.has_value();
    const T* x = fwd || bwd_weight ? input(j.x, p.x, j.round) : nullptr;
    const T* w = fwd || bwd_data ? input(j.w, p.w, j.round) : nullptr;
    const T* y = bwd_data || bwd_weight ? input(j.y, p.y, j.round) : nullptr;
    const T* bias = fwd || bwd_data ? input(j.bias, p.bias, Round::kNone) : nullptr;
    Scratch<T> scratch;
    if (p.col != kNotInWorkspace) scratch.col = reinterpret_cast<T*>(ws + p.col);
    if (p.partials != kNotInWorkspace) scratch.partials = reinterpret_cast<T*>(ws + p.partials);
    if (p.pack != kNotInWorkspace) scratch.pack = reinterpret_cast<T*>(ws + p.pack);
    if (p.wflip != kNotInWorkspace) scratch.wflip = reinterpret_cast<T*>(ws + p.wflip);
    if (p.wpack != kNotInWorkspace) scratch.wpack = reinterpret_cast<T*>(ws + p.wpack);

    // Outputs: computed into their own memory or the workspace, then unpacked if needed.
    auto finish = [&](const std::optional<View5>& v, uint64_t off, T* buf) {
      if (buf && off != kNotInWorkspace) unpack(buf, *v);
    };
    if (fwd) {
      T* out = buffer<T>(j.out_y, p.out_y, ws);
      if (out) {
        forward(g, p.kernels, x, w, out, scratch);
        if (bias) add_channel_bias(out, bias, g.N, g.C_out, g.out_size());
      }
      finish(j.out_y, p.out_y, out);
    }
    bool fused_done = false;
    if constexpr (std::is_same_v<T, float>) {
      // Depthwise with both gradients: one fused pass over dy (depthwise.h).
      T* ox = bwd_data ? buffer<T>(j.out_x, p.out_x, ws) : nullptr;
      T* ow = bwd_weight ? buffer<T>(j.out_w, p.out_w, ws) : nullptr;
      if (p.kernels.depthwise && ox && ow && !bias) {
        depthwise_backward(g, x, y, w, ox, ow);
        finish(j.out_x, p.out_x, ox);
        finish(j.out_w, p.out_w, ow);
        fused_done = true;
      }
    }
    if (bwd_data && !fused_done) {
      T* out = buffer<T>(j.out_x, p.out_x, ws);
      if (out) {
        backward_data(g, p.kernels, y, w, out, scratch);
        if (bias) add_channel_bias(out, bias, g.N, g.C_in, g.in_size());
      }
      finish(j.out_x, p.out_x, out);
    }
    if (bwd_weight && !fused_done) {
      T* out = buffer<T>(j.out_w, p.out_w, ws);
      if (out) backward_weight(g, p.kernels, x, y, out, scratch);
      finish(j.out_w, p.out_w, out);
    }
    if (j.out_bias) {
      T* out = buffer<T>(j.out_bias, p.out_bias, ws);
      if (out) channel_sum(*(j.bias_sum_of == ConvJob::BiasOf::kX ? j.x : j.y), out);
      finish(j.out_bias, p.out_bias, out);
    }
  });
}

}  // namespace

// Threads for one convolution. Below ~2^21 multiply-adds per pass the whole job takes tens of
// microseconds, less than waking a second thread and handing it work; with several processes
// sharing the cores (ctest -j, data-parallel jobs) such tiny jobs spent far more time spinning and
// hopping threads than computing (measured: 14 us/call serial vs 60-550 us/call with 2 threads on
// a loaded machine). A one-slot arena runs every task on the calling thread.
static int arena_concurrency(const ConvGeometry& g) {
  constexpr double kParallelMinMacs = double(1 << 21);
  const double macs = double(g.N) * double(g.C_out) * double(g.out_size()) * double(g.col_rows());
  return macs < kParallelMinMacs ? 1 : tbb::this_task_arena::max_concurrency();
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
  plan->arena = std::make_shared<tbb::task_arena>(arena_concurrency(plan->job.g));
  if (plan->job.use_double) {
    plan_workspace<double>(*plan);
  } else {
    plan_workspace<float>(*plan);
  }

  auto executor = std::make_unique<aclOpExecutor>();
  executor->api = api;
  executor->workspace_bytes = plan->bytes;
  std::shared_ptr<const Plan> shared = std::move(plan);
  executor->run = [shared](void* workspace) {
    char* ws = static_cast<char*>(workspace);
    if (shared->job.use_double) {
      execute<double>(*shared, ws);
    } else {
      execute<float>(*shared, ws);
    }
  };
  *workspace_size = executor->workspace_bytes;
  return register_executor(executor.release());
}

}  // namespace aclnn_cpu::conv
