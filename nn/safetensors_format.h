// Internal to nn/: the write plan shared by serialize_safetensors (bytes in memory) and
// save_safetensors (bytes streamed to a file), and the header checks shared by
// deserialize_safetensors and load_safetensors (which reads the data only once they pass).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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

struct DtypeInfo {
  const char* name;
  int rank;  // position in the reference's Dtype enum (its alignment order)
};
DtypeInfo info_of(Dtype d);

/// One tensor of a checked header: data at [begin, end) of the data section.
struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  uint64_t begin, end;
};
struct Header {
  std::vector<Entry> entries;
  Metadata metadata;
};

/// Deepest JSON nesting accepted (serde_json's recursion limit, which the reference uses); a
/// valid header nests 3 deep. Bounded so nothing recursive ever meets a crafted file.
inline constexpr int kMaxJsonDepth = 128;
/// The byte index in text where [ or { nesting (outside strings) first exceeds max_depth, or
/// npos. Runs before any JSON parser sees text.
size_t json_depth_exceeded(std::string_view text, int max_depth = kMaxJsonDepth);
/// At most keep + 16 characters of text for an error message, with the full size when cut.
std::string excerpt(std::string_view text, size_t keep = 64);

/// The header length N from the first 8 bytes of a file of file_size bytes (checked against the
/// limit and the file size). Error "load_safetensors: '<source>': ..." otherwise.
uint64_t header_length(std::string_view prefix, uint64_t file_size, const std::string& source);
/// Parses and validates the N header bytes against a data section of data_size bytes: every
/// entry's dtype, shape and offsets, and that the tensors tile the section exactly.
Header parse_header(std::string_view text, uint64_t data_size, const std::string& source);
/// Checks that BOOL data holds only bytes 0 and 1.
void check_bool_bytes(const Entry& e, const char* bytes, const std::string& source);

}  // namespace aclgrad::nn::safetensors_detail
