#include "conv/api/checks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aclnn/aclnn_cpu_extensions.h"
#include "error.h"
#include "handles.h"

namespace aclnn_cpu::conv {
namespace {
// The CPU-only extensions enabled on this thread (aclnnCpuSetExtensions).
thread_local uint32_t tls_extensions = ACLNN_CPU_EXT_NONE;

// The processors 002's product table marks unsupported: named (rather than "no SoC") so that a
// program written for them gets the documented 161002 "当前处理器不支持卷积反向传播".
struct UnsupportedSoc {
  const char* name;
  const char* product;
};
constexpr UnsupportedSoc kUnsupportedSocs[] = {
    {"Ascend310B", "Atlas 200I/500 A2 inference products"},
    {"Ascend310", "Atlas 200/300/500 inference products"}};
}  // namespace

SocProfile current_soc(const char* api) {
  const char* env = std::getenv("ACLNN_CPU_SOC");
  SocProfile p;
  p.ext_double = (tls_extensions & ACLNN_CPU_EXT_DOUBLE) != 0;
  p.ext_strided_outputs = (tls_extensions & ACLNN_CPU_EXT_STRIDED_OUTPUTS) != 0;
  if (env == nullptr || *env == '\0' || std::strcmp(env, "Ascend910B") == 0) return p;
  if (std::strcmp(env, "Ascend910_93") == 0) {
    p.name = "Ascend910_93";
    return p;
  }
  if (std::strcmp(env, "Ascend910_95") == 0) {
    p.name = "Ascend910_95";
    p.a2 = false;
    p.is_910_95 = true;
    return p;
  }
  if (std::strcmp(env, "Ascend910") == 0 || std::strcmp(env, "Ascend310P") == 0) {
    p.name = std::strcmp(env, "Ascend910") == 0 ? "Ascend910" : "Ascend310P";
    p.a2 = false;
    p.old_series = true;
    p.bf16 = false;
    p.conv3d = false;
    p.empty_tensors = false;
    return p;
  }
  for (const UnsupportedSoc& u : kUnsupportedSocs) {
    check(std::strcmp(env, u.name) != 0, ACLNN_ERR_PARAM_INVALID, "the current processor ", u.name,
          " (", u.product, ", chosen with ACLNN_CPU_SOC) does not support ", api,
          ": the product tables of the spec documents mark it unsupported; the supported SoCs ",
          "are Ascend910B (default), Ascend910_93, Ascend910_95, Ascend910 and Ascend310P");
  }
  fail(ACLNN_ERR_PARAM_INVALID,
       cat("environment variable ACLNN_CPU_SOC = \"", env, "\" names no supported SoC; use ",
           "Ascend910B (default), Ascend910_93, Ascend910_95, Ascend910 or Ascend310P"));
}

void require(const void* p, const char* name) {
  check(p != nullptr, ACLNN_ERR_PARAM_NULLPTR, name, " is null");
}
void require(const void* p, const std::string& name) {
  require(p, name.c_str());
}
void require(const aclTensor* t, const char* name) {
  require(static_cast<const void*>(t), name);
  require_live(t, HandleKind::kTensor, name);
}
void require(const aclIntArray* a, const char* name) {
  require(static_cast<const void*>(a), name);
  require_live(a, HandleKind::kIntArray, name);
}
void require(const aclBoolArray* a, const char* name) {
  require(static_cast<const void*>(a), name);
  require_live(a, HandleKind::kBoolArray, name);
}

const char* dtype_str(aclDataType d) {
  return dtype_name(d);  // meta.cpp names every enumerator, the 8-bit ones of 95 included
}

ShapeText shape_of(const aclTensor* t) {
  return shape_str(t->view_dims);
}

bool is_8bit_float(aclDataType d) {
  return d == ACL_HIFLOAT8 || d == ACL_FLOAT8_E5M2 || d == ACL_FLOAT8_E4M3FN;
}

void check_dtype(const char* name, const aclTensor* t, const SocProfile& soc) {
  const aclDataType d = t->dtype;
  const bool ok = d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && soc.bf16) ||
                  (d == ACL_DOUBLE && soc.ext_double);
  if (ok) return;
  std::string why;
  if (d == ACL_BF16) {
    why = cat("; BFLOAT16 is not supported on ", soc.name,
              " (it is on Ascend910B, Ascend910_93 and Ascend910_95)");
  } else if (d == ACL_DOUBLE) {
    why =
        "; DOUBLE is a CPU-only extension of libaclnn, off unless the caller enables it with "
        "aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE) (aclnn/aclnn_cpu_extensions.h)";
  }
  fail(ACLNN_ERR_PARAM_INVALID,
       cat(name, " has dtype ", dtype_str(d), " (", static_cast<int>(d), "); supported dtypes on ",
           soc.name, " are FLOAT, FLOAT16", soc.bf16 ? ", BFLOAT16" : "",
           soc.ext_double ? " and DOUBLE (CPU-only extension, enabled)" : "", why));
}

