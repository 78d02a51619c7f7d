// The bench-only peer: oneDNN's own convolution backward primitives (backward data + backward
// weights with the bias gradient) on the cases of cases.cpp, so our numbers can be read against
// the best CPU implementation on the same machine. Built only when Debian's libdnnl-dev is found;
// nothing else links oneDNN.
//
// Two timings per case and dtype (f32, bf16):
//   <case>/<dt>/prim     the primitives alone, on the layouts they prefer (format_tag::any),
//                        inputs already reordered;
//   <case>/<dt>/reorder  from and to plain NC[D]HW tensors: the reorders of x, w, dy into the
//                        primitives' layouts and of dx, dw back are timed too (what an NCHW API
//                        such as ours or PyTorch's has to pay).
// Transposed cases run deconvolution's backward primitives; ConvTbc runs conv1d on the [T, B, C]
// tensors described with their strides (a [B, C, T] view). GFLOPS as conv_bench.cpp:
// (2 MACs(grad_input) + 2 MACs(grad_weight)) / wall time. --threads=N (default 2) sets the OpenMP
// threads oneDNN runs on (Debian's build uses the OpenMP runtime).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cases.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using aclbench::Case;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

int g_threads = 2;

int64_t numel_of(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

memory::dims dims_of(const std::vector<int64_t>& v) {
  return memory::dims(v.begin(), v.end());
}

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

// Plain (user) memory descriptors of a case: activations NC[D]HW (ConvTbc: [T, B, C] memory seen
// as [B, C, T]), weights [O, I/g, k...] or, transposed, [I, O/g, k...]; groups split out.
struct Plain {
  memory::desc x, w, y, b;
};

tag act_tag(size_t rank) {
  return rank == 3 ? tag::ncw : rank == 4 ? tag::nchw : tag::ncdhw;
}

Plain plain_descs(const Case& c, dt type) {
  Plain p;
  const std::vector<int64_t> y = output_shape(c);
  if (c.tbc) {  // x [T, B, Ci] -> [B, Ci, T]; w [K, Ci, Co] -> [Co, Ci, K]; y [T', B, Co]
    const int64_t T = c.x[0], B = c.x[1], Ci = c.x[2], K = c.w[0], Co = c.w[2], To = y[0];
    p.x = memory::desc({B, Ci, T}, type, memory::dims{Ci, 1, B * Ci});
    p.w = memory::desc({Co, Ci, K}, type, memory::dims{1, Co, Ci * Co});
    p.y = memory::desc({B, Co, To}, type, memory::dims{Co, 1, B * Co});
    p.b = memory::desc({Co}, type, tag::x);
    return p;
  }
  const size_t rank = c.x.size();
  p.x = memory::desc(dims_of(c.x), type, act_tag(rank));
  p.y = memory::desc(dims_of(y), type, act_tag(rank));
  p.b = memory::desc({y[1]}, type, tag::x);
  // PyTorch's weight memory is [c.w[0], c.w[1], k...] row-major: [O, I/g, k] (regular) or
  // [I, O/g, k] (transposed); oneDNN wants dims ([g,] O/g, I/g, k...), given here with the
  // strides of that memory.
  const int64_t g = c.groups, k = numel_of(c.w) / (c.w[0] * c.w[1]);
  const int64_t outer = c.w[0] / g, inner = c.w[1];  // per group: PyTorch's dims 0 and 1
  memory::dims w, st;
  if (g > 1) w.push_back(g), st.push_back(outer * inner * k);
  if (c.transposed) {  // o = inner (stride k), i = outer (stride inner * k)
    w.push_back(inner), st.push_back(k);
    w.push_back(outer), st.push_back(inner * k);
  } else {
    w.push_back(outer), st.push_back(inner * k);
    w.push_back(inner), st.push_back(k);
  }
  int64_t run = k;
  for (size_t d = 2; d < c.w.size(); ++d) {
    run /= c.w[d];
    w.push_back(c.w[d]), st.push_back(run);
  }
  p.w = memory::desc(w, type, st);
  return p;
}

memory::desc any_like(const memory::desc& d) {
  return memory::desc(d.dims(), d.data_type(), tag::any);
}

// The two backward primitives of a case, their memories in the primitives' layouts, and the
// reorders from / to the plain user tensors.
struct Backward {
  dnnl::primitive data, weights;
  std::unordered_map<int, memory> data_args, weight_args;
  std::vector<std::pair<dnnl::reorder, std::pair<memory, memory>>> in_reorders, out_reorders;
};

struct Geometry {
  memory::dims strides, dilates, pad_l, pad_r;
};

Geometry geometry(const Case& c) {
  Geometry g;
  const size_t sp = c.tbc ? 1 : c.x.size() - 2;
  for (size_t d = 0; d < sp; ++d) {
    g.strides.push_back(c.tbc ? 1 : c.stride[d]);
    g.dilates.push_back(c.tbc ? 0 : c.dil[d] - 1);  // oneDNN counts dilation from 0
    g.pad_l.push_back(c.pad[d]);
    // A transposed conv's output padding is extra output on the right: less right padding.
    g.pad_r.push_back(c.pad[d] - (c.transposed ? c.out_pad[d] : 0));
  }
  return g;
}

memory fill(const memory::desc& d, const dnnl::engine& eng, int seed) {
  memory m(d, eng);
  const size_t n = d.get_size();
  auto* p = static_cast<unsigned char*>(m.get_data_handle());
  // Small values of either dtype: a repeating pattern of bf16/fp32-safe bits is enough here.
  std::srand(seed);
  if (d.data_type() == dt::f32) {
    float* f = reinterpret_cast<float*>(p);
    for (size_t i = 0; i < n / 4; ++i) f[i] = static_cast<float>(std::rand() % 2001 - 1000) / 1000;
  } else {
    uint16_t* h = reinterpret_cast<uint16_t*>(p);
    for (size_t i = 0; i < n / 2; ++i) h[i] = static_cast<uint16_t>(0x3c00 + std::rand() % 512);
  }
  return m;
}

Backward make_backward(const Case& c, dt type, const dnnl::engine& eng) {
  const Plain u = plain_descs(c, type);
  const Geometry g = geometry(c);
  const auto x = any_like(u.x), w = any_like(u.w), y = any_like(u.y);
  const auto bias = memory::desc(u.b.dims(), type == dt::bf16 ? dt::f32 : type, tag::x);
  Backward b;
  memory::desc xd, wd, yd, dxd, dwd;
  if (c.transposed) {
    using namespace dnnl;
    auto fwd = deconvolution_forward::primitive_desc(
        deconvolution_forward::desc(prop_kind::forward_training, algorithm::deconvolution_direct, x,
                                    w, bias, y, g.strides, g.dilates, g.pad_l, g.pad_r),
        eng);
    auto bd = deconvolution_backward_data::primitive_desc(
        deconvolution_backward_data::desc(algorithm::deconvolution_direct, x, w, y, g.strides,
                                          g.dilates, g.pad_l, g.pad_r),
        eng, fwd);
    auto bw = deconvolution_backward_weights::primitive_desc(
        deconvolution_backward_weights::desc(algorithm::deconvolution_direct, x, w, bias, y,
                                             g.strides, g.dilates, g.pad_l, g.pad_r),
        eng, fwd);
    b.data = deconvolution_backward_data(bd), b.weights = deconvolution_backward_weights(bw);
    xd = bw.src_desc(), wd = bd.weights_desc(), yd = bd.diff_dst_desc();
    dxd = bd.diff_src_desc(), dwd = bw.diff_weights_desc();
  } else {
    using namespace dnnl;
    auto fwd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x, w,
                                  bias, y, g.strides, g.dilates, g.pad_l, g.pad_r),
        eng);
    auto bd = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, x, w, y, g.strides,
                                        g.dilates, g.pad_l, g.pad_r),
        eng, fwd);
    auto bw = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, x, w, bias, y, g.strides,
                                           g.dilates, g.pad_l, g.pad_r),
        eng, fwd);
    b.data = convolution_backward_data(bd), b.weights = convolution_backward_weights(bw);
    xd = bw.src_desc(), wd = bd.weights_desc(), yd = bd.diff_dst_desc();
    dxd = bd.diff_src_desc(), dwd = bw.diff_weights_desc();
  }
  memory mx(xd, eng), mw(wd, eng), my(yd, eng), mdx(dxd, eng), mdw(dwd, eng), mdb(bias, eng);
  memory ux = fill(u.x, eng, 1), uw = fill(u.w, eng, 2), uy = fill(u.y, eng, 3);
  memory udx(u.x, eng), udw(u.w, eng);
  for (auto [from, to] : {std::pair{ux, mx}, {uw, mw}, {uy, my}})
    b.in_reorders.push_back({dnnl::reorder(from, to), {from, to}});
  for (auto [from, to] : {std::pair{mdx, udx}, {mdw, udw}})
    b.out_reorders.push_back({dnnl::reorder(from, to), {from, to}});
  b.data_args = {{DNNL_ARG_DIFF_DST, my}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_SRC, mdx}};
  b.weight_args = {{DNNL_ARG_SRC, mx},
                   {DNNL_ARG_DIFF_DST, my},
                   {DNNL_ARG_DIFF_WEIGHTS, mdw},
                   {DNNL_ARG_DIFF_BIAS, mdb}};
  return b;
}

