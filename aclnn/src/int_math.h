// Small integer helpers shared by the kernels. Plain (non-template) inline functions defined
// outside any target region: a kernel file compiled for AVX2 or AVX-512 inlines them, and an
// out-of-line copy, if one is ever emitted, is baseline code (a std::min instance made inside a
// target region could be the one the linker keeps for generic code too).
#pragma once

#include <cstdint>

namespace aclnn_cpu {

inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

}  // namespace aclnn_cpu