void check_same_dtype(const char* out_name, const aclTensor* out, const char* src_name,
                      const aclTensor* src) {
  check(out->dtype == src->dtype, ACLNN_ERR_PARAM_INVALID, out_name, " has dtype ",
        dtype_str(out->dtype), " but ", src_name, " has ", dtype_str(src->dtype), "; ", out_name,
        " must have the dtype of ", src_name);
}

aclDataType promote(aclDataType a, aclDataType b) {
  if (a == b) return a;
  if (a == ACL_DOUBLE || b == ACL_DOUBLE) return ACL_DOUBLE;
  return ACL_FLOAT;  // any other mix of FLOAT / FLOAT16 / BFLOAT16
}

void check_format(const char* name, const aclTensor* t, std::initializer_list<aclFormat> allowed) {
  if (std::find(allowed.begin(), allowed.end(), t->format) != allowed.end()) return;
  std::string list;
  for (aclFormat f : allowed) list += cat(list.empty() ? "" : " or ", format_name(f));
  fail(ACLNN_ERR_PARAM_INVALID,
       cat(name, " has format ", format_name(t->format), " (", static_cast<int>(t->format),
           ") but a ", t->dim(), "-d tensor here must be ", list));
}

void check_conv_format(const char* name, const aclTensor* t) {
  switch (t->dim()) {
    case 3:
      return check_format(name, t, {ACL_FORMAT_NCL});
    case 4:
      return check_format(name, t, {ACL_FORMAT_NCHW});
    case 5:
      return check_format(name, t, {ACL_FORMAT_NCDHW});
    default:
      fail(ACLNN_ERR_PARAM_INVALID,
           cat(name, " has ", t->dim(), " dims (shape ", shape_of(t), "); a convolution takes 3-d ",
               "(N, C, L), 4-d (N, C, H, W) or 5-d (N, C, D, H, W) tensors"));
  }
}

void check_same_format(const char* out_name, const aclTensor* out, const char* src_name,
                       const aclTensor* src) {
  check(out->format == src->format, ACLNN_ERR_PARAM_INVALID, out_name, " has format ",
        format_name(out->format), " but ", src_name, " has ", format_name(src->format), "; ",
        out_name, " must have the format of ", src_name);
}

// The kernels load elements as their type (float, uint16_t, ...), which needs the data pointer
// aligned to the element size: refused here rather than read misaligned (undefined behaviour;
// UBSan reported it in im2col). Offsets count elements, so an aligned base aligns every element.
static void check_alignment(const char* name, const aclTensor* t) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(t->data);
  const size_t need = dtype_size(t->dtype);
  if (need <= 1 || address % need == 0) return;
  const uintptr_t has = address & (~address + 1);  // the largest power of 2 dividing it
  fail(ACLNN_ERR_PARAM_INVALID,
       cat(name, " has data pointer ", t->data, ", aligned to ", has, " byte", has == 1 ? "" : "s",
           ", but its ", dtype_str(t->dtype), " elements need ", need,
           "-byte alignment; pass a pointer aligned to the element size"));
}

