#include "nn/sequential.h"

namespace aclgrad::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

Sequential::Sequential(
    std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules)
    : Module("Sequential") {
  for (const auto& [name, m] : modules) push_back(name, m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  push_back(std::to_string(modules_.size()), std::move(module));
}

void Sequential::push_back(const std::string& name, std::shared_ptr<Module> module) {
  modules_.push_back(register_module(name, std::move(module)));
}

std::shared_ptr<Module> Sequential::operator[](int64_t index) const {
  const auto n = static_cast<int64_t>(modules_.size());
  check<IndexError>(index >= -n && index < n, "Sequential: index ", index, " is out of range for ",
                    n, " modules");
  return modules_[static_cast<size_t>(index < 0 ? index + n : index)];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = m->forward(x);
  return x;
}

}  // namespace aclgrad::nn
