#include "cases.h"

namespace aclbench {

int64_t macs_per_gradient(const Case& c, const std::vector<int64_t>& y) {
  if (c.tbc) {  // y [T_out, B, C_out], w [K, C_in, C_out]
    return y[0] * y[1] * c.w[0] * c.w[1] * c.w[2];
  }
  int64_t k = 1, s_small = 1;  // kernel taps; spatial size of the side with the fewest positions
  for (size_t d = 2; d < c.w.size(); ++d) k *= c.w[d];
  // Regular: MACs = N * C_out * S_out * w[1] * K. Transposed: the regular geometry has
  // S_out = the transposed input's spatial size, C_out = w[0], so MACs = N * w[0] * S_x * w[1] * K.
  const std::vector<int64_t>& spatial_of = c.transposed ? c.x : y;
  for (size_t d = 2; d < spatial_of.size(); ++d) s_small *= spatial_of[d];
  const int64_t c_out_regular = c.transposed ? c.w[0] : y[1];
  return c.x[0] * c_out_regular * s_small * c.w[1] * k;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"c2d_resnet3x3", false, false, {32, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1},
      {"c2d_resnet1x1", false, false, {32, 256, 56, 56}, {64, 256, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1},
      {"c2d_stride2", false, false, {32, 128, 28, 28}, {256, 128, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1},
      {"c2d_first7x7", false, false, {16, 3, 224, 224}, {64, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, {0, 0}, 1},
      {"c2d_depthwise", false, false, {32, 128, 56, 56}, {128, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 128},
      {"c2d_grouped", false, false, {32, 128, 28, 28}, {128, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 8},
      {"c2d_dilated", false, false, {16, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, 1},
      {"c2d_mnist1", false, false, {64, 1, 28, 28}, {32, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, 1},
      {"c2d_mnist2", false, false, {64, 32, 14, 14}, {64, 32, 5, 5}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, 1},
      {"c1d_audio", false, false, {16, 64, 4096}, {128, 64, 9}, {1}, {4}, {1}, {0}, 1},
      {"c3d_video", false, false, {4, 32, 16, 56, 56}, {64, 32, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 1},
      {"ct2d_decoder", false, true, {16, 64, 16, 16}, {64, 32, 4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1},
      {"ct3d", false, true, {2, 32, 8, 28, 28}, {32, 16, 3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
      {"tbc", true, false, {512, 32, 256}, {3, 256, 256}, {}, {1}, {}, {}, 1},
  };
  return all;
}

}  // namespace aclbench
