// The tiles the AMX kernels run on in this build (gemm/amx_gemm.h: AmxTiles). This is the one
// source that differs between libaclnn and the test library libaclnn_amx_model: CMake compiles it
// with ACLNN_AMX_TILES_MODEL=1 for the latter, which links every other object of libaclnn
// unchanged. The shipped library has no path to the model.
#include "cpu/cpu.h"
#include "gemm/amx_gemm.h"

namespace aclnn_cpu::gemm {

#if defined(ACLNN_AMX_TILES_MODEL) && ACLNN_AMX_TILES_MODEL

AmxTiles amx_tiles() {
  return AmxTiles::kModel;
}

void amx_gemm_bf16(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                   float* C, int64_t ldc, bool accumulate) {
  amx_gemm_bf16_model(M, N, K, Ap, Bp, C, ldc, accumulate);
}

#else

AmxTiles amx_tiles() {
  return cpu::policy(cpu::Policy::kBf16Amx) ? AmxTiles::kUnit : AmxTiles::kOff;
}

void amx_gemm_bf16(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                   float* C, int64_t ldc, bool accumulate) {
  amx_gemm_bf16_unit(M, N, K, Ap, Bp, C, ldc, accumulate);
}

#endif

const char* amx_tiles_name(AmxTiles t) {
  switch (t) {
    case AmxTiles::kUnit:
      return "on";
    case AmxTiles::kModel:
      return "model";
    default:
      return "off";
  }
}

}  // namespace aclnn_cpu::gemm
