// 16-bit ops on the bulk conversions (ops/map16.h, ops/convert16): every result is bit for bit
// the old definition, "compute in float32 from the exactly widened inputs, round once": the same
// op on the float32 copies (Tensor::to, tensor/half.h's scalar conversions), rounded with
// Tensor::to. Inputs mix normal values with +-0, +-inf, quiet and signalling NaN, subnormals and
// values that overflow; shapes have chunk tails, broadcasts, transposed views and sizes that run
// in parallel. ctest also runs these under ACLNN_CPU_MAX_ISA=avx2 and =none.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "ops/ops.h"
#include "tensor/creation.h"

namespace aclgrad {
namespace {

constexpr Dtype kDtypes[] = {Dtype::Float16, Dtype::BFloat16};

// Bits of +-0, +-inf, a quiet and a signalling NaN, the smallest subnormal, the largest finite.
std::vector<uint16_t> specials(Dtype d) {
  if (d == Dtype::Float16) return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x7c01, 0x0001, 0x7bff};
  return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x7f81, 0x0001, 0x7f7f};
}

// A 16-bit tensor of values in about [-4, 4) (every 97th element special unless finite_only).
Tensor make16(const Shape& shape, Dtype d, uint32_t seed, bool finite_only = false) {
  Tensor t = empty(shape, d);
  auto* p = static_cast<uint16_t*>(t.data_ptr());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  const std::vector<uint16_t> sp = specials(d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = u(gen);
    p[i] = d == Dtype::Float16 ? Half(v).bits : BFloat16(v).bits;
    if (!finite_only && i % 97 == 5) p[i] = sp[(i / 97) % sp.size()];
  }
  return t;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(uint16_t));
  return out;
}

// got (16-bit) must equal want (float32) rounded by Tensor::to, bit for bit.
void expect_rounded_from(const Tensor& got, const Tensor& want32, const std::string& what) {
  ASSERT_EQ(got.sizes(), want32.sizes()) << what;
  const std::vector<uint16_t> g = bits_of(got), w = bits_of(want32.to(got.dtype()));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], w[i]) << what << ", element " << i;
  }
}

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST(Ops16Bit, UnaryOpsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }},
      {"add 0.3", [](const Tensor& x) { return add(x, 0.3); }},
      {"mul 1e4 (overflows)", [](const Tensor& x) { return mul(x, 1e4); }},
      {"div 3e3 (subnormal)", [](const Tensor& x) { return div(x, 3e3); }},
      {"pow 2", [](const Tensor& x) { return pow(x, 2); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.5, 2.0); }},
  };
  for (Dtype d : kDtypes) {
    // 1,000 elements a row (3 chunks and a tail), a transposed view, and a size that runs in
    // parallel.
    const Tensor base = make16({3, 5, 1000}, d, 1);
    const Tensor big = make16({70001}, d, 2);
    for (const Tensor& x : {base, base.transpose(0, 2), big}) {
      for (const auto& [name, op] : ops) {
        expect_rounded_from(op(x), op(x.to(Dtype::Float32)),
                            std::string(name) + " in " + std::string(dtype_name(d)));
      }
    }
  }
}

TEST(Ops16Bit, BinaryOpsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
  };
  for (Dtype d : kDtypes) {
    const Tensor a = make16({4, 300, 7}, d, 3), b = make16({4, 300, 7}, d, 4);
    const Tensor row = make16({300, 1}, d, 5);  // broadcast along the last dim
    const Tensor b_t = make16({7, 300, 4}, d, 6).permute({2, 1, 0});  // strided
    for (const auto& [name, op] : ops) {
      for (const Tensor& other : {b, row, b_t}) {
        expect_rounded_from(op(a, other), op(a.to(Dtype::Float32), other.to(Dtype::Float32)),
                            std::string(name) + " in " + std::string(dtype_name(d)));
      }
    }
  }
}

TEST(Ops16Bit, PredicatesReadExactValues) {
  for (Dtype d : kDtypes) {
    const Tensor a = make16({2, 777}, d, 7), b = make16({2, 777}, d, 8);
    const Tensor a32 = a.to(Dtype::Float32), b32 = b.to(Dtype::Float32);
    EXPECT_EQ(gt(a, b).to_vector<bool>(), gt(a32, b32).to_vector<bool>());
    EXPECT_EQ(eq(a, a).to_vector<bool>(), eq(a32, a32).to_vector<bool>());
    EXPECT_EQ(le(a, 0.5).to_vector<bool>(), le(a32, 0.5).to_vector<bool>());
  }
}

