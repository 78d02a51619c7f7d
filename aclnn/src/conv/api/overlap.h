// Phase-1 memory check shared by the convolution APIs: an output must not share memory with an
// input (the kernels read inputs while writing outputs, in blocks, on several threads) nor with
// another output (one would overwrite the other). CANN states no such rule in its documents; the
// chip's result would be just as undefined, so refusing is the only answer that cannot be wrong.
#pragma once

#include <vector>

#include "meta.h"

namespace aclnn_cpu::conv {

struct NamedTensor {
  const char* name;
  const aclTensor* t;  // null (an absent or unrequested tensor) is skipped
};

// 161002 naming both tensors when the byte range an output's view can reach intersects that of
// an input or of another output. Views must already have passed check_layout. The test is on
// ranges, so two interleaved views of one buffer that never touch the same byte are refused too.
void check_no_overlap(const std::vector<NamedTensor>& inputs,
                      const std::vector<NamedTensor>& outputs);

}  // namespace aclnn_cpu::conv
