// IDX reader over zlib's gz* API, which reads gzip and plain files alike.
#include "nn/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <sstream>

#include "tensor/creation.h"

namespace aclgrad::data {

namespace {

constexpr int kUnsignedByte = 0x08;

std::string hex(uint32_t v, int digits) {
  std::ostringstream os;
  os << "0x" << std::hex << std::uppercase << std::setw(digits) << std::setfill('0') << v;
  return os.str();
}
std::string hex32(uint32_t v) {
  return hex(v, 8);
}

const char* type_name(int code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "not an IDX type";
  }
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

// Reads a file through zlib; every failure is reported with the file name.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    check(file_ != nullptr, "read_idx: cannot open '", path,
          "': ", errno != 0 ? std::strerror(errno) : "out of memory");
    gzbuffer(file_.get(), 1 << 17);
  }

  // Reads up to n bytes into dst; returns how many were read (< n only at the end of the data).
  // zlib decompresses ahead, so an error may be flagged while the requested bytes still arrive;
  // it is reported by the read that gets nothing more, saying how far the data got.
  size_t read(uint8_t* dst, size_t n, const std::string& what) {
    size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 24));
      const int got = gzread(file_.get(), dst + done, chunk);
      if (got > 0) {
        done += static_cast<size_t>(got);
        continue;
      }
      int err = Z_OK;
      std::string msg = gzerror(file_.get(), &err);
      if (msg.compare(0, path_.size() + 2, path_ + ": ") == 0) msg.erase(0, path_.size() + 2);
      check(err == Z_OK || err == Z_STREAM_END, "read_idx: '", path_,
            "': corrupt or truncated gzip stream while reading ", what, " (", got_ + done,
            " bytes decompressed): ", msg);
      break;
    }
    got_ += done;
    return done;
  }

  bool compressed() { return gzdirect(file_.get()) == 0; }
  uint64_t total() const { return got_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  uint64_t got_ = 0;
};

uint32_t big_endian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxData read_idx(const std::string& path, int64_t expected_ndim) {
  Reader in(path);
  uint8_t magic_bytes[4];
  const size_t got_magic = in.read(magic_bytes, 4, "the magic number");
  check(got_magic == 4, "read_idx: '", path, "': too short for an IDX header: expected a 4-byte ",
        "magic number, found ", got_magic, " bytes");
  const uint32_t magic = big_endian(magic_bytes);
  const int type = magic_bytes[2], ndim = magic_bytes[3];
  check(magic_bytes[0] == 0 && magic_bytes[1] == 0 && ndim >= 1, "read_idx: '", path,
        "': bad magic number ", hex32(magic), ": an IDX file starts with 0x0000, a type code and ",
        "a dim count >= 1 (e.g. 0x00000803 for images, 0x00000801 for labels)");
  check(type == kUnsignedByte, "read_idx: '", path, "': unsupported data type code ", hex(type, 2),
        " (", type_name(type), ") in magic ", hex32(magic),
        "; only 0x08 (unsigned byte) is supported");
  check(expected_ndim < 0 || ndim == expected_ndim, "read_idx: '", path, "': expected ",
        expected_ndim, " dims (magic ", hex32(0x800u | static_cast<uint32_t>(expected_ndim)),
        "), found ", ndim, " (magic ", hex32(magic), ")");

  std::vector<uint8_t> header(4 * static_cast<size_t>(ndim));
  const size_t got_header = in.read(header.data(), header.size(), "the sizes");
  check(got_header == header.size(), "read_idx: '", path, "': truncated header: magic ",
        hex32(magic), " announces ", ndim, " sizes (", header.size(), " bytes), found ", got_header,
        " bytes");
  IdxData out;
  for (int d = 0; d < ndim; ++d) out.sizes.push_back(big_endian(&header[4 * d]));
  // A zero size anywhere holds no element, whatever the others multiply to (as in PyTorch).
  const bool empty = std::find(out.sizes.begin(), out.sizes.end(), 0) != out.sizes.end();
  uint64_t count = empty ? 0 : 1;
  for (int d = 0; d < ndim && !empty; ++d) {
    const auto s = static_cast<uint64_t>(out.sizes[d]);
    // Checked before multiplying, so the product cannot overflow.
    constexpr uint64_t kMaxElements = uint64_t{1} << 40;
    check(count <= kMaxElements / s, "read_idx: '", path, "': header sizes ",
          Shape(out.sizes.begin(), out.sizes.begin() + d + 1), "... hold more than 2^40 elements");
    count *= s;
  }
  const uint64_t header_bytes = 4 + header.size();
  std::ostringstream what;
  what << "the header (magic " << hex32(magic) << ", sizes " << format_shape(out.sizes)
       << ") promises " << count << " data bytes after the " << header_bytes << "-byte header";

  if (!in.compressed()) {  // a plain file: its size tells everything before any allocation
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    check(!ec, "read_idx: '", path, "': cannot get the file size: ", ec.message());
    check(size >= header_bytes + count, "read_idx: '", path, "': truncated: ", what.str(),
          ", found ", size - header_bytes);
    check(size == header_bytes + count, "read_idx: '", path, "': ", size - header_bytes - count,
          " unexpected bytes after the data: ", what.str(), ", found ", size - header_bytes);
  }
  // Grow while reading, so a corrupt header claiming terabytes does not allocate them.
  out.bytes.resize(std::min<uint64_t>(count, uint64_t{1} << 24));
  uint64_t done = 0;
  while (done < count) {
    if (out.bytes.size() < count && done == out.bytes.size()) {
      out.bytes.resize(std::min<uint64_t>(count, 2 * out.bytes.size()));
    }
    const size_t got = in.read(out.bytes.data() + done, out.bytes.size() - done, "the data");
    done += got;
    check(got > 0 || done == count, "read_idx: '", path, "': truncated: ", what.str(), ", found ",
          done);
  }
  // Nothing may follow the data; reading on also makes zlib verify the gzip trailer (CRC).
  uint8_t extra[256];
  const size_t trailing = in.read(extra, sizeof(extra), "past the data");
  check(trailing == 0, "read_idx: '", path, "': unexpected bytes after the data: ", what.str(),
        ", found ", trailing == sizeof(extra) ? "at least " : "", count + trailing);
  return out;
}

Tensor read_idx_images(const std::string& path) {
  const IdxData d = read_idx(path, 3);
  Tensor t = empty({d.sizes[0], 1, d.sizes[1], d.sizes[2]}, Dtype::Float32);
  float* p = t.data_ptr<float>();
  for (size_t i = 0; i < d.bytes.size(); ++i) p[i] = static_cast<float>(d.bytes[i]) / 255.0f;
  return t;
}

Tensor read_idx_labels(const std::string& path) {
  const IdxData d = read_idx(path, 1);
  Tensor t = empty({d.sizes[0]}, Dtype::Int64);
  int64_t* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < d.bytes.size(); ++i) p[i] = d.bytes[i];
  return t;
}

}  // namespace aclgrad::data
