#include "support/conv_case.h"

#include <cctype>
#include <cstring>
#include <memory>
#include <sstream>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/compare.h"

namespace acltest {

aclDataType ConvCase::compute_dtype() const {
  if (x_dtype == ACL_DOUBLE || w_dtype == ACL_DOUBLE || gy_dtype == ACL_DOUBLE) return ACL_DOUBLE;
  if (x_dtype == w_dtype && w_dtype == gy_dtype) return x_dtype;
  return ACL_FLOAT;  // f16+f32, bf16+f32, bf16+f16 all promote to f32
}

std::vector<int64_t> ApiPadding(const ConvCase& c) {
  const naive::ConvGeom& g = c.geom;
  bool symmetric = g.pad_before == g.pad_after;
  if (symmetric && !c.four_pad) return g.pad_before;
  return {g.pad_before[0], g.pad_after[0], g.pad_before[1], g.pad_after[1]};
}

namespace {
std::string MaskStr(const std::array<bool, 3>& m) {
  return std::string() + (m[0] ? '1' : '0') + (m[1] ? '1' : '0') + (m[2] ? '1' : '0');
}
}  // namespace

std::string ConvCase::Describe() const {
  std::ostringstream os;
  os << "[" << label << "] " << geom.Describe() << "; padding arg " << ShapeStr(ApiPadding(*this))
     << "; dtypes gradOutput " << DtypeName(gy_dtype) << " input " << DtypeName(x_dtype)
     << " weight " << DtypeName(w_dtype) << "; layout " << LayoutName(layout) << "; outputMask "
     << MaskStr(mask) << (null_masked ? " (masked outputs null)" : "") << "; cubeMathType " << cube
     << (forward_bias ? "" : "; forward bias null") << "; seed " << seed;
  return os.str();
}

std::string ConvCase::Name() const {
  std::string dt = DtypeName(x_dtype);
  if (gy_dtype != x_dtype || w_dtype != x_dtype) {
    dt = "gy" + DtypeName(gy_dtype) + "x" + DtypeName(x_dtype) + "w" + DtypeName(w_dtype);
  }
  std::string s = label + "_" + dt + "_" + LayoutName(layout) + "_m" + MaskStr(mask) +
                  (null_masked ? "n" : "") + "_cm" + std::to_string(cube);
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.Describe();
}

namespace {

struct Arrays {
  IntArrayPtr stride, padding, dilation, output_padding;
  explicit Arrays(const ConvCase& c)
      : stride(MakeIntArray(c.geom.stride)),
        padding(MakeIntArray(ApiPadding(c))),
        dilation(MakeIntArray(c.geom.dilation)),
        output_padding(MakeIntArray(c.geom.transposed
                                        ? c.geom.output_padding
                                        : std::vector<int64_t>(c.geom.spatial(), 0))) {}
};

// Checks one output: requested -> values and no write outside the view; masked-out -> untouched.
void CheckOutput(const char* name, const TestTensor* t, bool requested, const naive::Result& want,
                 aclDataType compute, ::testing::AssertionResult* verdict, bool* failed) {
  if (requested) {
    ::testing::AssertionResult r =
        CompareToReference(name, t->Read(), want, t->shape(), ToleranceFor(t->dtype(), compute));
    if (!r) *failed = true, *verdict << "\n  " << r.message();
    if (!t->OnlyViewWritten()) {
      *failed = true;
      *verdict << "\n  " << name << " (" << t->Describe() << ") wrote outside its view";
    }
  } else if (t != nullptr && !t->Untouched()) {
    *failed = true;
    *verdict << "\n  " << name << " was not requested but its storage was modified";
  }
}

}  // namespace

namespace {

Layout OutputLayout(Layout l) {
  return l == Layout::kExpanded ? Layout::kPadded : l;
}

// One aclnnConvolutionBackward call on seeded data: the operands, the outputs (null when masked
// out and null_masked) and the call's result.
struct BackwardRun {
  TestTensor gy, x, w;
  std::unique_ptr<TestTensor> gi, gw, gb;
  CallResult result;

