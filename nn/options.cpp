#include "nn/options.h"

#include <charconv>
#include <cmath>

namespace aclgrad::nn::detail {

std::string py_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string py_tuple(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + (values.size() == 1 ? ",)" : ")");
}

std::string py_int_or_tuple(const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v != values.front()) return py_tuple(values);
  return values.empty() ? "()" : std::to_string(values.front());
}

}  // namespace aclgrad::nn::detail