// Backward kernels of one rounding: gelu and softplus (map_binary over g and x), relu (on the
// bits). (tanh's and sigmoid's backwards are compositions of the ops tested above, each rounding.)
TEST(Ops16Bit, ActivationGradientsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
  };
  for (Dtype d : kDtypes) {
    const Tensor x = make16({6, 1001}, d, 9).requires_grad_();
    const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
    const Tensor g = make16({6, 1001}, d, 10);
    for (const auto& [name, op] : ops) {
      const Tensor dx = autograd::grad({op(x)}, {x}, {g})[0];
      const Tensor dx32 = autograd::grad({op(x32)}, {x32}, {g.to(Dtype::Float32)})[0];
      if (std::string(name) == "relu") {
        // Passes g through untouched: a signalling NaN in g stays signalling (select), which a
        // trip through float32 would quiet; check the bits directly.
        const std::vector<uint16_t> gb = bits_of(g), yb = bits_of(relu(x.detach()));
        const std::vector<uint16_t> got = bits_of(dx);
        const std::vector<float> y = relu(x32.detach()).to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], y[i] > 0 || y[i] != y[i] ? gb[i] : 0) << "relu, element " << i;
        }
        continue;
      }
      expect_rounded_from(dx, dx32,
                          std::string(name) + " backward in " + std::string(dtype_name(d)));
    }
  }
}

TEST(Ops16Bit, BatchNormMatchesFloat32Rounded) {
  for (Dtype d : kDtypes) {
    // S = 299: rows of a chunk and 43 more (a lane tail); float32 weight and bias beside the
    // 16-bit input.
    const Tensor x = make16({8, 3, 13, 23}, d, 11, true).requires_grad_();
    const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
    const Tensor w = from_vector(std::vector<double>{0.5, -1.25, 2}, {3}, Dtype::Float32);
    const Tensor b = from_vector(std::vector<double>{0.1, 0, -3}, {3}, Dtype::Float32);
    const Tensor w1 = w.clone().requires_grad_(), w2 = w.clone().requires_grad_();
    const Tensor rm = zeros({3}), rv = ones({3}), rm32 = zeros({3}), rv32 = ones({3});
    const Tensor y = batch_norm(x, rm, rv, w1, b, true, 0.1, 1e-5);
    const Tensor y32 = batch_norm(x32, rm32, rv32, w2, b, true, 0.1, 1e-5);
    expect_rounded_from(y, y32, "batch_norm forward");
    EXPECT_EQ(rm.to_vector<float>(), rm32.to_vector<float>());
    EXPECT_EQ(rv.to_vector<float>(), rv32.to_vector<float>());
    const Tensor g = make16({8, 3, 13, 23}, d, 12, true);
    const auto grads = autograd::grad({y}, {x, w1}, {g});
    const auto grads32 = autograd::grad({y32}, {x32, w2}, {g.to(Dtype::Float32)});
    expect_rounded_from(grads[0], grads32[0], "batch_norm input gradient");
    EXPECT_EQ(grads[1].to_vector<float>(), (grads32[1].to_vector<float>()));
    // Evaluation mode (running statistics), a non-multiple-of-8 spatial size.
    const Tensor xe = make16({2, 3, 13}, d, 13, true);
    expect_rounded_from(batch_norm(xe, rm, rv, w, b, false, 0.1, 1e-5),
                        batch_norm(xe.to(Dtype::Float32), rm, rv, w, b, false, 0.1, 1e-5),
                        "batch_norm eval");
  }
}

TEST(Ops16Bit, MaxPoolMatchesFloat32Rounded) {
  for (Dtype d : kDtypes) {
    for (const Shape& k : {Shape{2, 2}, Shape{3, 3}}) {
      const Tensor x = make16({2, 3, 15, 17}, d, 14).requires_grad_();
      const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
      const Tensor y = max_pool2d(x, k), y32 = max_pool2d(x32, k);
      expect_rounded_from(y, y32, "max_pool2d forward");
      // Windows do not overlap (stride = kernel): the backward sums in float32 too.
      const Tensor g = make16(y.sizes(), d, 15);
      expect_rounded_from(autograd::grad({y}, {x}, {g})[0],
                          autograd::grad({y32}, {x32}, {g.to(Dtype::Float32)})[0],
                          "max_pool2d backward");
    }
  }
}

