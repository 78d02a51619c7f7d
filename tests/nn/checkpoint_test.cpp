// safetensors checkpoints: the byte format against the reference implementation's own test
// vectors, bit-exact round trips for every dtype, module save/load, and every validation error.
// Atomic writes: a failing save leaves neither a partial file nor a temporary file.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <vector>

#include "nn/nn.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"
#include "tests/nn/temp_dir.h"

namespace aclgrad {
namespace {

using testing::message_of;
using testing::TempDir;

/// The raw bytes of a tensor (row-major), for bit-exact comparisons.
inline std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()),
                     static_cast<size_t>(c.numel() * c.element_size()));
}

/// Every state_dict entry of m: name -> (dtype, shape, bytes), to check a module is untouched.
inline std::map<std::string, std::string> snapshot(const nn::Module& m) {
  std::map<std::string, std::string> out;
  for (const auto& [name, t] : m.state_dict()) {
    out[name] = std::string(dtype_name(t.dtype())) + format_shape(t.sizes()) + bytes_of(t);
  }
  return out;
}

std::string from_bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file with a hand-written header (padded to 8) followed by data.
std::string file_with(const std::string& header, const std::string& data) {
  const uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

TEST(Safetensors, BytesMatchTheReferenceImplementation) {
  // safetensors' tensor.rs test_serialization: {"attn.0": F32 [1, 2, 3] = 0..5}.
  const std::string want =
      from_bytes({64, 0,  0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 46,  48,
                  34, 58, 123, 34,  100, 116, 121, 112, 101, 34,  58,  34,  70,  51,  50,  34,
                  44, 34, 115, 104, 97,  112, 101, 34,  58,  91,  49,  44,  50,  44,  51,  93,
                  44, 34, 100, 97,  116, 97,  95,  111, 102, 102, 115, 101, 116, 115, 34,  58,
                  91, 48, 44,  50,  52,  93,  125, 125, 0,   0,   0,   0,   0,   0,   128, 63,
                  0,  0,  0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64});
  EXPECT_EQ(nn::serialize_safetensors({{"attn.0", arange(6).reshape({1, 2, 3})}}), want);
  // test_empty, without and with metadata.
  EXPECT_EQ(nn::serialize_safetensors({}),
            from_bytes({8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}));
  EXPECT_EQ(nn::serialize_safetensors({}, {{"framework", "pt"}}),
            file_with("{\"__metadata__\":{\"framework\":\"pt\"}}     ", ""));
}

TEST(Safetensors, DataIsOrderedByAlignmentThenNameAndAligned) {
  const std::string bytes = nn::serialize_safetensors({{"b_bool", zeros({3}, Dtype::Bool)},
                                                       {"a_half", zeros({1}, Dtype::Float16)},
                                                       {"z_i64", zeros({1}, Dtype::Int64)},
                                                       {"f32", zeros({1})},
                                                       {"f64", zeros({2}, Dtype::Float64)}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.substr(8, n),
            "{\"z_i64\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
            "\"f64\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]},"
            "\"f32\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[24,28]},"
            "\"a_half\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[28,30]},"
            "\"b_bool\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[30,33]}}    ");
  EXPECT_EQ(bytes.size(), 8 + n + 33);
}

TEST(Safetensors, RoundTripIsBitExactForEveryDtype) {
  TempDir dir;
  Generator gen(1);
  nn::TensorMap t;
  Tensor f32 = randn({3, 4}, Dtype::Float32, &gen);
  f32.at<float>({0, 0}) = -0.0f;
  f32.at<float>({0, 1}) = std::numeric_limits<float>::infinity();
  f32.at<float>({0, 2}) = std::bit_cast<float>(0x7fc01234u);  // NaN with a payload
  f32.at<float>({0, 3}) = std::numeric_limits<float>::denorm_min();
  t["f32"] = f32;
  t["f64"] = randn({2, 2, 2}, Dtype::Float64, &gen);
  Tensor f16 = empty({1 << 16}, Dtype::Float16), bf16 = empty({1 << 16}, Dtype::BFloat16);
  for (int i = 0; i < (1 << 16); ++i) {  // every bit pattern
    f16.data_ptr<Half>()[i] = Half::from_bits(static_cast<uint16_t>(i));
    bf16.data_ptr<BFloat16>()[i] = BFloat16::from_bits(static_cast<uint16_t>(i));
  }
  t["f16"] = f16;
  t["bf16"] = bf16.reshape({256, 256});
  t["i64"] = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, 0,
                                              std::numeric_limits<int64_t>::max()});
  t["bool"] = from_vector(std::vector<bool>{true, false, true}, {3}, Dtype::Bool);
  t["scalar"] = full({}, 2.5, Dtype::Float64);
  t["empty"] = zeros({0, 3});
  t["transposed"] = arange(6).reshape({2, 3}).t();  // written row-major
  const nn::Metadata meta{{"step", "100"}, {"note", "héllo \"quoted\""}};
  const std::string path = dir.file("all.safetensors");
  nn::save_safetensors(path, t, meta);
  nn::Metadata got_meta;
  const nn::TensorMap got = nn::load_safetensors(path, &got_meta);
  EXPECT_EQ(got_meta, meta);
  ASSERT_EQ(got.size(), t.size());
  for (const auto& [name, want] : t) {
    const Tensor& g = got.at(name);
    EXPECT_EQ(g.dtype(), want.dtype()) << name;
    EXPECT_EQ(g.sizes(), want.sizes()) << name;
    EXPECT_TRUE(g.is_contiguous()) << name;
    EXPECT_EQ(bytes_of(g), bytes_of(want)) << name;
  }
  EXPECT_EQ(got.at("transposed").to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(nn::deserialize_safetensors(read_file(path)).size(), t.size());
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"all.safetensors"});  // no temp file left
}