void check_layout(const char* name, const aclTensor* t, bool is_output) {
  constexpr __int128 kInt64Max = INT64_MAX;
  __int128 numel = 1;
  for (size_t i = 0; i < t->view_dims.size(); ++i) {
    const int64_t d = t->view_dims[i];
    check(d >= 0, ACLNN_ERR_PARAM_INVALID, name, " has shape ", shape_of(t), ": dim ", i, " = ", d,
          " is negative");
    check(d <= 2147483647, ACLNN_ERR_PARAM_INVALID, name, " has shape ", shape_of(t), ": dim ", i,
          " = ", d, " exceeds 2147483647");
    numel *= d;
    check(numel <= kInt64Max, ACLNN_ERR_PARAM_INVALID, name, " has shape ", shape_of(t),
          " whose element count overflows int64");
  }
  check(t->strides.size() == t->view_dims.size(), ACLNN_ERR_PARAM_INVALID, name, " has ",
        t->strides.size(), " strides for ", t->view_dims.size(), " dims");
  check(numel * static_cast<__int128>(std::max<size_t>(dtype_size(t->dtype), 1)) <= kInt64Max,
        ACLNN_ERR_PARAM_INVALID, name, " has shape ", shape_of(t),
        " whose byte size overflows int64");
  for (size_t i = 0; i < t->strides.size(); ++i) {
    check(t->strides[i] >= 0, ACLNN_ERR_PARAM_INVALID, name, " has stride ", t->strides[i],
          " in dim ", i, " (strides ", shape_str(t->strides),
          "); negative strides are not supported");
  }
  check(t->offset >= 0, ACLNN_ERR_PARAM_INVALID, name, " has offset ", t->offset,
        "; the offset must be >= 0");
  if (numel == 0) return;
  check(t->data != nullptr, ACLNN_ERR_PARAM_INVALID, name, " has a null data pointer but ",
        static_cast<int64_t>(numel), " elements (shape ", shape_of(t), ")");
  check_alignment(name, t);
  __int128 last = t->offset;
  for (size_t i = 0; i < t->view_dims.size(); ++i)
    last += static_cast<__int128>(t->view_dims[i] - 1) * t->strides[i];
  __int128 storage = 1;
  for (int64_t d : t->storage_dims) {
    check(d >= 0, ACLNN_ERR_PARAM_INVALID, name, " has storage shape ", shape_str(t->storage_dims),
          " with a negative dim");
    storage = std::min<__int128>(storage * d, kInt64Max + 1);
  }
  check(last < storage, ACLNN_ERR_PARAM_INVALID, name, "'s view (shape ", shape_of(t), ", strides ",
        shape_str(t->strides), ", offset ", t->offset, ") reaches element ",
        static_cast<int64_t>(std::min(last, kInt64Max)), " but its storage ",
        shape_str(t->storage_dims), " holds only ",
        static_cast<int64_t>(std::min(storage, kInt64Max)), " elements");
  if (!is_output) return;
  // Non-overlap (sufficient test): sorted by stride, each dim must step past the whole extent of
  // the smaller-stride dims before it.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of non-unit dims
  for (size_t i = 0; i < t->view_dims.size(); ++i)
    if (t->view_dims[i] > 1) dims.emplace_back(t->strides[i], t->view_dims[i]);
  std::sort(dims.begin(), dims.end());
  __int128 extent = 0;  // largest offset reachable by the dims so far
  for (auto [stride, size] : dims) {
    check(stride > extent, ACLNN_ERR_PARAM_INVALID, name, " has overlapping elements (shape ",
          shape_of(t), ", strides ", shape_str(t->strides),
          "); an output must not write one element twice");
    extent += static_cast<__int128>(size - 1) * stride;
  }
}

