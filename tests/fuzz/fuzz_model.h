// The fuzzer's model of one aclnn call: a byte reader, tensor specs (what aclCreateTensor is
// given), and the buffers behind them. The input bytes first draw a consistent problem (so most
// inputs reach the kernels), then a few single defects; see aclnn_api_fuzz.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace aclfuzz {

// Reads the fuzzer's bytes front to back; once they run out every read gives 0 (the "plain"
// choice), so short inputs still describe a whole call.
class FuzzBytes {
 public:
  FuzzBytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // lo..hi inclusive (hi - lo < 256), from one byte.
  int64_t pick(int64_t lo, int64_t hi) { return lo + byte() % (hi - lo + 1); }
  // True with probability about in256/256.
  bool chance(int in256) { return pos_ < size_ && byte() < in256; }
  template <class T, size_t N>
  T one_of(const T (&options)[N]) {
    return options[byte() % N];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// What one aclCreateTensor call is given, plus where its bytes live. dtype and format are plain
// integers: the fuzzer passes values outside the enums, as a C caller may.
struct TensorSpec {
  std::string role;  // "gradOutput", "input", ... (for messages)
  bool is_output = false;
  bool null_tensor = false;  // pass nullptr instead of a tensor
  bool null_data = false;    // pass a null data pointer
  std::vector<int64_t> dims, strides, storage_dims;
  int64_t offset = 0;
  int32_t dtype = ACL_FLOAT;
  int32_t format = ACL_FORMAT_ND;
  int alias_of = -1;  // index of the spec whose buffer this one shares (-1: its own)

  // Filled by materialize():
  std::shared_ptr<std::vector<uint8_t>> buffer;  // exactly the storage the spec claims
  std::vector<uint8_t> initial;                  // buffer image before the call
  aclTensor* handle = nullptr;
};

// Contiguous row-major strides of `dims` (0-size dims count as 1).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

// A spec with shape `dims`, laid out by `layout` (0 contiguous, 1 reversed-order strides, 2 padded
// strides and an offset, 3 an N-d storage shape equal to the view) and a 1-d storage that fits.
TensorSpec make_spec(std::string role, std::vector<int64_t> dims, int32_t dtype, int32_t format,
                     int layout, bool is_output);

// Element size of a dtype the kernels know (1 for HIFLOAT8 / FLOAT8_E4M3FN, 2, 4 or 8); 0 for
// every other integer.
size_t float_dtype_size(int32_t dtype);
bool is_float_dtype(int32_t dtype);

// Allocates every spec's buffer (shared by aliases), fills inputs with multiples of 1/8 in
// [-2, 2] (exact in every float dtype, the 8-bit ones included, so sums are exact too) and outputs
// with a sentinel byte, then creates the aclTensors. Storages too large to hold get a null data
// pointer.
void materialize(std::vector<TensorSpec>& specs, uint64_t seed);
void destroy(std::vector<TensorSpec>& specs);

// Logical row-major values of a float view (dims >= 0, inside its buffer).
std::vector<double> read_view(const TensorSpec& t);
// Whether every storage byte outside the view still holds its initial value (all bytes when
// `whole` is set: an output the call must not have touched).
bool untouched_outside_view(const TensorSpec& t, bool whole);
// Whether the view has the row-major strides of its dims (size-1 dims aside; empty: true), the
// layout the backward APIs require of the outputs they write (aclnn/CONFORMANCE.md).
bool is_contiguous(const TensorSpec& t);
// The view's element count, or -1 when the spec is not a readable float view inside its buffer.
int64_t readable_numel(const TensorSpec& t);

// Applies one defect, chosen by the bytes, to a tensor spec (dims, strides, offset, storage,
// dtype, format, null tensor or data, rank).
void mutate_tensor(FuzzBytes& in, TensorSpec& t);

}  // namespace aclfuzz
