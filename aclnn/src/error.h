// Error plumbing of libaclnn. Inside the library failures are exceptions (ApiError) carrying a
// status code and a message; each extern "C" entry point runs its body through guard(), which
// turns the exception into the status code and records "<api>: <message>" for aclGetRecentErrMsg.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "aclnn/aclnn_base.h"

namespace aclnn_cpu {

struct ApiError {
  int32_t status;  // an aclnnStatus or an aclError, depending on the API family
  std::string message;
};

// Concatenates anything streamable: cat("stride[", i, "] = ", v).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// A dims list that prints as "[2, 3, 5]". It formats nothing until streamed, because check()'s
// arguments are evaluated on every call, failing or not: an eager string here cost a fifth of a
// small convolution's time. It points into the dims, so use it within the expression that made it.
struct ShapeText {
  const int64_t* dims;
  uint64_t n;
};
std::ostream& operator<<(std::ostream& os, ShapeText shape);
inline ShapeText shape_str(const std::vector<int64_t>& dims) {
  return {dims.data(), dims.size()};
}
inline ShapeText shape_str(const int64_t* dims, uint64_t n) {
  return {dims, n};
}

[[noreturn]] inline void fail(int32_t status, std::string message) {
  throw ApiError{status, std::move(message)};
}

// Throws ApiError{status, message built from parts} unless cond holds. The parts are only
// formatted on failure.
template <typename... Parts>
inline void check(bool cond, int32_t status, const Parts&... parts) {
  if (!cond) fail(status, cat(parts...));
}

// Records the message returned by aclGetRecentErrMsg on this thread.
void set_recent_error(std::string message);
void clear_recent_error();
const char* recent_error();

// Runs body() and maps what it throws to a status: ApiError -> its status (message recorded as
// "<api>: <message>"), std::bad_alloc -> bad_alloc_status, anything else -> internal_status.
template <typename Body>
int32_t guard(std::string_view api, int32_t bad_alloc_status, int32_t internal_status,
              Body&& body) noexcept {
  try {
    return body();
  } catch (const ApiError& e) {
    set_recent_error(cat(api, ": ", e.message));
    return e.status;
  } catch (const std::bad_alloc&) {
    set_recent_error(cat(api, ": out of host memory"));
    return bad_alloc_status;
  } catch (const std::exception& e) {
    set_recent_error(cat(api, ": internal error: ", e.what()));
    return internal_status;
  } catch (...) {
    set_recent_error(cat(api, ": internal error"));
    return internal_status;
  }
}

// guard() for aclnn entry points (aclnnStatus codes). Internal failures (out of host memory, a
// broken invariant) are ACLNN_ERR_INNER_NULLPTR 561103, the code CANN's documents give for "API
// internal check error".
template <typename Body>
aclnnStatus guard_aclnn(std::string_view api, Body&& body) noexcept {
  return guard(api, ACLNN_ERR_INNER_NULLPTR, ACLNN_ERR_INNER_NULLPTR, std::forward<Body>(body));
}

}  // namespace aclnn_cpu
