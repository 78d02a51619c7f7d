// The time-major forms of ConvTbc (tbc_gemm.h) as registered JobAlgorithms of scope kAll: when
// each applies to a call and when its cost rules prefer it. Their bodies are tbc_gemm.cpp,
// tbc_amx.cpp, tbc_bf16.cpp and tbc_convert.cpp; each computes every requested primitive of the
// call on the caller's rows, with no copy of the activations, and sums gradBias in its weight
// tasks.
#include <optional>

#include "conv/algorithms/tbc_gemm.h"
#include "conv/algorithms/tbc_rows.h"
#include "conv/engine/job_algorithm.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

// Stride 1, dilation 1, one group, D and H trivial: one position that reads input position 0 (a
// leading pad would put it in the padding, where the output gets nothing; found by the C-API
// fuzzer).
bool geometry_ok(const ConvJob& j) {
  const ConvGeometry& g = j.g;
  if (j.use_double || g.groups != 1 || g.N <= 0 || g.C_in <= 0 || g.C_out <= 0) return false;
  for (int d = 0; d < 2; ++d)
    if (g.in[d] != 1 || g.out[d] != 1 || g.k[d] != 1 || g.pad_before[d] != 0) return false;
  return g.stride[2] == 1 && g.dil[2] == 1 && (j.out_y || j.out_x || j.out_w);
}

// Every activation involved is time-major, every weight has C_out contiguous.
bool views_ok(const ConvJob& j) {
  auto act_ok = [](const std::optional<View5>& v) { return !v || tbc::time_major(*v); };
  auto w_ok = [](const std::optional<View5>& v) { return !v || tbc::weight_ok(*v); };
  const bool need_x = j.out_y || j.out_w, need_y = j.out_x || j.out_w, need_w = j.out_y || j.out_x;
  if ((need_x && !j.x) || (need_y && !j.y) || (need_w && !j.w)) return false;
  return act_ok(need_x ? j.x : std::nullopt) && act_ok(need_y ? j.y : std::nullopt) &&
         w_ok(need_w ? j.w : std::nullopt) && act_ok(j.out_y) && act_ok(j.out_x) && w_ok(j.out_w);
}

// Whether every tensor the job reads or writes (bias included) has a dtype in `ok`.
template <typename Ok>
bool dtypes_are(const ConvJob& j, Ok ok) {
  for (const auto* v : {&j.x, &j.w, &j.y, &j.bias, &j.out_y, &j.out_x, &j.out_w})
    if (*v && !ok((*v)->dtype)) return false;
  return true;
}

bool float_kind(aclDataType d) {
  return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16;
}

// Whether `job` is a time-major 1-d problem at all (every form needs this); else f.reason says so.
bool time_major_job(const ConvJob& job, JobFit& f) {
  if (geometry_ok(job) && views_ok(job)) return true;
  f.reason = "not time-major 1-d views (stride 1, dilation 1, one group, [T, B, C] activations)";
  return false;
}

// Whether the weight gradient of `job` also sums its bias gradient (the weight tasks read every
// dy row anyway).
bool fuses_bias(const ConvJob& job) {
  return job.out_w && job.out_bias && job.y && job.bias_sum_of == ConvJob::BiasOf::kY &&
         job.out_bias->numel() == job.g.C_out;
}
// gradBias for the run of `prim`, or null (summed elsewhere).
float* bias_of(const ConvJob& job, Primitive prim, const JobOperands& o) {
  return prim == Primitive::kBackwardWeight && fuses_bias(job) ? o.bias : nullptr;
}

// Every form's run: its body (tbc_gemm.h) on primitive `prim`, with gradBias where the weight
// tasks sum it; returns whether they did.
using TbcBody = void (*)(const ConvJob&, const TbcScratch&, Primitive, int, char*, float*);
template <TbcBody kBody>
bool run_form(const ConvJob& j, const Problem& p, const JobFit& f, Primitive prim,
              const JobOperands& o) {
  float* bias = bias_of(j, prim, o);
  kBody(j, f.scratch, prim, p.slots, o.scratch, bias);
  return bias != nullptr;
}

// tbc_gemm: fp32 views, taken wherever it applies. Our packed GEMM (and its scratch) from ~4M
// multiply-adds (forced: always), like Problem::own_gemm; below, OpenBLAS on the rows. cubeMathType
// USE_FP16 too, where our packed GEMM rounds the operands to fp16 as it packs them (always our
// GEMM then: OpenBLAS cannot round), instead of tbc_convert's copy of every row it reads.
constexpr double kTbcOwnGemmMinMacs = double(1 << 22);
JobFit plan_gemm(const JobProblem& jp) {
  JobFit f;
  const ConvJob& j = *jp.job;
  if (!time_major_job(j, f)) return f;
  const bool fp16 = j.round == Round::kFp16 && gemm::packs_fp16();
  if ((j.round != Round::kNone && !fp16) ||
      !dtypes_are(j, [](aclDataType d) { return d == ACL_FLOAT; })) {
    f.reason = "needs fp32 views, unrounded or USE_FP16 on our packed GEMM";
    return f;
  }
  f.applies = f.preferred = true;
  f.reason = fp16 ? "time-major 1-d views, fp16 rounding as packed" : "time-major 1-d views";
  const ConvGeometry& g = j.g;
  const double macs = static_cast<double>(g.N) * g.C_out * g.out[2] * g.C_in * g.k[2];
  const bool own_gemm =
      gemm::pack_elems() > 0 && (fp16 || macs >= kTbcOwnGemmMinMacs || any_algorithm_forced());
  f.scratch = tbc_gemm_scratch(j, own_gemm);
  return f;
}

