#include "fuzz_problems.h"

#include <cstdlib>
#include <limits>
#include <sstream>

#include "aclnn/aclnn_cpu_extensions.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace aclfuzz {
namespace {

constexpr int32_t kFloatDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
constexpr const char* kSocs[] = {"",          "Ascend910B", "Ascend910_93", "Ascend910_95",
                                 "Ascend910", "Ascend310P", "Ascend42"};

aclFormat conv_format(size_t rank) {
  return rank == 3 ? ACL_FORMAT_NCL : rank == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_NCDHW;
}

// Draws the geometry of a regular or transposed convolution (naive::ConvGeom) with tiny sizes.
naive::ConvGeom draw_conv_geom(FuzzBytes& in) {
  naive::ConvGeom g;
  const int spatial = static_cast<int>(in.pick(1, 3));
  g.transposed = in.chance(80);
  g.groups = in.pick(1, 3);
  const int64_t cig = in.pick(1, 3), cog = in.pick(1, 3);
  g.input = {in.pick(1, 2) - (in.chance(8) ? 1 : 0), g.groups * cig};
  g.weight = g.transposed ? std::vector<int64_t>{g.groups * cig, cog}
                          : std::vector<int64_t>{g.groups * cog, cig};
  for (int j = 0; j < spatial; ++j) {
    g.input.push_back(in.pick(1, spatial == 3 ? 4 : 7));
    g.weight.push_back(in.pick(1, 3));
    g.stride.push_back(in.pick(1, 3));
    g.pad_before.push_back(in.pick(0, 2));
    g.dilation.push_back(in.pick(1, 2));
    g.output_padding.push_back(g.transposed ? in.pick(0, std::max(g.stride[j], g.dilation[j]) - 1)
                                            : 0);
  }
  g.pad_after = g.pad_before;
  if (spatial == 2 && in.chance(40)) g.pad_after[1] = in.pick(0, 2);  // [top, bottom, left, right]
  return g;
}

void mutate_int_arg(FuzzBytes& in, IntArg& a) {
  static const int64_t kOdd[] = {
      -1, 0, 64, 256, int64_t{1} << 40, std::numeric_limits<int64_t>::max()};
  switch (in.byte() % 4) {
    case 0:
      a.null = true;
      break;
    case 1:
      a.values.push_back(1);
      break;
    case 2:
      if (!a.values.empty()) a.values.pop_back();
      break;
    default:
      if (!a.values.empty()) a.values[in.byte() % a.values.size()] = in.one_of(kOdd);
  }
}

// One defect in an argument other than a tensor's own description.
void mutate_argument(FuzzBytes& in, Problem& p) {
  static const int64_t kGroups[] = {0, -1, 2, 3, 4, int64_t{1} << 33};
  static const int kCubes[] = {-1, 0, 1, 2, 3, 4, 127};
  const int n = static_cast<int>(p.tensors.size());
  switch (in.byte() % 9) {
    case 0: {
      IntArg* args[] = {&p.stride, &p.padding, &p.dilation, &p.output_padding, &p.bias_sizes};
      mutate_int_arg(in, *args[in.byte() % 5]);
      break;
    }
    case 1:
      p.groups = in.one_of(kGroups);
      break;
    case 2:
      p.transposed = !p.transposed;
      break;
    case 3:  // mask: null, wrong length, or a bit flipped
      if (in.chance(60))
        p.mask.null = true;
      else if (in.chance(128))
        p.mask.values.resize(in.pick(0, 4), true);
      else if (!p.mask.values.empty())
        p.mask.values[in.byte() % p.mask.values.size()].flip();
      break;
    case 4:
      p.cube_math = in.one_of(kCubes);
      break;
    case 5:
      p.soc = in.one_of(kSocs);
      break;
    case 6:
      p.tbc_pad = in.chance(128) ? p.tbc_pad + in.pick(-2, 2) : (int64_t{1} << 40);
      break;
    case 7: {  // an output sharing the buffer of an input or of another output
      std::vector<int> outs;
      for (int i = 0; i < n; ++i)
        if (p.tensors[static_cast<size_t>(i)].is_output) outs.push_back(i);
      const int out = outs[in.byte() % outs.size()];
      int other = static_cast<int>(in.byte() % static_cast<unsigned>(n));
      if (other == out) other = (other + 1) % n;
      if (p.tensors[static_cast<size_t>(other)].alias_of < 0)
        p.tensors[static_cast<size_t>(out)].alias_of = other;
      break;
    }
    default:
      mutate_tensor(in, p.tensors[in.byte() % static_cast<unsigned>(n)]);
  }
}

void draw_conv(FuzzBytes& in, Problem& p, bool backward) {
  const naive::ConvGeom g = draw_conv_geom(in);
  const int32_t dt = in.one_of(kFloatDtypes);
  const aclFormat fmt = conv_format(g.input.size());
  auto spec = [&](const char* role, std::vector<int64_t> dims, bool out, aclFormat f) {
    p.tensors.push_back(make_spec(role, std::move(dims), dt, f, in.byte() % 4, out));
  };
  const int64_t cout = g.out_channels();
  if (backward) {
    spec("gradOutput", g.output(), false, fmt);
    spec("input", g.input, false, fmt);
    spec("weight", g.weight, false, fmt);
    spec("gradInput", g.input, true, fmt);
    spec("gradWeight", g.weight, true, fmt);
    spec("gradBias", {cout}, true, ACL_FORMAT_ND);
    p.mask.values = {in.byte() % 4 != 0, in.byte() % 4 != 0, in.byte() % 4 != 0};
  } else {
    spec("input", g.input, false, fmt);
    spec("weight", g.weight, false, fmt);
    if (!in.chance(60)) spec("bias", {cout}, false, ACL_FORMAT_ND);
    spec("output", g.output(), true, fmt);
  }
  p.transposed = g.transposed;
  p.groups = g.groups;
  p.stride.values = g.stride;
  p.dilation.values = g.dilation;
  p.output_padding.values = g.output_padding;
  p.bias_sizes.values = {cout};
  p.padding.values = g.pad_before;
  if (g.pad_after != g.pad_before)
    p.padding.values = {g.pad_before[0], g.pad_after[0], g.pad_before[1], g.pad_after[1]};
}

void draw_tbc(FuzzBytes& in, Problem& p, bool backward) {
  naive::TbcGeom g;
  g.T = in.pick(1, 6);
  g.B = in.pick(1, 3);
  g.C_in = in.pick(1, 4);
  g.C_out = in.pick(1, 4);
  g.K = in.pick(1, 4);
  g.pad = in.pick(0, 2);
  const int32_t dt = in.one_of(kFloatDtypes);
  auto spec = [&](const char* role, std::vector<int64_t> dims, bool out) {
    p.tensors.push_back(make_spec(role, std::move(dims), dt, ACL_FORMAT_ND, in.byte() % 4, out));
  };
  const std::vector<int64_t> x{g.T, g.B, g.C_in}, w{g.K, g.C_in, g.C_out}, b{g.C_out},
      y{g.t_out(), g.B, g.C_out};
  spec("self", backward ? y : x, false);
  if (backward) spec("input", x, false);
  spec("weight", w, false);
  spec("bias", b, false);
  if (backward) {
    spec("gradInput", x, true);
    spec("gradWeight", w, true);
    spec("gradBias", b, true);
  } else {
    spec("output", y, true);
  }
  p.tbc_pad = g.pad;
}

aclIntArray* make(IntArg& a) {
  if (!a.null && !a.handle) a.handle = aclCreateIntArray(a.values.data(), a.values.size());
  return a.handle;
}

aclBoolArray* make(BoolArg& a) {
  if (!a.null && !a.handle) {
    bool values[8] = {};
    for (size_t i = 0; i < a.values.size() && i < 8; ++i) values[i] = a.values[i];
    a.handle = aclCreateBoolArray(values, a.values.size());
  }
  return a.handle;
}

aclTensor* handle(const Problem& p, const char* role) {
  const TensorSpec* t = p.find(role);
  return t ? t->handle : nullptr;
}

// Ascend910_95's 8-bit case (CONFORMANCE.md row 12): the tensors still of the drawn float dtype
// become HIFLOAT8 or FLOAT8_E4M3FN and the profile 95, so the call is accepted unless a defect
// breaks it (a masked gradInput, a regular convolution, a dtype defect: refused as documented).
void make_8bit(FuzzBytes& in, Problem& p) {
  static const int32_t k8bit[] = {ACL_HIFLOAT8, ACL_FLOAT8_E4M3FN};
  const int32_t drawn = p.find("input") ? p.find("input")->dtype : ACL_FLOAT;
  const int32_t dt = in.one_of(k8bit);
  for (TensorSpec& t : p.tensors)
    if (t.dtype == drawn) t.dtype = dt;
  p.soc = "Ascend910_95";
}

}  // namespace

