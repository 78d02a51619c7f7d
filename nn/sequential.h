// Sequential: a chain of modules called one after the other, named "0", "1", ... (or by the
// names given), like torch.nn.Sequential.
//
//   auto net = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8),
//                                               std::make_shared<nn::ReLU>(),
//                                               std::make_shared<nn::Linear>(8, 2));
//   net->push_back(std::make_shared<nn::Sigmoid>());
//   Tensor y = (*net)(x);                      // Linear -> ReLU -> Linear -> Sigmoid
//   auto first = net->at<nn::Linear>(0);       // typed access
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>

#include "../nn/module.h"

namespace aclgrad::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  /// Sequential(a, b, c) with any module types (works through std::make_shared).
  template <typename... M>
  requires(sizeof...(M) > 0 &&
           (std::is_base_of_v<Module, M> && ...)) explicit Sequential(std::shared_ptr<M>... modules)
      : Module("Sequential") {
    (push_back(std::move(modules)), ...);
  }
  /// Named entries: {{"conv", conv}, {"act", relu}}.
  Sequential(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules);

  /// Appends a module named after its position ("0", "1", ...).
  void push_back(std::shared_ptr<Module> module);
  void push_back(const std::string& name, std::shared_ptr<Module> module);

  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// The module at index (negative counts from the end); IndexError when out of range.
  std::shared_ptr<Module> operator[](int64_t index) const;
  /// The module at index cast to M; Error naming both types when it is not an M.
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    std::shared_ptr<Module> m = (*this)[index];
    auto typed = std::dynamic_pointer_cast<M>(m);
    check(typed != nullptr, "Sequential::at: module ", index, " is a ", m->type_name(),
          ", not the requested type");
    return typed;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

  /// Calls each module on the previous one's output. An empty Sequential returns input.
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace aclgrad::nn
