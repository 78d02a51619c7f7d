#include "fuzz_model.h"

#include <cstring>
#include <limits>
#include <random>

#include "support/acl_test_util.h"
#include "support/raw_enum_calls.h"

namespace aclfuzz {
namespace {

constexpr int64_t kMaxStorageElements = 1 << 15;  // larger claims get a null data pointer
constexpr uint8_t kSentinel = 0x7e;

// Storage elements needed by a view (offset + largest reachable index + 1), or -1 when the view
// has negative dims/strides/offset or its reach overflows.
int64_t storage_needed(const TensorSpec& t) {
  if (t.offset < 0 || t.strides.size() != t.dims.size()) return -1;
  __int128 last = t.offset;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (t.dims[i] < 0 || t.strides[i] < 0) return -1;
    if (t.dims[i] == 0) return 0;
    last += static_cast<__int128>(t.dims[i] - 1) * t.strides[i];
  }
  if (last >= kMaxStorageElements) return -1;
  return static_cast<int64_t>(last) + 1;
}

int64_t storage_elements(const TensorSpec& t) {
  __int128 n = 1;
  for (int64_t d : t.storage_dims) {
    if (d < 0) return -1;
    n *= d;
    if (n > kMaxStorageElements) return -1;
  }
  return static_cast<int64_t>(n);
}

void write_value(uint8_t* p, int32_t dtype, double v) {
  switch (dtype) {
    case ACL_FLOAT: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case ACL_DOUBLE:
      std::memcpy(p, &v, 8);
      break;
    case ACL_FLOAT16: {
      uint16_t h = acltest::EncodeF16(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case ACL_BF16: {
      uint16_t h = acltest::EncodeBF16(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case ACL_FLOAT8_E4M3FN:
      *p = acltest::EncodeE4M3FN(v);
      break;
    case ACL_HIFLOAT8:
      *p = acltest::EncodeHiF8(v);
      break;
  }
}

double read_value(const uint8_t* p, int32_t dtype) {
  switch (dtype) {
    case ACL_FLOAT: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case ACL_DOUBLE: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case ACL_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return acltest::DecodeF16(h);
    }
    case ACL_FLOAT8_E4M3FN:
      return acltest::DecodeE4M3FN(*p);
    case ACL_HIFLOAT8:
      return acltest::DecodeHiF8(*p);
    default: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return acltest::DecodeBF16(h);
    }
  }
}

// v + d, or v when that overflows (an earlier defect may have made v extreme).
int64_t nudge(int64_t v, int64_t d) {
  int64_t r;
  return __builtin_add_overflow(v, d, &r) ? v : r;
}

// Bytes per storage element: the float dtypes' own size, 8 for any other value (never less than
// whatever the library could take the dtype to be).
size_t element_bytes(int32_t dtype) {
  const size_t size = float_dtype_size(dtype);
  return size ? size : 8;
}

// Calls fn(storage element index) for every view element, row-major.
template <class F>
void for_each_view_index(const TensorSpec& t, F fn) {
  const size_t rank = t.dims.size();
  for (int64_t d : t.dims)
    if (d <= 0) return;
  std::vector<int64_t> idx(rank, 0);
  while (true) {
    int64_t at = t.offset;
    for (size_t i = 0; i < rank; ++i) at += idx[i] * t.strides[i];
    fn(at);
    size_t i = rank;
    while (i > 0 && ++idx[i - 1] == t.dims[i - 1]) idx[--i] = 0;
    if (i == 0) return;
  }
}

}  // namespace

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(dims[i], 1);
  return s;
}

size_t float_dtype_size(int32_t dtype) {
  for (aclDataType d :
       {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE, ACL_HIFLOAT8, ACL_FLOAT8_E4M3FN})
    if (dtype == d) return acltest::DtypeBytes(d);
  return 0;
}

bool is_float_dtype(int32_t dtype) {
  return float_dtype_size(dtype) != 0;
}

TensorSpec make_spec(std::string role, std::vector<int64_t> dims, int32_t dtype, int32_t format,
                     int layout, bool is_output) {
  TensorSpec t;
  t.role = std::move(role);
  t.is_output = is_output;
  t.dtype = dtype;
  t.format = format;
  t.dims = std::move(dims);
  t.strides = contiguous_strides(t.dims);
  if (layout == 1) {  // innermost dim slowest: a permuted (e.g. channels-last-like) view
    int64_t s = 1;
    for (size_t i = 0; i < t.dims.size(); ++i) {
      t.strides[i] = s;
      s *= std::max<int64_t>(t.dims[i], 1);
    }
  } else if (layout == 2) {  // gaps between rows and a leading offset
    int64_t s = 1;
    for (size_t i = t.dims.size(); i-- > 0;) {
      t.strides[i] = s;
      s = s * std::max<int64_t>(t.dims[i], 1) + (i % 2);
    }
    t.offset = 3;
  }
  const int64_t need = storage_needed(t);
  if (layout == 3)
    t.storage_dims = t.dims;
  else
    t.storage_dims = {std::max<int64_t>(need, 0)};
  return t;
}

void mutate_tensor(FuzzBytes& in, TensorSpec& t) {
  const size_t rank = t.dims.size();
  const size_t i = rank ? in.byte() % rank : 0;
  static const int64_t kOdd[] = {
      -1, 0, 1, 7, int64_t{1} << 31, int64_t{1} << 40, std::numeric_limits<int64_t>::max()};
  static const int32_t kDtypes[] = {ACL_FLOAT,        ACL_FLOAT16, ACL_BF16, ACL_DOUBLE,
                                    ACL_INT32,        ACL_INT8,    ACL_BOOL, ACL_COMPLEX64,
                                    ACL_DT_UNDEFINED, 99,          -3,       1000000};
  static const int32_t kFormats[] = {ACL_FORMAT_ND,
                                     ACL_FORMAT_NCHW,
                                     ACL_FORMAT_NCL,
                                     ACL_FORMAT_NCDHW,
                                     ACL_FORMAT_NHWC,
                                     ACL_FORMAT_NC1HWC0,
                                     ACL_FORMAT_UNDEFINED,
                                     77,
                                     -1};
  switch (in.byte() % 10) {
    case 0:
      if (rank) t.dims[i] = in.chance(128) ? nudge(t.dims[i], in.pick(-1, 1)) : in.one_of(kOdd);
      break;
    case 1:
      if (rank)
        t.strides[i] = in.chance(128) ? nudge(t.strides[i], in.pick(-1, 1)) : in.one_of(kOdd);
      break;
    case 2:
      t.offset = in.chance(128) ? nudge(t.offset, in.pick(-1, 1)) : in.one_of(kOdd);
      break;
    case 3:  // storage one element short, one dim odd, or rank 0
      if (in.chance(128) && !t.storage_dims.empty())
        t.storage_dims.back() = std::max<int64_t>(nudge(t.storage_dims.back(), -1), 0);
      else if (in.chance(128) && !t.storage_dims.empty())
        t.storage_dims[0] = in.one_of(kOdd);
      else
        t.storage_dims.clear();
      break;
    case 4:
      t.dtype = in.one_of(kDtypes);
      break;
    case 5:
      t.format = in.one_of(kFormats);
      break;
    case 6:
      t.null_tensor = true;
      break;
    case 7:
      t.null_data = true;
      break;
    case 8:  // one rank less or more (strides follow)
      if (in.chance(128) && rank) {
        t.dims.pop_back();
        t.strides.pop_back();
      } else {
        t.dims.push_back(1);
        t.strides.push_back(1);
      }
      break;
    default:  // 9: a zero stride (an expanded view; overlapping when it is an output)
      if (rank) t.strides[i] = 0;
      break;
  }
}

void materialize(std::vector<TensorSpec>& specs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (TensorSpec& t : specs) {
    if (t.alias_of >= 0) continue;
    const size_t elem = element_bytes(t.dtype);
    const int64_t n = storage_elements(t);
    if (n < 0) continue;  // too large (or negative) to hold: data pointer stays null
    t.buffer = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n) * elem, kSentinel);
    if (!t.is_output) {
      for (size_t b = 0; b < t.buffer->size(); b += elem) {
        const double v = static_cast<double>(static_cast<int>(rng() % 33) - 16) / 8.0;
        if (is_float_dtype(t.dtype))
          write_value(t.buffer->data() + b, t.dtype, v);
        else
          (*t.buffer)[b] = static_cast<uint8_t>(rng());
      }
    }
  }
  for (TensorSpec& t : specs) {
    if (t.alias_of >= 0) {
      const TensorSpec& src = specs[static_cast<size_t>(t.alias_of)];
      t.buffer = src.buffer;
      const size_t elem = element_bytes(t.dtype);
      t.storage_dims = {t.buffer ? static_cast<int64_t>(t.buffer->size() / elem) : 0};
    }
  }
  for (TensorSpec& t : specs) {
    if (t.buffer) t.initial = *t.buffer;
    if (t.null_tensor) continue;
    void* data = (t.buffer && !t.null_data && !t.buffer->empty()) ? t.buffer->data() : nullptr;
    t.handle =
        acltest_create_tensor_raw(t.dims.data(), t.dims.size(), t.dtype, t.strides.data(), t.offset,
                                  t.format, t.storage_dims.data(), t.storage_dims.size(), data);
  }
}

