// libFuzzer target of the safetensors reader (nn/safetensors.cpp, nn/safetensors_header.cpp,
// nn/checkpoint.cpp). Each input is the bytes of a file. The properties checked, each a crash the
// fuzzer reports:
//   - the in-memory reader (deserialize_safetensors) and the file reader (load_safetensors, which
//     reads the header first and then only the data) agree: both give the same tensors and
//     metadata, or both throw aclgrad::Error with the same message. Any other exception (e.g.
//     nlohmann's out_of_range for 1e400) escapes and is reported;
//   - an error message is at most kMessageLimit bytes besides the path (messages quote short
//     excerpts of the file, never its JSON whole);
//   - what loads saves again: serialize_safetensors of the result reads back to the same tensors
//     and metadata, and serializing that gives the same bytes;
//   - nn::load into a small module, strict and not (then any subset of its names loads), succeeds
//     or throws Error with a message as short, parsing the file's extra-tensor list (metadata)
//     without crashing, and fails whenever the file does not read.
// Sanitizers (ASan, UBSan) and libFuzzer's -malloc_limit_mb / -timeout report the rest: an input
// of a few KB must not make the reader allocate or read much more than its size.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "nn/checkpoint.h"
#include "nn/linear.h"
#include "reader_fuzz_util.h"

namespace {

using aclgrad::Tensor;
using aclgrad::nn::Metadata;
using aclgrad::nn::TensorMap;
using readerfuzz::finding;

// Ten problems of nn::load (its most) with excerpted names take ~1.2 KB; a message past 2 KB is
// writing out what the file holds.
constexpr size_t kMessageLimit = 2048;

// What one reader made of the bytes: tensors and metadata, or an error message.
struct Outcome {
  std::optional<TensorMap> tensors;
  Metadata metadata;
  std::string error;
};

template <typename Read>
Outcome attempt(Read read, const std::string& path) {
  Outcome out;
  try {
    out.tensors = read(&out.metadata);
  } catch (const aclgrad::Error& e) {
    out.error = e.what();
    readerfuzz::check_message(out.error, kMessageLimit + path.size());
  }
  return out;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const size_t n = static_cast<size_t>(a.numel() * a.element_size());
  return n == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), n) == 0;
}

bool same(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || !ia->second.is_contiguous() ||
        !same_tensor(ia->second, ib->second))
      return false;
  return true;
}

void check_round_trip(const TensorMap& tensors, const Metadata& metadata) {
  std::string bytes;
  try {
    bytes = aclgrad::nn::serialize_safetensors(tensors, metadata);
  } catch (const aclgrad::Error& e) {
    finding(std::string("a file that loads does not save: ") + e.what());
  }
  Metadata again_metadata;
  TensorMap again;
  try {
    again = aclgrad::nn::deserialize_safetensors(bytes, &again_metadata);
  } catch (const aclgrad::Error& e) {
    finding(std::string("a saved file does not load: ") + e.what());
  }
  if (!same(tensors, again) || again_metadata != metadata)
    finding("a saved file loads back different");
  if (aclgrad::nn::serialize_safetensors(again, again_metadata) != bytes)
    finding("saving twice gives different bytes");
}

// The module nn::load fills: "weight" [3, 2] and "bias" [3], float32 (the corpus has its file).
aclgrad::nn::Module& module() {
  static aclgrad::nn::Linear linear(2, 3);
  return linear;
}

void check_module_load(const std::string& path, bool file_reads) {
  for (const bool strict : {true, false}) {
    bool loaded = false;
    try {
      aclgrad::nn::load(module(), path, strict);
      loaded = true;
    } catch (const aclgrad::Error& e) {
      readerfuzz::check_message(e.what(), kMessageLimit + path.size());
    }
    if (loaded && !file_reads) finding("nn::load accepted a file load_safetensors refuses");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static readerfuzz::MemFile file("safetensors_fuzz");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string& path = file.hold(bytes);

  const Outcome memory = attempt(
      [&](Metadata* m) { return aclgrad::nn::deserialize_safetensors(bytes, m, path); }, path);
  const Outcome disk =
      attempt([&](Metadata* m) { return aclgrad::nn::load_safetensors(path, m); }, path);
  if (memory.tensors.has_value() != disk.tensors.has_value())
    finding("deserialize_safetensors and load_safetensors disagree: '" + memory.error + "' vs '" +
            disk.error + "'");
  if (memory.error != disk.error)
    finding("the two readers fail differently: '" + memory.error + "' vs '" + disk.error + "'");
  if (memory.tensors) {
    if (!same(*memory.tensors, *disk.tensors) || memory.metadata != disk.metadata)
      finding("deserialize_safetensors and load_safetensors read different tensors");
    check_round_trip(*memory.tensors, memory.metadata);
  }
  check_module_load(path, memory.tensors.has_value());
  if (readerfuzz::verbose())
    std::fprintf(stderr, "%s\n",
                 memory.tensors
                     ? ("loaded " + std::to_string(memory.tensors->size()) + " tensors, " +
                        std::to_string(memory.metadata.size()) + " metadata entries")
                           .c_str()
                     : memory.error.c_str());
  return 0;
}
