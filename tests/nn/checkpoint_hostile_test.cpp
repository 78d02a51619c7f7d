// Crafted checkpoint files (issue 38): deep JSON nesting, numbers beyond double range, a huge
// sparse file behind a tiny header, empty tensors with huge other dims. Each gives an
// aclgrad::Error naming the file, short enough to print, quickly and without crashing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>

#include "nn/nn.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"
#include "tests/nn/temp_dir.h"

namespace aclgrad {
namespace {

using testing::message_of;
using testing::TempDir;

// The 8-byte length, the header padded with spaces to a multiple of 8, then data.
std::string file_with(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  const uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// Expects load_safetensors(path) to throw Error with the path, every part and a short message.
void expect_load_error(const std::string& path, std::initializer_list<std::string> parts) {
  const std::string msg = message_of<Error>([&] { nn::load_safetensors(path); });
  EXPECT_NE(msg.find("'" + path + "'"), std::string::npos) << msg;
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << ": " << msg;
  EXPECT_LT(msg.size(), 600u) << msg;
}

// 100,000 nested '[' (a 200 KB header) overflowed the stack in the recursive dump() that built
// the message; the depth is now bounded before parsing.
TEST(HostileCheckpoint, DeepNestingIsRefusedBeforeParsing) {
  TempDir dir;
  const std::string path = dir.file("deep.safetensors");
  write_file(path, file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":" + nested(100'000) +
                                 ",\"data_offsets\":[0,0]}}",
                             ""));
  expect_load_error(path, {"nests deeper than 128 levels at byte"});
  write_file(path, file_with("{\"__metadata__\":{\"k\":" + nested(100'000) + "}}", ""));
  expect_load_error(path, {"nests deeper than 128 levels"});
  // Brackets inside strings do not count.
  write_file(path,
             file_with("{\"__metadata__\":{\"k\":\"" + std::string(100'000, '[') + "\"}}", ""));
  EXPECT_EQ(nn::load_safetensors(path).size(), 0u);
  // Within the bound, the message quotes only a prefix of the offending value.
  write_file(path, file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":" + nested(100) +
                                 ",\"data_offsets\":[0,0]}}",
                             ""));
  expect_load_error(
      path, {"tensor 'w': shape entries must be non-negative integers, got [[[", "(198 bytes)"});
}

// nn::load parses its extra-tensor list from a metadata string, which the file controls.
TEST(HostileCheckpoint, DeepExtraTensorListIsRefused) {
  TempDir dir;
  auto m = std::make_shared<nn::Linear>(2, 2);
  nn::TensorMap state;
  for (const auto& [name, t] : m->state_dict()) state[name] = t;
  const std::string path = dir.file("deep-extra.safetensors");
  for (const std::string& list : {nested(100'000), "[" + nested(100) + "]"}) {
    nn::save_safetensors(path, state, {{nn::kExtraTensorsKey, list}});
    const std::string msg = message_of<Error>([&] { nn::load(*m, path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("[[[["), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 600u) << msg;
  }
}

// 1e400 does not fit a double: nlohmann throws out_of_range (406), which escaped the loader.
TEST(HostileCheckpoint, NumbersBeyondDoubleRangeNameTheField) {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  write_file(path,
             file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e400],\"data_offsets\":[0,4]}}", ""));
  expect_load_error(path, {"tensor 'w', field 'shape'", "1e400", "out of range",
                           "expected a non-negative integer"});
  write_file(
      path, file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-1e400]}}", ""));
  expect_load_error(path, {"tensor 'w', field 'data_offsets'", "-1e400", "out of range"});
  write_file(path, file_with("{\"__metadata__\":{\"n\":1e400}}", ""));
  expect_load_error(path, {"__metadata__ value for 'n'", "1e400"});
}

// Peak resident set size of this process, in KiB.
long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// A 2 GiB sparse file behind a tiny header used to be read whole (2 GiB of RSS, seconds)
// before the header was checked against it.
TEST(HostileCheckpoint, HugeSparseFileFailsFastWithoutReadingIt) {
  TempDir dir;
  const std::string path = dir.file("sparse.safetensors");
  write_file(path, file_with("{}", ""));
  ASSERT_EQ(::truncate(path.c_str(), off_t{2} << 30), 0) << std::strerror(errno);
  const long rss_before = max_rss_kib();
  const auto start = std::chrono::steady_clock::now();
  expect_load_error(path, {"trailing bytes", "2147483632-byte data section"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_LT(max_rss_kib() - rss_before, 100 * 1024) << "KiB of peak RSS growth";
}

// PyTorch accepts an empty tensor whose other dims multiply past int64; so do we.
TEST(HostileCheckpoint, EmptyTensorWithHugeDimsLoads) {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  write_file(path, file_with("{\"e\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],"
                             "\"data_offsets\":[0,0]}}",
                             ""));
  const Tensor e = nn::load_safetensors(path).at("e");
  EXPECT_EQ(e.sizes(), (Shape{0, int64_t{1} << 32, int64_t{1} << 32}));
  EXPECT_EQ(e.numel(), 0);
  for (int64_t s : e.strides()) EXPECT_GE(s, 0);
  // The same dims with data are refused as an overflow, not loaded.
  write_file(path, file_with("{\"e\":{\"dtype\":\"F32\",\"shape\":[1,4294967296,4294967296],"
                             "\"data_offsets\":[0,0]}}",
                             ""));
  expect_load_error(path, {"tensor 'e': shape [1,4294967296,4294967296] overflows"});
}

// A shape of many sizes, many tensors, long names: the file declares them, so the messages only
// excerpt them. Each wrote out everything (found with the safetensors fuzz target's message
// bound, tests/fuzz): a 600-size shape, 60 unexpected tensors, 1.4-3.9 KB messages.
TEST(HostileCheckpoint, MessagesExcerptLongShapesAndNameLists) {
  TempDir dir;
  const std::string path = dir.file("long.safetensors");
  std::string ones = "1";
  for (int i = 1; i < 600; ++i) ones += ",1";
  write_file(
      path, file_with("{\"a\":{\"dtype\":\"F64\",\"shape\":[" + ones + "],\"data_offsets\":[0,4]}}",
                      std::string(4, '\0')));
  expect_load_error(path, {"tensor 'a': shape [1, 1, 1", "bytes) with dtype F64 needs 8 bytes"});

  nn::Linear linear(2, 3);
  write_file(path, file_with("{\"weight\":{\"dtype\":\"F32\",\"shape\":[" + ones +
                                 "],\"data_offsets\":[0,4]}}",
                             std::string(4, '\0')));
  std::string msg = message_of<Error>([&] { nn::load(linear, path, /*strict=*/false); });
  EXPECT_NE(msg.find("expected [3, 2], got [1, 1, 1, 1, 1, 1, 1, 1, ... (600 sizes)]"),
            std::string::npos)
      << msg;
  EXPECT_LT(msg.size(), 600u) << msg;

  std::string header = "{";
  const std::string long_name(200, 'n');
  for (int i = 0; i < 60; ++i)
    header += (i ? ",\"" : "\"") + long_name + std::to_string(100 + i) +
              "\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[" + std::to_string(i) + "," +
              std::to_string(i + 1) + "]}";
  write_file(path, file_with(header + "}", std::string(60, '\0')));
  msg = message_of<Error>([&] { nn::load(linear, path); });
  EXPECT_NE(msg.find("(62 problems;"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing tensor 'bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected tensor '" + long_name.substr(0, 64) + "...' (203 bytes)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("\n  ... and 52 more"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 1500u) << msg;
}

}  // namespace
}  // namespace aclgrad
