#include "tensor/error.h"

namespace aclgrad {

std::string format_shape(const std::vector<int64_t>& values) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << ']';
  return os.str();
}

}  // namespace aclgrad