TEST(Safetensors, SaveRejectsBadInput) {
  TempDir dir;
  EXPECT_THROW(nn::save_safetensors(dir.file("x"), {{"__metadata__", zeros({1})}}), Error);
  EXPECT_NE(message_of<Error>([&] {
              nn::save_safetensors(dir.file("x"), {{"w", Tensor()}});
            }).find("tensor 'w' is undefined"),
            std::string::npos);
  EXPECT_THROW(nn::save_safetensors(dir.file("x"), {{"bad\xff", zeros({1})}}), Error);
  const nn::NamedList<Tensor> dup{{"a", zeros({1})}, {"a", ones({1})}};
  EXPECT_NE(message_of<Error>([&] {
              nn::save_safetensors(dir.file("x"), dup);
            }).find("'a' appears twice"),
            std::string::npos);
  EXPECT_TRUE(dir.entries().empty());
}

// Each malformed file gives an Error naming the file and the problem.
struct BadFile {
  const char* what;
  std::string bytes;
  std::string expected;  // substring of the message
};

TEST(Safetensors, EveryMalformedFileIsRejectedWithAClearMessage) {
  const std::string good = nn::serialize_safetensors({{"w", arange(4)}, {"b", arange(2)}});
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  const std::string f32x2 = std::string(8, '\0');
  auto entry = [](const char* name, const char* dtype, const char* shape, const char* offsets) {
    return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
  };
  const std::vector<BadFile> cases = {
      {"short", good.substr(0, 5), "the file is 5 bytes, too short for the 8-byte header length"},
      {"truncated header", good.substr(0, 8 + n / 2), "exceeds the"},
      {"truncated data", good.substr(0, good.size() - 3), "go past the end of the"},
      {"huge header length", file_with("{}", "").replace(0, 8, std::string(8, '\x7f')),
       "exceeds the limit"},
      {"not json", file_with("{\"w\": {\"dtype\": \"F32\",", ""), "is not valid JSON (byte"},
      {"not an object", file_with("[1, 2]  ", ""), "must start with '{'"},
      {"unknown dtype", file_with("{" + entry("w", "F33", "[2]", "[0,8]") + "}", f32x2),
       "tensor 'w': unknown dtype 'F33'"},
      {"unsupported dtype", file_with("{" + entry("w", "I32", "[2]", "[0,8]") + "}", f32x2),
       "tensor 'w': dtype 'I32' is not supported"},
      {"shape vs bytes", file_with("{" + entry("w", "F32", "[3]", "[0,8]") + "}", f32x2),
       "tensor 'w': shape [3] with dtype F32 needs 12 bytes but data_offsets [0, 8] span 8"},
      {"offsets past end", file_with("{" + entry("w", "F32", "[4]", "[0,16]") + "}", f32x2),
       "tensor 'w': data_offsets [0, 16] go past the end of the 8-byte data section"},
      {"overlap",
       file_with(
           "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[1]", "[4,8]") + "}",
           f32x2),
       "tensor 'b': data_offsets [4, 8] overlap tensor 'a' at [0, 8]"},
      {"gap", file_with("{" + entry("a", "F32", "[1]", "[4,8]") + "}", f32x2),
       "tensor 'a': data_offsets begin at 4 but the previous tensor ends at 0"},
      {"trailing bytes", file_with("{" + entry("a", "F32", "[1]", "[0,4]") + "}", f32x2),
       "(4 trailing bytes)"},
      {"end before begin", file_with("{" + entry("a", "F32", "[0]", "[8,0]") + "}", f32x2),
       "end before they begin"},
      {"negative dim", file_with("{" + entry("a", "F32", "[-2]", "[0,8]") + "}", f32x2),
       "tensor 'a': shape entries must be non-negative integers, got -2"},
      {"overflow",
       file_with("{" + entry("a", "F32", "[4294967296,4294967296]", "[0,8]") + "}", f32x2),
       "overflows"},
      {"missing field", file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", f32x2),
       "tensor 'a': missing field 'data_offsets'"},
      {"duplicate name",
       file_with(
           "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("a", "F32", "[1]", "[4,8]") + "}",
           f32x2),
       "tensor 'a' appears twice"},
      {"bad bool",
       file_with("{" + entry("m", "BOOL", "[2]", "[0,2]") + "}", std::string("\x01\x02")),
       "tensor 'm': BOOL element 1 has byte value 2"},
      {"metadata value", file_with("{\"__metadata__\":{\"epoch\":3}}", ""),
       "__metadata__ value for 'epoch' must be a string"},
  };
  TempDir dir;
  for (const BadFile& c : cases) {
    const std::string path = dir.file("bad.safetensors");
    write_file(path, c.bytes);
    const std::string msg = message_of<Error>([&] { nn::load_safetensors(path); });
    EXPECT_NE(msg.find("'" + path + "'"), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.what << ": " << msg;
  }
  EXPECT_NE(
      message_of<Error>([&] { nn::load_safetensors(dir.file("missing")); }).find("cannot open"),
      std::string::npos);
  EXPECT_NE(message_of<Error>([&] { nn::load_safetensors(dir.path()); }).find("not a regular file"),
            std::string::npos);
}

