// A GEMM B operand read from an input as stored (conv/engine/source.h): B(k, j) = element k * ld +
// j of the source, converted (fp16, bf16, rounded fp32, ...) row by row while the packed GEMM packs
// its panels, so the fp32 matrix is never stored and each element is converted once per GEMM.
#pragma once

#include <cstdint>

#include "conv/engine/source.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

class SourceRows final : public gemm::BPanels {
 public:
  SourceRows(const Source& src, int64_t ld) : src_(src), ld_(ld) {}
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;

 private:
  Source src_;
  int64_t ld_;
};

}  // namespace aclnn_cpu::conv
