// Implicit im2col: the column matrix of a convolution (im2col.h's layout: row r = c*K + tap,
// column j = output position) handed to the AVX-512 GEMM panel by panel, gathered straight from
// the input into the packed format, so the column matrix is never stored. For a forward conv
// that saves writing the im2col chunk and reading it back to pack it (about a third of the time
// of a 3x3 layer's forward GEMM, measured on the benchmark cases).
#pragma once

#include <cstdint>

#include "conv/geometry.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

class Im2colPanels final : public gemm::BPanels {
 public:
  // x: the first input channel of the (sample, group); columns are output positions
  // col0 + j of the geometry's output.
  Im2colPanels(const ConvGeometry& g, const float* x, int64_t col0) : g_(g), x_(x), col0_(col0) {}

  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;

 private:
  const ConvGeometry& g_;
  const float* x_;
  int64_t col0_;
};

}  // namespace aclnn_cpu::conv