// tbc_amx: bf16 views (Problem::bf16: no fp16 rounding) on the AMX tiles, wherever the bf16_amx
// policy is on (the CPU module's decision, or the test library's tile model): preferred at every
// size, as amx_gemm is on the regular path, which would otherwise take these calls after packing
// the views to [N, C, T]. Outputs and bias of any float dtype (rounded once as stored).
JobFit plan_amx(const JobProblem& jp) {
  JobFit f;
  const ConvJob& j = *jp.job;
  const Problem& p = jp.problem;
  if (!time_major_job(j, f)) return f;
  if (!p.bf16 || !p.bf16_amx || !dtypes_are(j, float_kind)) {
    f.reason = "needs bf16 inputs on the AMX tiles (policy bf16_amx)";
    return f;
  }
  f.applies = f.preferred = true;
  f.reason = "time-major 1-d bf16 views on the AMX tiles";
  f.scratch = tbc_amx_scratch(j, p.slots);
  return f;
}

// tbc_bf16: bf16 views (Problem::bf16: no fp16 rounding) where the dot kernels run, preferred from
// ~4M multiply-adds (vdpbf16ps reads bf16 subnormals as zero, so small problems, which gain
// nothing from it, stay exact).
constexpr double kBf16MinMacs = double(1 << 22);
JobFit plan_bf16(const JobProblem& jp) {
  JobFit f;
  const ConvJob& j = *jp.job;
  const Problem& p = jp.problem;
  if (!time_major_job(j, f)) return f;
  if (!p.bf16 || !p.bf16_dot || !dtypes_are(j, float_kind) ||
      (j.bias && j.bias->dtype != ACL_BF16)) {
    f.reason = "needs bf16 inputs and the AVX512_BF16 dot kernels";
    return f;
  }
  f.applies = true;
  f.preferred = p.macs() >= kBf16MinMacs;
  f.reason = f.preferred ? "time-major 1-d bf16 views" : "below 4M multiply-adds: exact fp32";
  f.scratch = tbc_bf16_scratch(j, p.slots);
  return f;
}

// tbc_convert: any float dtype or rounding, each task converting the rows it reads, so no
// whole-tensor copy is made; at every tier (OpenBLAS on the converted panels at tier none). (bf16
// on the AMX tiles is tbc_amx's, listed before it.)
JobFit plan_convert(const JobProblem& jp) {
  JobFit f;
  const ConvJob& j = *jp.job;
  const Problem& p = jp.problem;
  if (!time_major_job(j, f)) return f;
  if (!dtypes_are(j, float_kind)) {
    f.reason = "needs fp32, fp16 or bf16 views";
    return f;
  }
  f.applies = f.preferred = true;
  f.reason = "time-major 1-d views, converted as read";
  f.scratch = tbc_convert_scratch(j, p.slots);
  return f;
}

}  // namespace

// ConvTbc's per-tap GEMMs split time steps by their own rule (tbc_gemm.h): "per-tap-gemms".
const JobAlgorithm kTbcGemm{"tbc_gemm", JobScope::kAll, plan_gemm, run_form<tbc_run_gemm>,
                            "per-tap-gemms"};
// tbc_amx: one tile GEMM per task of rows (the taps concatenated along the reduction), and per
// chunk of rows and tap in the weight gradient. No `needs`: the tiles are the bf16_amx policy's.
const JobAlgorithm kTbcAmx{"tbc_amx",
                           JobScope::kAll,
                           plan_amx,
                           run_form<tbc_run_amx>,
                           "amx-tap-panels",
                           /*needs=*/{},
                           /*bf16_only=*/true,
                           /*reads_sources=*/false,
                           Bf16Engine::kAmx};
const JobAlgorithm kTbcBf16{"tbc_bf16",        JobScope::kAll,
                            plan_bf16,         run_form<tbc_run_bf16>,
                            "per-tap-gemms",   /*needs=*/cpu::kAvx512Bf16Features,
                            /*bf16_only=*/true};
const JobAlgorithm kTbcConvert{"tbc_convert", JobScope::kAll, plan_convert,
                               run_form<tbc_run_convert>, "per-tap-gemms"};

}  // namespace aclnn_cpu::conv