void destroy(std::vector<TensorSpec>& specs) {
  for (TensorSpec& t : specs) {
    if (t.handle) aclDestroyTensor(t.handle);
    t.handle = nullptr;
  }
}

bool is_contiguous(const TensorSpec& t) {
  if (t.strides.size() != t.dims.size()) return false;
  for (int64_t d : t.dims)
    if (d == 0) return true;
  __int128 step = 1;
  for (size_t i = t.dims.size(); i-- > 0;) {
    if (t.dims[i] != 1 && t.strides[i] != step) return false;
    step *= t.dims[i];
  }
  return true;
}

int64_t readable_numel(const TensorSpec& t) {
  if (!t.handle || !t.buffer || !is_float_dtype(t.dtype)) return -1;
  const int64_t need = storage_needed(t);
  const size_t elem = float_dtype_size(t.dtype);
  if (need < 0 || static_cast<size_t>(need) * elem > t.buffer->size()) return -1;
  for (int64_t d : t.dims)
    if (d == 0) return 0;  // other dims may be huge: an empty view is readable
  // A dim of stride 0 may be huge although the view fits its storage: too many to read.
  constexpr int64_t kMaxReadable = int64_t{1} << 20;
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d > kMaxReadable / n) return -1;
    n *= d;
  }
  return n;
}

std::vector<double> read_view(const TensorSpec& t) {
  std::vector<double> out;
  const size_t elem = float_dtype_size(t.dtype);
  for_each_view_index(t, [&](int64_t at) {
    out.push_back(read_value(t.buffer->data() + static_cast<size_t>(at) * elem, t.dtype));
  });
  return out;
}

bool untouched_outside_view(const TensorSpec& t, bool whole) {
  if (!t.buffer) return true;
  std::vector<bool> in_view(t.buffer->size(), false);
  const size_t elem = float_dtype_size(t.dtype);
  if (!whole && readable_numel(t) >= 0) {
    for_each_view_index(t, [&](int64_t at) {
      for (size_t b = 0; b < elem; ++b) in_view[static_cast<size_t>(at) * elem + b] = true;
    });
  }
  for (size_t b = 0; b < t.buffer->size(); ++b)
    if (!in_view[b] && (*t.buffer)[b] != t.initial[b]) return false;
  return true;
}

}  // namespace aclfuzz
