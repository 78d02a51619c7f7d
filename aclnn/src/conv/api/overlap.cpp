#include "conv/api/overlap.h"

#include <cstdint>
#include <vector>

#include "conv/api/checks.h"
#include "error.h"

namespace aclnn_cpu::conv {
namespace {

// [begin, end) bytes reachable by a view; empty for empty views and null tensors.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
  bool intersects(const ByteRange& o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
};

ByteRange byte_range(const aclTensor* t) {
  if (t == nullptr || t->data == nullptr) return {};
  int64_t last = t->offset;  // check_layout proved the sum fits and dims/strides are >= 0
  for (size_t i = 0; i < t->view_dims.size(); ++i) {
    if (t->view_dims[i] == 0) return {};
    last += (t->view_dims[i] - 1) * t->strides[i];
  }
  const auto size = static_cast<uintptr_t>(dtype_size(t->dtype));
  const auto base = reinterpret_cast<uintptr_t>(t->data);
  return {base + static_cast<uintptr_t>(t->offset) * size,
          base + (static_cast<uintptr_t>(last) + 1) * size};
}

}  // namespace

void check_no_overlap(const std::vector<NamedTensor>& inputs,
                      const std::vector<NamedTensor>& outputs) {
  std::vector<NamedTensor> seen_outputs;
  for (const NamedTensor& out : outputs) {
    const ByteRange r = byte_range(out.t);
    if (r.empty()) continue;
    for (const NamedTensor& in : inputs) {
      if (!r.intersects(byte_range(in.t))) continue;
      check(false, ACLNN_ERR_PARAM_INVALID, out.name, " shares memory with ", in.name, " (",
            out.name, " view ", shape_of(out.t), " offset ", out.t->offset, ", ", in.name, " view ",
            shape_of(in.t), " offset ", in.t->offset,
            ", over the same bytes); an output must not overlap an input");
    }
    for (const NamedTensor& other : seen_outputs) {
      if (!r.intersects(byte_range(other.t))) continue;
      check(false, ACLNN_ERR_PARAM_INVALID, out.name, " shares memory with ", other.name,
            "; two outputs must not overlap");
    }
    seen_outputs.push_back(out);
  }
}

}  // namespace aclnn_cpu::conv
