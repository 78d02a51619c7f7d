// Building blocks of the layer options structs (libtorch style):
//
//   nn::Conv2dOptions(3, 16, 5).stride(2).padding(1)   // builder: each setter returns *this
//   opts.stride()                                       // getter: same name, no argument
//
// ExpandingArray<D> is a per-dimension size that accepts one number for all dims (5 -> {5, 5})
// or one per dim ({3, 5}).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "../tensor/error.h"

/// Declares an option `name` of type T: a setter `auto& name(const T&)` returning *this for
/// chaining, a getter `const T& name() const`, and the storage `name##_` (the macro ends with
/// the member declaration, so `ACLGRAD_ARG(int64_t, stride) = 1;` gives the default).
#define ACLGRAD_ARG(T, name)       \
 public:                           \
  auto& name(const T& new_value) { \
    this->name##_ = new_value;     \
    return *this;                  \
  }                                \
  const T& name() const {          \
    return name##_;                \
  }                                \
                                   \
 private:                          \
  T name##_

namespace aclgrad::nn {

/// D sizes given as one number for every dim or as D numbers.
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t value) { values_.fill(value); }  // NOLINT: implicit like libtorch
  ExpandingArray(std::initializer_list<int64_t> list) {
    check<ShapeError>(list.size() == D, "expected ", D, " values (one per spatial dim), got ",
                      list.size());
    std::copy(list.begin(), list.end(), values_.begin());
  }
  ExpandingArray(const std::array<int64_t, D>& values) : values_(values) {}  // NOLINT
  explicit ExpandingArray(const std::vector<int64_t>& values) {
    check<ShapeError>(values.size() == D, "expected ", D, " values (one per spatial dim), got ",
                      values.size());
    std::copy(values.begin(), values.end(), values_.begin());
  }

  int64_t operator[](size_t i) const { return values_[i]; }
  const std::array<int64_t, D>& array() const { return values_; }
  std::vector<int64_t> vec() const { return {values_.begin(), values_.end()}; }
  static constexpr size_t size() { return D; }
  bool operator==(const ExpandingArray&) const = default;

 private:
  std::array<int64_t, D> values_{};
};

namespace detail {

/// Python's repr of a bool: "True" / "False".
inline const char* py_bool(bool b) {
  return b ? "True" : "False";
}
/// Shortest round-trip repr of a double as Python prints it ("0.1", "1e-05", "20").
std::string py_number(double v);
/// Python tuple: "(5, 5)", "(5,)".
std::string py_tuple(const std::vector<int64_t>& values);
/// One number if every entry is equal (PyTorch prints pooling sizes as given; we cannot know,
/// so equal entries print as the int a user most likely passed), else a tuple.
std::string py_int_or_tuple(const std::vector<int64_t>& values);

}  // namespace detail
}  // namespace aclgrad::nn
