#include "nn/module.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "autograd/autograd.h"

namespace aclgrad::nn {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// PyTorch's _addindent: every line but the first gets `spaces` more spaces.
std::string add_indent(const std::string& s, int spaces) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(static_cast<size_t>(spaces), ' ');
  }
  return out;
}

// The state may come from a file (nn::load): its messages write out at most a few sizes and
// bytes of each name and shape, and at most kMaxProblems problems.
constexpr size_t kMaxProblems = 10;

std::string brief_shape(const Shape& sizes) {
  constexpr size_t kShown = 8;
  if (sizes.size() <= kShown) return format_shape(sizes);
  std::string out = format_shape(Shape(sizes.begin(), sizes.begin() + kShown));
  out.pop_back();  // ']'
  return out + ", ... (" + std::to_string(sizes.size()) + " sizes)]";
}

// Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on the + chain.
std::string brief_name(const std::string& name) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  if (name.size() <= kShown + 16) return out.append(name).append("'");
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  out.append(name, 0, cut).append("...' (").append(std::to_string(name.size()));
  return out.append(" bytes)");
}

}  // namespace

void set_data(const Tensor& t, const Tensor& new_data) {
  check(t.defined() && new_data.defined(), "set_data: both tensors must be defined");
  TensorImpl* dst = t.impl();
  const TensorImpl* src = new_data.impl();
  if (dst == src) return;
  dst->storage = src->storage;
  dst->layout = src->layout;
  dst->dtype = src->dtype;
}

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

Tensor Module::forward(const Tensor&) {
  detail::fail<Error>(std::source_location::current(), type_name_,
                      ": this module has no single-input forward(); call its own forward method");
}

void Module::check_new_name(const std::string& name, const char* what) const {
  check(!name.empty(), type_name_, ": ", what, " name must not be empty");
  check(name.find('.') == std::string::npos, type_name_, ": ", what, " name '", name,
        "' must not contain '.'");
  auto taken = [&](const auto& list) {
    for (const auto& [n, v] : list)
      if (n == name) return true;
    return false;
  };
  check(!taken(parameters_) && !taken(buffers_) && !taken(children_), type_name_,
        ": cannot register ", what, " '", name, "': the name is already used");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& tensor,
                                  bool requires_grad) {
  check_new_name(name, "parameter");
  check(tensor.defined(), type_name_, ": parameter '", name, "' is an undefined tensor");
  check(tensor.is_leaf(), type_name_, ": parameter '", name,
        "' must be a leaf tensor (it has a grad_fn); pass tensor.detach()");
  tensor.requires_grad_(requires_grad);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& tensor) {
  check_new_name(name, "buffer");
  check(tensor.defined(), type_name_, ": buffer '", name, "' is an undefined tensor");
  buffers_.emplace_back(name, tensor);
  return tensor;
}

void Module::register_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  check(module != nullptr, type_name_, ": submodule '", name, "' is null");
  check(module.get() != this, type_name_, ": a module cannot be its own submodule");
  children_.emplace_back(name, std::move(module));
}

void Module::collect_parameters(const std::string& prefix, NamedList<Tensor>& out) const {
  for (const auto& [n, t] : parameters_) out.emplace_back(join(prefix, n), t);
  for (const auto& [n, m] : children_) m->collect_parameters(join(prefix, n), out);
}

void Module::collect_buffers(const std::string& prefix, NamedList<Tensor>& out) const {
  for (const auto& [n, t] : buffers_) out.emplace_back(join(prefix, n), t);
  for (const auto& [n, m] : children_) m->collect_buffers(join(prefix, n), out);
}

void Module::collect_modules(const std::string& prefix,
                             NamedList<std::shared_ptr<Module>>& out) const {
  for (const auto& [n, m] : children_) {
    out.emplace_back(join(prefix, n), m);
    m->collect_modules(join(prefix, n), out);
  }
}

void Module::collect_state(const std::string& prefix, NamedList<Tensor>& out) const {
  for (const auto& [n, t] : parameters_) out.emplace_back(join(prefix, n), t);
  for (const auto& [n, t] : buffers_) out.emplace_back(join(prefix, n), t);
  for (const auto& [n, m] : children_) m->collect_state(join(prefix, n), out);
}

namespace {
NamedList<Tensor> unique_tensors(NamedList<Tensor> all) {
  std::set<const TensorImpl*> seen;
  NamedList<Tensor> out;
  for (auto& [n, t] : all)
    if (seen.insert(t.impl()).second) out.emplace_back(std::move(n), std::move(t));
  return out;
}
std::vector<Tensor> values_of(const NamedList<Tensor>& list) {
  std::vector<Tensor> out;
  out.reserve(list.size());
  for (const auto& [n, t] : list) out.push_back(t);
  return out;
}
}  // namespace

