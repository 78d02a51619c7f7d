// The safetensors byte format: building the header and data (serialize) and validating and
// decoding file bytes (deserialize). File handling and modules are in nn/checkpoint.cpp.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/checkpoint.h"
#include "nn/safetensors_format.h"
#include "tensor/creation.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian port must byte-swap");

namespace aclgrad::nn {

namespace {

using ordered_json = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

struct DtypeInfo {
  const char* name;
  int rank;  // position in the reference's Dtype enum (its alignment order)
};

DtypeInfo info_of(Dtype d) {
  switch (d) {
    case Dtype::Bool:
      return {"BOOL", 0};
    case Dtype::Float16:
      return {"F16", 7};
    case Dtype::BFloat16:
      return {"BF16", 8};
    case Dtype::Float32:
      return {"F32", 11};
    case Dtype::Float64:
      return {"F64", 12};
    case Dtype::Int64:
      return {"I64", 13};
  }
  return {"?", -1};
}

// Known safetensors dtypes we cannot hold (a clear "unsupported" instead of "unknown").
constexpr std::string_view kOtherDtypes[] = {"U8",  "I8",      "F8_E5M2", "F8_E4M3", "I16",
                                             "U16", "I32",     "U32",     "U64",     "F8_E8M0",
                                             "F4",  "F6_E2M3", "F6_E3M2", "C64"};

std::string squote(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

namespace safetensors_detail {

std::vector<PlannedTensor> plan(const TensorMap& tensors, const Metadata& metadata,
                                std::string& header) {
  std::vector<PlannedTensor> order;
  for (const auto& [name, t] : tensors) {
    check(name != "__metadata__", "save_safetensors: '__metadata__' is reserved and cannot name a ",
          "tensor");
    check(t.defined(), "save_safetensors: tensor ", squote(name), " is undefined");
    order.push_back({name, t.contiguous()});
  }
  std::stable_sort(order.begin(), order.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    const int ra = info_of(a.tensor.dtype()).rank, rb = info_of(b.tensor.dtype()).rank;
    return ra != rb ? ra > rb : a.name < b.name;
  });
  ordered_json h = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json m = ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const PlannedTensor& p : order) {
    const uint64_t n = static_cast<uint64_t>(p.tensor.numel() * p.tensor.element_size());
    ordered_json entry = ordered_json::object();
    entry["dtype"] = info_of(p.tensor.dtype()).name;
    entry["shape"] = p.tensor.sizes();
    entry["data_offsets"] = {offset, offset + n};
    h[p.name] = std::move(entry);
    offset += n;
  }
  // dump() throws on invalid UTF-8 in names or metadata; say which call failed.
  try {
    header = h.dump();
  } catch (const json::exception& e) {
    throw Error(std::string("save_safetensors: a tensor name or metadata string is not valid "
                            "UTF-8 (") +
                e.what() + ")");
  }
  header.append((8 - header.size() % 8) % 8, ' ');
  return order;
}

std::string length_prefix(uint64_t n) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out;
}

}  // namespace safetensors_detail

std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata) {
  std::string header;
  const auto order = safetensors_detail::plan(tensors, metadata, header);
  std::string out = safetensors_detail::length_prefix(header.size()) + header;
  for (const auto& p : order) {
    const size_t n = static_cast<size_t>(p.tensor.numel() * p.tensor.element_size());
    if (n) out.append(static_cast<const char*>(p.tensor.data_ptr()), n);
  }
  return out;
}

namespace {

struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  uint64_t begin, end;
};

// Throws "load_safetensors: '<source>': <parts>".
template <typename... Parts>
[[noreturn]] void bad(const std::string& source, const Parts&... parts) {
  detail::fail<Error>(std::source_location::current(), "load_safetensors: ", squote(source), ": ",
                      parts...);
}

Dtype parse_dtype(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_string())
    bad(source, "tensor ", squote(name), ": dtype must be a string, got ", v.dump());
  const std::string s = v.get<std::string>();
  for (Dtype d :
       {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16, Dtype::Int64, Dtype::Bool})
    if (s == info_of(d).name) return d;
  for (std::string_view other : kOtherDtypes)
    if (s == other)
      bad(source, "tensor ", squote(name), ": dtype '", s,
          "' is not supported (aclgrad reads F32, F64, F16, BF16, I64, BOOL)");
  bad(source, "tensor ", squote(name), ": unknown dtype '", s,
      "' (expected one of F32, F64, F16, BF16, I64, BOOL)");
}

