// The convolution-backward benchmark problems of the performance issue, shared by the Google
// Benchmark suites (conv_bench.cpp, onednn_conv_bench.cpp) and the workspace test
// (tests/aclnn/test_conv_workspace.cpp), and listed again in compare_pytorch.py (keep them in
// sync).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aclbench {

struct Case {
  std::string name;
  bool tbc = false;         // aclnnConvTbcBackward (x = [T, B, C_in], w = [K, C_in, C_out])
  bool transposed = false;  // aclnnConvolutionBackward with transposed = true
  std::vector<int64_t> x;   // input shape
  std::vector<int64_t> w;   // weight shape
  std::vector<int64_t> stride, pad, dil, out_pad;
  int64_t groups = 1;
};

// Nominal multiply-accumulates of one gradient (grad_input or grad_weight; they are equal): every
// kernel tap counted, padding included, i.e. N * C_out * S_out * (C_in / groups) * K for the
// regular convolution the problem is (or, transposed, whose data gradient it is).
int64_t macs_per_gradient(const Case& c, const std::vector<int64_t>& y_shape);

const std::vector<Case>& cases();

}  // namespace aclbench
