// im2col.h's gather from an input as stored: the column chunk of the GEMM lowerings built
// straight from fp16 / bf16 / 8-bit / rounded fp32 inputs. Each run of a column-matrix row
// (for_each_col_run, the tap walk every im2col form shares) is one Source::convert of b - a
// elements at the conv's W stride, so the conversion happens inside the chunk the GEMM then
// reads (L2-sized), never as a pass over the whole tensor.
#include <algorithm>

#include "conv/kernels/im2col/im2col.h"
#include "conv/engine/source.h"

namespace aclnn_cpu::conv {
namespace {

// E: the stored element type (its size is all the walk needs to step through rows).
template <typename E>
void gather(const ConvGeometry& g, const Source& x, int64_t nchan, int64_t j0, int64_t j1,
            float* col) {
  const int64_t sw = g.stride[2];
  auto entries = [&](float* dst, int64_t ow, int64_t seg, const E* xrow, int64_t a, int64_t b,
                     int64_t offw) {
    if (!xrow) {
      std::fill(dst, dst + seg, 0.0f);
      return;
    }
    std::fill(dst, dst + (a - ow), 0.0f);
    Source{xrow + (a * sw + offw), x.kind}.convert(b - a, sw, dst + (a - ow));
    std::fill(dst + (b - ow), dst + seg, 0.0f);
  };
  for_each_col_run(g, static_cast<const E*>(x.data), nchan, j0, j1, col, entries);
}

}  // namespace

void im2col(const ConvGeometry& g, const Source& x, int64_t nchan, int64_t j0, int64_t j1,
            float* col) {
  switch (x.elem_bytes()) {
    case 1:
      return gather<uint8_t>(g, x, nchan, j0, j1, col);
    case 2:
      return gather<uint16_t>(g, x, nchan, j0, j1, col);
    default:
      return gather<float>(g, x, nchan, j0, j1, col);
  }
}

}  // namespace aclnn_cpu::conv