void check_contiguous_output(const char* name, const aclTensor* t, const SocProfile& soc) {
  if (soc.ext_strided_outputs) return;
  const std::vector<int64_t>& dims = t->view_dims;
  for (int64_t d : dims)
    if (d == 0) return;  // nothing is written
  std::vector<int64_t> expected(dims.size());
  int64_t step = 1;  // check_layout bounded the element count
  bool contiguous = true;
  for (size_t i = dims.size(); i-- > 0;) {
    expected[i] = step;
    contiguous = contiguous && (dims[i] == 1 || t->strides[i] == step);
    step *= dims[i];
  }
  check(contiguous, ACLNN_ERR_PARAM_INVALID, name, " has strides ", shape_str(t->strides),
        " for shape ", shape_of(t), ", which is not contiguous; ", name, " must be contiguous ",
        "(the documents support no non-contiguous output on any SoC): expected strides ",
        shape_str(expected), ", any offset (the CPU-only extension ACLNN_CPU_EXT_STRIDED_OUTPUTS, ",
        "aclnn/aclnn_cpu_extensions.h, lifts this rule)");
}

Round check_cube_math(int8_t cube, aclDataType promoted, const SocProfile& soc,
                      bool hf32_float_only) {
  check(cube >= 0 && cube <= 3, ACLNN_ERR_PARAM_INVALID, "cubeMathType = ", static_cast<int>(cube),
        " is invalid; it must be 0 (KEEP_DTYPE), 1 (ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16) or 3 ",
        "(USE_HF32)");
  if (promoted == ACL_DOUBLE) return Round::kNone;  // CPU-only extension: exact, mode ignored
  check(!(hf32_float_only && cube == 3 && promoted != ACL_FLOAT), ACLNN_ERR_PARAM_INVALID,
        "cubeMathType = 3 (USE_HF32) is not supported for ", dtype_str(promoted),
        " inputs; it is supported only for FLOAT inputs");
  switch (promoted) {
    case ACL_FLOAT16:
      return Round::kNone;  // fp16 operands, fp32 accumulation, whatever the mode
    case ACL_BF16:
      check(cube != 2, ACLNN_ERR_PARAM_INVALID,
            "cubeMathType = 2 (USE_FP16) is not supported for BFLOAT16 inputs on ", soc.name,
            "; use 0, 1 or 3");
      return Round::kNone;
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E4M3FN:
      return Round::kNone;  // 95's table: every mode leaves "other dtypes" as they are
    default:
      break;
  }
  // FLOAT (possibly promoted from a 16-bit mix).
  if (soc.old_series) {
    check(cube == 1 || cube == 2, ACLNN_ERR_PARAM_INVALID,
          "cubeMathType = ", static_cast<int>(cube), cube == 0 ? " (KEEP_DTYPE)" : " (USE_HF32)",
          " is not supported for FLOAT inputs on ", soc.name,
          " (its Cube unit has no fp32/hf32 mode; Ascend910B, Ascend910_93 and Ascend910_95 ",
          "support it); use 1 or 2 (computed in FLOAT16)");
    return Round::kFp16;
  }
  if (cube == 0) return Round::kNone;
  if (cube == 2) return Round::kFp16;
  return Round::kHf32;  // 1 ALLOW_FP32_DOWN_PRECISION and 3 USE_HF32
}

View5 make_view(const aclTensor* t, std::array<int, 5> axes) {
  View5 v;
  v.data = static_cast<char*>(t->data);
  v.offset = t->offset;
  v.dtype = t->dtype;
  for (int i = 0; i < 5; ++i) {
    if (axes[i] < 0) continue;
    v.dims[i] = t->view_dims[axes[i]];
    v.strides[i] = t->strides[axes[i]];
  }
  return v;
}

View5 conv_view(const aclTensor* t) {
  switch (t->dim()) {
    case 3:
      return make_view(t, {0, 1, -1, -1, 2});
    case 4:
      return make_view(t, {0, 1, -1, 2, 3});
    default:
      return make_view(t, {0, 1, 2, 3, 4});
  }
}

View5 channel_view(const aclTensor* t) {
  return make_view(t, {-1, 0, -1, -1, -1});
}

}  // namespace aclnn_cpu::conv

extern "C" {

uint32_t aclnnCpuSetExtensions(uint32_t extensions) {
  const uint32_t previous = aclnn_cpu::conv::tls_extensions;
  aclnn_cpu::conv::tls_extensions = extensions & ACLNN_CPU_EXT_ALL;
  return previous;
}

uint32_t aclnnCpuGetExtensions(void) {
  return aclnn_cpu::conv::tls_extensions;
}

}  // extern "C"
