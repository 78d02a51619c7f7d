#include "error.h"

namespace aclnn_cpu {
namespace {
// One message per thread, like CANN: a failure on one thread never hides another thread's.
thread_local std::string g_recent_error;
}  // namespace

std::string shape_str(const int64_t* dims, uint64_t n) {
  std::string s = "[";
  for (uint64_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string shape_str(const std::vector<int64_t>& dims) {
  return shape_str(dims.data(), dims.size());
}

void set_recent_error(std::string message) {
  g_recent_error = std::move(message);
}
void clear_recent_error() {
  g_recent_error.clear();
}
const char* recent_error() {
  return g_recent_error.c_str();
}

}  // namespace aclnn_cpu