void run_case(benchmark::State& state, const Case& c, dt type, bool reorders) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  Backward b;
  try {
    b = make_backward(c, type, eng);
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN: ") + e.what()).c_str());
    return;
  }
  auto reorder_all = [&](auto& list) {
    for (auto& [r, mem] : list) r.execute(s, mem.first, mem.second);
  };
  auto once = [&] {
    if (reorders) reorder_all(b.in_reorders);
    b.data.execute(s, b.data_args);
    b.weights.execute(s, b.weight_args);
    if (reorders) reorder_all(b.out_reorders);
    s.wait();
  };
  reorder_all(b.in_reorders);
  once();  // warm-up: first-touch pages, JIT
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) once();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flops = 4.0 * static_cast<double>(aclbench::macs_per_gradient(c, output_shape(c)));
  state.counters["GFLOPS"] = flops * 1e-9 * static_cast<double>(state.iterations()) / wall;
  state.counters["wall_ms"] = wall * 1e3 / static_cast<double>(state.iterations());
  state.counters["threads"] = g_threads;
}

}  // namespace

int main(int argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  omp_set_num_threads(g_threads);
  for (const Case& c : aclbench::cases())
    for (dt type : {dt::f32, dt::bf16})
      for (bool reorders : {false, true}) {
        const std::string name =
            c.name + (type == dt::f32 ? "/f32" : "/bf16") + (reorders ? "/reorder" : "/prim");
        benchmark::RegisterBenchmark(name.c_str(), [&c, type, reorders](benchmark::State& s) {
          run_case(s, c, type, reorders);
        })->Unit(benchmark::kMillisecond);
      }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