Problem draw_problem(FuzzBytes& in) {
  Problem p;
  p.op = static_cast<Op>(in.byte() % 4);
  if (p.op == Op::kConvBackward || p.op == Op::kConv)
    draw_conv(in, p, p.op == Op::kConvBackward);
  else
    draw_tbc(in, p, p.op == Op::kTbcBackward);
  p.cube_math = static_cast<int>(in.pick(0, 3));
  if (in.chance(30)) p.soc = in.one_of(kSocs);
  const int defects = static_cast<int>(in.byte() % 4);
  for (int i = 0; i < defects; ++i) mutate_argument(in, p);
  // Drawn last so that the earlier draws of existing corpus inputs stay what they were.
  if (p.op == Op::kConvBackward && p.transposed && in.chance(48)) make_8bit(in, p);
  p.strided_outputs = in.byte() < 192;  // on for a byte of 0 or none left: the older corpus
  return p;
}

const TensorSpec* Problem::find(const std::string& role) const {
  for (const TensorSpec& t : tensors)
    if (t.role == role && !t.null_tensor) return &t;
  return nullptr;
}

aclnnStatus Problem::plan(uint64_t* workspace_size, aclOpExecutor** executor) {
  if (soc.empty())
    unsetenv("ACLNN_CPU_SOC");
  else
    setenv("ACLNN_CPU_SOC", soc.c_str(), 1);
  const uint32_t extensions =
      aclnnCpuSetExtensions(strided_outputs ? ACLNN_CPU_EXT_STRIDED_OUTPUTS : ACLNN_CPU_EXT_NONE);
  const aclnnStatus status = plan_call(workspace_size, executor);
  aclnnCpuSetExtensions(extensions);
  return status;
}

