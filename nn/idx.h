// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header
//   0x00 0x00 <type code> <ndim>, then ndim uint32 sizes,
// followed by prod(sizes) elements. Only unsigned bytes (type code 0x08) are supported, which is
// what the (Fashion-)MNIST images (magic 0x00000803, [N, 28, 28]) and labels (0x00000801, [N])
// use. Files may be plain or gzip-compressed (detected from the content, not the name).
//
// The reader validates everything and never reads past the data: the magic number, the type
// code, the number of dims, and that the (decompressed) size is exactly header + prod(sizes). A
// truncated file, a truncated or corrupt gzip stream, trailing bytes or a missing file throw
// aclgrad::Error naming the file, what was expected and what was found, e.g.
//   read_idx: 'train-images-idx3-ubyte': truncated: the header (magic 0x00000803, sizes
//   [60000, 28, 28]) promises 47040000 data bytes after the 16-byte header, found 1000
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad::data {

/// The contents of an IDX file of unsigned bytes.
struct IdxData {
  std::vector<int64_t> sizes;  // from the header
  std::vector<uint8_t> bytes;  // prod(sizes) elements, row-major
};

/// Reads an IDX file of unsigned bytes. expected_ndim >= 0 also requires that many dims.
IdxData read_idx(const std::string& path, int64_t expected_ndim = -1);

/// An image file ([N, H, W], magic 0x00000803) as float32 [N, 1, H, W] with values byte / 255
/// (torchvision's ToTensor), in [0, 1].
Tensor read_idx_images(const std::string& path);

/// A label file ([N], magic 0x00000801) as int64 [N].
Tensor read_idx_labels(const std::string& path);

}  // namespace aclgrad::data