uint64_t parse_uint(const std::string& source, const std::string& name, const char* field,
                    const json& v) {
  if (!v.is_number_unsigned())
    bad(source, "tensor ", squote(name), ": ", field,
        " entries must be non-negative integers, got ", v.dump());
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_object())
    bad(source, "tensor ", squote(name),
        ": expected an object with dtype, shape and data_offsets, ", "got ", v.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) bad(source, "tensor ", squote(name), ": missing field '", key, "'");
  for (const auto& [key, unused] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      bad(source, "tensor ", squote(name), ": unexpected field '", key, "'");
  Entry e{name, parse_dtype(source, name, v["dtype"]), {}, 0, 0};
  const json& shape = v["shape"];
  if (!shape.is_array())
    bad(source, "tensor ", squote(name), ": shape must be an array, got ", shape.dump());
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& s : shape) {
    const uint64_t d = parse_uint(source, name, "shape", s);
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    e.shape.push_back(static_cast<int64_t>(d));
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    bad(source, "tensor ", squote(name), ": data_offsets must be [begin, end], got ", off.dump());
  e.begin = parse_uint(source, name, "data_offsets", off[0]);
  e.end = parse_uint(source, name, "data_offsets", off[1]);
  if (e.end < e.begin)
    bad(source, "tensor ", squote(name), ": data_offsets [", e.begin, ", ", e.end,
        "] end before they begin");
  const uint64_t esize = static_cast<uint64_t>(element_size(e.dtype));
  uint64_t nbytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, esize, &nbytes) ||
             nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (overflow)
    bad(source, "tensor ", squote(name), ": shape ", shape.dump(), " overflows the element count");
  if (nbytes != e.end - e.begin)
    bad(source, "tensor ", squote(name), ": shape ", format_shape(e.shape), " with dtype ",
        info_of(e.dtype).name, " needs ", nbytes, " bytes but data_offsets [", e.begin, ", ", e.end,
        "] span ", e.end - e.begin);
  return e;
}

}  // namespace

TensorMap deserialize_safetensors(std::string_view bytes, Metadata* metadata,
                                  const std::string& source) {
  const uint64_t size = bytes.size();
  if (size < 8) bad(source, "the file is ", size, " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeaderBytes)
    bad(source, "header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  if (n > size - 8)
    bad(source, "header length ", n, " exceeds the ", size - 8,
        " bytes that follow it (truncated or corrupted file)");
  const std::string_view text = bytes.substr(8, n);
  if (text.empty() || text.front() != '{') bad(source, "the JSON header must start with '{'");

  // Parse, remembering repeated top-level names (JSON objects would silently keep the last).
  std::set<std::string> names;
  std::string duplicate;
  json header;
  try {
    header = json::parse(text.begin(), text.end(),
                         [&](int depth, json::parse_event_t event, json& parsed) {
                           if (event == json::parse_event_t::key && depth == 1 &&
                               !names.insert(parsed.get<std::string>()).second && duplicate.empty())
                             duplicate = parsed.get<std::string>();
                           return true;
                         });
  } catch (const json::parse_error& e) {
    bad(source, "the header is not valid JSON (byte ", e.byte, " of the ", n,
        "-byte header): ", e.what());
  }
  if (!header.is_object()) bad(source, "the header must be a JSON object");
  if (!duplicate.empty()) bad(source, "tensor ", squote(duplicate), " appears twice in the header");

  Metadata meta;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(source, "__metadata__ must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          bad(source, "__metadata__ value for '", mk, "' must be a string, got ", mv.dump());
        meta[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(source, key, value));
  }

  // The tensors must tile the data section exactly: in offset order, each begins where the
  // previous ended, and the last ends at the end of the file.
  const uint64_t data_size = size - 8 - n;
  for (const Entry& e : entries)
    if (e.end > data_size)
      bad(source, "tensor ", squote(e.name), ": data_offsets [", e.begin, ", ", e.end,
          "] go past the end of the ", data_size, "-byte data section (truncated file?)");
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : by_offset) {
    if (e->begin < expected)
      bad(source, "tensor ", squote(e->name), ": data_offsets [", e->begin, ", ", e->end,
          "] overlap tensor ", squote(prev->name), " at [", prev->begin, ", ", prev->end, "]");
    if (e->begin > expected)
      bad(source, "tensor ", squote(e->name), ": data_offsets begin at ", e->begin,
          " but the previous tensor ends at ", expected, " (gap of ", e->begin - expected,
          " unindexed bytes)");
    expected = e->end;
    prev = e;
  }
  if (expected != data_size)
    bad(source, "the tensors cover ", expected, " bytes of the ", data_size, "-byte data section (",
        data_size - expected, " trailing bytes)");

  const char* data = bytes.data() + 8 + n;
  TensorMap out;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    const size_t nbytes = static_cast<size_t>(e.end - e.begin);
    if (e.dtype == Dtype::Bool) {
      for (size_t i = 0; i < nbytes; ++i) {
        const auto b = static_cast<unsigned char>(data[e.begin + i]);
        if (b > 1)
          bad(source, "tensor ", squote(e.name), ": BOOL element ", i, " has byte value ",
              static_cast<int>(b), " (expected 0 or 1)");
      }
    }
    if (nbytes) std::memcpy(t.data_ptr(), data + e.begin, nbytes);
    out.emplace(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(meta);
  return out;
}

}  // namespace aclgrad::nn
