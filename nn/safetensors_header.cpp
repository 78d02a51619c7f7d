// Checking a safetensors header before any data is touched: the length prefix, the JSON (depth
// bounded before parsing, every parser error named), each entry, and the tiling of the data
// section. The file may be hostile: messages quote only short excerpts of what it holds.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/safetensors_format.h"

namespace aclgrad::nn::safetensors_detail {

namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

// Known safetensors dtypes we cannot hold (a clear "unsupported" instead of "unknown").
constexpr std::string_view kOtherDtypes[] = {"U8",  "I8",      "F8_E5M2", "F8_E4M3", "I16",
                                             "U16", "I32",     "U32",     "U64",     "F8_E8M0",
                                             "F4",  "F6_E2M3", "F6_E3M2", "C64"};

std::string squote(std::string_view s) {
  std::string out(1, '\'');
  out += excerpt(s);
  out += '\'';
  return out;
}

// A JSON value for a message. Depth is bounded (json_depth_exceeded) before parsing, so the
// recursive dump() stays shallow; invalid UTF-8 is replaced instead of throwing.
std::string brief(const json& v) {
  return excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// Throws "load_safetensors: '<source>': <parts>".
template <typename... Parts>
[[noreturn]] void bad(const std::string& source, const Parts&... parts) {
  detail::fail<Error>(std::source_location::current(), "load_safetensors: ", squote(source), ": ",
                      parts...);
}

Dtype parse_dtype(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_string())
    bad(source, "tensor ", squote(name), ": dtype must be a string, got ", brief(v));
  const std::string s = v.get<std::string>();
  for (Dtype d :
       {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16, Dtype::Int64, Dtype::Bool})
    if (s == info_of(d).name) return d;
  for (std::string_view other : kOtherDtypes)
    if (s == other)
      bad(source, "tensor ", squote(name), ": dtype '", s,
          "' is not supported (aclgrad reads F32, F64, F16, BF16, I64, BOOL)");
  bad(source, "tensor ", squote(name), ": unknown dtype ", squote(s),
      " (expected one of F32, F64, F16, BF16, I64, BOOL)");
}

uint64_t parse_uint(const std::string& source, const std::string& name, const char* field,
                    const json& v) {
  if (!v.is_number_unsigned())
    bad(source, "tensor ", squote(name), ": ", field,
        " entries must be non-negative integers, got ", brief(v));
  return v.get<uint64_t>();
}

// Element count of the shape times the element size, or nullopt when it overflows int64.
std::optional<uint64_t> byte_count(const std::string& source, const std::string& name,
                                   const json& shape, Entry& e) {
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& s : shape) {
    const uint64_t d = parse_uint(source, name, "shape", s);
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    e.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t nbytes = 0;
  overflow = overflow ||
             __builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(e.dtype)), &nbytes) ||
             nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (overflow) return std::nullopt;
  return nbytes;
}

