#include "conv/engine/geometry.h"

namespace aclnn_cpu::conv {

ConvGeometry flipped_for_data(const ConvGeometry& g) {
  ConvGeometry f = g;
  f.C_in = g.C_out;
  f.C_out = g.C_in;
  f.in = g.out;
  f.out = g.in;
  for (int d = 0; d < 3; ++d) {
    f.pad_before[d] = g.dil[d] * (g.k[d] - 1) - g.pad_before[d];
    f.pad_after[d] = g.dil[d] * (g.k[d] - 1) - g.pad_after[d];
  }
  return f;
}

}  // namespace aclnn_cpu::conv
