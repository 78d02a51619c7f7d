// IDX reader on small files written here byte by byte (plain, and gzipped with the gzip tool),
// including every kind of corruption; the real Fashion-MNIST files only when installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/idx.h"

namespace aclgrad::data {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// The header of an IDX file: 0, 0, type, ndim, then big-endian uint32 sizes.
Bytes idx_file(uint8_t type, const std::vector<uint32_t>& sizes, const Bytes& payload) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(sizes.size())};
  for (uint32_t s : sizes) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(s >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes pattern(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
  return b;
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aclgrad_idx_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  Bytes read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
  }
  // name.gz compressed by the gzip tool (an independent gzip writer); "" when gzip is missing.
  std::string gzip(const std::string& name, const Bytes& bytes) {
    const std::string path = write(name, bytes);
    if (std::system(("gzip -nf '" + path + "' 2>/dev/null").c_str()) != 0) return "";
    return path + ".gz";
  }

  fs::path dir_;
};

// Expects read_idx(path) to throw an Error whose message contains every one of parts.
void expect_error(const std::string& path, std::vector<std::string> parts, int64_t ndim = -1) {
  try {
    read_idx(path, ndim);
    ADD_FAILURE() << "no error reading " << path;
  } catch (const Error& e) {
    parts.push_back(path);
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
    }
  }
}

TEST_F(IdxTest, PlainImagesReadBackExactly) {
  const Bytes payload = pattern(3 * 4 * 5);
  const std::string path = write("images", idx_file(0x08, {3, 4, 5}, payload));
  const IdxData d = read_idx(path);
  EXPECT_EQ(d.sizes, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(d.bytes, payload);
  const Tensor t = read_idx_images(path);
  EXPECT_EQ(t.sizes(), (Shape{3, 1, 4, 5}));
  EXPECT_EQ(t.dtype(), Dtype::Float32);
  const std::vector<float> v = t.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<float>(payload[i]) / 255.0f);
}

TEST_F(IdxTest, ImageValuesSpanZeroToOne) {
  const std::string path = write("images", idx_file(0x08, {1, 1, 3}, {0, 51, 255}));
  EXPECT_EQ(read_idx_images(path).to_vector<float>(), (std::vector<float>{0.0f, 0.2f, 1.0f}));
}

TEST_F(IdxTest, LabelsPlainAndGzipped) {
  const Bytes labels = {7, 0, 9, 3, 255};
  const Bytes file = idx_file(0x08, {5}, labels);
  const Tensor plain = read_idx_labels(write("labels", file));
  EXPECT_EQ(plain.dtype(), Dtype::Int64);
  EXPECT_EQ(plain.to_vector<int64_t>(), (std::vector<int64_t>{7, 0, 9, 3, 255}));
  const std::string gz = gzip("labels2", file);
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  EXPECT_EQ(read_idx_labels(gz).to_vector<int64_t>(), plain.to_vector<int64_t>());
}

TEST_F(IdxTest, GzippedImagesReadBackExactly) {
  const Bytes payload = pattern(7 * 28 * 28);
  const std::string gz = gzip("images", idx_file(0x08, {7, 28, 28}, payload));
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  ASSERT_LT(read(gz).size(), payload.size());  // really compressed
  const IdxData d = read_idx(gz, 3);
  EXPECT_EQ(d.sizes, (std::vector<int64_t>{7, 28, 28}));
  EXPECT_EQ(d.bytes, payload);
}

TEST_F(IdxTest, BadMagicNumber) {
  Bytes file = idx_file(0x08, {2}, {1, 2});
  file[0] = 0x12;
  file[1] = 0x34;
  expect_error(write("bad", file), {"bad magic number 0x12340801"});
  expect_error(write("zero_dims", {0, 0, 8, 0}), {"bad magic number 0x00000800"});
}

TEST_F(IdxTest, WrongDtypeCode) {
  expect_error(write("float", idx_file(0x0D, {2}, Bytes(8))),
               {"unsupported data type code 0x0D (float)", "only 0x08 (unsigned byte)"});
}

TEST_F(IdxTest, WrongNumberOfDims) {
  const std::string labels = write("labels", idx_file(0x08, {4}, pattern(4)));
  expect_error(labels, {"expected 3 dims (magic 0x00000803)", "found 1 (magic 0x00000801)"}, 3);
  EXPECT_THROW(read_idx_images(labels), Error);
  EXPECT_THROW(read_idx_labels(write("images", idx_file(0x08, {1, 2, 2}, pattern(4)))), Error);
}

TEST_F(IdxTest, TruncatedData) {
  const std::string path = write("short", idx_file(0x08, {2, 28, 28}, pattern(1000)));
  expect_error(path,
               {"truncated", "promises 1568 data bytes after the 16-byte header", "found 1000"});
}