  explicit BackwardRun(const ConvCase& c)
      : gy(c.geom.output(), c.gy_dtype, c.layout, c.seed * 8 + 1),
        x(c.geom.input, c.x_dtype, c.layout, c.seed * 8 + 2),
        w(c.geom.weight, c.w_dtype, c.layout, c.seed * 8 + 3) {
    const naive::ConvGeom& g = c.geom;
    const int64_t c_out = g.output()[1];
    Rng rng(c.seed);
    std::vector<double> gy_values = rng.Uniform(gy.numel()), x_values = rng.Uniform(x.numel()),
                        w_values = rng.Uniform(w.numel());
    if (c.edit_values) c.edit_values(gy_values, x_values, w_values);
    gy.Fill(gy_values);
    x.Fill(x_values);
    w.Fill(w_values);
    auto make_out = [&](bool requested, const std::vector<int64_t>& shape, aclDataType dt,
                        uint64_t k) -> std::unique_ptr<TestTensor> {
      // Only gradBias may be null (when not requested); gradInput / gradWeight never are.
      if (!requested && c.null_masked && k == 6) return nullptr;
      return std::make_unique<TestTensor>(shape, dt, OutputLayout(c.layout), c.seed * 8 + k);
    };
    gi = make_out(c.mask[0], g.input, c.x_dtype, 4);
    gw = make_out(c.mask[1], g.weight, c.w_dtype, 5);
    gb = make_out(c.mask[2], {c_out}, c.gy_dtype, 6);

    Arrays a(c);
    IntArrayPtr bias_sizes = MakeIntArray({c_out});
    BoolArrayPtr mask = MakeBoolArray({c.mask[0], c.mask[1], c.mask[2]});
    result = RunTwoPhase(
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnConvolutionBackwardGetWorkspaceSize(
              gy.get(), x.get(), w.get(), bias_sizes.get(), a.stride.get(), a.padding.get(),
              a.dilation.get(), g.transposed, a.output_padding.get(), static_cast<int>(g.groups),
              mask.get(), static_cast<int8_t>(c.cube), gi ? gi->get() : nullptr,
              gw ? gw->get() : nullptr, gb ? gb->get() : nullptr, ws, ex);
        },
        aclnnConvolutionBackward);
  }
};

}  // namespace

BackwardValues RunConvBackward(const ConvCase& c) {
  BackwardRun run(c);
  BackwardValues v;
  v.result = run.result;
  v.gy = run.gy.values();
  v.x = run.x.values();
  v.w = run.w.values();
  if (!run.result.ok()) return v;
  if (c.mask[0]) v.grad_input = run.gi->Read();
  if (c.mask[1]) v.grad_weight = run.gw->Read();
  if (c.mask[2]) v.grad_bias = run.gb->Read();
  return v;
}

::testing::AssertionResult CheckConvBackward(const ConvCase& c) {
  const naive::ConvGeom& g = c.geom;
  BackwardRun run(c);
  const CallResult& r = run.result;
  const TestTensor &gy = run.gy, &x = run.x, &w = run.w;
  if (!r.ok()) {
    return ::testing::AssertionFailure()
           << "aclnnConvolutionBackward failed for " << c.Describe() << ": " << r.Describe();
  }

  // Reference on the operands as the cube unit sees them; the bias gradient is a plain reduction
  // of gradOutput (no products), so it uses the unrounded values.
  const aclDataType compute = c.compute_dtype();
  const naive::Rounder round = naive::CubeOperandRounding(compute, c.cube);
  naive::Grads ref =
      naive::ConvBackward(g, naive::RoundAll(gy.values(), round),
                          naive::RoundAll(x.values(), round), naive::RoundAll(w.values(), round));
  if (compute == ACL_FLOAT && c.cube != 0) {
    ref.bias = naive::ConvBackward(g, gy.values(), x.values(), w.values()).bias;
  }

  ::testing::AssertionResult verdict = ::testing::AssertionFailure();
  verdict << "aclnnConvolutionBackward mismatch for " << c.Describe() << " (gradOutput "
          << gy.Describe() << ", input " << x.Describe() << ", weight " << w.Describe() << ")";
  bool failed = false;
  CheckOutput("gradInput", run.gi.get(), c.mask[0], ref.input, compute, &verdict, &failed);
  CheckOutput("gradWeight", run.gw.get(), c.mask[1], ref.weight, compute, &verdict, &failed);
  CheckOutput("gradBias", run.gb.get(), c.mask[2], ref.bias, compute, &verdict, &failed);
  return failed ? verdict : ::testing::AssertionSuccess();
}

