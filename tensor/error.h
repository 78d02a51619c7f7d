// Errors of the tensor layer and above: one exception family, one check() helper.
//
// Messages name the op, the argument, its value/shape and the rule, e.g.
//   "view: shape [3, 5] is invalid for input of size 16".
// check() captures the caller's file and line through std::source_location (no macro needed);
// they are kept on the exception (file(), line()) and are not part of what().
#pragma once

#include <cstdint>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace aclgrad {

/// Base of every exception thrown by aclgrad.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message,
                 std::source_location where = std::source_location::current())
      : std::runtime_error(message), file_(where.file_name()), line_(where.line()) {}
  const char* file() const noexcept { return file_; }
  unsigned line() const noexcept { return line_; }

 private:
  const char* file_;
  unsigned line_;
};

/// Shapes that do not fit the rule of an op (view sizes, broadcasting, expand, permute...).
class ShapeError : public Error {
  using Error::Error;
};
/// A dtype an op does not accept, or a typed access with the wrong C++ type.
class DtypeError : public Error {
  using Error::Error;
};
/// An index, dimension or range outside the valid bounds.
class IndexError : public Error {
  using Error::Error;
};

/// "[3, 5]": how shapes, strides and dim lists are written in messages.
std::string format_shape(const std::vector<int64_t>& values);

namespace detail {

// The condition of check(); converting from bool records the caller's source location.
struct CheckSite {
  bool ok;
  std::source_location where;
  CheckSite(bool ok_, std::source_location where_ = std::source_location::current())
      : ok(ok_), where(where_) {}
};

inline void put(std::ostream& os, const std::vector<int64_t>& v) {
  os << format_shape(v);
}
template <typename T>
void put(std::ostream& os, const T& v) {
  os << v;
}

template <typename E, typename... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void fail(std::source_location where,
                                                 const Parts&... parts) {
  std::ostringstream os;
  (put(os, parts), ...);
  throw E(os.str(), where);
}

}  // namespace detail

/// Throws E (default Error) with the concatenated parts when cond is false. Parts are streamed;
/// std::vector<int64_t> prints as a shape "[a, b]". Formatting happens only on failure.
template <typename E = Error, typename... Parts>
inline void check(detail::CheckSite cond, const Parts&... parts) {
  if (!cond.ok) [[unlikely]]
    detail::fail<E>(cond.where, parts...);
}

}  // namespace aclgrad
