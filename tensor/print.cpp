// Tensor::to_string: PyTorch-like printing. Tensors with more than kThreshold elements show only
// the first and last kEdgeItems entries of every dimension, with "..." in between.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tensor/tensor.h"

namespace aclgrad {

namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

struct Value {
  double d = 0;   // floating values
  int64_t i = 0;  // int64 and bool values
};

class Printer {
 public:
  explicit Printer(const Tensor& t) : t_(t), elide_(t.numel() > kThreshold) {}

  std::string run() {
    if (t_.dim() > 0)
      collect(0, t_.storage_offset());
    else
      values_.push_back(read(t_.storage_offset()));
    format_values();
    std::string body;
    next_ = 0;
    if (t_.dim() == 0)
      body = cells_[0];
    else
      body = block(0);
    std::ostringstream os;
    os << "tensor(" << body << ", shape=" << format_shape(t_.sizes()) << ", dtype=" << t_.dtype()
       << ")";
    return os.str();
  }

 private:
  // The indices of dim d that are shown; -1 stands for the "..." gap.
  std::vector<int64_t> shown(int64_t d) const {
    const int64_t n = t_.sizes()[d];
    std::vector<int64_t> idx;
    if (!elide_ || n <= 2 * kEdgeItems) {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      idx.push_back(-1);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }

  Value read(int64_t linear) const {
    const char* p = static_cast<const char*>(t_.storage().data()) + linear * t_.element_size();
    return dispatch_dtype(t_.dtype(), [&]<typename T>() {
      const T v = *reinterpret_cast<const T*>(p);
      Value out;
      if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, bool>)
        out.i = v;
      else if constexpr (std::is_same_v<T, double>)
        out.d = v;
      else
        out.d = static_cast<float>(v);
      return out;
    });
  }

  void collect(int64_t d, int64_t linear) {
    for (int64_t i : shown(d)) {
      if (i < 0) continue;
      const int64_t at = linear + i * t_.strides()[d];
      if (d + 1 == t_.dim())
        values_.push_back(read(at));
      else
        collect(d + 1, at);
    }
  }

  void format_values() {
    const Dtype dt = t_.dtype();
    char buf[64];
    if (dt == Dtype::Bool) {
      for (const Value& v : values_) cells_.push_back(v.i ? "true" : "false");
    } else if (dt == Dtype::Int64) {
      for (const Value& v : values_) cells_.push_back(std::to_string(v.i));
    } else {
      double max_abs = 0, min_abs = INFINITY;
      for (const Value& v : values_) {
        if (!std::isfinite(v.d) || v.d == 0) continue;
        max_abs = std::max(max_abs, std::fabs(v.d));
        min_abs = std::min(min_abs, std::fabs(v.d));
      }
      const bool sci = max_abs >= 1e8 || (max_abs > 0 && min_abs < 1e-4);
      for (const Value& v : values_) {
        if (std::isnan(v.d))
          cells_.push_back("nan");
        else if (std::isinf(v.d))
          cells_.push_back(v.d > 0 ? "inf" : "-inf");
        else {
          std::snprintf(buf, sizeof buf, sci ? "%.4e" : "%.4f", v.d);
          cells_.push_back(buf);
        }
      }
    }
    size_t width = 0;
    for (const auto& c : cells_) width = std::max(width, c.size());
    for (auto& c : cells_) c.insert(0, width - c.size(), ' ');
  }

  std::string block(int64_t d) {
    std::string s = "[";
    const std::vector<int64_t> idx = shown(d);
    const bool last_dim = d + 1 == t_.dim();
    // Rows of a matrix are separated by one newline, matrices by two, and so on.
    std::string sep = ", ";
    if (!last_dim) {
      sep.assign(1, ',');
      sep.append(static_cast<size_t>(t_.dim() - 1 - d), '\n');
      sep.append(static_cast<size_t>(8 + d), ' ');
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      if (k) s += sep;
      if (idx[k] < 0)
        s += "...";
      else if (last_dim)
        s += cells_[next_++];
      else
        s += block(d + 1);
    }
    return s + "]";
  }

  const Tensor& t_;
  bool elide_;
  std::vector<Value> values_;
  std::vector<std::string> cells_;
  size_t next_ = 0;
};

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  return Printer(*this).run();
}

}  // namespace aclgrad