Entry parse_entry(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_object())
    bad(source, "tensor ", squote(name),
        ": expected an object with dtype, shape and data_offsets, got ", brief(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) bad(source, "tensor ", squote(name), ": missing field '", key, "'");
  for (const auto& [key, unused] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      bad(source, "tensor ", squote(name), ": unexpected field ", squote(key));
  Entry e{name, parse_dtype(source, name, v["dtype"]), {}, 0, 0};
  const json& shape = v["shape"];
  if (!shape.is_array())
    bad(source, "tensor ", squote(name), ": shape must be an array, got ", brief(shape));
  const std::optional<uint64_t> nbytes = byte_count(source, name, shape, e);
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    bad(source, "tensor ", squote(name), ": data_offsets must be [begin, end], got ", brief(off));
  e.begin = parse_uint(source, name, "data_offsets", off[0]);
  e.end = parse_uint(source, name, "data_offsets", off[1]);
  if (e.end < e.begin)
    bad(source, "tensor ", squote(name), ": data_offsets [", e.begin, ", ", e.end,
        "] end before they begin");
  if (!nbytes)
    bad(source, "tensor ", squote(name), ": shape ", brief(shape), " overflows the element count");
  if (*nbytes != e.end - e.begin)
    bad(source, "tensor ", squote(name), ": shape ", excerpt(format_shape(e.shape)), " with dtype ",
        info_of(e.dtype).name, " needs ", *nbytes, " bytes but data_offsets [", e.begin, ", ",
        e.end, "] span ", e.end - e.begin);
  return e;
}

// Where the parser was when it failed: the last top-level name and field seen.
struct Position {
  std::string name, field;
  std::string text() const {
    if (name.empty()) return "the header";
    if (name == "__metadata__")
      return field.empty() ? "__metadata__" : "__metadata__ value for " + squote(field);
    return "tensor " + squote(name) + (field.empty() ? "" : ", field " + squote(field));
  }
  const char* expected() const {
    return name == "__metadata__" ? "a string" : "a non-negative integer below 2^64";
  }
};

// Parses text (depth already bounded), refusing repeated top-level names (a JSON object would
// silently keep the last). Every nlohmann exception becomes an Error naming the position.
json parse_json(std::string_view text, const std::string& source) {
  std::set<std::string> names;
  std::string duplicate;
  Position at;
  json header;
  try {
    header = json::parse(text.begin(), text.end(),
                         [&](int depth, json::parse_event_t event, json& parsed) {
                           if (event != json::parse_event_t::key || depth > 2) return true;
                           const std::string& key = parsed.get_ref<const std::string&>();
                           if (depth == 2) {
                             at.field = key;
                             return true;
                           }
                           at = {key, ""};
                           if (!names.insert(key).second && duplicate.empty()) duplicate = key;
                           return true;
                         });
  } catch (const json::parse_error& e) {
    bad(source, "the header is not valid JSON (byte ", e.byte, " of the ", text.size(),
        "-byte header, in ", at.text(), "): ", excerpt(e.what(), 240));
  } catch (const json::out_of_range& e) {  // 406: numbers beyond double range, e.g. 1e400
    bad(source, at.text(), ": a number is out of range (expected ", at.expected(),
        "): ", excerpt(e.what(), 240));
  } catch (const json::exception& e) {
    bad(source, "the header cannot be parsed (in ", at.text(), "): ", excerpt(e.what(), 240));
  }
  if (!header.is_object()) bad(source, "the header must be a JSON object");
  if (!duplicate.empty()) bad(source, "tensor ", squote(duplicate), " appears twice in the header");
  return header;
}

// The tensors must tile the data section exactly: in offset order, each begins where the
// previous ended, and the last ends at the end of the section.
void check_tiling(const std::vector<Entry>& entries, uint64_t data_size,
                  const std::string& source) {
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
}

}  // namespace

size_t json_depth_exceeded(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string excerpt(std::string_view text, size_t keep) {
  if (text.size() <= keep + 16) return std::string(text);
  size_t cut = keep;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

uint64_t header_length(std::string_view prefix, uint64_t file_size, const std::string& source) {
  if (file_size < 8)
    bad(source, "the file is ", file_size, " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, prefix.data(), 8);
  if (n > kMaxHeaderBytes)
    bad(source, "header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  if (n > file_size - 8)
    bad(source, "header length ", n, " exceeds the ", file_size - 8,
        " bytes that follow it (truncated or corrupted file)");
  return n;
}

Header parse_header(std::string_view text, uint64_t data_size, const std::string& source) {
  if (text.empty() || text.front() != '{') bad(source, "the JSON header must start with '{'");
  if (const size_t at = json_depth_exceeded(text); at != std::string_view::npos)
    bad(source, "the JSON header nests deeper than ", kMaxJsonDepth, " levels at byte ", at, " of ",
        text.size(), " (a safetensors header nests 3 deep)");
  const json header = parse_json(text, source);
  Header out;
  for (const auto& [key, value] : header.items()) {
    if (key != "__metadata__") {
      out.entries.push_back(parse_entry(source, key, value));
      continue;
    }
    if (!value.is_object()) bad(source, "__metadata__ must be an object of strings");
    for (const auto& [mk, mv] : value.items()) {
      if (!mv.is_string())
        bad(source, "__metadata__ value for ", squote(mk), " must be a string, got ", brief(mv));
      out.metadata[mk] = mv.get<std::string>();
    }
  }
  check_tiling(out.entries, data_size, source);
  return out;
}

void check_bool_bytes(const Entry& e, const char* bytes, const std::string& source) {
  if (e.dtype != Dtype::Bool) return;
  for (uint64_t i = 0; i < e.end - e.begin; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b > 1)
      bad(source, "tensor ", squote(e.name), ": BOOL element ", i, " has byte value ",
          static_cast<int>(b), " (expected 0 or 1)");
  }
}

}  // namespace aclgrad::nn::safetensors_detail
