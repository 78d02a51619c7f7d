// Element types: the Dtype enum, its C++ types, value conversion and the typed dispatch helper.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

#include "../tensor/error.h"
#include "../tensor/half.h"

namespace aclgrad {

/// Element type of a tensor. float32 is the default; float16/bfloat16 are storage types.
enum class Dtype : uint8_t { Float32, Float64, Float16, BFloat16, Int64, Bool };

/// Bytes per element.
int64_t element_size(Dtype dtype);
/// "float32", "float64", "float16", "bfloat16", "int64", "bool".
const char* dtype_name(Dtype dtype);
std::ostream& operator<<(std::ostream& os, Dtype dtype);
bool is_floating_point(Dtype dtype);

/// The dtype of a C++ element type (float, double, Half, BFloat16, int64_t, bool).
template <typename T>
constexpr Dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return Dtype::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return Dtype::Float64;
  else if constexpr (std::is_same_v<T, Half>)
    return Dtype::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return Dtype::BFloat16;
  else if constexpr (std::is_same_v<T, int64_t>)
    return Dtype::Int64;
  else if constexpr (std::is_same_v<T, bool>)
    return Dtype::Bool;
  else
    static_assert(sizeof(T) == 0, "not an aclgrad element type");
}

/// True for the C++ types that are tensor elements.
template <typename T>
concept Element =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
    std::is_same_v<T, BFloat16> || std::is_same_v<T, int64_t> || std::is_same_v<T, bool>;

/// Calls f.template operator()<T>() with T the C++ type of dtype, e.g.
///   dispatch_dtype(t.dtype(), [&]<typename T>() { fill<T>(...); });
/// Every branch must return the same type.
template <typename F>
decltype(auto) dispatch_dtype(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::Float32:
      return f.template operator()<float>();
    case Dtype::Float64:
      return f.template operator()<double>();
    case Dtype::Float16:
      return f.template operator()<Half>();
    case Dtype::BFloat16:
      return f.template operator()<BFloat16>();
    case Dtype::Int64:
      return f.template operator()<int64_t>();
    case Dtype::Bool:
      return f.template operator()<bool>();
  }
  detail::fail<DtypeError>(std::source_location::current(), "dispatch_dtype: invalid dtype value ",
                           static_cast<int>(dtype));
}

/// Like dispatch_dtype for the floating dtypes only; any other dtype throws DtypeError
/// "<op>: expected a floating point dtype, got int64".
template <typename F>
decltype(auto) dispatch_floating_dtype(Dtype dtype, const char* op, F&& f) {
  check<DtypeError>(is_floating_point(dtype), op, ": expected a floating point dtype, got ", dtype);
  switch (dtype) {
    case Dtype::Float64:
      return f.template operator()<double>();
    case Dtype::Float16:
      return f.template operator()<Half>();
    case Dtype::BFloat16:
      return f.template operator()<BFloat16>();
    default:
      return f.template operator()<float>();
  }
}

/// Converts one element value between element types (and from other arithmetic types).
/// Floating -> int64 truncates toward zero, saturates out of range and maps NaN to 0 (defined
/// behaviour instead of C++'s UB). Anything -> bool is "!= 0" (NaN is true). Rounding to
/// float16/bfloat16 is to nearest even, once.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, double>)
      return To(v);
    else
      return To(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return 0;
    constexpr double lim = 0x1p63;  // exact; int64 range is [-2^63, 2^63)
    if (static_cast<double>(v) >= lim) return std::numeric_limits<To>::max();
    if (static_cast<double>(v) < -lim) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

/// A number of any kind passed to fill_/full: keeps integers exact (no detour through double).
class Scalar {
 public:
  template <typename T>
  requires std::is_arithmetic_v<T> Scalar(T v) {  // NOLINT: implicit on purpose, like a literal
    if constexpr (std::is_same_v<T, bool>)
      kind_ = Kind::Bool, i_ = v;
    else if constexpr (std::is_integral_v<T>)
      kind_ = Kind::Int, i_ = static_cast<int64_t>(v);
    else
      kind_ = Kind::Float, d_ = static_cast<double>(v);
  }
  Scalar(Half v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}

  /// The value converted to element type T (same rules as convert()).
  template <typename T>
  T to() const {
    if (kind_ == Kind::Float) return convert<T>(d_);
    if (kind_ == Kind::Bool) return convert<T>(i_ != 0);
    return convert<T>(i_);
  }
  bool is_floating_point() const { return kind_ == Kind::Float; }

 private:
  enum class Kind { Float, Int, Bool } kind_;
  double d_ = 0;
  int64_t i_ = 0;
};

}  // namespace aclgrad
