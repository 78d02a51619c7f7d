#include "error.h"

namespace aclnn_cpu {
namespace {
// One message per thread, like CANN: a failure on one thread never hides another thread's.
thread_local std::string g_recent_error;
}  // namespace

std::ostream& operator<<(std::ostream& os, ShapeText shape) {
  os << '[';
  for (uint64_t i = 0; i < shape.n; ++i) os << (i ? ", " : "") << shape.dims[i];
  return os << ']';
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
