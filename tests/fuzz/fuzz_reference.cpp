// The fuzzer's oracle: rebuilds the geometry an accepted call describes (from the tensors'
// shapes and the arguments) and computes its float64 naive result. Input values are multiples of
// 1/8 in [-2, 2], exact in every dtype and under every cubeMathType rounding, so the only error
// allowed is the accumulation and output rounding of the dtype. For the 8-bit outputs the fp32
// sums of these values are exact, so the output must be the reference rounded once to the
// dtype, bit for bit (NaN / Inf included).
#include <exception>
#include <optional>

#include "fuzz_problems.h"
#include "support/acl_test_util.h"

namespace aclfuzz {
namespace {

double tolerance(int32_t dtype) {
  switch (dtype) {
    case ACL_DOUBLE:
      return 1e-12;
    case ACL_FLOAT:
      return 1e-5;
    case ACL_FLOAT16:
      return 1.0 / 1024;
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E4M3FN:
      return 0;  // exact against the rounded reference (round_8bit_outputs)
    default:     // BF16
      return 1.0 / 128;
  }
}

// The input roles of each operator, in ReferenceInputs order.
std::vector<const char*> input_roles(Op op) {
  switch (op) {
    case Op::kConvBackward:
      return {"gradOutput", "input", "weight"};
    case Op::kConv:
      return {"input", "weight", "bias"};
    case Op::kTbcBackward:
      return {"self", "input", "weight"};
    default:
      return {"self", "weight", "bias"};
  }
}

// One float dtype shared by every tensor present, every view readable, no null tensors among
// the inputs the reference reads (a forward bias may be absent).
bool oracle_applies(const Problem& p) {
  const int32_t dt = p.tensors.front().dtype;
  for (const TensorSpec& t : p.tensors) {
    if (t.null_tensor) {
      if (t.role == "bias" && p.op == Op::kConv) continue;
      return false;
    }
    if (t.dtype != dt || readable_numel(t) < 0) return false;
  }
  return is_float_dtype(dt);
}

// A per-spatial-dim argument: `values` when it has `spatial` entries, else nothing.
std::optional<std::vector<int64_t>> per_dim(const IntArg& a, size_t spatial) {
  if (a.null || a.values.size() != spatial) return std::nullopt;
  return a.values;
}

std::optional<naive::ConvGeom> conv_geom(const Problem& p) {
  const TensorSpec* x = p.find("input");
  const TensorSpec* w = p.find("weight");
  if (!x || !w || x->dims.size() < 3 || x->dims.size() > 5 || w->dims.size() != x->dims.size())
    return std::nullopt;
  naive::ConvGeom g;
  g.input = x->dims;
  g.weight = w->dims;
  g.transposed = p.transposed;
  g.groups = p.groups;
  const size_t s = g.spatial();
  auto stride = per_dim(p.stride, s), dilation = per_dim(p.dilation, s);
  auto output_padding = per_dim(p.output_padding, s);
  if (!stride || !dilation || !output_padding || p.padding.null) return std::nullopt;
  g.stride = *stride;
  g.dilation = *dilation;
  g.output_padding = *output_padding;
  if (p.padding.values.size() == s) {
    g.pad_before = g.pad_after = p.padding.values;
  } else if (s == 2 && p.padding.values.size() == 4) {
    const auto& v = p.padding.values;
    g.pad_before = {v[0], v[2]};
    g.pad_after = {v[1], v[3]};
  } else {
    return std::nullopt;
  }
  return g;
}

naive::TbcGeom tbc_geom(const Problem& p) {
  const TensorSpec* w = p.find("weight");
  const TensorSpec* x = p.find(p.op == Op::kTbcBackward ? "input" : "self");
  naive::TbcGeom g;
  g.T = x->dims[0];
  g.B = x->dims[1];
  g.C_in = x->dims[2];
  g.K = w->dims[0];
  g.C_out = w->dims[2];
  g.pad = p.tbc_pad;
  return g;
}

// The outputs an accepted call writes, without reference values (masked ones left out).
std::vector<Expected> written_outputs(const Problem& p) {
  std::vector<Expected> out;
  for (const TensorSpec& t : p.tensors) {
    if (!t.is_output) continue;
    if (p.op == Op::kConvBackward && !p.mask.null && p.mask.values.size() == 3) {
      const int bit = t.role == "gradInput" ? 0 : t.role == "gradWeight" ? 1 : 2;
      if (!p.mask.values[static_cast<size_t>(bit)]) continue;
    }
    out.push_back({t.role, {}, tolerance(t.dtype)});
  }
  return out;
}

void set_result(std::vector<Expected>& out, const std::string& role, naive::Result r) {
  for (Expected& e : out)
    if (e.role == role) e.result = std::move(r);
}

}  // namespace

ReferenceInputs read_reference_inputs(const Problem& p) {
  ReferenceInputs r;
  if (!oracle_applies(p)) return r;
  std::vector<double>* slots[] = {&r.a, &r.b, &r.c};
  const std::vector<const char*> roles = input_roles(p.op);
  for (size_t i = 0; i < roles.size(); ++i)
    if (const TensorSpec* t = p.find(roles[i])) *slots[i] = read_view(*t);
  r.usable = true;
  return r;
}

std::vector<Expected> reference_unguarded(const Problem& p, const ReferenceInputs& in) {
  std::vector<Expected> out = written_outputs(p);
  if (!in.usable) return out;
  if (p.op == Op::kConvBackward || p.op == Op::kConv) {
    const std::optional<naive::ConvGeom> g = conv_geom(p);
    if (!g) return out;
    if (p.op == Op::kConv) {
      if (p.find("output")->dims != g->output()) return out;  // mismatch: no oracle
      set_result(out, "output", naive::ConvForward(*g, in.a, in.b, in.c));
      return out;
    }
    if (p.find("gradOutput")->dims != g->output()) return out;
    naive::Grads grads = naive::ConvBackward(*g, in.a, in.b, in.c);
    set_result(out, "gradInput", std::move(grads.input));
    set_result(out, "gradWeight", std::move(grads.weight));
    set_result(out, "gradBias", std::move(grads.bias));
    return out;
  }
  const TensorSpec* x = p.find(p.op == Op::kTbcBackward ? "input" : "self");
  const TensorSpec* w = p.find("weight");
  if (x->dims.size() != 3 || w->dims.size() != 3) return out;
  const naive::TbcGeom g = tbc_geom(p);
  const TensorSpec* y = p.find(p.op == Op::kTbcBackward ? "self" : "output");
  if (y->dims != std::vector<int64_t>{g.t_out(), g.B, g.C_out}) return out;  // no oracle
  if (p.op == Op::kTbc) {
    set_result(out, "output", naive::TbcForward(g, in.a, in.b, in.c));
    return out;
  }
  naive::Grads grads = naive::TbcBackward(g, in.a, in.b, in.c);
  set_result(out, "gradInput", std::move(grads.input));
  set_result(out, "gradWeight", std::move(grads.weight));
  set_result(out, "gradBias", std::move(grads.bias));
  return out;
}

// 8-bit outputs: the reference rounded to the output's dtype, compared exactly.
void round_8bit_outputs(const Problem& p, std::vector<Expected>& out) {
  for (Expected& e : out) {
    const TensorSpec* t = p.find(e.role);
    if (!t || (t->dtype != ACL_HIFLOAT8 && t->dtype != ACL_FLOAT8_E4M3FN)) continue;
    for (double& v : e.result.value)
      v = acltest::RoundToDtype(v, static_cast<aclDataType>(t->dtype));
    e.rel_tol = 0;
  }
}

std::vector<Expected> reference(const Problem& p, const ReferenceInputs& in) {
  try {
    std::vector<Expected> out = reference_unguarded(p, in);
    round_8bit_outputs(p, out);
    return out;
  } catch (const std::exception&) {  // a geometry the naive code does not model: no oracle
    return written_outputs(p);
  }
}

}  // namespace aclfuzz