NamedList<Tensor> Module::named_parameters(bool recurse) const {
  NamedList<Tensor> all;
  if (recurse)
    collect_parameters("", all);
  else
    all = parameters_;
  return unique_tensors(std::move(all));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return values_of(named_parameters(recurse));
}

NamedList<Tensor> Module::named_buffers(bool recurse) const {
  NamedList<Tensor> all;
  if (recurse)
    collect_buffers("", all);
  else
    all = buffers_;
  return unique_tensors(std::move(all));
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  return values_of(named_buffers(recurse));
}

NamedList<std::shared_ptr<Module>> Module::named_children() const {
  return children_;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}

NamedList<std::shared_ptr<Module>> Module::named_modules() const {
  NamedList<std::shared_ptr<Module>> out;
  collect_modules("", out);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [n, m] : children_) m->apply(fn);
  fn(*this);
}

Tensor Module::find_tensor(const std::string& dotted_name) const {
  for (const auto& [n, t] : state_dict())
    if (n == dotted_name) return t;
  detail::fail<IndexError>(std::source_location::current(), type_name_,
                           ": no parameter or buffer named '", dotted_name, "'");
}

NamedList<Tensor> Module::state_dict() const {
  NamedList<Tensor> out;
  collect_state("", out);
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict,
                             const std::string& source) {
  const NamedList<Tensor> own = state_dict();
  std::vector<std::string> problems;
  std::set<std::string> known;
  for (const auto& [name, target] : own) {
    known.insert(name);
    const auto it = state.find(name);
    std::ostringstream p;
    if (it == state.end()) {
      if (!strict) continue;
      p << "missing tensor '" << name << "' (expected shape " << format_shape(target.sizes())
        << ", dtype " << target.dtype() << ")";
    } else if (!it->second.defined()) {
      p << "tensor '" << name << "' is undefined";
    } else if (it->second.sizes() != target.sizes()) {
      p << "shape mismatch for '" << name << "': expected " << format_shape(target.sizes())
        << ", got " << brief_shape(it->second.sizes());
    } else if (it->second.dtype() != target.dtype()) {
      p << "dtype mismatch for '" << name << "': expected " << target.dtype() << ", got "
        << it->second.dtype();
    }
    if (!p.str().empty()) problems.push_back(p.str());
  }
  if (strict) {
    for (const auto& [name, t] : state)
      if (!known.count(name)) problems.push_back("unexpected tensor " + brief_name(name));
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << "load_state_dict: cannot load " << type_name_ << " from '" << source << "' ("
        << problems.size() << (problems.size() == 1 ? " problem" : " problems")
        << "; the module was not modified):";
    for (size_t i = 0; i < std::min(problems.size(), kMaxProblems); ++i)
      msg << "\n  " << problems[i];
    if (problems.size() > kMaxProblems)
      msg << "\n  ... and " << problems.size() - kMaxProblems << " more";
    throw Error(msg.str());
  }
  NoGradGuard no_grad;
  for (const auto& [name, target] : own)
    if (const auto it = state.find(name); it != state.end()) target.copy_(it->second);
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [n, m] : children_) m->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) p.zero_grad(set_to_none);
}

void Module::to(Dtype dtype) {
  check<DtypeError>(is_floating_point(dtype), type_name_,
                    ".to: expected a floating point dtype, got ", dtype);
  NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    if (!p.is_floating_point() || p.dtype() == dtype) continue;
    Tensor grad = p.grad();
    if (grad.defined()) p.set_grad(Tensor());
    set_data(p, p.detach().to(dtype));
    if (grad.defined()) p.set_grad(grad.to(dtype));
  }
  for (const Tensor& b : buffers())
    if (b.is_floating_point() && b.dtype() != dtype) set_data(b, b.detach().to(dtype));
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

std::string Module::repr() const {
  std::vector<std::string> extra_lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) extra_lines.push_back(line);
  }
  std::vector<std::string> lines = extra_lines;
  for (const auto& [n, m] : children_) lines.push_back("(" + n + "): " + add_indent(m->repr(), 2));
  std::string out = type_name_ + "(";
  if (!lines.empty()) {
    if (extra_lines.size() == 1 && children_.empty()) {
      out += extra_lines[0];
    } else {
      for (const auto& l : lines) out += "\n  " + l;
      out += "\n";
    }
  }
  return out + ")";
}

std::string Module::to_string() const {
  return repr() + "\nTotal params: " + std::to_string(num_parameters()) +
         "\nTrainable params: " + std::to_string(num_parameters(true));
}

std::ostream& operator<<(std::ostream& os, const Module& module) {
  return os << module.to_string();
}

Functional::Functional(std::function<Tensor(const Tensor&)> fn, std::string name)
    : Module(std::move(name)), fn_(std::move(fn)) {
  check(fn_ != nullptr, "Functional: the function is empty");
}

}  // namespace aclgrad::nn
