// The safetensors byte format: building the header and data (serialize) and decoding file bytes
// in memory (deserialize; the header checks are in nn/safetensors_header.cpp). File handling
// and modules are in nn/checkpoint.cpp.
#include <algorithm>
#include <bit>
#include <cstring>
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

std::string squote(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

namespace safetensors_detail {

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

TensorMap deserialize_safetensors(std::string_view bytes, Metadata* metadata,
                                  const std::string& source) {
  using namespace safetensors_detail;
  const uint64_t n = header_length(bytes.substr(0, 8), bytes.size(), source);
  Header header = parse_header(bytes.substr(8, n), bytes.size() - 8 - n, source);
  const char* data = bytes.data() + 8 + n;
  TensorMap out;
  for (const Entry& e : header.entries) {
    check_bool_bytes(e, data + e.begin, source);
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + e.begin, e.end - e.begin);
    out.emplace(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(header.metadata);
  return out;
}

}  // namespace aclgrad::nn