aclnnStatus Problem::plan_call(uint64_t* workspace_size, aclOpExecutor** executor) {
  const auto cube = static_cast<int8_t>(cube_math);
  const Problem& p = *this;
  switch (op) {
    case Op::kConvBackward:
      return aclnnConvolutionBackwardGetWorkspaceSize(
          handle(p, "gradOutput"), handle(p, "input"), handle(p, "weight"), make(bias_sizes),
          make(stride), make(padding), make(dilation), transposed, make(output_padding),
          static_cast<int>(groups), make(mask), cube, handle(p, "gradInput"),
          handle(p, "gradWeight"), handle(p, "gradBias"), workspace_size, executor);
    case Op::kConv:
      return aclnnConvolutionGetWorkspaceSize(
          handle(p, "input"), handle(p, "weight"), handle(p, "bias"), make(stride), make(padding),
          make(dilation), transposed, make(output_padding), groups, handle(p, "output"), cube,
          workspace_size, executor);
    case Op::kTbcBackward:
      return aclnnConvTbcBackwardGetWorkspaceSize(
          handle(p, "self"), handle(p, "input"), handle(p, "weight"), handle(p, "bias"), tbc_pad,
          cube, handle(p, "gradInput"), handle(p, "gradWeight"), handle(p, "gradBias"),
          workspace_size, executor);
    default:
      return aclnnConvTbcGetWorkspaceSize(handle(p, "self"), handle(p, "weight"), handle(p, "bias"),
                                          tbc_pad, handle(p, "output"), cube, workspace_size,
                                          executor);
  }
}

aclnnStatus Problem::launch(void* workspace, uint64_t size, aclOpExecutor* executor,
                            aclrtStream stream) {
  switch (op) {
    case Op::kConvBackward:
      return aclnnConvolutionBackward(workspace, size, executor, stream);
    case Op::kConv:
      return aclnnConvolution(workspace, size, executor, stream);
    case Op::kTbcBackward:
      return aclnnConvTbcBackward(workspace, size, executor, stream);
    default:
      return aclnnConvTbc(workspace, size, executor, stream);
  }
}

void Problem::release_arrays() {
  for (IntArg* a : {&stride, &padding, &dilation, &output_padding, &bias_sizes}) {
    if (a->handle) aclDestroyIntArray(a->handle);
    a->handle = nullptr;
  }
  if (mask.handle) aclDestroyBoolArray(mask.handle);
  mask.handle = nullptr;
}

std::string Problem::describe() const {
  static const char* kOps[] = {"ConvolutionBackward", "Convolution", "ConvTbcBackward", "ConvTbc"};
  std::ostringstream os;
  os << kOps[static_cast<int>(op)] << " soc '" << soc << "' cube " << cube_math
     << " strided-outputs extension " << (strided_outputs ? "on" : "off");
  auto list = [&](const char* name, const IntArg& a) {
    os << " " << name << " ";
    if (a.null)
      os << "null";
    else
      os << acltest::ShapeStr(a.values);
  };
  if (op == Op::kConvBackward || op == Op::kConv) {
    list("stride", stride);
    list("padding", padding);
    list("dilation", dilation);
    list("outputPadding", output_padding);
    os << " transposed " << transposed << " groups " << groups;
  } else {
    os << " pad " << tbc_pad;
  }
  if (op == Op::kConvBackward) {
    os << " mask";
    if (mask.null) os << " null";
    for (bool b : mask.values) os << (b ? " 1" : " 0");
  }
  for (const TensorSpec& t : tensors) {
    os << "\n    " << t.role << (t.null_tensor ? " null" : "") << " dims "
       << acltest::ShapeStr(t.dims) << " strides " << acltest::ShapeStr(t.strides) << " offset "
       << t.offset << " storage " << acltest::ShapeStr(t.storage_dims) << " dtype " << t.dtype
       << " format " << t.format << (t.null_data ? " data null" : "");
    if (t.alias_of >= 0) os << " sharing " << tensors[static_cast<size_t>(t.alias_of)].role;
  }
  return os.str();
}

}  // namespace aclfuzz