TEST_F(IdxTest, TruncatedHeader) {
  expect_error(write("magic_only", {0, 0}), {"too short for an IDX header", "found 2 bytes"});
  expect_error(write("empty", {}), {"too short", "found 0 bytes"});
  Bytes file = idx_file(0x08, {3, 4, 5}, {});
  file.resize(10);  // magic + 1.5 sizes
  expect_error(write("half_header", file),
               {"truncated header", "announces 3 sizes (12 bytes)", "found 6 bytes"});
}

TEST_F(IdxTest, ExtraBytesAfterTheData) {
  const Bytes file = idx_file(0x08, {3}, {1, 2, 3, 4, 5});
  expect_error(write("long", file), {"2 unexpected bytes after the data", "promises 3"});
  const std::string gz = gzip("long2", file);
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  expect_error(gz, {"unexpected bytes after the data", "found 5"});
}

TEST_F(IdxTest, GzipHeaderClaimsMoreThanPresent) {
  const std::string gz = gzip("short", idx_file(0x08, {100, 10}, pattern(300)));
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  expect_error(gz, {"truncated", "promises 1000 data bytes", "found 300"});
}

TEST_F(IdxTest, TruncatedGzipStream) {
  const std::string gz = gzip("images", idx_file(0x08, {50, 28, 28}, pattern(50 * 28 * 28)));
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  const Bytes whole = read(gz);
  for (size_t keep : {whole.size() / 2, whole.size() - 4, size_t{12}}) {
    const std::string cut = write("cut.gz", Bytes(whole.begin(), whole.begin() + keep));
    expect_error(cut, {"gzip stream"});
  }
}

TEST_F(IdxTest, CorruptGzipStream) {
  const std::string gz = gzip("images", idx_file(0x08, {50, 28, 28}, pattern(50 * 28 * 28)));
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  Bytes bad = read(gz);
  bad[bad.size() - 6] ^= 0xFF;  // inside the CRC-32 trailer
  expect_error(write("crc.gz", bad), {"corrupt or truncated gzip stream"});
}

TEST_F(IdxTest, AbsurdSizesFailWithoutAllocatingThem) {
  expect_error(write("huge", idx_file(0x08, {65535, 65535, 65535}, {})), {"more than 2^40"});
  const Bytes big = idx_file(0x08, {1024, 1024, 1024}, pattern(10));
  expect_error(write("big", big), {"truncated", "promises 1073741824 data bytes", "found 10"});
  const std::string gz = gzip("big2", big);
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  expect_error(gz, {"truncated", "promises 1073741824 data bytes", "found 10"});
}

// No images, but dims whose product passes int64: an empty tensor, as in PyTorch. The strides
// once overflowed, giving "stride -8589934591 is negative".
TEST_F(IdxTest, NoImagesWithHugeDimsIsAnEmptyTensor) {
  const Tensor t =
      read_idx_images(write("none", idx_file(0x08, {0, 4294967295u, 4294967295u}, {})));
  EXPECT_EQ(t.sizes(), (Shape{0, 1, 4294967295, 4294967295}));
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(read_idx_labels(write("labels", idx_file(0x08, {0}, {}))).numel(), 0);
}

// A zero after sizes whose product passes 2^40 holds no element either. It was refused as "more
// than 2^40 elements" (found by the IDX fuzz target's model of the format, tests/fuzz).
TEST_F(IdxTest, AZeroSizeAfterHugeOnesIsStillEmpty) {
  const Bytes none = idx_file(0x08, {4294967295u, 4294967295u, 0}, {});
  const Tensor t = read_idx_images(write("none", none));
  EXPECT_EQ(t.sizes(), (Shape{4294967295, 1, 4294967295, 0}));
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(read_idx(write("late", idx_file(0x08, {2, 1u << 31, 4294967295u, 0}, {}))).sizes,
            (std::vector<int64_t>{2, int64_t{1} << 31, 4294967295, 0}));
  expect_error(write("extra", idx_file(0x08, {4294967295u, 4294967295u, 0}, {7})),
               {"1 unexpected bytes after the data", "promises 0 data bytes"});
  const std::string gz = gzip("none2", none);
  if (gz.empty()) GTEST_SKIP() << "gzip tool not available";
  EXPECT_EQ(read_idx_images(gz).sizes(), (Shape{4294967295, 1, 4294967295, 0}));
}

TEST_F(IdxTest, MissingFile) {
  const std::string path = (dir_ / "nope.gz").string();
  expect_error(path, {"cannot open", "No such file"});
}

TEST(IdxFashionMnist, ReadsTheInstalledTestSplitIfPresent) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(dir + "t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST not installed";
  const Tensor labels = read_idx_labels(dir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.sizes(), (Shape{10000}));
  std::vector<int64_t> count(10, 0);
  for (int64_t l : labels.to_vector<int64_t>()) {
    ASSERT_TRUE(l >= 0 && l < 10);
    ++count[l];
  }
  for (int64_t c : count) EXPECT_EQ(c, 1000);  // the test split is balanced
  const Tensor images = read_idx_images(dir + "t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(images.sizes(), (Shape{10000, 1, 28, 28}));
}

}  // namespace
}  // namespace aclgrad::data
