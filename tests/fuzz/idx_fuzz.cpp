// libFuzzer target of the IDX reader (nn/idx.cpp: Fashion-MNIST's format, plain or gzip). Each
// input is the bytes of a file. The properties checked, each a crash the fuzzer reports:
//   - read_idx gives sizes and bytes with prod(sizes) == bytes, or throws aclgrad::Error (any
//     other exception escapes and is reported) with a message of at most kMessageLimit bytes
//     besides the path;
//   - on a plain input it accepts exactly what an independent model of the format (model())
//     accepts, with the sizes and bytes the file holds;
//   - a plain input also goes through the gzip path (compressed here): both must agree, same
//     data or both an error. The fuzzer thereby reaches the header checks behind zlib too;
//   - read_idx_images and read_idx_labels accept exactly the 3-d and 1-d files, with the shapes
//     [N, 1, H, W] / [N] and the values byte / 255 / the bytes.
// Sanitizers and libFuzzer's -malloc_limit_mb / -timeout report the rest: a header that claims
// terabytes must not allocate them (the reader grows its buffer as data arrives).
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/idx.h"
#include "reader_fuzz_util.h"

namespace {

using aclgrad::Tensor;
using aclgrad::data::IdxData;
using readerfuzz::finding;

// 255 dims written out in a message take ~3 KB; anything beyond that is echoing the file.
constexpr size_t kMessageLimit = 4096;

std::optional<IdxData> attempt(const std::string& path) {
  try {
    IdxData d = aclgrad::data::read_idx(path);
    uint64_t count = 1;
    for (int64_t s : d.sizes) count *= static_cast<uint64_t>(s);  // the reader bounds it (2^40)
    if (d.sizes.empty() || count != d.bytes.size())
      finding("read_idx returned " + std::to_string(d.bytes.size()) + " bytes for " +
              std::to_string(d.sizes.size()) + " sizes whose product is " + std::to_string(count));
    if (readerfuzz::verbose())
      std::fprintf(stderr, "read sizes %s\n", aclgrad::format_shape(d.sizes).c_str());
    return d;
  } catch (const aclgrad::Error& e) {
    readerfuzz::check_message(e.what(), kMessageLimit + path.size());
    if (readerfuzz::verbose()) std::fprintf(stderr, "%s\n", e.what());
    return std::nullopt;
  }
}

// What the format (nn/idx.h) makes of plain bytes, written independently of the reader: the
// sizes of a valid file (magic 0x0000 0x08 <ndim >= 1>, ndim big-endian uint32 sizes, then
// exactly prod(sizes) bytes, at most 2^40 of them; an empty file whatever its other sizes), or
// nullopt.
std::optional<std::vector<int64_t>> model(std::string_view b) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(b[i]); };
  if (b.size() < 4 || byte(0) != 0 || byte(1) != 0 || byte(2) != 0x08 || byte(3) == 0)
    return std::nullopt;
  const size_t ndim = byte(3), header = 4 + 4 * ndim;
  if (b.size() < header) return std::nullopt;
  constexpr unsigned __int128 kMaxElements = uint64_t{1} << 40;
  std::vector<int64_t> sizes;
  unsigned __int128 count = 1;  // saturates past the limit: 255 factors below 2^32 each
  for (size_t d = 0; d < ndim; ++d) {
    const uint32_t s = (uint32_t{byte(4 + 4 * d)} << 24) | (uint32_t{byte(5 + 4 * d)} << 16) |
                       (uint32_t{byte(6 + 4 * d)} << 8) | uint32_t{byte(7 + 4 * d)};
    sizes.push_back(s);
    count = std::min(count * s, kMaxElements + 1);
  }
  for (int64_t s : sizes)
    if (s == 0) count = 0;
  if (count > kMaxElements || b.size() - header != count) return std::nullopt;
  return sizes;
}

// The bytes in gzip format (zlib's deflate with a gzip wrapper, as the gzip tool writes).
std::string gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    finding("deflateInit2 failed");
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) finding("deflate did not finish");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// read_idx_images / read_idx_labels against the generic read: accepted exactly for 3-d / 1-d.
template <typename Read, typename Check>
void check_typed(Read read, const char* what, const std::optional<IdxData>& generic, size_t ndim,
                 Check check_values) {
  const bool expected = generic.has_value() && generic->sizes.size() == ndim;
  Tensor t;
  try {
    t = read();
  } catch (const aclgrad::Error& e) {
    readerfuzz::check_message(e.what(), kMessageLimit + 64);
  }
  if (t.defined() != expected)
    finding(std::string(what) + (expected ? " refused" : " accepted") + " a " +
            std::to_string(generic ? generic->sizes.size() : 0) + "-d file");
  if (t.defined()) check_values(t, *generic);
}

void check_images_and_labels(const std::string& path, const std::optional<IdxData>& generic) {
  check_typed([&] { return aclgrad::data::read_idx_images(path); }, "read_idx_images", generic, 3,
              [](const Tensor& t, const IdxData& d) {
                if (t.sizes() != aclgrad::Shape{d.sizes[0], 1, d.sizes[1], d.sizes[2]})
                  finding("read_idx_images gave shape " + aclgrad::format_shape(t.sizes()));
                const float* p = t.data_ptr<float>();
                for (size_t i = 0; i < d.bytes.size(); ++i)
                  if (p[i] != static_cast<float>(d.bytes[i]) / 255.0f)
                    finding("read_idx_images value " + std::to_string(i) + " is not byte / 255");
              });
  check_typed([&] { return aclgrad::data::read_idx_labels(path); }, "read_idx_labels", generic, 1,
              [](const Tensor& t, const IdxData& d) {
                if (t.sizes() != aclgrad::Shape{d.sizes[0]})
                  finding("read_idx_labels gave shape " + aclgrad::format_shape(t.sizes()));
                const int64_t* p = t.data_ptr<int64_t>();
                for (size_t i = 0; i < d.bytes.size(); ++i)
                  if (p[i] != d.bytes[i])
                    finding("read_idx_labels value " + std::to_string(i) + " is not the byte");
              });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static readerfuzz::MemFile file("idx_fuzz");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string& path = file.hold(bytes);
  const std::optional<IdxData> direct = attempt(path);
  check_images_and_labels(path, direct);

  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (is_gzip) return 0;
  const std::optional<std::vector<int64_t>> expected = model(bytes);
  if (direct.has_value() != expected.has_value())
    finding(std::string("read_idx ") + (direct ? "accepts" : "refuses") + " a file the format " +
            (expected ? "allows" : "forbids"));
  if (direct && (direct->sizes != *expected ||
                 std::string_view(reinterpret_cast<const char*>(direct->bytes.data()),
                                  direct->bytes.size()) != bytes.substr(4 + 4 * expected->size())))
    finding("read_idx read other sizes or bytes than the file holds");
  const std::optional<IdxData> zipped = attempt(file.hold(gzip(bytes)));
  if (direct.has_value() != zipped.has_value())
    finding(std::string("the plain file ") + (direct ? "reads" : "fails") + " but its gzip form " +
            (zipped ? "reads" : "fails"));
  if (direct && (direct->sizes != zipped->sizes || direct->bytes != zipped->bytes))
    finding("the plain file and its gzip form read different data");
  return 0;
}