TEST(Ops16Bit, AvgPoolMatchesFloat32Rounded) {
  for (Dtype d : kDtypes) {
    const Tensor x = make16({2, 3, 15, 17}, d, 18).requires_grad_();
    const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
    // Disjoint windows (the backward also sums in float32), and padded overlapping ones (the
    // backward rounds after each addition, element by element: forward only here).
    const Tensor y = avg_pool2d(x, {2, 2}), y32 = avg_pool2d(x32, {2, 2});
    expect_rounded_from(y, y32, "avg_pool2d forward");
    const Tensor g = make16(y.sizes(), d, 19);
    expect_rounded_from(autograd::grad({y}, {x}, {g})[0],
                        autograd::grad({y32}, {x32}, {g.to(Dtype::Float32)})[0],
                        "avg_pool2d backward");
    expect_rounded_from(avg_pool2d(x.detach(), {3, 3}, {2, 2}, {1, 1}),
                        avg_pool2d(x32.detach(), {3, 3}, {2, 2}, {1, 1}), "avg_pool2d padded");
  }
}

// autocast's casts (ops::cast) against Tensor::to, both ways, contiguous and strided.
TEST(Ops16Bit, CastsMatchTensorTo) {
  std::mt19937 gen(16);
  Tensor f = empty({5, 333}, Dtype::Float32);
  auto* fp = static_cast<uint32_t*>(f.data_ptr());
  for (int64_t i = 0; i < f.numel(); ++i) fp[i] = static_cast<uint32_t>(gen());
  for (Dtype d : kDtypes) {
    for (const Tensor& src : {f, f.transpose(0, 1)}) {
      EXPECT_EQ(bits_of(cast(src, d)), bits_of(src.to(d)));
      const Tensor h = make16({5, 333}, d, 17);
      for (const Tensor& h_src : {h, h.transpose(0, 1)}) {
        const std::vector<uint16_t> wide = bits_of(cast(h_src, Dtype::Float32).to(d));
        const Tensor back = cast(h_src, Dtype::Float32);
        EXPECT_EQ(std::memcmp(back.contiguous().data_ptr(),
                              h_src.to(Dtype::Float32).contiguous().data_ptr(),
                              static_cast<size_t>(back.numel()) * 4),
                  0);
        EXPECT_EQ(wide.size(), static_cast<size_t>(h.numel()));
      }
    }
  }
}

// Bits of x at index[...] along dim (x's shape without dim): the rows along dim, picked.
std::vector<uint16_t> bits_at(const Tensor& x, int64_t dim, const Tensor& index) {
  Shape perm;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != dim) perm.push_back(d);
  }
  perm.push_back(dim);
  const std::vector<uint16_t> rows = bits_of(x.permute(perm));
  const std::vector<int64_t> at = index.to_vector<int64_t>();
  std::vector<uint16_t> out;
  for (size_t r = 0; r < at.size(); ++r) out.push_back(rows[r * x.size(dim) + at[r]]);
  return out;
}

