// Google Benchmark suite of the performance issue: phase 1 + phase 2 of aclnnConvolutionBackward
// (all three outputs) or aclnnConvTbcBackward, inputs already in memory, workspace allocated once
// outside the timed loop. Every case in fp32 ("<case>"), bf16 ("<case>/bf16"), fp16
// ("<case>/f16") and fp32 with cubeMathType USE_FP16 ("<case>/usefp16"). Counters: GFLOPS = (2 *
// MACs(grad_input) + 2 * MACs(grad_weight)) / time, and the workspace bytes phase 1 asked for.
//
// Threads: every case runs inside a oneTBB task_arena of `--threads=N` (default 2; phase 1 sizes
// its executor's arena from the calling arena), so `--threads=1` gives the scaling baseline under
// the same benchmark names. Other flags go to Google Benchmark (e.g. --benchmark_format=json).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "cases.h"

namespace {

using aclbench::Case;

int g_threads = 2;

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A dense tensor (fp32, fp16 or bf16) with its own (host) memory.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // fp32 values, or 16-bit ones two per float
  aclTensor* t = nullptr;

  Tensor(std::vector<int64_t> s, aclFormat fmt, uint64_t seed, aclDataType dtype = ACL_FLOAT)
      : shape(std::move(s)) {
    const size_t n = static_cast<size_t>(numel(shape));
    data.resize(dtype == ACL_FLOAT ? n : (n + 1) / 2);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    uint16_t* half = reinterpret_cast<uint16_t*>(data.data());
    for (size_t i = 0; i < n; ++i) {
      const float v = u(rng);
      if (dtype == ACL_FLOAT) {
        data[i] = v;
      } else {  // bf16: the top half; fp16: a value in [-1, 1) built from its bits
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        half[i] = dtype == ACL_BF16
                      ? static_cast<uint16_t>(bits >> 16)
                      : static_cast<uint16_t>((bits >> 31) << 15 | 0x3800 | (bits >> 13 & 0x3FF));
      }
    }
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    t = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, fmt, shape.data(),
                        shape.size(), data.data());
  }
  ~Tensor() { aclDestroyTensor(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
};

aclFormat format_of(size_t rank) {
  return rank == 3 ? ACL_FORMAT_NCL : rank == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_NCDHW;
}

// Shape of the forward output (= gradOutput).
std::vector<int64_t> output_shape(const Case& c) {
  if (c.tbc) return {c.x[0] + 2 * c.pad[0] + 1 - c.w[0], c.x[1], c.w[2]};
  std::vector<int64_t> y = {c.x[0], c.transposed ? c.w[1] * c.groups : c.w[0]};
  for (size_t d = 0; d + 2 < c.x.size(); ++d) {
    const int64_t k = c.w[d + 2], in = c.x[d + 2];
    y.push_back(c.transposed
                    ? (in - 1) * c.stride[d] - 2 * c.pad[d] + c.dil[d] * (k - 1) + c.out_pad[d] + 1
                    : (in + 2 * c.pad[d] - c.dil[d] * (k - 1) - 1) / c.stride[d] + 1);
  }
  return y;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void check_ok(aclnnStatus s, const char* what) {
  if (s != ACLNN_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(s) + " " +
                             aclGetRecentErrMsg());
}

// The variants of a case: every tensor's dtype, and cubeMathType (2 = USE_FP16 on fp32).
struct Variant {
  const char* suffix;  // appended to the case name ("" for fp32)
  aclDataType dtype;
  int8_t cube;
};
constexpr Variant kVariants[] = {{"", ACL_FLOAT, 0},
                                 {"/bf16", ACL_BF16, 0},
                                 {"/f16", ACL_FLOAT16, 0},
                                 {"/usefp16", ACL_FLOAT, 2}};

void run_case(benchmark::State& state, const Case& c, const Variant& v) {
  const std::vector<int64_t> y_shape = output_shape(c);
  const aclFormat fmt = c.tbc ? ACL_FORMAT_ND : format_of(c.x.size());
  const aclDataType dt = v.dtype;
  Tensor x(c.x, fmt, 1, dt), w(c.w, c.tbc ? ACL_FORMAT_ND : fmt, 2, dt), gy(y_shape, fmt, 3, dt);
  Tensor gx(c.x, fmt, 4, dt), gw(c.w, c.tbc ? ACL_FORMAT_ND : fmt, 5, dt);
  const int64_t c_out = c.tbc ? c.w[2] : y_shape[1];
  Tensor bias({c_out}, ACL_FORMAT_ND, 6, dt), gb({c_out}, ACL_FORMAT_ND, 7, dt);
  aclIntArray* stride = aclCreateIntArray(c.stride.data(), c.stride.size());
  aclIntArray* pad = aclCreateIntArray(c.pad.data(), c.pad.size());
  aclIntArray* dil = aclCreateIntArray(c.dil.data(), c.dil.size());
  aclIntArray* out_pad = aclCreateIntArray(c.out_pad.data(), c.out_pad.size());
  aclIntArray* bias_sizes = aclCreateIntArray(&c_out, 1);
  const bool mask_v[3] = {true, true, true};
  aclBoolArray* mask = aclCreateBoolArray(mask_v, 3);

  tbb::task_arena arena(g_threads);
  // Phase 1 (plans, sizes the workspace) -> executor; the workspace is sized by the first call.
  auto phase1 = [&](uint64_t* ws_size) {
    aclOpExecutor* ex = nullptr;
    if (c.tbc) {
      check_ok(aclnnConvTbcBackwardGetWorkspaceSize(gy.t, x.t, w.t, bias.t, c.pad[0], v.cube, gx.t,
                                                    gw.t, gb.t, ws_size, &ex),
               "aclnnConvTbcBackwardGetWorkspaceSize");
    } else {
      check_ok(aclnnConvolutionBackwardGetWorkspaceSize(
                   gy.t, x.t, w.t, bias_sizes, stride, pad, dil, c.transposed, out_pad,
                   static_cast<int>(c.groups), mask, v.cube, gx.t, gw.t, gb.t, ws_size, &ex),
               "aclnnConvolutionBackwardGetWorkspaceSize");
    }
    return ex;
  };
  auto phase2 = [&](void* ws, uint64_t size, aclOpExecutor* ex) {
    check_ok(c.tbc ? aclnnConvTbcBackward(ws, size, ex, nullptr)
                   : aclnnConvolutionBackward(ws, size, ex, nullptr),
             "phase 2");
  };
  uint64_t ws_size = 0;
  std::vector<char> ws_first;
  arena.execute([&] {
    aclOpExecutor* ex = phase1(&ws_size);
    ws_first.assign(ws_size, 0);  // touch every page once, outside the loop
    phase2(ws_size ? ws_first.data() : nullptr, ws_size, ex);
  });
  // Wall time of the loop, measured here: the work runs on TBB threads, so Google Benchmark's
  // CPU time (of this thread) is not the right denominator, and UseRealTime() would rename the
  // benchmarks ("name/real_time"); the names must stay exactly the case names.
  // Minor page faults of the whole process during the loop (phase 2 must allocate nothing; a
  // fresh allocation per call would show up here as faults on every iteration).
  const long faults_before = minor_faults();
  const auto start = std::chrono::steady_clock::now();
  try {
    for (auto _ : state) {
      arena.execute([&] {
        uint64_t size = 0;
        aclOpExecutor* ex = phase1(&size);
        phase2(size ? ws_first.data() : nullptr, size, ex);
      });
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flops = 4.0 * static_cast<double>(aclbench::macs_per_gradient(c, y_shape));
  state.counters["GFLOPS"] = flops * 1e-9 * static_cast<double>(state.iterations()) / wall;
  state.counters["page_faults_per_iter"] =
      static_cast<double>(minor_faults() - faults_before) / static_cast<double>(state.iterations());
  state.counters["wall_ms"] = wall * 1e3 / static_cast<double>(state.iterations());
  state.counters["workspace_bytes"] = static_cast<double>(ws_size);
  int64_t largest = 0;
  const int64_t elem = dt == ACL_FLOAT ? 4 : 2;
  for (const auto* s : {&c.x, &c.w, &y_shape}) largest = std::max(largest, numel(*s) * elem);
  state.counters["workspace_over_largest"] = static_cast<double>(ws_size) / largest;
  state.counters["threads"] = g_threads;
  for (aclIntArray* a : {stride, pad, dil, out_pad, bias_sizes}) aclDestroyIntArray(a);
  aclDestroyBoolArray(mask);
}

}  // namespace

int main(int argc, char** argv) {
  // Strip our own --threads=N before Google Benchmark sees the flags.
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  aclInit(nullptr);
  aclrtSetDevice(0);
  // fp32 for every case; bf16, fp16 and USE_FP16 variants as "<case>/bf16" etc.
  for (const Variant& v : kVariants)
    for (const Case& c : aclbench::cases()) {
      benchmark::RegisterBenchmark((c.name + v.suffix).c_str(), [&c, &v](benchmark::State& s) {
        run_case(s, c, v);
      })->Unit(benchmark::kMillisecond);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