// A small model with parameters and int64/float buffers.
std::shared_ptr<nn::Sequential> model() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(2, 3, 3), std::make_shared<nn::BatchNorm2d>(3),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(12, 2));
}

TEST(Checkpoint, ModuleRoundTripIsBitExact) {
  TempDir dir;
  manual_seed(1);
  auto a = model();
  (*a)(randn({4, 2, 4, 4}));  // moves BatchNorm's running statistics
  auto b = model();
  ASSERT_NE(snapshot(*a), snapshot(*b));
  const auto before_impl = b->at<nn::Linear>(3)->weight.impl();
  nn::save(*a, dir.file("m.safetensors"), {}, {{"epoch", "3"}});
  const nn::CheckpointExtras extra = nn::load(*b, dir.file("m.safetensors"));
  EXPECT_EQ(snapshot(*a), snapshot(*b));
  EXPECT_EQ(b->at<nn::BatchNorm2d>(1)->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(b->at<nn::Linear>(3)->weight.impl(), before_impl);
  EXPECT_TRUE(extra.tensors.empty());
  EXPECT_EQ(extra.metadata, (nn::Metadata{{"epoch", "3"}}));
  // The file is a plain safetensors file with the state_dict names.
  const nn::TensorMap raw = nn::load_safetensors(dir.file("m.safetensors"));
  EXPECT_EQ(raw.size(), a->state_dict().size());
  EXPECT_EQ(raw.count("1.num_batches_tracked"), 1u);
}

TEST(Checkpoint, ExtraTensorsAndMetadataTravelAlong) {
  TempDir dir;
  auto a = model();
  const nn::TensorMap optim{{"state.0.exp_avg", ones({3, 2, 3, 3})},
                            {"state.0.step", full({}, 7.0)}};
  nn::save(*a, dir.file("c"), optim, {{"optimizer", "Adam"}});
  auto b = model();
  const nn::CheckpointExtras extra = nn::load(*b, dir.file("c"));
  ASSERT_EQ(extra.tensors.size(), 2u);
  EXPECT_EQ(bytes_of(extra.tensors.at("state.0.exp_avg")), bytes_of(optim.at("state.0.exp_avg")));
  EXPECT_EQ(extra.metadata, (nn::Metadata{{"optimizer", "Adam"}}));
  EXPECT_NE(message_of<Error>([&] {
              nn::save(*a, dir.file("d"), {{"0.weight", ones({1})}});
            }).find("'0.weight' has the name of a parameter or buffer"),
            std::string::npos);
  EXPECT_THROW(nn::save(*a, dir.file("d"), {}, {{nn::kExtraTensorsKey, "[]"}}), Error);
  // A file with unknown tensors: strict load refuses, non-strict returns them as extras.
  nn::TensorMap state;
  for (const auto& [n, t] : a->state_dict()) state[n] = t;
  state["stray"] = zeros({1});
  nn::save_safetensors(dir.file("e"), state);
  EXPECT_NE(
      message_of<Error>([&] { nn::load(*b, dir.file("e")); }).find("unexpected tensor 'stray'"),
      std::string::npos);
  EXPECT_EQ(nn::load(*b, dir.file("e"), /*strict=*/false).tensors.count("stray"), 1u);
}

TEST(Checkpoint, EveryLoadErrorLeavesTheModuleUntouched) {
  TempDir dir;
  auto target = model();
  const auto before = snapshot(*target);
  const std::string good = dir.file("good");
  nn::save(*model(), good);
  const std::string bytes = read_file(good);

  auto expect_rejected = [&](const std::string& path, const std::string& expected) {
    const std::string msg = message_of<Error>([&] { nn::load(*target, path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    EXPECT_EQ(snapshot(*target), before) << expected;
  };
  write_file(dir.file("truncated"), bytes.substr(0, bytes.size() - 1));
  expect_rejected(dir.file("truncated"), "go past the end");
  std::string corrupt = bytes;
  corrupt[corrupt.find(':', 8)] = '#';
  write_file(dir.file("corrupt"), corrupt);
  expect_rejected(dir.file("corrupt"), "not valid JSON");
  // Wrong shape: a Linear(12, 3) head instead of (12, 2).
  auto other = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(2, 3, 3), std::make_shared<nn::BatchNorm2d>(3),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(12, 3));
  nn::save(*other, dir.file("shape"));
  expect_rejected(dir.file("shape"),
                  "shape mismatch for '3.weight': expected [2, 12], got [3, 12]");
  // Wrong dtype.
  auto dbl = model();
  dbl->to(Dtype::Float64);
  nn::save(*dbl, dir.file("dtype"));
  expect_rejected(dir.file("dtype"),
                  "dtype mismatch for '0.weight': expected float32, got float64");
  // Missing key.
  nn::TensorMap state;
  for (const auto& [n, t] : model()->state_dict()) state[n] = t;
  state.erase("1.running_var");
  nn::save_safetensors(dir.file("missing"), state);
  expect_rejected(dir.file("missing"), "missing tensor '1.running_var' (expected shape [3]");
  // A listed extra tensor that is not in the file.
  nn::save_safetensors(dir.file("extra"), state, {{nn::kExtraTensorsKey, "[\"ghost\"]"}});
  expect_rejected(dir.file("extra"), "\"ghost\" listed in the metadata is not in the file");
}

TEST(AtomicSave, MissingDirectoryLeavesNothingBehind) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/ckpt.safetensors");
  const std::string msg = message_of<Error>([&] {
    nn::save_safetensors(path, {{"w", ones({2})}});
  });
  EXPECT_NE(msg.find("cannot create the temporary file"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicSave, FailedRenameRemovesTheTemporaryFile) {
  // The target is a non-empty directory: everything is written and synced, then rename fails.
  TempDir dir;
  const std::string path = dir.file("ckpt");
  std::filesystem::create_directory(path);
  std::ofstream(path + "/keep") << "x";
  const std::string msg = message_of<Error>([&] {
    nn::save_safetensors(path, {{"w", ones({2})}});
  });
  EXPECT_NE(msg.find("cannot rename"), std::string::npos) << msg;
  // errno of rename itself, not an older one (it was read in the same argument list).
  EXPECT_NE(msg.find(std::strerror(EISDIR)), std::string::npos) << msg;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt"});
  EXPECT_EQ(read_file(path + "/keep"), "x");
}

TEST(AtomicSave, OverwriteReplacesTheWholeFile) {
  TempDir dir;
  const std::string path = dir.file("ckpt");
  nn::save_safetensors(path, {{"w", ones({1000})}});
  nn::save_safetensors(path, {{"v", zeros({2})}});
  const nn::TensorMap got = nn::load_safetensors(path);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.count("v"), 1u);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt"});
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::others_read);
}

TEST(AtomicSave, WriteErrorMidFileKeepsThePreviousCheckpoint) {
  // A file size limit makes write() fail part-way (EFBIG), like a full disk.
  TempDir dir;
  const std::string path = dir.file("ckpt");
  auto m = std::make_shared<nn::Linear>(4, 3);
  nn::save(*m, path);
  const std::string before = read_file(path);
  auto big = std::make_shared<nn::Linear>(256, 256);

  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    nn::save(*big, path);
  } catch (const Error& e) {
    msg = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(msg.find("failed"), std::string::npos) << msg;
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"ckpt"});
  auto again = std::make_shared<nn::Linear>(4, 3);
  nn::load(*again, path);
  EXPECT_EQ(again->weight.to_vector<float>(), m->weight.to_vector<float>());
}

TEST(AtomicSave, ReadOnlyDirectoryLeavesNothingBehind) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_THROW(nn::save_safetensors(dir.file("ckpt"), {{"w", ones({2})}}), Error);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace aclgrad