// Reductions of 16-bit inputs accumulate in float64 and round once from it: the same sums on the
// float64 copies, rounded by Tensor::to. max and min select: the float32 copies' result.
TEST(Ops16Bit, ReductionsRoundOnceFromFloat64) {
  for (Dtype d : kDtypes) {
    // Rows of 1,000 (three chunks and a tail of 232), finite and with specials.
    const Tensor x = make16({3, 5, 1000}, d, 20, true), xs = make16({3, 5, 1000}, d, 21);
    const Tensor expanded = make16({5, 1}, d, 22, true).expand({5, 300});  // stride 0
    const std::vector<std::pair<Tensor, std::string>> inputs = {{x, "finite"},
                                                                {xs, "specials"},
                                                                {x.transpose(0, 2), "transposed"},
                                                                {x.narrow(2, 3, 517), "narrowed"},
                                                                {expanded, "expanded"}};
    for (const auto& [in, what] : inputs) {
      const Tensor in64 = in.to(Dtype::Float64);
      const std::string where = what + " in " + std::string(dtype_name(d));
      EXPECT_EQ(bits_of(sum(in)), bits_of(sum(in64).to(d))) << "sum all, " << where;
      for (const Shape& dims : {Shape{0}, Shape{1}, Shape{-1}, Shape{0, in.dim() - 1}}) {
        EXPECT_EQ(bits_of(sum(in, dims)), bits_of(sum(in64, dims).to(d))) << "sum, " << where;
        EXPECT_EQ(bits_of(mean(in, dims, true)), bits_of(mean(in64, dims, true).to(d)))
            << "mean, " << where;
      }
      EXPECT_EQ(bits_of(mean(in)), bits_of(mean(in64).to(d))) << "mean all, " << where;
      for (int64_t dim = 0; dim < in.dim(); ++dim) {  // values are the input's bits
        const auto [values, indices] = max(in, dim);
        const auto [values32, indices32] = max(in.to(Dtype::Float32), dim);
        EXPECT_EQ(bits_of(values), bits_at(in, dim, indices)) << "max(dim), " << where;
        EXPECT_EQ(indices.to_vector<int64_t>(), indices32.to_vector<int64_t>())
            << "max(dim) indices, " << where;
        const auto [low, low_at] = min(in, dim);
        const auto [low32, low_at32] = min(in.to(Dtype::Float32), dim);
        EXPECT_EQ(low_at.to_vector<int64_t>(), low_at32.to_vector<int64_t>())
            << "min(dim) indices, " << where;
      }
      expect_rounded_from(max(in), max(in.to(Dtype::Float32)), "max all, " + where);
      expect_rounded_from(min(in), min(in.to(Dtype::Float32)), "min all, " + where);
    }
    // sum_to (broadcasting's gradient), and a sum that runs in parallel-sized input.
    const Tensor big = make16({70001}, d, 23, true);
    EXPECT_EQ(bits_of(sum(big)), bits_of(sum(big.to(Dtype::Float64)).to(d)));
    EXPECT_EQ(bits_of(sum_to(x, {5, 1})), bits_of(sum_to(x.to(Dtype::Float64), {5, 1}).to(d)));
  }
}

TEST(Ops16Bit, SoftmaxRoundsOnceFromFloat32) {
  for (Dtype d : kDtypes) {
    const Tensor x = make16({3, 5, 1000}, d, 24);  // specials: NaN and inf rows too
    const Tensor big = make16({70001}, d, 25, true);
    const std::vector<std::pair<Tensor, int64_t>> cases = {{x, 2},
                                                           {x, 1},
                                                           {x, 0},
                                                           {x.transpose(0, 2), 0},
                                                           {x.narrow(2, 1, 300), -1},
                                                           {big, 0},
                                                           {make16({}, d, 26), 0}};
    for (const auto& [in, dim] : cases) {
      const Tensor in32 = in.to(Dtype::Float32);
      const std::string where = "dim " + std::to_string(dim) + " of " + std::to_string(in.dim()) +
                                "-d " + std::string(dtype_name(d));
      expect_rounded_from(softmax(in, dim), softmax(in32, dim), "softmax, " + where);
      expect_rounded_from(log_softmax(in, dim), log_softmax(in32, dim), "log_softmax, " + where);
    }
  }
}

// The backwards are compositions of 16-bit ops, each rounding once: the same formulas on the
// float32 copies, each step rounded (sums from float64), give the same bits.
TEST(Ops16Bit, SoftmaxGradientsRoundEachStep) {
  for (Dtype d : kDtypes) {
    const auto r = [d](const Tensor& t) { return t.to(d).to(Dtype::Float32); };
    const auto rsum = [d](const Tensor& t) {
      return sum(t.to(Dtype::Float64), {1}, true).to(d).to(Dtype::Float32);
    };
    const Tensor x = make16({7, 777}, d, 27, true).requires_grad_();
    const Tensor g = make16({7, 777}, d, 28, true), g32 = g.to(Dtype::Float32);
    const Tensor y = softmax(x, 1), y32 = y.detach().to(Dtype::Float32);
    const Tensor dx = autograd::grad({y}, {x}, {g})[0];
    // y * (g - sum(g * y))
    const Tensor want = mul(y32, r(sub(g32, rsum(r(mul(g32, y32))))));
    expect_rounded_from(dx, want, "softmax backward in " + std::string(dtype_name(d)));
    const Tensor ly = log_softmax(x, 1), ly32 = ly.detach().to(Dtype::Float32);
    const Tensor ldx = autograd::grad({ly}, {x}, {g})[0];
    // g - exp(y) * sum(g)
    const Tensor lwant = sub(g32, r(mul(r(exp(ly32)), rsum(g32))));
    expect_rounded_from(ldx, lwant, "log_softmax backward in " + std::string(dtype_name(d)));
  }
}

}  // namespace
}  // namespace aclgrad
