// Internal to nn/: the write plan shared by serialize_safetensors (bytes in memory) and
// save_safetensors (bytes streamed to a file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/checkpoint.h"

namespace aclgrad::nn::safetensors_detail {

struct PlannedTensor {
  std::string name;
  Tensor tensor;  // contiguous
};

/// Validates the names, orders the tensors as the reference writer does (alignment, then name)
/// and builds the padded JSON header. Returns the tensors in data order.
std::vector<PlannedTensor> plan(const TensorMap& tensors, const Metadata& metadata,
                                std::string& header);
/// The 8-byte little-endian header length.
std::string length_prefix(uint64_t n);

}  // namespace aclgrad::nn::safetensors_detail
