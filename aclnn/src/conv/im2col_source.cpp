// im2col.h's gather from an input as stored: the column chunk of the GEMM lowerings built
// straight from fp16 / bf16 / 8-bit / rounded fp32 inputs. Each run of a column-matrix row
// (for_each_row_run, the walk every im2col form shares) is one Source::convert of b - a
// elements at the conv's W stride, so the conversion happens inside the chunk the GEMM then
// reads (L2-sized), never as a pass over the whole tensor.
#include <algorithm>

#include "conv/im2col.h"
#include "conv/source.h"

namespace aclnn_cpu::conv {
namespace {

// E: the stored element type (its size is all the walk needs to step through rows).
template <typename E>
void gather(const ConvGeometry& g, const Source& x, int64_t nchan, int64_t j0, int64_t j1,
            float* col) {
  const int64_t cols = j1 - j0;
  if (cols <= 0) return;
  const int64_t oH = g.out[1], oW = g.out[2], S_in = g.in_size(), sw = g.stride[2];
  const int64_t od0 = j0 / (oH * oW), oh0 = (j0 / oW) % oH, ow0 = j0 % oW;
  const E* base = static_cast<const E*>(x.data);
  float* crow = col;  // row (c, kd, kh, kw) of col [nchan*K, cols]
  for (int64_t c = 0; c < nchan; ++c) {
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t offd = kd * g.dil[0] - g.pad_before[0];
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t offh = kh * g.dil[1] - g.pad_before[1];
        for (int64_t kw = 0; kw < g.k[2]; ++kw, crow += cols) {
          const int64_t offw = kw * g.dil[2] - g.pad_before[2];
          auto run = [&](int64_t o, int64_t ow, int64_t seg, const E* xrow, int64_t a, int64_t b) {
            float* dst = crow + o;  // dst[q - ow] is the entry of output column q
            if (!xrow) {
              std::fill(dst, dst + seg, 0.0f);
              return;
            }
            std::fill(dst, dst + (a - ow), 0.0f);
            Source{xrow + (a * sw + offw), x.kind}.convert(b - a, sw, dst + (a - ow));
            std::fill(dst + (b - ow), dst + seg, 0.0f);
          };
          for_each_row_run(g, base + c * S_in, offd, offh, offw, od0, oh0, ow0, cols, run);
        }
      }
    }
  }
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