::testing::AssertionResult CheckConvForward(const ConvCase& c) {
  const naive::ConvGeom& g = c.geom;
  const std::vector<int64_t> out_shape = g.output();
  Rng rng(c.seed + 1000003);
  TestTensor x(g.input, c.x_dtype, c.layout, c.seed * 8 + 2);
  TestTensor w(g.weight, c.w_dtype, c.layout, c.seed * 8 + 3);
  TestTensor b({out_shape[1]}, c.x_dtype, c.layout, c.seed * 8 + 6);
  x.Fill(rng.Uniform(x.numel()));
  w.Fill(rng.Uniform(w.numel()));
  b.Fill(rng.Uniform(b.numel()));
  TestTensor y = TestTensor::Output(out_shape, c.x_dtype, OutputLayout(c.layout), c.seed * 8 + 1);
  const aclTensor* bias = c.forward_bias ? b.get() : nullptr;

  Arrays a(c);
  CallResult r = RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionGetWorkspaceSize(
            x.get(), w.get(), bias, a.stride.get(), a.padding.get(), a.dilation.get(), g.transposed,
            a.output_padding.get(), g.groups, y.get(), static_cast<int8_t>(c.cube), ws, ex);
      },
      aclnnConvolution);
  if (!r.ok()) {
    return ::testing::AssertionFailure()
           << "aclnnConvolution failed for " << c.Describe() << ": " << r.Describe();
  }
  aclDataType compute = c.x_dtype == c.w_dtype ? c.x_dtype : ACL_FLOAT;
  if (c.x_dtype == ACL_DOUBLE || c.w_dtype == ACL_DOUBLE) compute = ACL_DOUBLE;
  const naive::Rounder round = naive::CubeOperandRounding(compute, c.cube);
  naive::Result ref =
      naive::ConvForward(g, naive::RoundAll(x.values(), round), naive::RoundAll(w.values(), round),
                         c.forward_bias ? b.values() : std::vector<double>{});
  ::testing::AssertionResult verdict = ::testing::AssertionFailure();
  verdict << "aclnnConvolution mismatch for " << c.Describe() << " (input " << x.Describe()
          << ", weight " << w.Describe() << ", bias "
          << (c.forward_bias ? b.Describe() : std::string("null")) << ")";
  bool failed = false;
  CheckOutput("output", &y, true, ref, compute, &verdict, &failed);
  return failed ? verdict : ::testing::AssertionSuccess();
}

void ExpectAllMatch(const std::vector<ConvCase>& cases, bool forward) {
  for (const ConvCase& c : cases) {
    EXPECT_TRUE(CheckConvBackward(c));
    if (forward) {
      EXPECT_TRUE(CheckConvForward(c));
    }
  }
}

::testing::AssertionResult CheckConvBackwardDeterministic(const ConvCase& c) {
  BackwardRun first(c), second(c);
  if (!first.result.ok() || !second.result.ok()) {
    return ::testing::AssertionFailure()
           << "aclnnConvolutionBackward failed for " << c.Describe() << ": "
           << first.result.Describe() << " / " << second.result.Describe();
  }
  const TestTensor* a[] = {first.gi.get(), first.gw.get(), first.gb.get()};
  const TestTensor* b[] = {second.gi.get(), second.gw.get(), second.gb.get()};
  const char* names[] = {"gradInput", "gradWeight", "gradBias"};
  for (int i = 0; i < 3; ++i) {
    if (!c.mask[i]) continue;
    std::vector<double> va = a[i]->Read(), vb = b[i]->Read();
    for (size_t j = 0; j < va.size(); ++j) {
      if (std::memcmp(&va[j], &vb[j], sizeof(double)) != 0) {
        return ::testing::AssertionFailure()
               << names[i] << " differs between two identical runs at "
               << IndexStr(static_cast<int64_t>(j), a[i]->shape()) << ": " << va[j] << " vs "
               << vb[j] << " for " << c.Describe();
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace acltest
