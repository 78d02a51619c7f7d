#include "tensor/dtype.h"

namespace aclgrad {

int64_t element_size(Dtype dtype) {
  return dispatch_dtype(dtype, []<typename T>() { return static_cast<int64_t>(sizeof(T)); });
}

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return "float32";
    case Dtype::Float64:
      return "float64";
    case Dtype::Float16:
      return "float16";
    case Dtype::BFloat16:
      return "bfloat16";
    case Dtype::Int64:
      return "int64";
    case Dtype::Bool:
      return "bool";
  }
  return "invalid";
}

std::ostream& operator<<(std::ostream& os, Dtype dtype) {
  return os << dtype_name(dtype);
}

bool is_floating_point(Dtype dtype) {
  return dtype == Dtype::Float32 || dtype == Dtype::Float64 || dtype == Dtype::Float16 ||
         dtype == Dtype::BFloat16;
}

}  // namespace aclgrad
